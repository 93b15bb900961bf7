#!/usr/bin/env bash
# Cross-builds the Windows app dist/hookscope-<version>-windows-amd64.exe
# with Fyne's packager (icon, version information and manifest embedded)
# and Debian's MinGW compiler for Fyne's cgo driver. Like package.sh it
# works on a copy of the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TAGS:=migrated_fynedo,no_emoji}"
version=$(sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)
out="dist/hookscope-$version-windows-amd64.exe"
command -v x86_64-w64-mingw32-gcc >/dev/null || { echo "package-windows: x86_64-w64-mingw32-gcc missing (Debian's gcc-mingw-w64-x86-64)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" dist
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src"
# The packager itself runs here (the version go.mod pins); only its build
# of Hookscope targets Windows (GOOS set for `go tool` would build the tool
# for Windows too).
go build -o "$work/fyne" fyne.io/fyne/v2/cmd/fyne
(
  cd "$work/src"
  CC=x86_64-w64-mingw32-gcc CXX=x86_64-w64-mingw32-g++ GOOS=windows GOARCH=amd64 CGO_ENABLED=1 \
    GOFLAGS="-ldflags=-X=github.com/hookscope/hookscope/cli.Version=$version" \
    "$work/fyne" package -os windows --release --tags "$TAGS" 2>&1 | grep -v -e 'deprecated and has migrated' -e 'new tool can be installed' -e 'go install fyne.io/tools' || true
)
[ -f "$work/src/Hookscope.exe" ] || { echo "package-windows: Fyne's packager wrote no Hookscope.exe" >&2; exit 1; }
mv "$work/src/Hookscope.exe" "$out"
echo "package-windows: $out"
file "$out" 2>/dev/null || ls -l "$out"
