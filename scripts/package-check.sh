#!/usr/bin/env bash
# Checks a Linux package made by scripts/package.sh the way a user meets it:
# lists it; checks it holds the binary, the desktop entry, the icon and a
# man page for every command; validates the desktop entry with
# desktop-file-validate (no error, warning or hint allowed); installs it
# into a throw-away HOME with its install.sh; starts the app from the
# installed desktop entry under Xvfb (gio launch, as a desktop menu does),
# waits for its window and its receiver, screenshots it; uninstalls it and
# checks that nothing it installed is left.
#
#   package-check.sh dist/hookscope-<version>-linux-<arch>.tar.xz [screenshot.png]
set -euo pipefail
pkg=${1:?usage: package-check.sh PACKAGE.tar.xz [SCREENSHOT.png]}
shot=${2:-}
work=$(mktemp -d)
cleanup() {
  [ -n "${app:-}" ] && { kill "$app" 2>/dev/null || true; }
  [ -n "${xvfb:-}" ] && { kill "$xvfb" 2>/dev/null; wait "$xvfb" 2>/dev/null; } || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "package-check: $*" >&2; exit 1; }

echo "package-check: contents of $pkg"
tar -tvJf "$pkg"
mkdir -p "$work/x"
tar -xJf "$pkg" -C "$work/x"
root="$work/x/hookscope"
usr="$root/usr/local"
bin="$usr/bin/hookscope"
for f in "$bin" "$usr/share/applications/Hookscope.desktop" "$usr/share/pixmaps/Hookscope.png" "$root/install.sh" "$root/Makefile"; do
  [ -e "$f" ] || fail "the package lacks ${f#"$work/x/"}"
done
[ -x "$bin" ] || fail "the binary is not executable"
"$bin" version

# A man page for every command the binary has (help aside).
pages=0
while read -r cmd; do
  page="$usr/share/man/man1/hookscope${cmd:+-$cmd}.1.gz"
  [ -f "$page" ] || fail "no man page for 'hookscope $cmd' (${page#"$work/x/"})"
  gzip -t "$page"
  pages=$((pages + 1))
done < <(
  echo ""
  "$bin" __complete "" 2>/dev/null | grep -v '^:' | cut -f1 | grep -vx help | while read -r c; do
    echo "$c"
    "$bin" __complete "$c" "" 2>/dev/null | grep -v '^:' | cut -f1 | grep -vx -e help -e bash -e zsh -e fish -e powershell | sed "s/^/$c-/"
  done | grep -v -e '-[0-9]' || true
)
echo "package-check: $pages man pages, one per command"

validate() {
  local out
  out=$(desktop-file-validate "$1" 2>&1) || fail "desktop-file-validate $1: $out"
  [ -z "$out" ] || fail "desktop-file-validate $1: $out"
}
command -v desktop-file-validate >/dev/null || fail "desktop-file-validate missing (Debian's desktop-file-utils; make deps-package installs it)"
validate "$usr/share/applications/Hookscope.desktop"
echo "package-check: the desktop entry passes desktop-file-validate"

# Install for a user whose HOME is a fresh folder.
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share" LANG=en_US.UTF-8 LC_ALL=
mkdir -p "$HOME"
"$root/install.sh"
entry="$HOME/.local/share/applications/io.hookscope.app.desktop"
validate "$entry"
grep -qx "Exec=$HOME/.local/bin/hookscope" "$entry" || fail "installed entry runs $(grep ^Exec= "$entry")"
icon=$(sed -n 's/^Icon=//p' "$entry")
[ -f "$icon" ] || fail "installed entry's icon $icon is missing"
"$HOME/.local/bin/hookscope" version >/dev/null

# Start it from the entry, as the desktop menu would.
if curl -s -o /dev/null --max-time 1 http://127.0.0.1:8787/ 2>/dev/null; then
  fail "something already listens on 127.0.0.1:8787 (a running Hookscope?); stop it and run again"
fi
command -v Xvfb >/dev/null || fail "Xvfb missing (make deps-test)"
command -v gio >/dev/null || fail "gio missing (Debian's libglib2.0-bin)"
disp=:$(( 80 + RANDOM % 9 ))
Xvfb "$disp" -screen 0 1440x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
sleep 1
DISPLAY=$disp gio launch "$entry"
up=0
for _ in $(seq 150); do
  app=$(pgrep -n -f "^$HOME/.local/bin/hookscope" || true)
  if [ -n "$app" ] && curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' --data '{"hook":{"uuid":"package-check"},"events":[]}' http://127.0.0.1:8787/webhooks 2>/dev/null; then up=1; break; fi
  sleep 0.2
done
[ $up -eq 1 ] || fail "the app started from $entry never answered on 127.0.0.1:8787"
if command -v xdotool >/dev/null; then
  for _ in $(seq 50); do DISPLAY=$disp xdotool search --name '^Hookscope' >/dev/null 2>&1 && break; sleep 0.2; done
  DISPLAY=$disp xdotool search --name '^Hookscope' >/dev/null || fail "no Hookscope window"
fi
sleep 1
kill -0 "$app" 2>/dev/null || fail "the app exited"
if [ -n "$shot" ] && command -v import >/dev/null; then
  DISPLAY=$disp import -window root "$shot"
  echo "package-check: screenshot of the app started from its desktop entry: $shot"
fi
kill "$app"
for _ in $(seq 50); do kill -0 "$app" 2>/dev/null || break; sleep 0.1; done
app=
echo "package-check: the installed app started from its desktop entry"

"$root/install.sh" --uninstall
left=$(find "$HOME/.local" -type f 2>/dev/null)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "package-check: ok"
