package pull

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
)

func runPull(t *testing.T, getenv map[string]string, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, getenv, append([]string{"pull"}, args...)...)
}

// startRelay is a relay holding a media.created, a media.ready and a
// live_event.registration, and a credential for it.
func startRelay(t *testing.T) (conn string, srv *relay.Server) {
	t.Helper()
	dir := t.TempDir()
	srv, err := relay.Start(context.Background(), relay.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	front := httptest.NewServer(srv.NATSHandler())
	t.Cleanup(front.Close)
	c, err := relay.Invite(dir, "ci", "ws"+strings.TrimPrefix(front.URL, "http")+"/nats", "", false, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	adm, err := relay.DialAdmin(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := simulate.New(5)
	for _, typ := range []string{catalog.TypeMediaCreated, catalog.TypeMediaReady, catalog.TypeLiveEventRegistration} {
		m := g.Message(g.Event(typ))
		body := m.Body()
		d := &inspector.Delivery{ReceivedAt: time.Now().UTC(), Method: "POST", Path: "/webhooks", Status: 200,
			Headers: m.Headers([]byte("s")), Body: body, BodyLength: int64(len(body)), RemoteAddr: "203.0.113.1:1"}
		if err := srv.Sink().Record(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return c.String(), srv
}

func TestPullUsage(t *testing.T) {
	secretish := relay.ConnString{URL: "ws://h/nats", Name: "ci", Seed: "SUAJUNKJUNKJUNK", Stream: "S"}.String()
	env := map[string]string{"R": "not-a-string", "BAD": secretish}
	for _, c := range []struct {
		args   []string
		phrase string
	}{
		{nil, "give the file or folder"},
		{[]string{"x.ndjson"}, "give --relay-env VAR or --relay-file FILE"},
		{[]string{"x.ndjson", "--relay-env", "UNSET"}, "unset or empty"},
		{[]string{"x.ndjson", "--relay-env", "R"}, "not a relay connection string"},
		{[]string{"x.ndjson", "--relay-env", "BAD"}, "credential is damaged"},
		{[]string{"x.ndjson", "--relay-env", "R", "--relay-file", "f"}, "not both"},
		{[]string{"x.ndjson", "--relay-env", "R", "--since", "2h", "--from-seq", "3"}, "--since or --from-seq, not both"},
		{[]string{"x.ndjson", "--relay-env", "R", "--since", "yesterday"}, "neither a positive duration"},
		{[]string{"x.ndjson", "--relay-env", "R", "--type", "media.["}, "not a valid glob"},
		{[]string{"x.ndjson", "--relay-env", "R", "--durable", "--since", "1h"}, "--durable reads from the credential's own position"},
		{[]string{"out", "--relay-env", "R"}, "cannot tell the format"},
		{[]string{"-", "--format", "json", "--relay-env", "R"}, "writes a folder"},
		{[]string{"dir", "--format", "fixtures", "--relay-env", "R"}, "needs --secret"},
		{[]string{"x.ndjson", "--into", "ci.db", "--relay-env", "R"}, "takes no PATH"},
		{[]string{"--into", "ci.db", "--relay-env", "R", "--format", "har"}, "takes no PATH"},
		{[]string{"--into", "ci.db"}, "give --relay-env VAR or --relay-file FILE"},
	} {
		r := runPull(t, env, c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.phrase) {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.Code, r.Stderr)
		}
		if strings.Contains(r.Stderr, "SUAJUNK") {
			t.Errorf("%v: the error quotes the credential: %q", c.args, r.Stderr)
		}
	}
}

func TestPull(t *testing.T) {
	conn, _ := startRelay(t)
	env := map[string]string{"HOOKSCOPE_RELAY": conn}

	r := runPull(t, env, "-", "--relay-env", "HOOKSCOPE_RELAY", "--since", "1h")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.Stdout), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "media.ready") {
		t.Fatalf("NDJSON of 3 deliveries, got:\n%s", r.Stdout)
	}

	file := filepath.Join(t.TempDir(), "conn")
	if err := os.WriteFile(file, []byte(conn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "media.har")
	r = runPull(t, nil, out, "--relay-file", file, "--type", "media.*")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Pulled 2 deliveries from the relay (sequences 1-3) as har") {
		t.Fatalf("--type media.*: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = runPull(t, env, "-", "--relay-env", "HOOKSCOPE_RELAY", "--from-seq", "3")
	if r.Code != 0 || strings.Count(r.Stdout, "\n") != 1 || !strings.Contains(r.Stdout, "live_event.registration") {
		t.Fatalf("--from-seq 3: exit %d %q", r.Code, r.Stdout)
	}
	r = runPull(t, env, "-", "--relay-env", "HOOKSCOPE_RELAY", "--type", "channel.*")
	if r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "no delivery matching") {
		t.Fatalf("nothing matching: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

func TestPullUnreachableExits1(t *testing.T) {
	c := relay.ConnString{URL: "ws://127.0.0.1:1/nats", Name: "ci", Stream: relay.DefaultStream}
	conn, _ := startRelay(t)
	real, err := relay.ParseConnString(conn)
	if err != nil {
		t.Fatal(err)
	}
	c.Seed = real.Seed
	r := runPull(t, map[string]string{"R": c.String()}, "-", "--relay-env", "R")
	if r.Code != 1 || !strings.Contains(r.Stderr, "cannot reach the relay at ws://127.0.0.1:1/nats") || strings.Contains(r.Stderr, c.Seed) {
		t.Fatalf("exit %d %q", r.Code, r.Stderr)
	}
}

// TestPullInto: --into imports into a store, each delivery once (a second
// pull adds only what is new), marked via the relay with its sequence,
// analysed; --type narrows it.
func TestPullInto(t *testing.T) {
	conn, srv := startRelay(t)
	env := map[string]string{"HOOKSCOPE_RELAY": conn}
	db := filepath.Join(t.TempDir(), "ci.db")
	r := runPull(t, env, "--into", db, "--relay-env", "HOOKSCOPE_RELAY", "--type", "media.*")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Pulled 3 deliveries from the relay (sequences 1-3) into "+db+": 2 deliveries new, 1 not of --type.") {
		t.Fatalf("--into --type: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = runPull(t, env, "--into", db, "--relay-env", "HOOKSCOPE_RELAY")
	if r.Code != 0 || !strings.Contains(r.Stdout, "1 delivery new, 2 already there.") {
		t.Fatalf("--into again: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if err := srv.Sink().Record(context.Background(), &inspector.Delivery{ReceivedAt: time.Now(), Method: "POST", Path: "/x", Body: []byte("{}"), BodyLength: 2, Status: 200}); err != nil {
		t.Fatal(err)
	}
	r = runPull(t, env, "--into", db, "--relay-env", "HOOKSCOPE_RELAY", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"read":4,"stored":1,"already_there":3,"first_seq":1,"last_seq":4`) {
		t.Fatalf("--into --json: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	store, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var seqs []uint64
	if err := store.Each(context.Background(), storage.Filter{}, func(rec *inspector.Record) error {
		if rec.Delivery.Source != relay.DeliverySource || rec.Analysis == nil {
			t.Errorf("delivery %d: source %q, analysis %v", rec.Delivery.ID, rec.Delivery.Source, rec.Analysis)
		}
		seqs = append(seqs, rec.Delivery.RelaySeq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4}) {
		t.Fatalf("the store holds sequences %v", seqs)
	}
}
