package relay

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/cli/listen"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
)

func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	never := func(context.Context, *RunOptions) error { t.Error("ran despite a usage error"); return nil }
	for _, c := range []struct {
		args   []string
		phrase string
	}{
		{[]string{"--addr", "8788"}, "--addr"},
		{[]string{"--nats-creds", "x.creds"}, "--nats-creds needs --nats"},
		{[]string{"--replicas", "3"}, "needs --nats"},
		{[]string{"--max-age", "0d"}, "--max-age"},
		{[]string{"--max-age", "a week"}, "--max-age"},
		{[]string{"--sync", "never"}, "want always or a positive duration"},
		{[]string{"--public-url", "relay.example"}, "--public-url"},
		{[]string{"--public-url", "https://relay.example", "--tunnel"}, "give one"},
		{[]string{"--secret-env", "UNSET"}, "unset or empty"},
		{[]string{"--max-bytes", "-1"}, "--max-bytes"},
		{[]string{"start"}, "unknown command"},
	} {
		r := clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return newCmd(e, never) }, nil, append([]string{"relay", "--data", dir}, c.args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.phrase) {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.Code, r.Stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("usage errors created files: %v", ents)
	}
}

// TestRunRelayAndALaptop runs `hookscope relay` in-process, invites a
// laptop while it runs, takes three deliveries (a GET /nats is not one),
// and a `hookscope listen --relay-env` on its own store then gets all
// three, marked via the relay with their sequence.
func TestRunRelayAndALaptop(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("relay-run-secret")
	getenv := func(k string) string {
		if k == "HS_SECRET" {
			return string(secret)
		}
		return ""
	}
	out, errb := &clitest.Buffer{}, &clitest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		env := &cmdutil.Env{Stdout: out, Stderr: errb, Getenv: getenv}
		done <- cmdutil.RunCommand(ctx, env, NewCmd, []string{"relay", "--addr", "127.0.0.1:0", "--data", dir, "--json", "--secret-env", "HS_SECRET"})
	}()
	var start struct {
		Listening string `json:"listening"`
		LaptopURL string `json:"laptop_url"`
	}
	if err := json.Unmarshal([]byte(out.WaitLines(t, 1)[0]), &start); err != nil || start.Listening == "" || !strings.HasPrefix(start.LaptopURL, "ws://127.0.0.1:") {
		t.Fatalf("first line: %v %q %s", err, out.Lines(), errb)
	}
	base := strings.TrimSuffix(start.Listening, "/webhooks")

	r := runRelay(t, "invite", "alice", "--data", dir)
	if r.Code != 0 || !strings.Contains(r.Stderr, "The running relay accepts it now") {
		t.Fatalf("invite: exit %d %q", r.Code, r.Stderr)
	}
	resp, err := http.Get(base + relay.NATSPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	g := simulate.New(3)
	for range 3 {
		req, err := simulate.NewRequest(ctx, start.Listening, g.Message(g.Event("media.ready")).Body(), secret)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("relay answered %d", resp.StatusCode)
		}
	}
	out.WaitFor(t, `"delivery_id":3,`)
	if strings.Contains(out.String(), `"delivery_id":4`) || strings.Contains(out.String(), `"method":"GET"`) {
		t.Fatalf("GET /nats was taken as a delivery:\n%s", out)
	}

	db := filepath.Join(t.TempDir(), "laptop.db")
	lout, lerr := &clitest.Buffer{}, &clitest.Buffer{}
	lctx, lcancel := context.WithCancel(context.Background())
	ldone := make(chan int, 1)
	go func() {
		env := &cmdutil.Env{Stdout: lout, Stderr: lerr, Getenv: func(k string) string {
			if k == "ALICE" {
				return r.Stdout
			}
			return getenv(k)
		}}
		ldone <- cmdutil.RunCommand(lctx, env, func(e *cmdutil.Env) *cobra.Command { return listen.NewCmd(e, nil) },
			[]string{"listen", "--addr", "127.0.0.1:0", "--db", db, "--json", "--secret-env", "HS_SECRET", "--relay-env", "ALICE"})
	}()
	lout.WaitFor(t, `"relay_seq":3`)
	lout.WaitFor(t, `"relay":"live"`)
	if n := strings.Count(lout.String(), `"relay":"connecting"`); n != 1 {
		t.Errorf("listen said it was connecting %d times:\n%s", n, lout)
	}
	lcancel()
	if code := <-ldone; code != 0 {
		t.Fatalf("listen exit %d: %s", code, lerr)
	}
	if strings.Contains(lout.String()+lerr.String(), r.Stdout[len(r.Stdout)/2:]) {
		t.Fatal("listen printed the connection string")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("relay exit %d: %s", code, errb)
	}

	store, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n := 0
	if err := store.Each(context.Background(), storage.Filter{}, func(rec *inspector.Record) error {
		n++
		if d := rec.Delivery; d.Source != relay.DeliverySource || d.RelaySeq != uint64(n) || rec.Analysis == nil || rec.Analysis.Signature.Status != inspector.SignatureValid {
			t.Errorf("laptop delivery %d: source %q seq %d analysis %+v", d.ID, d.Source, d.RelaySeq, rec.Analysis)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("the laptop stored %d deliveries, want 3", n)
	}
}

// TestRunRelayWithTunnel: `hookscope relay --tunnel` (the fake
// cloudflared) prints the service's URL and the laptops' address under
// /nats at the tunnel's URL, which status and invite read; a laptop
// connects through the tunnel's edge (WebSocket through the proxy) and
// gets a delivery posted there.
func TestRunRelayWithTunnel(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "cloudflared")
	if b, err := exec.Command("go", "build", "-o", fake, "../../tunnel/internal/fakecloudflared").CombinedOutput(); err != nil {
		t.Fatalf("build fake cloudflared: %v\n%s", err, b)
	}
	edgeFile := filepath.Join(t.TempDir(), "edge")
	t.Setenv("FAKECF_EDGE_FILE", edgeFile)
	dir := t.TempDir()
	out, errb := &clitest.Buffer{}, &clitest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- cmdutil.RunCommand(ctx, &cmdutil.Env{Stdout: out, Stderr: errb}, NewCmd,
			[]string{"relay", "--addr", "127.0.0.1:0", "--data", dir, "--tunnel", "--cloudflared", fake})
	}()
	out.WaitFor(t, "relay: laptops connect to wss://")
	text := out.String()
	for _, want := range []string{"Laptops connect under /nats at the tunnel's URL (printed once it is up)", "tunnel: ready — POST URL: https://", ".trycloudflare.com/webhooks"} {
		if !strings.Contains(text, want) {
			t.Fatalf("output lacks %q:\n%s", want, text)
		}
	}
	st := runRelay(t, "status", "--data", dir)
	if !strings.Contains(st.Stdout, "Public URL (give it to the service): https://") || !strings.Contains(st.Stdout, ".trycloudflare.com/nats") {
		t.Fatalf("status:\n%s%s", st.Stdout, st.Stderr)
	}
	edge, err := os.ReadFile(edgeFile)
	if err != nil {
		t.Fatal(err)
	}
	// The made-up hostname does not resolve: the laptop reaches the
	// tunnel's loopback edge instead, as it would reach Cloudflare's.
	r := runRelay(t, "invite", "alice", "--data", dir, "--url", string(edge))
	if r.Code != 0 {
		t.Fatalf("invite: %d %s", r.Code, r.Stderr)
	}
	resp, err := http.Post(string(edge)+"/webhooks", "application/json", strings.NewReader(`{"hook":{"uuid":"t1"},"events":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn, err := relay.ParseConnString(r.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := relay.Pull(ctx, relay.PullOptions{Conn: conn, FromSeq: 1, Each: func(rl *relay.Relayed) error {
		got = append(got, string(rl.Delivery.Body))
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != `{"hook":{"uuid":"t1"},"events":[]}` {
		t.Fatalf("through the tunnel the laptop read %q", got)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("relay exit %d: %s", code, errb)
	}
}
