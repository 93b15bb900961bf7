package replay

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/storage"
)

// run runs `hookscope <args>` in-process with replay as the only command.
func runCLI(t *testing.T, env map[string]string, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, env, args...)
}

// sink is a consumer that records what it got and answers a set status.
type sink struct {
	mu     sync.Mutex
	bodies [][]byte
	sigs   []string
	status int
}

func newSink(t *testing.T) (*sink, *httptest.Server) {
	s := &sink{status: 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.sigs = append(s.sigs, r.Header.Get(inspector.SignatureHeader))
		st := s.status
		s.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func TestReplayCommand(t *testing.T) {
	dbPath := clitest.SeedStore(t)
	s, srv := newSink(t)
	const devSecret = "dev-secret-Z9"
	env := map[string]string{"DEV": devSecret}

	r := runCLI(t, env, "replay", "--db", dbPath, "--id", "2", "--to", srv.URL+"/hook", "--resign-secret-env", "DEV")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "delivery 2 resigned") || !strings.Contains(r.Stdout, "200 OK") {
		t.Errorf("stdout: %s", r.Stdout)
	}
	if v := inspector.Verify(s.sigs[0], true, s.bodies[0], [][]byte{[]byte(devSecret)}); v.Status != inspector.SignatureValid {
		t.Errorf("re-signed replay: %s", v.Reason)
	}

	// Chaos: both batches' deliveries, twice each, shuffled.
	r = runCLI(t, env, "replay", "--db", dbPath, "--id", "1,3", "--times", "2", "--shuffle", "--seed", "5", "--to", srv.URL, "--json")
	if r.Code != 0 || s.count() != 5 || strings.Count(r.Stdout, "\n") != 4 {
		t.Fatalf("chaos: exit %d, server saw %d: %s %s", r.Code, s.count(), r.Stdout, r.Stderr)
	}
	// Split by type: the batch becomes two messages.
	r = runCLI(t, env, "replay", "--db", dbPath, "--type", catalog.TypeMediaCreated, "--split", "--resign-secret-env", "DEV", "--to", srv.URL)
	if r.Code != 0 || s.count() != 7 {
		t.Fatalf("split: exit %d, server saw %d: %s", r.Code, s.count(), r.Stderr)
	}

	// Edited body from a file.
	edited := filepath.Join(t.TempDir(), "edited.json")
	os.WriteFile(edited, []byte(`{"hook":{"uuid":"edited"},"events":[]}`), 0o644)
	r = runCLI(t, env, "replay", "--db", dbPath, "--id", "2", "--body", edited, "--resign-secret-env", "DEV", "--to", srv.URL)
	if r.Code != 0 || string(s.bodies[7]) != `{"hook":{"uuid":"edited"},"events":[]}` {
		t.Fatalf("edited: exit %d: %s", r.Code, r.Stderr)
	}
	os.WriteFile(edited, []byte("{\"hook\": nope}"), 0o644)
	r = runCLI(t, env, "replay", "--db", dbPath, "--id", "2", "--body", edited, "--resign-secret-env", "DEV", "--to", srv.URL)
	if r.Code != 1 || !strings.Contains(r.Stderr, "byte offset 10") {
		t.Errorf("bad edit: exit %d: %s", r.Code, r.Stderr)
	}

	// A non-2xx answer fails the command. No --to: the last target is used.
	s.mu.Lock()
	s.status = 500
	s.mu.Unlock()
	r = runCLI(t, env, "replay", "--db", dbPath, "--id", "3")
	if r.Code != 1 || !strings.Contains(r.Stderr, "1 of 1 send was not answered 2xx") {
		t.Errorf("500: exit %d: %s", r.Code, r.Stderr)
	}

	// Every replay is recorded with its delivery; the secret nowhere in the store.
	db, err := storage.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := db.Replays(context.Background(), 2, 0)
	db.Close()
	if err != nil || len(reps) != 2 || reps[1].Mode != "resigned" || reps[1].Status != 200 || reps[0].Mode != "edited" {
		t.Errorf("recorded replays of delivery 2: %v %+v", err, reps)
	}
	for _, f := range []string{dbPath, dbPath + "-wal"} {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(devSecret)) {
			t.Errorf("%s contains the re-signing secret", f)
		}
	}
	if strings.Contains(r.Stdout+r.Stderr, devSecret) {
		t.Error("output contains the secret")
	}
}

func TestReplayUsage(t *testing.T) {
	dbPath := clitest.SeedStore(t)
	to := "http://127.0.0.1:9/"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", to}, "choose what to replay"},
		{[]string{"--id", "1"}, "no earlier target"},
		{[]string{"--id", "1", "--to", "ftp://x"}, "scheme"},
		{[]string{"--id", "1", "--to", to, "--split", "--merge"}, "exclude each other"},
		{[]string{"--id", "1", "--to", to, "--split"}, "must be signed"},
		{[]string{"--id", "1", "--to", to, "--times", "0"}, "--times"},
		{[]string{"--id", "x", "--to", to}, "not a delivery id"},
		{[]string{"--since", "soon", "--to", to}, "--since"},
		{[]string{"--id", "1", "--to", to, "--body", "b.json"}, "needs a secret"},
		{[]string{"--id", "1", "--to", to, "--body", "b.json", "--times", "2", "--resign-secret", "s"}, "does not combine"},
		{[]string{"--id", "1", "--to", to, "--resign-secret-env", "UNSET"}, "unset"},
		{[]string{"--id", "1", "--to", to, "--bogus"}, "bogus"},
		{[]string{"--id", "1", "--to", to, "--event", "abc"}, "add --split or --merge"},
	} {
		r := runCLI(t, nil, append([]string{"replay", "--db", dbPath}, tt.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, r.Code, r.Stderr, tt.want)
		}
	}
	r := runCLI(t, nil, "replay", "--db", dbPath, "--id", "99", "--to", to)
	if r.Code != 1 || !strings.Contains(r.Stderr, "no stored delivery") {
		t.Errorf("empty selection: %d %s", r.Code, r.Stderr)
	}
	if r := runCLI(t, nil, "replay", "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "Examples:") {
		t.Errorf("replay --help: exit %d: %s", r.Code, r.Stdout)
	}
}
