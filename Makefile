# Hookscope: `make run` and `make test` are all a newcomer needs on a fresh
# Debian/Ubuntu machine with Go installed. Both install what is missing.

SHELL      := /bin/bash
GO         ?= go
export TAGS := migrated_fynedo,no_emoji
BIN        := ./hookscope
# Fyne parses the locale at start-up and logs an error for "C" (C.UTF-8 included).
export LANG := en_US.UTF-8
export LC_ALL :=
export CGO_ENABLED := 1

# Debian packages: Fyne's cgo build needs the X11/GL headers; the smoke test
# and screenshots need Xvfb, ImageMagick and xdotool.
BUILD_PKGS := gcc pkg-config libgl1-mesa-dev xorg-dev
TEST_PKGS  := xvfb imagemagick xdotool openssl bash-completion
# Packaging: xz for the archive; desktop-file-validate and gio (launching
# the installed desktop entry) for its check.
PACKAGE_PKGS := xz-utils desktop-file-utils libglib2.0-bin
# Cross-building the Windows .exe (cgo: Fyne's GLFW driver) needs MinGW.
WINDOWS_PKGS := gcc-mingw-w64-x86-64

VERSION    := $(shell sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)
PKG        := dist/hookscope-$(VERSION)-linux-$(shell $(GO) env GOARCH).tar.xz
PREFIX     ?= $(HOME)/.local

FUZZTIME   ?= 3s
GOTEST     := $(GO) test -tags $(TAGS)

# The real cloudflared, for the tunnel tests only (never shipped): its path
# when this workplace has it; elsewhere those tests skip and say what to set.
CLOUDFLARED_FOR_TESTS := $(abspath ../shared/tools/cloudflared/cloudflared)
ifneq ($(wildcard $(CLOUDFLARED_FOR_TESTS)),)
export HOOKSCOPE_CLOUDFLARED ?= $(CLOUDFLARED_FOR_TESTS)
endif

.PHONY: run build test deps deps-build deps-test deps-package modules vet unit race fuzz fuzz-short smoke bench screenshots clean \
        man package package-check package-windows install uninstall

run: deps-build build
	$(BIN)

build: modules
	$(GO) build -tags $(TAGS) -o $(BIN) .

deps: deps-build deps-test

deps-build:
	@scripts/apt-install.sh $(BUILD_PKGS)

deps-test:
	@scripts/apt-install.sh $(TEST_PKGS)

deps-package:
	@scripts/apt-install.sh $(PACKAGE_PKGS)

modules:
	$(GO) mod download

test: deps modules vet race fuzz-short build smoke
	@echo "make test: all checks passed"

# The gate: zero findings from each. staticcheck's version is pinned by the
# tool directive in go.mod.
vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	$(GO) mod tidy -diff
	$(GO) tool staticcheck -tags $(TAGS) ./...

race:
	$(GOTEST) -race -count=1 -timeout 20m ./...

unit:
	$(GOTEST) -count=1 ./...

# Each fuzz target runs briefly in `make test`; `make fuzz FUZZTIME=5m` goes longer.
fuzz-short:
	@scripts/fuzz.sh $(FUZZTIME)

fuzz:
	@scripts/fuzz.sh $(if $(filter 3s,$(FUZZTIME)),2m,$(FUZZTIME))

# Start the real binary under Xvfb, send it deliveries, check it stays up.
smoke: build
	@scripts/smoke.sh $(BIN)

bench: deps-build modules
	@scripts/bench.sh

screenshots: deps build
	@scripts/screenshots.sh $(BIN)

# Man pages for every command, generated from the command tree (cobra/doc).
man: modules
	$(GO) run ./cli/internal/genman -out dist/man -version $(VERSION)

# The Linux package: Fyne's packager (go tool fyne, pinned in go.mod) builds
# the release binary with $(TAGS); man pages and install.sh are added.
package: deps-build deps-package modules
	@scripts/package.sh

# What CI checks: the package's listing, the desktop entry (validated), man
# pages, and the installed app started from its desktop entry under Xvfb.
package-check: package deps-test
	@scripts/package-check.sh $(PKG) dist/desktop-launch.png

# Windows: Fyne's packager cross-builds Hookscope.exe (icon and manifest
# embedded) with MinGW. macOS needs Apple's SDK, which Debian cannot have.
package-windows: deps-build modules
	@scripts/apt-install.sh $(WINDOWS_PKGS)
	@scripts/package-windows.sh

# Install for the current user into $(PREFIX) (~/.local, no root): binary,
# desktop entry, icon, man pages; install.sh records them in a manifest.
install: package
	@tmp=$$(mktemp -d) && tar -xJf $(PKG) -C "$$tmp" && "$$tmp/hookscope/install.sh" --prefix "$(PREFIX)"; \
	rc=$$?; rm -rf "$$tmp"; exit $$rc

# Remove exactly the files the manifest of `make install` lists.
uninstall:
	@scripts/install.sh --uninstall --prefix "$(PREFIX)"

clean:
	rm -f $(BIN)
	rm -rf dist
