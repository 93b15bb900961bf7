// Package prove holds the measurements and guards behind Hookscope's claims
// about speed and safety: an end-to-end crash test of the real binary, a
// survey of hostile input against a real receiver, secret-leak checks of
// every flow, and the helpers the load generator (cmd/hsload) shares with
// them. See docs/benchmarks.md and docs/security.md.
package prove

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// Body returns a realistic webhook message of at least size bytes: events of
// every type in turn, as many as it takes. Each call with the same generator
// gives a new hook uuid, so bodies are unique.
func Body(g *simulate.Generator, size int) []byte {
	types := catalog.Types()
	var events []simulate.Event
	// Grow by the estimated shortfall rather than one event at a time:
	// rendering is linear, so re-rendering per event would be quadratic
	// for a 1 MiB body.
	for want := 1; ; {
		for len(events) < want {
			events = append(events, g.Event(types[len(events)%len(types)].Name))
		}
		b := g.Message(events...).Body()
		if len(b) >= size {
			return b
		}
		want = len(events) + max(1, (size-len(b))*len(events)/len(b))
	}
}

// ModuleRoot finds the repository root (the folder holding go.mod) from the
// working directory upwards; tests run in their package folder.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/hookscope/hookscope")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find module root: no go.mod of github.com/hookscope/hookscope above the working directory")
		}
		dir = parent
	}
}

// BuildHookscope builds the real hookscope binary (the same main package
// and tags as `make build`) into dir and returns its path.
func BuildHookscope(dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hookscope")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.Command("go", "build", "-tags", "migrated_fynedo", "-o", bin, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build hookscope: %w\n%s", err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// ChildEnv is the environment for a hookscope child process: Fyne logs a
// locale error for LANG=C, and a temporary HOME keeps the user's real
// config and store out of reach.
func ChildEnv(home string, extra ...string) []string {
	env := []string{"LANG=en_US.UTF-8", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "PATH=" + os.Getenv("PATH")}
	return append(env, extra...)
}
