package tunnel

import (
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/internal/redact"
)

// The lines below are cloudflared 2026.8.2's own, from runs against the
// quick-service stand-ins of realcf_test.go (timestamps and ids as they
// came).
func TestParseLogLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want LogInfo
	}{
		{"box URL", "2021-09-03T10:44:41Z INF |  https://symantec-transferred-lock-revenues.trycloudflare.com                              |",
			LogInfo{Level: "INF", URL: "https://symantec-transferred-lock-revenues.trycloudflare.com"}},
		{"box URL upper case", "2021-09-03T10:44:41Z INF |  https://Four-Dashed.TryCloudflare.com  |",
			LogInfo{Level: "INF", URL: "https://four-dashed.trycloudflare.com"}},
		{"box title", "2021-09-03T10:44:41Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |",
			LogInfo{Level: "INF"}},
		{"box border", "2021-09-03T10:44:41Z INF +--------------------------------+", LogInfo{Level: "INF"}},
		{"api URL boxed is still not the tunnel", "INF |  https://api.trycloudflare.com  |", LogInfo{}},
		{"bare URL outside a box", "see https://x-y.trycloudflare.com for details", LogInfo{}},
		{"registered", "2024-08-05T10:00:00Z INF Registered tunnel connection connIndex=0 connection=abc event=0 ip=198.41.200.13 location=ams05 protocol=quic",
			LogInfo{Level: "INF", Registered: true}},
		{"registered old style", "2022-06-01T16:23:12Z INF Connection c206cf44 registered connIndex=0 location=ORD",
			LogInfo{Level: "INF", Registered: true}},
		{"rate limit", `2026-11-25T20:08:09Z ERR Error unmarshaling QuickTunnel response: error code: 1015 error="invalid character 'e' looking for beginning of value" status_code="429 Too Many Requests"`,
			LogInfo{Level: "ERR", Failure: CauseRateLimited}},
		{"rate limit, exit line", "failed to unmarshal quick Tunnel: invalid character 'e' looking for beginning of value",
			LogInfo{Failure: CauseBadAnswer, Detail: "failed to unmarshal quick Tunnel: invalid character 'e' looking for beginning of value"}},
		{"captive portal", `2026-11-25T20:08:16Z ERR Error unmarshaling QuickTunnel response: <html><head><title>Login</title></head><body>Please sign in to the hotel wifi</body></html> error="invalid character '<' looking for beginning of value" status_code="200 OK"`,
			LogInfo{Level: "ERR", Failure: CauseCaptivePortal}},
		{"captive portal, exit line", "failed to unmarshal quick Tunnel: invalid character '<' looking for beginning of value",
			LogInfo{Failure: CauseCaptivePortal}},
		{"api timeout", `failed to request quick Tunnel: Post "http://127.0.0.1:18313/tunnel": net/http: timeout awaiting response headers (Client.Timeout exceeded while awaiting headers)`,
			LogInfo{Failure: CauseAPITimeout}},
		{"api DNS", `failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial tcp: lookup api.trycloudflare.com on 10.255.255.53:53: no such host`,
			LogInfo{Failure: CauseDNS, Detail: "api.trycloudflare.com"}},
		{"api refused", `failed to request quick Tunnel: Post "http://127.0.0.1:18311/tunnel": dial tcp 127.0.0.1:18311: connect: connection refused`,
			LogInfo{Failure: CauseAPIUnreachable, Detail: `failed to request quick Tunnel: Post "http://127.0.0.1:18311/tunnel": dial tcp 127.0.0.1:18311: connect: connection refused`}},
		{"edge discovery DNS", "Could not lookup srv records on _v2-origintunneld._tcp.argotunnel.com: lookup _v2-origintunneld._tcp.argotunnel.com on 10.255.255.53:53: no such host",
			LogInfo{Failure: CauseDNS, Detail: "_v2-origintunneld._tcp.argotunnel.com"}},
		{"features lookup is noise", `2026-11-25T20:08:03Z ERR Failed to fetch features, default to disable error="lookup cfd-features.argotunnel.com on 10.255.255.53:53: no such host"`,
			LogInfo{Level: "ERR"}},
		{"edge discovery with TUNNEL_EDGE is noise", `2026-11-25T20:05:27Z ERR edge discovery: error looking up Cloudflare edge IPs: the DNS query failed error="lookup _v2-origintunneld._tcp.argotunnel.com on 10.255.255.53:53: no such host" event=0`,
			LogInfo{Level: "ERR"}},
		{"quic dial", `2026-11-25T20:05:32Z ERR Failed to dial a quic connection error="failed to dial to edge with quic: timeout: no recent network activity" connIndex=0 event=0 ip=127.0.0.1`,
			LogInfo{Level: "ERR", EdgeDial: true, Detail: "failed to dial to edge with quic: timeout: no recent network activity"}},
		{"http2 dial", `2026-11-25T20:07:27Z ERR Unable to establish connection with Cloudflare edge error="TLS handshake with edge error: read tcp 127.0.0.1:46094->127.0.0.1:18302: i/o timeout" connIndex=0 event=0 ip=127.0.0.1`,
			LogInfo{Level: "ERR", EdgeDial: true, Detail: "TLS handshake with edge error: read tcp 127.0.0.1:46094->127.0.0.1:18302: i/o timeout"}},
		{"precheck row", `2026-11-25T20:05:40Z INF precheck component="UDP Connectivity" details="QUIC connection failed" run_id=1c8c405a-198a-4fdc-9369-289f2ec2bf43 status=fail target=127.0.0.1:18302`,
			LogInfo{Level: "INF", Precheck: "UDP Connectivity", PrecheckFailed: true}},
		{"precheck pass", `2026-11-25T20:05:40Z INF precheck component="DNS Resolution" details="DNS Resolved successfully" run_id=1c8c405a status=pass target=127.0.0.1:18302`,
			LogInfo{Level: "INF", Precheck: "DNS Resolution"}},
		{"precheck advice is not a failure", "2026-11-25T20:05:40Z INF |  ERROR: Allow outbound QUIC traffic on port 7844 or use HTTP2.                                                                                                   |",
			LogInfo{Level: "INF"}},
		{"precheck table row", "2026-11-25T20:05:40Z INF |  UDP Connectivity  127.0.0.1:18302         FAIL    QUIC connection failed                                                                                        |",
			LogInfo{Level: "INF"}},
		{"origin down is not an edge failure", `2024-08-05T10:00:00Z ERR  error="Unable to reach the origin service. The service may be down or it may not be responding to traffic from cloudflared: dial tcp 127.0.0.1:8080: connect: connection refused"`,
			LogInfo{Level: "ERR", OriginUnreachable: true}},
		{"malformed token", "Provided Tunnel token is not valid.", LogInfo{Failure: CauseBadToken, Detail: "Provided Tunnel token is not valid."}},
		{"empty", "", LogInfo{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseLogLine(tc.line); got != tc.want {
				t.Fatalf("ParseLogLine(%q)\n got %+v\nwant %+v", tc.line, got, tc.want)
			}
		})
	}
}

func FuzzParseLogLine(f *testing.F) {
	for _, s := range []string{
		"2021-09-03T10:44:41Z INF |  https://symantec-transferred-lock-revenues.trycloudflare.com  |",
		`failed to request quick Tunnel: Post "https://api.trycloudflare.com/tunnel": dial tcp: lookup api.trycloudflare.com: no such host`,
		"2026-11-25T20:05:40Z INF |  ERROR: Allow outbound QUIC traffic on port 7844 or use HTTP2.   |",
		`2026-11-25T20:05:40Z INF precheck component="UDP Connectivity" status=fail`,
		"2024-08-05T10:00:00Z INF Registered tunnel connection connIndex=0",
		"error code: 1015", "|  https://.  |", "| https://a.b |", "\x00|\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		li := ParseLogLine(line)
		if li.URL != "" {
			if !strings.HasPrefix(li.URL, "https://") || strings.ContainsAny(li.URL[len("https://"):], " |/") {
				t.Fatalf("bad URL %q from %q", li.URL, line)
			}
			if li.URL == "https://api.trycloudflare.com" {
				t.Fatalf("api host taken for the tunnel URL from %q", line)
			}
			if !strings.Contains(strings.ToLower(line), strings.TrimPrefix(li.URL, "https://")) {
				t.Fatalf("URL %q not in line %q", li.URL, line)
			}
		}
		if red := redact.New("sekret-token").Text(line); strings.Contains(red, "sekret-token") {
			t.Fatalf("redact left the token in %q", red)
		}
	})
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"cloudflared version 2024.8.2 (built 2024-08-05-1234 UTC)\n", "2024.8.2", false},
		{"cloudflared version 2023.10.0 (built 2023-10-31-1534 UTC)", "2023.10.0", false},
		{"cloudflared version DEV (built unknown)", "unknown", true},
		{"", "unknown", true},
	} {
		v, err := ParseVersion(tc.in)
		if (err != nil) != tc.wantErr || v.String() != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v", tc.in, v, err)
		}
	}
	old, _ := ParseVersion("cloudflared version 2021.12.4 (built x)")
	if !old.Less(MinVersion()) {
		t.Error("2021.12.4 should be older than MinVersion")
	}
	newer, _ := ParseVersion("cloudflared version 2022.1.0 (built x)")
	if newer.Less(MinVersion()) {
		t.Error("2022.1.0 should be supported")
	}
}

func TestConsumerURL(t *testing.T) {
	for _, tc := range []struct{ pub, path, want string }{
		{"https://a-b.trycloudflare.com", "/webhooks", "https://a-b.trycloudflare.com/webhooks"},
		{"https://a-b.trycloudflare.com/", "webhooks", "https://a-b.trycloudflare.com/webhooks"},
		{"hooks.example.com", "/webhooks", "https://hooks.example.com/webhooks"},
		{"https://hooks.example.com", "", "https://hooks.example.com/"},
		{"", "/webhooks", ""},
	} {
		if got := ConsumerURL(tc.pub, tc.path); got != tc.want {
			t.Errorf("ConsumerURL(%q, %q) = %q, want %q", tc.pub, tc.path, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	const tok = "eyJhIjoiMDEyMzQ1Njc4OWFiY2RlZiIsInQiOiJzZWNyZXQifQ=="
	for _, line := range []string{
		"2024 INF token " + tok,
		"cloudflared tunnel run --token " + tok,
		"cloudflared tunnel run --token=" + tok,
		"env TUNNEL_TOKEN=" + tok,
		"other eyJzZWNvbmQtdG9rZW4tdGhhdC1pcy1sb25n",
	} {
		got := redact.New(tok).Text(line)
		if strings.Contains(got, tok) || strings.Contains(got, "eyJzZWNvbmQ") || !strings.Contains(got, redact.Placeholder) {
			t.Errorf("redact(%q) = %q", line, got)
		}
	}
	if got := redact.New("").Text("plain line"); got != "plain line" {
		t.Errorf("redact changed a plain line: %q", got)
	}
}

func TestRingKeepsNewest(t *testing.T) {
	r := newRing(3)
	if got := r.snapshot(); len(got) != 0 {
		t.Fatalf("empty ring = %q", got)
	}
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		r.add(s)
	}
	if got := strings.Join(r.snapshot(), ","); got != "c,d,e" {
		t.Fatalf("ring = %q", got)
	}
}

// TestDefaultBackoff: the restart schedule starts at about 2 s, doubles,
// and never waits more than 5 minutes (plus its jitter).
func TestDefaultBackoff(t *testing.T) {
	b := DefaultBackoff()
	b.Reset()
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second} {
		if got := b.NextBackOff(); got < want*8/10 || got > want*12/10 {
			t.Errorf("wait %d = %s, want %s ±20%%", i+1, got, want)
		}
	}
	for range 20 {
		if got := b.NextBackOff(); got > 6*time.Minute {
			t.Fatalf("wait %s, want at most 5m +20%%", got)
		}
	}
}

func TestLineWriterSplitsAndBounds(t *testing.T) {
	var got []string
	w := &lineWriter{fn: func(s string) { got = append(got, s) }}
	w.Write([]byte("one\r\ntw"))
	w.Write([]byte("o\nthree"))
	w.flush()
	if strings.Join(got, "|") != "one|two|three" {
		t.Fatalf("lines = %q", got)
	}
	got = nil
	w.Write([]byte(strings.Repeat("x", 70<<10)))
	if len(got) != 1 {
		t.Fatalf("runaway line not cut: %d lines", len(got))
	}
}

func BenchmarkParseLogLine(b *testing.B) {
	lines := []string{
		"2024-08-05T10:00:00Z INF |  https://symantec-transferred-lock-revenues.trycloudflare.com  |",
		"2024-08-05T10:00:00Z INF Registered tunnel connection connIndex=0 connection=abc event=0 ip=198.41.200.13 location=ams05 protocol=quic",
		`2024-08-05T10:00:00Z ERR Error unmarshaling QuickTunnel response: error="invalid character 'e'" status_code="429 Too Many Requests"`,
	}
	for i := 0; b.Loop(); i++ {
		ParseLogLine(lines[i%len(lines)])
	}
}

// TestRedactShortTokenByPosition: a configured token too short to be one
// is not searched for in the words of the log (it would blank out
// "registered" for "red"), only redacted where it stands.
func TestRedactShortTokenByPosition(t *testing.T) {
	const short = "red"
	for line, want := range map[string]string{
		"INF Registered tunnel connection connIndex=0": "INF Registered tunnel connection connIndex=0",
		"cloudflared tunnel run --token red":           "cloudflared tunnel run --token " + redact.Placeholder,
		"env TUNNEL_TOKEN=red other=credential":        "env TUNNEL_TOKEN=" + redact.Placeholder + " other=credential",
		"ERR error=\"the tunnel token is not valid\"":  "ERR error=\"the tunnel token is not valid\"",
	} {
		if got := redact.New(short).Text(line); got != want {
			t.Errorf("redact(%q) = %q, want %q", line, got, want)
		}
	}
}

// TestEdgeBlockedWaitsForTheWholeTable: UDP's failed pre-check alone does
// not decide while the protocol is left to choose (TCP's line, next in
// cloudflared's table, decides between HTTP/2 and "both blocked"); with
// QUIC forced, or after the time-out, it does.
func TestEdgeBlockedWaitsForTheWholeTable(t *testing.T) {
	udpOnly := logHints{precheck: map[string]precheckResult{"UDP Connectivity": precheckFailed}}
	both := logHints{precheck: map[string]precheckResult{"UDP Connectivity": precheckFailed, "TCP Connectivity": precheckPassed}}
	for _, tc := range []struct {
		name     string
		h        logHints
		protocol string
		timedOut bool
		want     bool
	}{
		{"udp failed, tcp not yet said, auto", udpOnly, "", false, false},
		{"udp failed, tcp not yet said, auto, timed out", udpOnly, "auto", true, true},
		{"udp failed, quic forced", udpOnly, "quic", false, true},
		{"udp failed, tcp passed, auto", both, "", false, true},
		{"nothing known", logHints{}, "", false, false},
	} {
		if got := edgeBlocked(tc.h, tc.protocol, tc.timedOut); got != tc.want {
			t.Errorf("%s: edgeBlocked = %v, want %v", tc.name, got, tc.want)
		}
	}
}
