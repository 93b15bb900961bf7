package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

const captureSecret = "capture-secret-A1"

// seedStore makes a store holding analyzed deliveries: a two-event batch,
// a media.ready, a live_event.registration, each signed with captureSecret.
func seedStore(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hooks.db")
	db, err := storage.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := simulate.New(21)
	msgs := []simulate.Message{
		g.Message(g.Event(catalog.TypeMediaCreated), g.Event(catalog.TypeMediaProcessing)),
		g.Message(g.Event(catalog.TypeMediaReady)),
		g.Message(g.Event(catalog.TypeLiveEventRegistration)),
	}
	ctx := context.Background()
	for _, m := range msgs {
		body := m.Body()
		hs := append([]inspector.Header{{Name: "Host", Value: "abc.trycloudflare.com"}}, m.Headers([]byte(captureSecret))...)
		if _, err := db.InsertDelivery(ctx, &inspector.Delivery{Method: "POST", Path: "/webhooks", Headers: hs, Body: body,
			BodyLength: int64(len(body)), Status: 200, RemoteAddr: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	eng := inspector.NewEngine(db, inspector.Options{Secrets: [][]byte{[]byte(captureSecret)}})
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

type cmdResult struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, env map[string]string, args ...string) cmdResult {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code := Run(context.Background(), e, args)
	return cmdResult{code, out.String(), errb.String()}
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
	dbPath := seedStore(t)
	s, srv := newSink(t)
	const devSecret = "dev-secret-Z9"
	env := map[string]string{"DEV": devSecret}

	r := run(t, env, "replay", "--db", dbPath, "--id", "2", "--to", srv.URL+"/hook", "--resign-secret-env", "DEV")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "delivery 2 resigned") || !strings.Contains(r.stdout, "200 OK") {
		t.Errorf("stdout: %s", r.stdout)
	}
	if v := inspector.Verify(s.sigs[0], true, s.bodies[0], [][]byte{[]byte(devSecret)}); v.Status != inspector.SignatureValid {
		t.Errorf("re-signed replay: %s", v.Reason)
	}

	// Chaos: both batches' deliveries, twice each, shuffled.
	r = run(t, env, "replay", "--db", dbPath, "--id", "1,3", "--times", "2", "--shuffle", "--seed", "5", "--to", srv.URL, "--json")
	if r.code != 0 || s.count() != 5 || strings.Count(r.stdout, "\n") != 4 {
		t.Fatalf("chaos: exit %d, server saw %d: %s %s", r.code, s.count(), r.stdout, r.stderr)
	}
	// Split by type: the batch becomes two messages.
	r = run(t, env, "replay", "--db", dbPath, "--type", catalog.TypeMediaCreated, "--split", "--resign-secret-env", "DEV", "--to", srv.URL)
	if r.code != 0 || s.count() != 7 {
		t.Fatalf("split: exit %d, server saw %d: %s", r.code, s.count(), r.stderr)
	}

	// Edited body from a file.
	edited := filepath.Join(t.TempDir(), "edited.json")
	os.WriteFile(edited, []byte(`{"hook":{"uuid":"edited"},"events":[]}`), 0o644)
	r = run(t, env, "replay", "--db", dbPath, "--id", "2", "--body", edited, "--resign-secret-env", "DEV", "--to", srv.URL)
	if r.code != 0 || string(s.bodies[7]) != `{"hook":{"uuid":"edited"},"events":[]}` {
		t.Fatalf("edited: exit %d: %s", r.code, r.stderr)
	}
	os.WriteFile(edited, []byte("{\"hook\": nope}"), 0o644)
	r = run(t, env, "replay", "--db", dbPath, "--id", "2", "--body", edited, "--resign-secret-env", "DEV", "--to", srv.URL)
	if r.code != 1 || !strings.Contains(r.stderr, "byte offset 10") {
		t.Errorf("bad edit: exit %d: %s", r.code, r.stderr)
	}

	// A non-2xx answer fails the command. No --to: the last target is used.
	s.mu.Lock()
	s.status = 500
	s.mu.Unlock()
	r = run(t, env, "replay", "--db", dbPath, "--id", "3")
	if r.code != 1 || !strings.Contains(r.stderr, "1 of 1 sends were not answered 2xx") {
		t.Errorf("500: exit %d: %s", r.code, r.stderr)
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
	if strings.Contains(r.stdout+r.stderr, devSecret) {
		t.Error("output contains the secret")
	}
}

func TestReplayUsage(t *testing.T) {
	dbPath := seedStore(t)
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
		r := run(t, nil, append([]string{"replay", "--db", dbPath}, tt.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	r := run(t, nil, "replay", "--db", dbPath, "--id", "99", "--to", to)
	if r.code != 1 || !strings.Contains(r.stderr, "no stored delivery") {
		t.Errorf("empty selection: %d %s", r.code, r.stderr)
	}
	for _, cmd := range []string{"replay", "check-consumer", "export", "import"} {
		r := run(t, nil, cmd, "--help")
		if r.code != 0 || !strings.Contains(r.stderr, "Examples:") {
			t.Errorf("%s --help: exit %d: %s", cmd, r.code, r.stderr)
		}
	}
}

func TestCheckConsumerCommand(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sig := r.Header.Get(inspector.SignatureHeader)
		if inspector.Verify(sig, sig != "", b, [][]byte{[]byte("k")}).Status != inspector.SignatureValid {
			w.WriteHeader(401)
		}
	}))
	defer good.Close()
	r := run(t, map[string]string{"S": "k"}, "check-consumer", "--to", good.URL, "--secret-env", "S", "--seed", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "22 passed, 0 warnings, 0 failed") {
		t.Errorf("good consumer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	naive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer naive.Close()
	r = run(t, nil, "check-consumer", "--to", naive.URL, "--secret", "k", "--json")
	var rep struct {
		OK     bool `json:"ok"`
		Failed int  `json:"failed"`
		Cases  []struct {
			Name    string `json:"name"`
			Verdict string `json:"verdict"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, r.stdout)
	}
	if r.code != 1 || rep.OK || rep.Failed != 2 || !strings.Contains(r.stderr, "2 of 22 cases failed") {
		t.Errorf("naive consumer: exit %d, %+v, %s", r.code, rep, r.stderr)
	}
	if r := run(t, nil, "check-consumer", "--to", naive.URL); r.code != 2 {
		t.Errorf("no secret: exit %d", r.code)
	}
}

func TestExportImportCommands(t *testing.T) {
	dbPath := seedStore(t)
	dir := t.TempDir()
	har := filepath.Join(dir, "x.har")
	r := run(t, nil, "export", "--db", dbPath, "--format", "har", "--out", har)
	if r.code != 0 || !strings.Contains(r.stdout, "Exported 3 deliveries as har") {
		t.Fatalf("export: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Into a fresh store, analyzed like received deliveries.
	fresh := filepath.Join(dir, "fresh.db")
	r = run(t, map[string]string{"S": captureSecret}, "import", "--db", fresh, "--secret-env", "S", har)
	if r.code != 0 || !strings.Contains(r.stdout, "Imported 3 deliveries") || !strings.Contains(r.stdout, "3 valid") {
		t.Fatalf("import: %d %s %s", r.code, r.stdout, r.stderr)
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
	r = run(t, map[string]string{"T": "test-secret-Q"}, "export", "--db", dbPath, "--format", "fixtures", "--out", fx, "--secret-env", "T", "--json")
	var sum struct {
		Files []string `json:"files"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sum) != nil || len(sum.Files) != 5 {
		t.Fatalf("fixtures: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "import", "--db", fresh, "--json", fx)
	if r.code != 0 || !strings.Contains(r.stdout, `"imported":4`) {
		t.Errorf("import fixtures: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// NDJSON to standard output, selected by type.
	r = run(t, nil, "export", "--db", dbPath, "--format", "ndjson", "--out", "-", "--type", catalog.TypeMediaReady)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, `"id":2`) {
		t.Errorf("ndjson: %d %q", r.code, r.stdout)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--format", "har"}, "--out is required"},
		{[]string{"export", "--format", "xml", "--out", "x"}, "unknown export format"},
		{[]string{"export", "--format", "fixtures", "--out", "x"}, "needs --secret"},
		{[]string{"export", "--format", "json", "--out", "-"}, "writes a folder"},
		{[]string{"export", "--format", "har", "--out", "x", "--secret", "s"}, "only used by"},
		{[]string{"import"}, "give the HAR file"},
		{[]string{"import", "a", "b"}, "one PATH"},
	} {
		r := run(t, nil, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	bad := filepath.Join(dir, "bad.har")
	os.WriteFile(bad, []byte("garbage"), 0o644)
	if r := run(t, nil, "import", "--db", fresh, bad); r.code != 1 || !strings.Contains(r.stderr, "neither a HAR") {
		t.Errorf("bad import: %d %s", r.code, r.stderr)
	}
}
