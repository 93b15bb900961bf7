//go:build unix

package tunnel

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/tunnel/cftest"
)

// These tests run the real cloudflared, offline (package cftest says how).

// realConfig runs the real cloudflared with its quick-tunnel request sent
// to quickServiceURL and its edge silent.
func realConfig(t *testing.T, bin, quickServiceURL string) Config {
	t.Helper()
	return Config{
		Binary:       bin,
		LocalURL:     "http://127.0.0.1:9",
		Env:          cftest.Env(t, quickServiceURL),
		Backoff:      fastBackoff,
		PollInterval: 50 * time.Millisecond,
		GracePeriod:  5 * time.Second,
		Logf:         t.Logf,
	}
}

// waitLong is waitFor with room for the real cloudflared's own waits (its
// pre-checks report after ~10-13 s, its API client gives up after 15 s).
func (r *recorder) waitLong(t *testing.T, what string, pred func(Event) bool) Event {
	t.Helper()
	timeout := time.NewTimer(40 * time.Second)
	defer timeout.Stop()
	var seen []string
	for {
		select {
		case e := <-r.ch:
			seen = append(seen, fmt.Sprintf("%s/%s/%q", e.Status.State, e.Status.Cause, e.Status.Reason))
			if pred(e) {
				return e
			}
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s; events seen: %s", what, strings.Join(seen, ", "))
		}
	}
}

func dumpLogs(t *testing.T, s *Supervisor) {
	t.Helper()
	if t.Failed() {
		t.Logf("cloudflared log:\n%s", strings.Join(s.Logs(), "\n"))
	}
}

// TestRealBlockedEdge: cloudflared got its tunnel (a quick one, or a named
// one from its token) but cannot reach the edge (UDP and TCP 7844
// blocked). The tunnel stays "starting", and within 30 s says what is
// wrong and what to do, quoting cloudflared's own advice; cloudflared
// keeps running (it may still connect) and is not restarted; Stop ends it.
func TestRealBlockedEdge(t *testing.T) {
	t.Parallel()
	bin := cftest.Binary(t)
	// A well-formed token (base64 JSON: account, tunnel id, secret), so
	// cloudflared goes on to the edge.
	const token = "eyJhIjoiMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYiLCJ0IjoiNmM0YjBjMmUtNWQ3YS00YTNlLTlkMWYtMmI4ZTBjOWE3ZjExIiwicyI6ImMyVmpjbVYwYzJWamNtVjBjMlZqY21WMGMyVmpjbVYwYzJWamNtVjBNVEk9In0="
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "quick", true: "named"}[named], func(t *testing.T) {
			t.Parallel()
			q := cftest.NewQuickService(t, cftest.Answer(http.StatusOK, "application/json", cftest.TunnelAnswer))
			cfg := realConfig(t, bin, q.URL)
			wantRequests := 1
			if named {
				cfg.Token, cfg.Hostname, wantRequests = token, "hooks.example.com", 0
			}
			s, r := startSupervisor(t, cfg)
			defer dumpLogs(t, s)
			started := r.waitLong(t, "cloudflared running", func(e Event) bool { return e.Status.PID != 0 })
			startedAt := time.Now()
			e := r.waitLong(t, "the edge reason", func(e Event) bool {
				if e.Status.State == Ready || e.Status.State == Reconnecting || !e.Status.NextRetry.IsZero() {
					t.Fatalf("a cloudflared that never connected is %+v", e.Status)
				}
				return e.Status.Cause == CauseEdgeBlocked
			})
			if d := time.Since(startedAt); d > 30*time.Second {
				t.Errorf("the reason came %s after the start, want within 30 s", d)
			}
			for _, w := range []string{"cannot reach Cloudflare's edge", "pre-checks found UDP and TCP port 7844 blocked",
				"Allow outbound UDP and TCP port 7844", "Still trying"} {
				if !strings.Contains(e.Status.Reason, w) {
					t.Errorf("reason %q lacks %q", e.Status.Reason, w)
				}
			}
			st := s.State()
			if st.State != Starting || st.PID != started.Status.PID || processGone(st.PID) || st.Restarts != 0 || st.PublicURL != "" {
				t.Fatalf("after the reason: %+v (cloudflared pid %d)", st, started.Status.PID)
			}
			if n := q.Requests(); n != wantRequests {
				t.Errorf("%d quick tunnels requested, want %d", n, wantRequests)
			}
			s.Stop()
			if !processGone(st.PID) || s.State().State != Stopped {
				t.Fatalf("after Stop: %+v, pid %d gone %v", s.State(), st.PID, processGone(st.PID))
			}
			if !logsContain(s, "CONNECTIVITY PRE-CHECKS") || logsContain(s, "killing it") || logsContain(s, token[:40]) {
				t.Errorf("log: %q", s.Logs())
			}
		})
	}
}

// TestRealQuickTunnelFailures: each way the quick-tunnel request fails
// ends cloudflared with exit code 1; each gets its own cause and words,
// the tunnel stays "starting", and the next try is scheduled (after a
// rate limit, not before RateLimitWait however short the schedule).
func TestRealQuickTunnelFailures(t *testing.T) {
	t.Parallel()
	bin := cftest.Binary(t)
	closed := func() string { // a loopback port nothing listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc // nil: url as is
		url    string
		cause  Cause
		want   []string
	}{
		{"rate limited", cftest.Answer(http.StatusTooManyRequests, "text/plain", "error code: 1015"), "", CauseRateLimited,
			[]string{"rate-limiting quick tunnels", "429", "1015", "waits before asking again"}},
		{"captive portal", cftest.Answer(http.StatusOK, "text/html", "<!DOCTYPE html>\n<html><head><title>Guest Wi-Fi</title></head>\n<body>Please sign in</body></html>\n"), "",
			CauseCaptivePortal, []string{"web page", "sign in"}},
		{"API timeout", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "", CauseAPITimeout,
			[]string{"did not answer in time", "api.trycloudflare.com"}},
		{"DNS failure", nil, "http://hookscope-test.invalid", CauseDNS, []string{"cannot look up hookscope-test.invalid", "DNS"}},
		{"refused", nil, closed, CauseAPIUnreachable, []string{"cannot reach Cloudflare's quick-tunnel service", "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.url
			var q *cftest.QuickService
			if tc.answer != nil {
				q = cftest.NewQuickService(t, tc.answer)
				url = q.URL
			}
			cfg := realConfig(t, bin, url)
			cfg.MaxFailures = -1
			s, r := startSupervisor(t, cfg)
			defer dumpLogs(t, s)
			e := r.waitLong(t, "the first failed try", func(e Event) bool {
				if e.Status.State != Starting && e.Status.State != Stopped {
					t.Fatalf("status %+v", e.Status)
				}
				return !e.Status.NextRetry.IsZero()
			})
			if e.Status.Cause != tc.cause || e.Status.Attempt != 1 {
				t.Errorf("cause %q attempt %d, want %q 1", e.Status.Cause, e.Status.Attempt, tc.cause)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Status.Reason, w) {
					t.Errorf("reason %q lacks %q", e.Status.Reason, w)
				}
			}
			if tc.cause == CauseRateLimited {
				if wait := time.Until(e.Status.NextRetry); wait < 4*time.Minute {
					t.Errorf("next try in %s after a rate limit, want at least 5 minutes", wait)
				}
				if n := q.Requests(); n != 1 {
					t.Errorf("%d quick tunnels requested, want 1", n)
				}
			}
			s.Stop()
		})
	}
}

// TestRealMalformedToken: cloudflared refuses a malformed token itself
// (exit 255, without contacting Cloudflare). That is said as such, and not
// retried.
func TestRealMalformedToken(t *testing.T) {
	t.Parallel()
	bin := cftest.Binary(t)
	cfg := realConfig(t, bin, "http://hookscope-test.invalid")
	cfg.Token, cfg.Hostname = "xyz-not-a-token", "hooks.example.com"
	s, r := startSupervisor(t, cfg)
	defer dumpLogs(t, s)
	e := r.waitLong(t, "failed", isState(Failed))
	if e.Status.Cause != CauseBadToken || !strings.Contains(e.Status.Reason, "before contacting Cloudflare") ||
		strings.Contains(e.Status.Reason, "rejected") || !strings.Contains(e.Status.Reason, "exited with code 255") {
		t.Fatalf("status %+v", e.Status)
	}
	<-s.Done()
	n := 0
	for _, l := range s.Logs() {
		if strings.HasPrefix(l, "hookscope: started") {
			n++
		}
		if strings.Contains(l, "xyz-not-a-token") {
			t.Errorf("token in log line %q", l)
		}
	}
	if n != 1 || e.Status.Attempt != 1 {
		t.Fatalf("cloudflared started %d times (attempt %d), want once", n, e.Status.Attempt)
	}
}

// TestRealVersion: the real cloudflared is recognised and recent enough.
func TestRealVersion(t *testing.T) {
	t.Parallel()
	bin := cftest.Binary(t)
	path, v, err := Resolve(t.Context(), bin, "linux", nil)
	if err != nil || path != bin || v.Less(MinVersion()) || v.Year < 2026 {
		t.Fatalf("Resolve = %q %v %v", path, v, err)
	}
}
