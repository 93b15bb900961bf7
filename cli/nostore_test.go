package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadingCommandsNeedAStore: a command that reads the store, given a
// mistyped --db (or with no default store yet), says "no store at PATH"
// and what to check, exits 1, and creates nothing: no file, no folder, no
// -wal or -shm. A usage error creates nothing either and exits 2.
func TestReadingCommandsNeedAStore(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", out + ".har"}, 1, "no store at"},
		{[]string{"export", out + ".ndjson", "--salvage"}, 1, "no store at"},
		{[]string{"replay", "1", "--to", "http://127.0.0.1:1/h"}, 1, "no store at"},
		{[]string{"replay", "1"}, 1, "no store at"},
		{[]string{"reverify", "--secret", "s"}, 1, "no store at"},
		{[]string{"oauth", "profiles"}, 1, "no store at"},
		{[]string{"oauth", "profiles", "--delete", "demo"}, 1, "no store at"},
		{[]string{"oauth", "history"}, 1, "no store at"},
		{[]string{"oauth", "refresh", "--profile", "demo"}, 1, "no store at"},
		{[]string{"oauth", "call", "k3j9x2m7pq", "--profile", "demo"}, 1, "no store at"},
		{[]string{"oauth", "exchange", "--profile", "demo"}, 1, "no store at"},
		// Usage errors: said before any store is looked for.
		{[]string{"export"}, 2, "give the file or folder to write"},
		{[]string{"export", out + ".har", "--salvage", "--id", "1"}, 2, "takes no selection flags"},
		{[]string{"reverify"}, 2, "give at least one --secret"},
		{[]string{"oauth", "history", "--format", "pdf"}, 2, "--format must be md, har or json"},
		{[]string{"oauth", "profiles", "stray"}, 2, "unexpected argument"},
		{[]string{"replay", "x", "--to", "http://127.0.0.1:1/h"}, 2, ""},
		{[]string{"oauth", "call", "--profile", "demo"}, 2, "give what to call"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "typo")
			db := filepath.Join(dir, "hooks.db")
			r := runFull(t, nil, append(tc.args, "--db", db)...)
			if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.Code, r.Stderr, tc.code, tc.want)
			}
			if tc.code == 1 && (!strings.Contains(r.Stderr, "no store at "+db+": check the path given to --db") || strings.Count(r.Stderr, "\n") != 1) {
				t.Errorf("stderr %q does not name the path and --db in one line", r.Stderr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s was created", dir)
			}
		})
	}
}

// TestReadingCommandsDefaultStore: without --db the default store is
// named as such, and HOOKSCOPE_DB (the window's store) is pointed at.
func TestReadingCommandsDefaultStore(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", cfg)
	window := filepath.Join(cfg, "window.db")
	r := runFull(t, map[string]string{"HOOKSCOPE_DB": window}, "oauth", "history")
	def := filepath.Join(cfg, "fyne", "io.hookscope.app", "hookscope.db")
	if r.Code != 1 || !strings.Contains(r.Stderr, "no store at "+def+" (the default store)") || !strings.Contains(r.Stderr, "--db "+window) {
		t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	if ents, _ := os.ReadDir(cfg); len(ents) != 0 {
		t.Errorf("created %v in the config folder", ents)
	}
}

// TestReadingCommandsReadAnExistingStore: the same commands work on a
// store that exists (reached through --db=~/…, which no shell expands).
func TestReadingCommandsReadAnExistingStore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	// A store made by a writing command.
	if r := runFull(t, map[string]string{"S": "sandbox-demo-secret"}, "oauth", "authorize", "--db", filepath.Join(home, "x.db"), "--profile", "demo", "--save",
		"--base-url", "http://127.0.0.1:1", "--client-id", "c", "--client-secret-env", "S", "--redirect-uri", "http://127.0.0.1:1/cb", "--paste", "--timeout", "1ms"); r.Code != 1 {
		t.Fatalf("authorize: exit %d %s", r.Code, r.Stderr)
	}
	r := runFull(t, nil, "oauth", "profiles", "--db=~/x.db")
	if r.Code != 0 || !strings.Contains(r.Stdout, "demo") {
		t.Errorf("profiles: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}
