package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/storage"
)

// runFull runs `hookscope <args>` in-process on the whole command tree.
func runFull(t *testing.T, getenv map[string]string, args ...string) clitest.Result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return getenv[k] }}
	code := Run(context.Background(), env, args)
	return clitest.Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

func TestExportImportCommands(t *testing.T) {
	dbPath := clitest.SeedStore(t)
	dir := t.TempDir()
	har := filepath.Join(dir, "x.har")
	r := runFull(t, nil, "export", "--db", dbPath, "--format", "har", "--out", har)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Exported 3 deliveries as har") {
		t.Fatalf("export: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	// Into a fresh store, analyzed like received deliveries.
	fresh := filepath.Join(dir, "fresh.db")
	r = runFull(t, map[string]string{"S": clitest.CaptureSecret}, "import", "--db", fresh, "--secret-env", "S", har)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Imported 3 deliveries") || !strings.Contains(r.Stdout, "3 valid") {
		t.Fatalf("import: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	a, _ := storage.Open(dbPath)
	b, _ := storage.Open(fresh)
	for id := int64(1); id <= 3; id++ {
		x, err1 := a.Get(context.Background(), id)
		y, err2 := b.Get(context.Background(), id)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(x.Delivery.Body, y.Delivery.Body) || len(x.Delivery.Headers) != len(y.Delivery.Headers) || y.Delivery.Source != "import" {
			t.Errorf("delivery %d changed in the round trip", id)
		}
		if y.Analysis == nil || y.Analysis.Signature.Status != inspector.SignatureValid || len(y.Analysis.Events) != len(x.Analysis.Events) {
			t.Errorf("delivery %d not analyzed after import: %+v", id, y.Analysis)
		}
	}
	a.Close()
	b.Close()

	// Fixtures, then import them.
	fx := filepath.Join(dir, "fixtures")
	r = runFull(t, map[string]string{"T": "test-secret-Q"}, "export", "--db", dbPath, "--format", "fixtures", "--out", fx, "--secret-env", "T", "--json")
	var sum struct {
		Files []string `json:"files"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil || len(sum.Files) != 5 {
		t.Fatalf("fixtures: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	r = runFull(t, nil, "import", "--db", fresh, "--json", fx)
	if r.Code != 0 || !strings.Contains(r.Stdout, `"imported":4`) {
		t.Errorf("import fixtures: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}

	// NDJSON to standard output, selected by type.
	r = runFull(t, nil, "export", "--db", dbPath, "--format", "ndjson", "--out", "-", "--type", catalog.TypeMediaReady)
	if r.Code != 0 || strings.Count(r.Stdout, "\n") != 1 || !strings.Contains(r.Stdout, `"id":2`) {
		t.Errorf("ndjson: %d %q", r.Code, r.Stdout)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--format", "har"}, "give the file or folder to write"},
		{[]string{"export", "--format", "xml", "--out", "x"}, "unknown export format"},
		{[]string{"export", "--format", "fixtures", "--out", "x"}, "needs --secret"},
		{[]string{"export", "--format", "json", "--out", "-"}, "writes a folder"},
		{[]string{"export", "--format", "har", "--out", "x", "--secret", "s"}, "only used by"},
		{[]string{"import"}, "give the HAR file"},
		{[]string{"import", "a", "b"}, "one PATH"},
	} {
		r := runFull(t, nil, tt.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tt.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tt.args, r.Code, r.Stderr, tt.want)
		}
	}
	bad := filepath.Join(dir, "bad.har")
	os.WriteFile(bad, []byte("garbage"), 0o644)
	if r := runFull(t, nil, "import", "--db", fresh, bad); r.Code != 1 || !strings.Contains(r.Stderr, "neither a HAR") {
		t.Errorf("bad import: %d %s", r.Code, r.Stderr)
	}
}

// TestImportReadsWhatHookscopeWrites: the folders samples and every
// folder export write import again, from the command line, analyzed.
func TestImportReadsWhatHookscopeWrites(t *testing.T) {
	dbPath := clitest.SeedStore(t)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if r := runFull(t, map[string]string{"K": "sample-secret"}, "samples", samples, "--secret-env", "K", "--seed", "3"); r.Code != 0 {
		t.Fatalf("samples: %d %s", r.Code, r.Stderr)
	}
	fresh := filepath.Join(dir, "fresh.db")
	r := runFull(t, map[string]string{"K": "sample-secret"}, "import", "--db", fresh, "--secret-env", "K", samples)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Imported 17 deliveries") || !strings.Contains(r.Stdout, "(samples)") || !strings.Contains(r.Stdout, "17 valid") {
		t.Fatalf("import samples: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	for _, f := range []string{"curl", "json"} {
		out := filepath.Join(dir, f)
		if r := runFull(t, nil, "export", "--db", dbPath, "--format", f, out); r.Code != 0 {
			t.Fatalf("export %s: %d %s", f, r.Code, r.Stderr)
		}
		r := runFull(t, map[string]string{"S": clitest.CaptureSecret}, "import", "--db", fresh, "--secret-env", "S", out)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Imported 3 deliveries") || !strings.Contains(r.Stdout, "("+f+")") || !strings.Contains(r.Stdout, "3 valid") {
			t.Errorf("import %s: %d %s %s", f, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// TestChecksBeforeTheStore: what can be told from the command line and
// the files it names is said before a store is opened (or created).
func TestChecksBeforeTheStore(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.har")
	if err := os.WriteFile(existing, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(full, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", existing}, 2, "already exists; give --force"},
		{[]string{"export", full, "--format", "json"}, 2, "is not empty; give --force"},
		{[]string{"export", existing, "--format", "curl"}, 2, "is a file; --format curl writes a folder"},
		{[]string{"import", filepath.Join(dir, "missing.har")}, 1, "missing.har"},
		{[]string{"sandbox", "--scopes", "media:write"}, 2, "media:write"},
	} {
		db := filepath.Join(t.TempDir(), "hooks.db")
		r := runFull(t, nil, append(tc.args, "--db", db)...)
		if tc.args[0] == "sandbox" {
			r = runFull(t, nil, tc.args...)
		}
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want %d and %q", tc.args, r.Code, r.Stderr, tc.code, tc.want)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("%v: the store was created", tc.args)
		}
	}
}

// TestUsageErrors: a mistyped command or flag, a bad value, a stray
// argument — each answered in two lines (what was wrong and the nearest
// valid name, then where to get help) with exit code 2.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		help string
	}{
		{[]string{"lisen"}, `hookscope: unknown command "lisen" (did you mean listen or list?)`, "hookscope"},
		{[]string{"exprot", "x.har"}, `(did you mean export?)`, "hookscope"},
		// A mistyped command followed by flags names the command, not a flag.
		{[]string{"lisen", "--addr", "x"}, `hookscope: unknown command "lisen" (did you mean listen or list?)`, "hookscope"},
		{[]string{"sned", "-all-types"}, `hookscope: unknown command "sned" (did you mean send?)`, "hookscope"},
		{[]string{"oauth", "cal", "--profile", "x"}, `hookscope oauth: unknown command "cal" (did you mean call?)`, "hookscope oauth"},
		{[]string{"--json", "lisen"}, "hookscope: unknown flag: --json", "hookscope"},
		{[]string{"listen", "--adr", "127.0.0.1:1"}, "hookscope listen: unknown flag: --adr (did you mean --addr?)", "hookscope listen"},
		{[]string{"listen", "-adr", "127.0.0.1:1"}, "unknown flag: -adr (did you mean --addr?)", "hookscope listen"},
		// Go's flag package took one dash; scripts written for it still parse.
		{[]string{"listen", "-addr", "127.0.0.1:1", "-answer=4040"}, `--answer (rule 1): "4040": status 4040: give one from 200 to 599`, "hookscope listen"},
		{[]string{"send", "http://127.0.0.1:1", "--all-type"}, "unknown flag: --all-type (did you mean --all-types?)", "hookscope send"},
		{[]string{"replay", "1", "--to", "http://127.0.0.1:1", "--secret-env", "X"}, "unknown flag: --secret-env", "hookscope replay"},
		{[]string{"send", "--count", "many"}, `--count "many": want a whole number`, "hookscope send"},
		{[]string{"replay", "1", "--delay", "soon"}, `--delay "soon": want a duration`, "hookscope replay"},
		{[]string{"oauth", "cal"}, `hookscope oauth: unknown command "cal" (did you mean call?)`, "hookscope oauth"},
		{[]string{"oauth"}, "missing subcommand", "hookscope oauth"},
		{[]string{"listen", "extra"}, `unexpected argument "extra"`, "hookscope listen"},
		{[]string{"help", "lisen"}, `no help topic "lisen"`, "hookscope help"},
		{[]string{"completion", "tcsh"}, "name one shell", "hookscope completion"},
		{[]string{"version", "now"}, "unexpected argument", "hookscope version"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runFull(t, nil, tc.args...)
			lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
			if r.Code != 2 || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || lines[1] != "Run '"+tc.help+" --help' for usage." || r.Stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", r.Code, r.Stdout, r.Stderr, tc.want)
			}
		})
	}
}

// TestHelpAndVersion: help goes to stdout with exit 0 in every form, and
// every command's help carries its examples.
func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Available Commands:"},
		{[]string{"--help"}, "Available Commands:"},
		{[]string{"help"}, "Available Commands:"},
		{[]string{"help", "listen"}, "hookscope listen [flags]"},
		{[]string{"help", "oauth", "call"}, "hookscope oauth call [PATH | URL | HASHED_ID]"},
		{[]string{"listen", "-h"}, "--max-body"},
		{[]string{"listen", "-help"}, "--max-body"},
		{[]string{"export", "--help"}, "--format"},
		{[]string{"version"}, "hookscope 0.1.0-dev\n"},
		{[]string{"--version"}, "hookscope 0.1.0-dev\n"},
		{[]string{"-version"}, "hookscope 0.1.0-dev\n"},
	} {
		r := runFull(t, nil, tc.args...)
		if r.Code != 0 || !strings.Contains(r.Stdout, tc.want) || r.Stderr != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout lacks %q:\n%s", tc.args, r.Code, r.Stderr, tc.want, r.Stdout)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" && c.Name() != "__complete" && c.Name() != "__completeNoDesc" {
			t.Errorf("%s has no examples in its help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(&Env{Stdout: io.Discard, Stderr: io.Discard, Version: "x"}))
}

// TestFlagsAfterPositionals: the example, flags after the
// positional argument, reaches the API call (and fails there, exit 2,
// for want of a profile — not at parsing).
func TestFlagsAfterPositionals(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hs.db")
	s, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := runFull(t, nil, "oauth", "call", "/v1/medias/abc", "--method", "header", "--db", db)
	if r.Code != 2 || !strings.Contains(r.Stderr, "base URL") || strings.Contains(r.Stderr, "unexpected argument") {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
}
