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
	"github.com/hookscope/hookscope/tunnel/cftest"
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
		{"protocol", []string{"--tunnel", "--tunnel-protocol", "http2"}, ""},
		{"bad protocol", []string{"--tunnel", "--tunnel-protocol", "udp"}, `--tunnel-protocol "udp": want auto, quic or http2`},
		{"protocol without tunnel", []string{"--tunnel-protocol", "http2"}, "--tunnel-protocol needs --tunnel"},
		{"log without tunnel", []string{"--tunnel-log"}, "--tunnel-log needs --tunnel"},
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

// realTunnelFlags are listen's flags for the real cloudflared, offline
// (package cftest): its quick-tunnel request goes to q, its edge is silent.
func realTunnelFlags(t *testing.T, q *cftest.QuickService, args ...string) *TunnelOptions {
	t.Helper()
	tf := parseTunnelFlags(t, append([]string{"--tunnel", "--cloudflared", cftest.Binary(t)}, args...)...)
	env := cftest.Env(t, q.URL)
	fast := tf.tune
	tf.tune = func(c *tunnel.Config) {
		fast(c)
		c.Env = env
	}
	return tf
}

// TestListenTunnelBlockedEdge: `listen --tunnel --tunnel-log` with the
// real cloudflared behind a blocked edge prints why the tunnel does not
// get ready and what to do, within seconds, and cloudflared's own lines.
func TestListenTunnelBlockedEdge(t *testing.T) {
	t.Parallel()
	q := cftest.NewQuickService(t, cftest.Answer(http.StatusOK, "application/json", cftest.TunnelAnswer))
	tf := realTunnelFlags(t, q, "--tunnel-log")
	st := testStation(t)
	out := &clitest.Buffer{}
	if err := startTunnel(t, tf, newPrinter(out, false, false), st); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "tunnel: starting — cloudflared cannot reach Cloudflare's edge: its pre-checks found UDP and TCP port 7844 blocked")
	st.StopTunnel()
	got := out.String()
	for _, w := range []string{"tunnel: starting cloudflared 2026.", "tunnel log: hookscope: started ", "tunnel log: ", "CONNECTIVITY PRE-CHECKS",
		"Allow outbound UDP and TCP port 7844", "tunnel: stopped"} {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "tunnel: ready") || strings.Contains(got, "start the tunnel") {
		t.Errorf("output:\n%s", got)
	}
}

// TestListenTunnelSaysTheNextTry: after a failed try listen says what went
// wrong, which try it was and when the next one is, in text and JSON.
func TestListenTunnelSaysTheNextTry(t *testing.T) {
	t.Parallel()
	for _, jsonOut := range []bool{false, true} {
		t.Run(map[bool]string{false: "text", true: "json"}[jsonOut], func(t *testing.T) {
			t.Parallel()
			q := cftest.NewQuickService(t, cftest.Answer(http.StatusTooManyRequests, "text/plain", "error code: 1015"))
			tf := realTunnelFlags(t, q)
			st := testStation(t)
			out := &clitest.Buffer{}
			if err := startTunnel(t, tf, newPrinter(out, jsonOut, false), st); err != nil {
				t.Fatal(err)
			}
			if !jsonOut {
				out.WaitFor(t, "tunnel: try 1 failed; next try at ")
				st.StopTunnel()
				if got := out.String(); !strings.Contains(got, "tunnel: starting — Cloudflare is rate-limiting quick tunnels") ||
					!strings.Contains(got, "(in 5m0s)") {
					t.Fatalf("output:\n%s", got)
				}
				return
			}
			out.WaitFor(t, `"next_try":"`)
			st.StopTunnel()
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var line tunnelLine
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if line.NextTry == "" {
					continue
				}
				next, err := time.Parse(time.RFC3339, line.NextTry)
				if err != nil || line.Cause != "rate-limited" || line.Attempt != 1 || line.State != "starting" || time.Until(next) < 4*time.Minute {
					t.Fatalf("line %+v (%v)", line, err)
				}
				return
			}
			t.Fatalf("no next try in:\n%s", out.String())
		})
	}
}

// TestListenUnusableCloudflaredKeepsReceiving: a cloudflared that is not
// cloudflared, or too old, is said, like a missing one, and listen keeps
// receiving (an old one made it exit 1, anything else was run as
// "cloudflared unknown").
func TestListenUnusableCloudflaredKeepsReceiving(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, script, want string }{
		{"not cloudflared", "#!/bin/sh\nexit 0\n", "is not cloudflared: `not-cloudflared --version` printed nothing"},
		{"too old", "#!/bin/sh\necho 'cloudflared version 2021.3.1 (built x)'\n", "is version 2021.3.1, older than 2022.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(bin, []byte(tc.script), 0o755); err != nil {
				t.Fatal(err)
			}
			out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			code := make(chan int, 1)
			go func() {
				code <- runCLI(ctx, &cmdutil.Env{Stdout: out, Stderr: errOut}, []string{"listen", "--addr", "127.0.0.1:0",
					"--db", filepath.Join(t.TempDir(), "hooks.db"), "--tunnel", "--cloudflared", bin})
			}()
			out.WaitFor(t, "tunnel: cannot use cloudflared — cloudflared \""+bin+"\" "+tc.want)
			select {
			case c := <-code:
				t.Fatalf("listen exited %d:\n%s\n%s", c, out.String(), errOut.String())
			case <-time.After(200 * time.Millisecond):
			}
			cancel()
			if c := <-code; c != 0 {
				t.Fatalf("listen exited %d; stderr:\n%s", c, errOut.String())
			}
			if strings.Contains(out.String(), "starting cloudflared") {
				t.Fatalf("output:\n%s", out.String())
			}
		})
	}
}
