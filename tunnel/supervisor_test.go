package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/internal/redact"
)

var quickURLRE = regexp.MustCompile(`^https://[a-z-]+-[0-9a-f]+\.trycloudflare\.com$`)

func metricsGet(t *testing.T, addr, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestQuickTunnelURLViaMetrics(t *testing.T) {
	s, r := startSupervisor(t, testConfig(t))
	e := r.waitFor(t, "ready", isState(Ready))
	if !quickURLRE.MatchString(e.Status.PublicURL) {
		t.Fatalf("PublicURL = %q, want a trycloudflare URL", e.Status.PublicURL)
	}
	var qt struct{ Hostname string }
	if err := json.Unmarshal([]byte(metricsGet(t, e.Status.MetricsAddr, "/quicktunnel")), &qt); err != nil {
		t.Fatal(err)
	}
	if e.Status.PublicURL != "https://"+qt.Hostname {
		t.Fatalf("PublicURL = %q, /quicktunnel says %q", e.Status.PublicURL, qt.Hostname)
	}
	st := s.State()
	if st.Version.String() != "2024.8.2" || st.PID == 0 || st.Binary != fakeBinary {
		t.Fatalf("status = %+v", st)
	}
	if !logsContain(s, "Your quick Tunnel has been created!") {
		t.Fatalf("logs lack the creation box: %q", s.Logs())
	}
}

func TestQuickTunnelURLViaLogsOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"no /quicktunnel", []string{"FAKECF_NO_QUICKTUNNEL=1"}},
		{"no metrics server", []string{"FAKECF_NO_METRICS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := startSupervisor(t, testConfig(t, tc.env...))
			e := r.waitFor(t, "ready", isState(Ready))
			if !quickURLRE.MatchString(e.Status.PublicURL) {
				t.Fatalf("PublicURL = %q, want the URL from the log box", e.Status.PublicURL)
			}
		})
	}
}

func TestReadinessWaitsForRegisteredConnection(t *testing.T) {
	s, r := startSupervisor(t, testConfig(t, "FAKECF_READY_DELAY=400ms"))
	e := r.waitFor(t, "starting", isState(Starting))
	if e.Status.PublicURL != "" {
		t.Fatalf("starting already has a URL: %+v", e.Status)
	}
	// The fake serves /quicktunnel at once but /ready answers 503 until it
	// registers; the supervisor must not call that ready.
	r.waitFor(t, "ready", isState(Ready))
	if !logsContain(s, "Registered tunnel connection") {
		t.Fatal("ready before the fake registered its connection")
	}
}

func TestCrashRestartsWithNewHostname(t *testing.T) {
	s, r := startSupervisor(t, testConfig(t, "FAKECF_CRASH_AFTER=300ms"))
	first := r.waitFor(t, "first ready", isState(Ready))
	// The dying fake's metrics may vanish a moment before its exit is
	// seen ("lost its connection"); the exit's own reason must follow.
	r.waitFor(t, "reconnecting after the exit", func(e Event) bool {
		return isState(Reconnecting)(e) && strings.Contains(e.Status.Reason, "exited with code 1")
	})
	ch := r.waitFor(t, "URL changed", func(e Event) bool { return e.Kind == URLChanged })
	if ch.PreviousURL != first.Status.PublicURL || ch.Status.PublicURL == first.Status.PublicURL || !quickURLRE.MatchString(ch.Status.PublicURL) {
		t.Fatalf("URLChanged %q -> %q, first was %q", ch.PreviousURL, ch.Status.PublicURL, first.Status.PublicURL)
	}
	again := r.waitFor(t, "ready again", isState(Ready))
	if again.Status.PublicURL != ch.Status.PublicURL {
		t.Fatalf("ready URL %q != changed URL %q", again.Status.PublicURL, ch.Status.PublicURL)
	}
	if s.State().Restarts < 1 {
		t.Fatalf("Restarts = %d", s.State().Restarts)
	}
}

// TestFailureReasons: what only the fake can play (the real cloudflared's
// failures are in realcf_test.go). A tunnel that never got ready stays
// "starting", with the reason and when the next try is.
func TestFailureReasons(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		cause Cause
		want  []string
	}{
		{"auto-update exit 11", []string{"FAKECF_EXIT_CODE=11"}, CauseAutoUpdate, []string{"code 11", "update itself"}},
		{"plain exit", []string{"FAKECF_EXIT_CODE=3"}, CauseExited, []string{"exited with code 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.env...)
			cfg.MaxFailures = 2
			s, r := startSupervisor(t, cfg)
			notReady := func(pred func(Event) bool) func(Event) bool {
				return func(e Event) bool {
					if e.Kind == StateChanged && (e.Status.State == Ready || e.Status.State == Reconnecting) {
						t.Fatalf("a cloudflared that never got ready was called %s: %+v", e.Status.State, e.Status)
					}
					return pred(e)
				}
			}
			retry := r.waitFor(t, "starting, next try due", notReady(func(e Event) bool {
				return isState(Starting)(e) && !e.Status.NextRetry.IsZero()
			}))
			e := r.waitFor(t, "failed", notReady(isState(Failed)))
			for _, ev := range []Event{retry, e} {
				if ev.Status.Cause != tc.cause {
					t.Errorf("%s: cause %q, want %q", ev.Status.State, ev.Status.Cause, tc.cause)
				}
				for _, w := range tc.want {
					if !strings.Contains(ev.Status.Reason, w) {
						t.Errorf("%s reason %q lacks %q", ev.Status.State, ev.Status.Reason, w)
					}
				}
			}
			if retry.Status.Attempt != 1 || e.Status.Attempt != 2 || !strings.Contains(e.Status.Reason, "gave up after 2 tries") {
				t.Errorf("attempts %d, %d; reason %q", retry.Status.Attempt, e.Status.Attempt, e.Status.Reason)
			}
			if e.Status.PublicURL != "" || !e.Status.NextRetry.IsZero() {
				t.Errorf("failed tunnel has URL %q, next try %s", e.Status.PublicURL, e.Status.NextRetry)
			}
			<-s.Done()
			if !logsContain(s, "hookscope: try 1 failed") || !logsContain(s, "next try at") {
				t.Errorf("the log does not say when the next try is: %q", s.Logs())
			}
		})
	}
}

// TestQUICBlockedSwitchesToHTTP2: cloudflared's pre-checks find UDP port
// 7844 blocked and TCP open; Hookscope starts it again with --protocol
// http2, once, and the tunnel gets ready.
func TestQUICBlockedSwitchesToHTTP2(t *testing.T) {
	argsFile := filepath.Join(t.TempDir(), "args.json")
	s, r := startSupervisor(t, testConfig(t, "FAKECF_QUIC_BLOCKED=1", "FAKECF_ARGS_FILE="+argsFile))
	blocked := r.waitFor(t, "the edge reason", func(e Event) bool {
		return isState(Starting)(e) && e.Status.Cause == CauseEdgeBlocked
	})
	for _, w := range []string{"QUIC (UDP port 7844) to Cloudflare's edge is blocked", "restarting cloudflared with HTTP/2", "--protocol http2"} {
		if !strings.Contains(blocked.Status.Reason, w) {
			t.Errorf("reason %q lacks %q", blocked.Status.Reason, w)
		}
	}
	e := r.waitFor(t, "ready", isState(Ready))
	if e.Status.Protocol != "http2" || e.Status.Reason != "" || e.Status.Attempt != 0 {
		t.Fatalf("ready status %+v", e.Status)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"--protocol","http2"`) {
		t.Fatalf("last run's args %s", b)
	}
	if st := s.State(); st.Restarts != 0 {
		t.Fatalf("the switch counted as a failed try: %+v", st)
	}
}

// TestEdgeTimeoutWithoutPrechecks: a cloudflared without pre-checks whose
// QUIC dials keep failing is said to be blocked after EdgeTimeout, quoting
// its error; left to choose, it is started again with HTTP/2 and gets
// ready; with QUIC forced, it is left to keep trying.
func TestEdgeTimeoutWithoutPrechecks(t *testing.T) {
	for _, forced := range []bool{false, true} {
		t.Run(map[bool]string{false: "auto", true: "quic forced"}[forced], func(t *testing.T) {
			cfg := testConfig(t, "FAKECF_QUIC_BLOCKED=old")
			cfg.EdgeTimeout = 300 * time.Millisecond
			if forced {
				cfg.Protocol = "quic"
			}
			s, r := startSupervisor(t, cfg)
			e := r.waitFor(t, "the edge reason", func(e Event) bool { return e.Status.Cause == CauseEdgeBlocked })
			if !strings.Contains(e.Status.Reason, "(no connection in 300ms: failed to dial to edge with quic: timeout: no recent network activity)") {
				t.Errorf("reason %q", e.Status.Reason)
			}
			if !forced {
				if ready := r.waitFor(t, "ready", isState(Ready)); ready.Status.Protocol != "http2" {
					t.Fatalf("ready with %+v", ready.Status)
				}
				return
			}
			if !strings.Contains(e.Status.Reason, "Allow outbound UDP port 7844, or use HTTP/2 over TCP port 7844 (--protocol http2)") ||
				s.State().PID != e.Status.PID {
				t.Fatalf("reason %q, status %+v", e.Status.Reason, s.State())
			}
		})
	}
}

// TestForcedProtocolIsNotSwitched: with --protocol quic asked for, a
// blocked QUIC is said, and cloudflared is left to keep trying.
func TestForcedProtocolIsNotSwitched(t *testing.T) {
	cfg := testConfig(t, "FAKECF_QUIC_BLOCKED=1")
	cfg.Protocol = "quic"
	s, r := startSupervisor(t, cfg)
	e := r.waitFor(t, "the edge reason", func(e Event) bool {
		return isState(Starting)(e) && e.Status.Cause == CauseEdgeBlocked
	})
	if !strings.Contains(e.Status.Reason, "Allow outbound UDP port 7844") || !strings.Contains(e.Status.Reason, "Still trying") {
		t.Fatalf("reason %q", e.Status.Reason)
	}
	if st := s.State(); st.PID != e.Status.PID || st.Protocol != "quic" {
		t.Fatalf("cloudflared was restarted: %+v", st)
	}
}

func TestMissingBinary(t *testing.T) {
	cfg := testConfig(t)
	cfg.Binary = "" // cloudflared on PATH, and there is none
	t.Setenv("PATH", t.TempDir())
	cfg.GOOS = "darwin"
	s := New(cfg)
	r := record(s)
	err := s.Start(t.Context())
	var ni *NotInstalledError
	if !errors.As(err, &ni) {
		t.Fatalf("Start = %v, want *NotInstalledError", err)
	}
	if !strings.Contains(ni.Help, "brew install cloudflared") {
		t.Fatalf("help = %q", ni.Help)
	}
	e := r.waitFor(t, "not-installed", isState(NotInstalled))
	if !strings.Contains(e.Status.Reason, "brew install cloudflared") {
		t.Fatalf("reason = %q", e.Status.Reason)
	}
	s.Stop() // harmless when nothing runs
}

func TestInstallHelpPerOS(t *testing.T) {
	for goos, want := range map[string]string{
		"linux":   "github.com/cloudflare/cloudflared/releases",
		"darwin":  "brew install cloudflared",
		"windows": "winget install --id Cloudflare.cloudflared",
		"plan9":   "winget",
	} {
		if h := InstallHelp(goos); !strings.Contains(h, want) {
			t.Errorf("InstallHelp(%q) = %q, want it to mention %q", goos, h, want)
		}
	}
}

func TestUnsupportedVersion(t *testing.T) {
	s := New(testConfig(t, "FAKECF_VERSION=2021.3.1"))
	err := s.Start(t.Context())
	var ni *NotInstalledError
	if !errors.As(err, &ni) || !strings.Contains(err.Error(), "is version 2021.3.1, older than 2022.1.0") {
		t.Fatalf("Start = %v", err)
	}
	if st := s.State(); st.State != NotInstalled || st.Cause != CauseNotInstalled || !strings.Contains(st.Reason, "update cloudflared") {
		t.Fatalf("state = %+v", st)
	}
}

func TestNamedTunnelKeepsTokenOutOfArgv(t *testing.T) {
	const token = "eyJhIjoiMDEyMzQ1Njc4OWFiY2RlZiIsInQiOiJzZWNyZXQtdHVubmVsIn0="
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer recv.Close()
	argsFile := filepath.Join(t.TempDir(), "args.json")
	cfg := testConfig(t, "FAKECF_ARGS_FILE="+argsFile, "FAKECF_ORIGIN="+recv.URL)
	cfg.Token = token
	cfg.Hostname = "hooks.example.com"
	cfg.LocalURL = recv.URL
	s, r := startSupervisor(t, cfg)
	e := r.waitFor(t, "ready", isState(Ready))
	if e.Status.PublicURL != "https://hooks.example.com" {
		t.Fatalf("PublicURL = %q", e.Status.PublicURL)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Args        []string `json:"args"`
		TunnelToken string   `json:"tunnel_token"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"tunnel", "--no-autoupdate", "--metrics", e.Status.MetricsAddr, "run"}
	if strings.Join(got.Args, " ") != strings.Join(want, " ") {
		t.Fatalf("argv = %q, want %q", got.Args, want)
	}
	if strings.Contains(string(b[:strings.Index(string(b), "tunnel_token")]), token) {
		t.Fatal("token in argv")
	}
	if got.TunnelToken != token {
		t.Fatalf("TUNNEL_TOKEN = %q", got.TunnelToken)
	}
	s.Stop()
	for _, l := range s.Logs() {
		if strings.Contains(l, token) || strings.Contains(l, "secret-tunnel") {
			t.Fatalf("token in log line %q", l)
		}
	}
}

// TestOnLogGetsEveryLineRedacted: OnLog (listen --tunnel-log) gets
// cloudflared's lines and the supervisor's own as they come, with the
// token hidden, the same lines Logs keeps.
func TestOnLogGetsEveryLineRedacted(t *testing.T) {
	const token = "eyJhIjoiMDEyMzQ1Njc4OWFiY2RlZiIsInQiOiJzZWNyZXQtdHVubmVsIn0="
	var mu sync.Mutex
	var got []string
	cfg := testConfig(t, "FAKECF_LOG_TOKEN=1")
	cfg.Token, cfg.Hostname = token, "hooks.example.com"
	cfg.OnLog = func(line string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, line)
	}
	s, r := startSupervisor(t, cfg)
	r.waitFor(t, "ready", isState(Ready))
	s.Stop()
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(got, "\n")
	for _, w := range []string{"hookscope: started", "Starting tunnel with token " + redact.Placeholder, "Registered tunnel connection"} {
		if !strings.Contains(all, w) {
			t.Errorf("OnLog lines lack %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, token) || strings.Contains(all, "secret-tunnel") {
		t.Fatalf("token in OnLog lines:\n%s", all)
	}
	if kept := s.Logs(); strings.Join(kept, "\n") != all {
		t.Fatalf("Logs %q, OnLog %q", kept, got)
	}
}

func TestQuickTunnelArgs(t *testing.T) {
	cfg := Config{LocalURL: "http://127.0.0.1:8080"}
	got := strings.Join(cfg.Args("127.0.0.1:4000"), " ")
	if got != "tunnel --no-autoupdate --metrics 127.0.0.1:4000 --url http://127.0.0.1:8080" {
		t.Fatalf("args = %q", got)
	}
	cfg.Protocol = "http2"
	if got := strings.Join(cfg.Args("127.0.0.1:4000"), " "); got != "tunnel --no-autoupdate --metrics 127.0.0.1:4000 --protocol http2 --url http://127.0.0.1:8080" {
		t.Fatalf("args = %q", got)
	}
}

func TestDeliveryThroughFakeEdge(t *testing.T) {
	type hit struct {
		path, body, sig string
	}
	hits := make(chan hit, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{r.URL.Path, string(b), r.Header.Get("X-Service-Signature")}
	}))
	defer recv.Close()
	cfg := testConfig(t)
	cfg.LocalURL = recv.URL
	_, r := startSupervisor(t, cfg)
	e := r.waitFor(t, "ready", isState(Ready))
	// The fake's public hostname is made up; its real loopback edge is
	// served beside the metrics endpoints.
	edge := metricsGet(t, e.Status.MetricsAddr, "/fake/edge")
	consumer := ConsumerURL(e.Status.PublicURL, "/webhooks")
	if !strings.HasSuffix(consumer, ".trycloudflare.com/webhooks") {
		t.Fatalf("consumer URL = %q", consumer)
	}
	req, _ := http.NewRequest(http.MethodPost, edge+"/webhooks", strings.NewReader(`{"hooks":[]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Service-Signature", "abc123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h := <-hits
	if h.path != "/webhooks" || h.body != `{"hooks":[]}` || h.sig != "abc123" {
		t.Fatalf("receiver got %+v", h)
	}
}

func TestStartTwice(t *testing.T) {
	s, r := startSupervisor(t, testConfig(t))
	if err := s.Start(t.Context()); err == nil {
		t.Fatal("second Start succeeded")
	}
	r.waitFor(t, "ready", isState(Ready))
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := contextWithCancel(t)
	s := New(testConfig(t))
	r := record(s)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "ready", isState(Ready))
	cancel()
	<-s.Done()
	if st := s.State(); st.State != Stopped || st.PID != 0 {
		t.Fatalf("after cancel: %+v", st)
	}
}

// BenchmarkStartToReady measures fake-cloudflared start to Ready and a clean
// Stop: the supervisor's own overhead (process start, metrics polling).
func BenchmarkStartToReady(b *testing.B) {
	for b.Loop() {
		s := New(Config{Binary: fakeBinary, LocalURL: "http://127.0.0.1:9", PollInterval: 10 * time.Millisecond})
		ready := make(chan struct{}, 1)
		s.Subscribe(func(e Event) {
			if e.Kind == StateChanged && e.Status.State == Ready {
				ready <- struct{}{}
			}
		})
		if err := s.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		<-ready
		s.Stop()
	}
}
