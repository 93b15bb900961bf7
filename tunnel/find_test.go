package tunnel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindSaysWhatIsWrong: a cloudflared that cannot be run is named with
// what is wrong with it, for a configured path as for PATH, and only the
// PATH case carries install steps.
func TestFindSaysWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runnable := filepath.Join(dir, "runnable")
	if err := os.WriteFile(runnable, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // an empty PATH: no cloudflared on it
	for _, tc := range []struct {
		name, binary string
		configured   bool
		want         []string
		help         bool
	}{
		{"missing file", filepath.Join(dir, "nope"), true, []string{filepath.Join(dir, "nope"), "does not exist"}, false},
		{"directory", dir, true, []string{dir, "is a directory"}, false},
		{"not executable", plain, true, []string{plain, "is not executable", "-rw-r--r--", "chmod +x"}, false},
		{"a name not on PATH", "cloudflared-2024", true, []string{`"cloudflared-2024" is not on PATH`}, false},
		{"default, not on PATH", "", false, []string{"cloudflared is not on PATH", "install it"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Find(tc.binary, "linux")
			var ni *NotInstalledError
			if !errors.As(err, &ni) {
				t.Fatalf("Find(%q) = %v, want a *NotInstalledError", tc.binary, err)
			}
			if ni.Configured != tc.configured {
				t.Errorf("Configured = %v", ni.Configured)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if has := strings.Contains(err.Error(), "pkg.cloudflare.com"); has != tc.help {
				t.Errorf("install help in %q: %v, want %v", err, has, tc.help)
			}
		})
	}
	if p, err := Find(runnable, "linux"); err != nil || p != runnable {
		t.Fatalf("Find(runnable) = %q, %v", p, err)
	}
}
