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
TEST_PKGS  := xvfb imagemagick xdotool openssl

FUZZTIME   ?= 3s
GOTEST     := $(GO) test -tags $(TAGS)

.PHONY: run build test deps deps-build deps-test modules vet unit race fuzz fuzz-short smoke bench screenshots clean

run: deps-build build
	$(BIN)

build: modules
	$(GO) build -tags $(TAGS) -o $(BIN) .

deps: deps-build deps-test

deps-build:
	@scripts/apt-install.sh $(BUILD_PKGS)

deps-test:
	@scripts/apt-install.sh $(TEST_PKGS)

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

clean:
	rm -f $(BIN)
