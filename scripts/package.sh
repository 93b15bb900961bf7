#!/usr/bin/env bash
# Builds the Linux package dist/hookscope-<version>-linux-<arch>.tar.xz:
# Fyne's own packager (pinned in go.mod as a tool) builds the release
# binary with the project's tags and writes the binary, the .desktop entry
# and the icon, reading FyneApp.toml; this script adds the man pages, the
# installer (install.sh) and a Makefile for it, and packs the result again
# with fixed owners, order and times. It runs on a copy of the tree, so the
# packager's temporary files never appear in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TAGS:=migrated_fynedo,no_emoji}"
version=$(sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)
arch=$(go env GOARCH)
out="dist/hookscope-$version-linux-$arch.tar.xz"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/src" "$work/pkg" dist
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src"
(
  cd "$work/src"
  # The packager passes -ldflags it finds in GOFLAGS to go build.
  GOFLAGS="-ldflags=-X=github.com/hookscope/hookscope/cli.Version=$version" \
    go tool fyne package -os linux --release --tags "$TAGS" 2>&1 | grep -v -e 'deprecated and has migrated' -e 'new tool can be installed' -e 'go install fyne.io/tools' || true
)
[ -f "$work/src/Hookscope.tar.xz" ] || { echo "package: Fyne's packager wrote no Hookscope.tar.xz" >&2; exit 1; }
tar -xJf "$work/src/Hookscope.tar.xz" -C "$work/pkg"
root="$work/pkg/hookscope"
usr="$root/usr/local"
[ -d "$usr" ] || usr="$root/usr"

# Man pages from the same command tree, compressed as Debian ships them.
go run ./cli/internal/genman -out "$usr/share/man/man1" -version "$version"
gzip -n -9 "$usr"/share/man/man1/*.1
cp scripts/install.sh "$root/install.sh"
chmod 0755 "$root/install.sh"
cat > "$root/Makefile" <<'MAKE'
# Hookscope package. Everything goes through install.sh, which records what
# it writes so that uninstall removes exactly that.
default:
	@echo "make user-install     install for you, into ~/.local (no root)"
	@echo "make user-uninstall   remove that install"
	@echo "sudo make install     install for everyone, into /usr/local"
	@echo "sudo make uninstall   remove that install"
user-install:
	./install.sh --prefix "$(HOME)/.local"
user-uninstall:
	./install.sh --uninstall --prefix "$(HOME)/.local"
install:
	./install.sh --prefix /usr/local
uninstall:
	./install.sh --uninstall --prefix /usr/local
MAKE

tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
  -C "$work/pkg" -cJf "$out.tmp" hookscope
mv "$out.tmp" "$out"
echo "package: $out"
tar -tvJf "$out"
