#!/usr/bin/env bash
# Installs Hookscope from an unpacked package (the folder this script is in:
# usr/local/... as Fyne's packager lays it out) into a prefix, for one user
# by default (~/.local, no root), and records every file it writes in a
# manifest so that --uninstall removes exactly those files.
#
#   install.sh [--prefix DIR]              install (default prefix ~/.local)
#   install.sh --uninstall [--prefix DIR]  remove what the manifest lists
#
# DESTDIR, when set, is prepended to every path written (for distribution
# packagers); the .desktop entry still names the paths under the prefix.
set -euo pipefail

prefix="$HOME/.local"
mode=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --uninstall) mode=uninstall; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (expected --prefix DIR or --uninstall)" >&2; exit 2 ;;
  esac
done
prefix=${prefix%/}
case "$prefix" in /*) ;; *) echo "install.sh: --prefix must be an absolute path, got $prefix" >&2; exit 2 ;; esac
dest=${DESTDIR:-}
manifest="$prefix/share/hookscope/install-manifest"
apps="$prefix/share/applications"

# refresh tells the desktop about a changed applications folder, with the
# tools that are there (none is required). The MIME cache is refreshed only
# where the folder keeps one already: creating it would leave a file behind
# that uninstall did not install.
refresh() {
  if [ -f "$dest$apps/mimeinfo.cache" ] && command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$dest$apps" 2>/dev/null || true
  fi
  if command -v xdg-desktop-menu >/dev/null 2>&1; then xdg-desktop-menu forceupdate 2>/dev/null || true; fi
}

uninstall() {
  local m="$dest$manifest"
  if [ ! -f "$m" ]; then
    echo "Hookscope is not installed in $prefix (no $manifest)."
    return 0
  fi
  local n=0 f
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    # Only files under the prefix, as written by install: a hand-edited
    # manifest cannot make this remove anything else.
    case "$f" in "$prefix"/*) ;; *) echo "install.sh: skipping $f: not under $prefix" >&2; continue ;; esac
    case "$f" in *..*) echo "install.sh: skipping $f" >&2; continue ;; esac
    if [ -e "$dest$f" ] || [ -L "$dest$f" ]; then rm -f -- "$dest$f"; n=$((n + 1)); fi
  done < "$m"
  rm -f -- "$m"
  rmdir -- "$(dirname "$m")" 2>/dev/null || true
  refresh
  echo "Removed Hookscope from $prefix ($n files)."
}

if [ "$mode" = uninstall ]; then uninstall; exit 0; fi

here=$(cd "$(dirname "$0")" && pwd)
src="$here/usr/local"
[ -d "$src" ] || src="$here/usr"
if [ ! -x "$src/bin/hookscope" ]; then
  echo "install.sh: no usr/local/bin/hookscope next to this script: run it from an unpacked Hookscope package" >&2
  exit 1
fi
# An earlier install goes first, so the manifest lists only this one's files.
if [ -f "$dest$manifest" ]; then uninstall >/dev/null; fi

icon="$prefix/share/icons/hicolor/512x512/apps/io.hookscope.app.png"
desktop="$apps/io.hookscope.app.desktop"
written=()
put() { # put MODE SOURCE TARGET
  install -D -m "$1" "$2" "$dest$3"
  written+=("$3")
}
put 0755 "$src/bin/hookscope" "$prefix/bin/hookscope"
put 0644 "$src/share/pixmaps/Hookscope.png" "$icon"
for page in "$src"/share/man/man1/*.1.gz; do
  [ -e "$page" ] && put 0644 "$page" "$prefix/share/man/man1/$(basename "$page")"
done
# The packaged entry names the binary and the icon relative to /usr/local;
# here they are where this install put them.
tmp=$(mktemp)
sed -e "s|^Exec=hookscope|Exec=$prefix/bin/hookscope|" -e "s|^Icon=.*|Icon=$icon|" "$src/share/applications/Hookscope.desktop" > "$tmp"
put 0644 "$tmp" "$desktop"
rm -f "$tmp"
mkdir -p "$(dirname "$dest$manifest")"
printf '%s\n' "${written[@]}" > "$dest$manifest"
refresh

echo "Installed Hookscope into $prefix (${#written[@]} files, listed in $manifest):"
echo "  $prefix/bin/hookscope, the desktop entry $desktop, its icon and man pages."
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "Note: $prefix/bin is not on your PATH; add it to run 'hookscope' from a terminal." ;; esac
