package relay

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/relay"
)

func runRelay(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e) }, nil, append([]string{"relay"}, args...)...)
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		phrase string
	}{
		{[]string{"invte", "a"}, "did you mean invite"},
		{[]string{"invite"}, "give the credential's NAME"},
		{[]string{"invite", "Alice.B", "--data", dir}, "cannot name a credential"},
		{[]string{"invite", "alice", "--data", dir}, "give --url"},
		{[]string{"invite", "alice", "--data", dir, "--url", "relay.example"}, "give the relay's public URL"},
		{[]string{"invite", "bob", "--creds", "x.creds"}, "--creds needs --url"},
		{[]string{"revoke"}, "give the credential's NAME"},
		{[]string{"status", "--nats-creds", "x"}, "--nats-creds needs --nats"},
		{[]string{"status", "extra"}, "unexpected argument"},
	} {
		r := runRelay(t, c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.phrase) {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.Code, r.Stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("usage errors created files: %v", ents)
	}
}

func TestInviteRevokeWithoutARunningRelay(t *testing.T) {
	dir := t.TempDir()
	r := runRelay(t, "invite", "alice", "--data", dir, "--url", "https://relay.example")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	line := strings.TrimSpace(r.Stdout)
	if strings.Count(r.Stdout, "\n") != 1 || !strings.HasPrefix(line, "hookscope-relay-1:") {
		t.Fatalf("stdout is not the one connection string: %q", r.Stdout)
	}
	c, err := relay.ParseConnString(line)
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "wss://relay.example/nats" || c.Name != "alice" || strings.Contains(r.Stderr, c.Seed) {
		t.Fatalf("connection string %s; stderr %q", c.Redacted(), r.Stderr)
	}
	if !strings.Contains(r.Stderr, "not running") {
		t.Fatalf("stderr %q", r.Stderr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "credentials.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v %v", fi, err)
	}

	r = runRelay(t, "invite", "alice", "--data", dir, "--url", "https://relay.example")
	if r.Code != 1 || !strings.Contains(r.Stderr, "--replace") {
		t.Fatalf("second invite: exit %d %q", r.Code, r.Stderr)
	}
	out := filepath.Join(t.TempDir(), "bob.relay")
	r = runRelay(t, "invite", "bob", "--data", dir, "--url", "http://192.168.1.5:8787", "--out", out)
	if r.Code != 0 || r.Stdout != "" {
		t.Fatalf("invite --out: exit %d stdout %q stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("--out file: %v %v", fi, err)
	}
	if r = runRelay(t, "invite", "bob", "--data", dir, "--url", "http://x", "--out", out); r.Code != 2 || !strings.Contains(r.Stderr, "already exists") {
		t.Fatalf("invite over an existing --out: exit %d %q", r.Code, r.Stderr)
	}

	r = runRelay(t, "revoke", "alice", "--data", dir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Revoked alice's credential. The relay is not running") {
		t.Fatalf("revoke: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	if r = runRelay(t, "revoke", "carol", "--data", dir); r.Code != 1 || !strings.Contains(r.Stderr, "no credential called carol") {
		t.Fatalf("revoke unknown: exit %d %q", r.Code, r.Stderr)
	}
	if r = runRelay(t, "status", "--data", dir); r.Code != 1 || !strings.Contains(r.Stderr, "no relay is running") {
		t.Fatalf("status without a relay: exit %d %q", r.Code, r.Stderr)
	}
}

func TestAgainstARunningRelay(t *testing.T) {
	dir := t.TempDir()
	srv, err := relay.Start(context.Background(), relay.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	front := httptest.NewServer(srv.NATSHandler())
	defer front.Close()
	if err := srv.SetPublicURL(front.URL); err != nil {
		t.Fatal(err)
	}
	r := runRelay(t, "invite", "alice", "--data", dir)
	if r.Code != 0 || !strings.Contains(r.Stderr, "The running relay accepts it now") {
		t.Fatalf("invite: exit %d %q", r.Code, r.Stderr)
	}
	c, err := relay.ParseConnString(r.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ws" + strings.TrimPrefix(front.URL, "http") + "/nats"; c.URL != want {
		t.Fatalf("laptop URL %q, want %q", c.URL, want)
	}
	runRelay(t, "invite", "bob", "--data", dir)
	r = runRelay(t, "status", "--data", dir)
	for _, want := range []string{"Public URL (give it to the service): " + front.URL, "/nats", "Stream HOOKSCOPE: 0 deliveries", "keeps each for 7 days", "alice: invited", "not connected yet", "bob: invited"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("status lacks %q:\n%s%s", want, r.Stdout, r.Stderr)
		}
	}
	r = runRelay(t, "revoke", "bob", "--data", dir)
	if r.Code != 0 || !strings.Contains(r.Stdout, "the relay closed bob's connections") {
		t.Fatalf("revoke: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	r = runRelay(t, "status", "--data", dir, "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"name":"bob"`) || !strings.Contains(r.Stdout, `"revoked_at"`) {
		t.Fatalf("status --json: exit %d %q", r.Code, r.Stdout)
	}
}
