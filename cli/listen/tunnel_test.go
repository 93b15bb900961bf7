package listen

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/tunnel"
)

func buildFakeCloudflared(t *testing.T) string {
	t.Helper()
	name := "cloudflared"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "../../tunnel/internal/fakecloudflared").CombinedOutput(); err != nil {
		t.Fatalf("build fake cloudflared: %v\n%s", err, out)
	}
	return bin
}

func parseTunnelFlags(t *testing.T, args ...string) *TunnelOptions {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tf := addTunnelFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	tf.tune = func(c *tunnel.Config) {
		c.PollInterval = 20 * time.Millisecond
		c.Backoff = func() backoff.BackOff { return backoff.NewConstantBackOff(10 * time.Millisecond) }
	}
	return tf
}

func TestTunnelFlagValidation(t *testing.T) {
	env := &cmdutil.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "TOK" {
			return "eyJzZWNyZXQ"
		}
		return ""
	}}
	for _, tc := range []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"no tunnel", nil, ""},
		{"quick", []string{"--tunnel"}, ""},
		{"named", []string{"--tunnel", "--tunnel-token-env", "TOK", "--tunnel-hostname", "hooks.example.com"}, ""},
		{"named with scheme", []string{"--tunnel", "--tunnel-token-env", "TOK", "--tunnel-hostname", "https://hooks.example.com/"}, ""},
		{"hostname without token", []string{"--tunnel", "--tunnel-hostname", "hooks.example.com"}, "--tunnel-hostname is for a named tunnel"},
		{"token without hostname", []string{"--tunnel", "--tunnel-token-env", "TOK"}, "needs --tunnel-hostname"},
		{"empty token env", []string{"--tunnel", "--tunnel-token-env", "NOPE", "--tunnel-hostname", "h.example.com"}, "unset or empty"},
		{"bad hostname", []string{"--tunnel", "--tunnel-token-env", "TOK", "--tunnel-hostname", "not a host"}, "not a hostname"},
		{"cloudflared without tunnel", []string{"--cloudflared", "/usr/bin/cloudflared"}, "--cloudflared needs --tunnel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := parseTunnelFlags(t, tc.args...)
			cfg, err := tf.config(env)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("config: %v", err)
				}
				if cfg.Token != "" && (cfg.Token != "eyJzZWNyZXQ" || cfg.Hostname != "hooks.example.com") {
					t.Fatalf("named config = %q %q", cfg.Token, cfg.Hostname)
				}
				return
			}
			if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("config = %v, want usage error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "eyJzZWNyZXQ") {
				t.Fatal("token in error")
			}
		})
	}
}

// TestTunnelReachesAWildcardBindOnLoopback: cloudflared runs on this
// machine, so a receiver bound to every address is reached on loopback.
func TestTunnelReachesAWildcardBindOnLoopback(t *testing.T) {
	if u := station.LocalURL("0.0.0.0:8787"); u != "http://127.0.0.1:8787" {
		t.Fatalf("LocalURL = %q", u)
	}
}

// testStation is a receiver for the tunnel to point at.
func testStation(t *testing.T) *station.Station {
	t.Helper()
	st, err := station.Open(t.Context(), station.Config{DBPath: filepath.Join(t.TempDir(), "h.db"), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// startTunnel runs tf's tunnel in front of st with the flags' config.
func startTunnel(t *testing.T, tf *TunnelOptions, out *printer, st *station.Station) error {
	t.Helper()
	cfg, err := tf.config(&cmdutil.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return tf.startTunnel(t.Context(), out, st, cfg, "/webhooks")
}

func TestStartTunnelWithoutFlagIsNoop(t *testing.T) {
	st := testStation(t)
	if err := startTunnel(t, parseTunnelFlags(t), newPrinter(io.Discard, false, false), st); err != nil || st.Tunnel() != nil {
		t.Fatalf("startTunnel = %v, tunnel %v", err, st.Tunnel())
	}
}

func TestStartTunnelNotInstalledKeepsWorking(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no cloudflared on PATH
	for _, jsonOut := range []bool{false, true} {
		out := &clitest.Buffer{}
		tf := parseTunnelFlags(t, "--tunnel")
		st := testStation(t)
		if err := startTunnel(t, tf, newPrinter(out, jsonOut, false), st); err != nil {
			t.Fatalf("startTunnel = %v; a missing cloudflared must not stop listen", err)
		}
		st.StopTunnel()
		got := out.String()
		if jsonOut {
			var l tunnelLine
			if err := json.Unmarshal([]byte(strings.TrimSpace(got)), &l); err != nil {
				t.Fatalf("not one JSON line: %q", got)
			}
			if l.State != "not-installed" || l.Install == "" || !strings.Contains(l.Reason, "cloudflared is not on PATH") {
				t.Fatalf("line = %+v", l)
			}
		} else if !strings.Contains(got, "tunnel: not installed — cloudflared is not on PATH") || !strings.Contains(got, "Install cloudflared") {
			t.Fatalf("output = %q", got)
		}
	}
}

func TestStartTunnelPrintsConsumerURL(t *testing.T) {
	bin := buildFakeCloudflared(t)
	st := testStation(t)

	t.Run("text", func(t *testing.T) {
		t.Setenv("FAKECF_CRASH_AFTER", "300ms")
		out := &clitest.Buffer{}
		tf := parseTunnelFlags(t, "--tunnel", "--cloudflared", bin)
		if err := startTunnel(t, tf, newPrinter(out, false, false), st); err != nil {
			t.Fatal(err)
		}
		out.WaitFor(t, "tunnel: reconnecting — cloudflared exited with code 1")
		out.WaitFor(t, "tunnel: public URL changed — update the POST URL")
		st.StopTunnel()
		got := out.String()
		t.Logf("output:\n%s", got)
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if !strings.HasPrefix(lines[0], "tunnel: starting cloudflared 2024.8.2 (") {
			t.Fatalf("first line %q", lines[0])
		}
		var urls []string
		for _, l := range lines {
			if u, ok := strings.CutPrefix(l, "tunnel: ready — POST URL: "); ok {
				urls = append(urls, u)
			}
		}
		if len(urls) < 2 || urls[0] == urls[1] || !strings.HasSuffix(urls[0], ".trycloudflare.com/webhooks") {
			t.Fatalf("ready URLs %q in:\n%s", urls, got)
		}
		if !strings.Contains(got, "(was "+urls[0]+")") || !strings.HasSuffix(got, "tunnel: stopped\n") {
			t.Fatalf("output:\n%s", got)
		}
	})

	t.Run("json", func(t *testing.T) {
		out := &clitest.Buffer{}
		tf := parseTunnelFlags(t, "--tunnel", "--cloudflared", bin)
		if err := startTunnel(t, tf, newPrinter(out, true, false), st); err != nil {
			t.Fatal(err)
		}
		out.WaitFor(t, `"state":"ready"`)
		st.StopTunnel()
		t.Logf("output:\n%s", out.String())
		var states []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q is not JSON: %v", l, err)
			}
			states = append(states, m["state"].(string))
			if m["state"] == "ready" {
				u, _ := m["tunnel_url"].(string)
				if !strings.HasPrefix(u, "https://") || !strings.HasSuffix(u, ".trycloudflare.com/webhooks") {
					t.Fatalf("tunnel_url = %q", u)
				}
			}
		}
		if strings.Join(states, ",") != "starting,ready,stopped" {
			t.Fatalf("states = %q", states)
		}
	})
}

// TestListenTunnelEndToEnd runs `hookscope listen --tunnel` in-process with
// the fake cloudflared and posts a delivery through the fake edge: it must
// land in listen's receiver and be printed.
func TestListenTunnelEndToEnd(t *testing.T) {
	bin := buildFakeCloudflared(t)
	edgeFile := filepath.Join(t.TempDir(), "edge")
	t.Setenv("FAKECF_EDGE_FILE", edgeFile)
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- runCLI(ctx, &cmdutil.Env{Stdout: out, Stderr: errOut}, []string{"listen", "--json", "--addr", "127.0.0.1:0",
			"--db", filepath.Join(t.TempDir(), "hooks.db"), "--tunnel", "--cloudflared", bin})
	}()
	out.WaitFor(t, `"tunnel_url":"https://`)
	edge, err := os.ReadFile(edgeFile)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(string(edge)+"/webhooks", "application/json", strings.NewReader(`{"hooks":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delivery through the fake edge: status %d", resp.StatusCode)
	}
	out.WaitFor(t, `"delivery_id"`)
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("listen exited %d; stderr:\n%s", c, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("listen did not stop")
	}
	if !strings.Contains(out.String(), `"state":"stopped"`) {
		t.Fatalf("no stopped line:\n%s", out.String())
	}
}
