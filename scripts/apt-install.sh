#!/usr/bin/env bash
# Installs the named Debian packages that are missing, running
# `apt-get update` once first. Uses sudo when not root. On systems without
# apt-get it prints what to install and fails only if something is missing.
set -euo pipefail
missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Hookscope needs these packages (Debian names): ${missing[*]}" >&2
  echo "This system has no apt-get: install the equivalent X11/OpenGL development headers" >&2
  echo "(see https://docs.fyne.io/started/ for your system), then run make again." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "Missing packages: ${missing[*]}. Run as root or install sudo." >&2; exit 1
  fi
fi
echo "Installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
