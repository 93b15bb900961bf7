// Package cftest runs the real cloudflared in tests, offline: its
// quick-tunnel request goes to a local stand-in (quick-service in
// $HOME/.cloudflared/config.yml, HOME a temp dir), and its edge is a
// loopback UDP port where nothing answers (TUNNEL_EDGE), which is what a
// firewall blocking port 7844 looks like. Nothing reaches Cloudflare, so
// such a tunnel never gets ready: the fake cloudflared covers that.
//
// The binary is a test-only build of Cloudflare's own source (see
// ../shared/tools/cloudflared/README.md); the Makefile passes its path in
// HOOKSCOPE_CLOUDFLARED when it exists.
package cftest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// EnvVar names the environment variable holding the real cloudflared's
// path.
const EnvVar = "HOOKSCOPE_CLOUDFLARED"

// Binary is the real cloudflared's path, or skips the test saying what to
// set.
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv(EnvVar)
	if p == "" {
		t.Skip("the real cloudflared is not available: set " + EnvVar + " to its path " +
			"(make sets it when ../shared/tools/cloudflared/cloudflared exists)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", EnvVar, p, err)
	}
	return p
}

// QuickService stands in for api.trycloudflare.com and counts the quick
// tunnels asked of it.
type QuickService struct {
	URL      string
	requests atomic.Int32
}

// Requests is how many quick tunnels were asked for.
func (q *QuickService) Requests() int { return int(q.requests.Load()) }

// Hostname is the quick tunnel's hostname in TunnelAnswer.
const Hostname = "amber-river-silent-orbit.trycloudflare.com"

// TunnelAnswer is the real service's answer, as cloudflared expects it.
const TunnelAnswer = `{"success":true,"result":{"id":"6c4b0c2e-5d7a-4a3e-9d1f-2b8e0c9a7f11","name":"qt-hookscope",` +
	`"hostname":"` + Hostname + `","account_tag":"0123456789abcdef0123456789abcdef",` +
	`"secret":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI="}}`

// NewQuickService serves answer on a loopback port until the test ends.
func NewQuickService(t testing.TB, answer http.HandlerFunc) *QuickService {
	t.Helper()
	q := &QuickService{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.requests.Add(1)
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	q.URL = srv.URL
	return q
}

// Answer answers with status, content type and body.
func Answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// SilentEdge is a loopback UDP port that reads nothing and answers
// nothing: a firewall dropping UDP port 7844. Nothing listens on its TCP
// port either.
func SilentEdge(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

// Env is the environment (KEY=VALUE) for a real cloudflared whose
// quick-tunnel request goes to quickServiceURL and whose edge is silent.
func Env(t testing.TB, quickServiceURL string) []string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".cloudflared"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".cloudflared", "config.yml"), []byte("quick-service: "+quickServiceURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"HOME=" + home, "TUNNEL_EDGE=" + SilentEdge(t)}
}
