package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// logBuffer collects log lines from several goroutines.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuffer) Logf(format string, a ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
	l.mu.Unlock()
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestWebhookRetriesAndLogsNoSecrets(t *testing.T) {
	var calls atomic.Int32
	got := make(chan []byte, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got <- b
	}))
	defer ts.Close()
	logs := &logBuffer{}
	s, err := New(Config{WebhookURL: ts.URL + "/h?token=hush", WebhookSecret: []byte("whsec-hush"), Logf: logs.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.hooks.retryDelays = []time.Duration{time.Millisecond}
	if _, err := s.Lifecycle("741302", "Retry me", false); err != nil {
		t.Fatal(err)
	}
	var body []byte
	select {
	case body = <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("no retried delivery; log:\n%s", logs)
	}
	if !strings.Contains(string(body), `"media.created"`) {
		t.Fatalf("retried body %s", body)
	}
	s.Close()
	out := logs.String()
	if !strings.Contains(out, "HTTP 503") || !strings.Contains(out, "retrying") {
		t.Errorf("log does not explain the failure:\n%s", out)
	}
	for _, leak := range []string{"hush", "whsec"} {
		if strings.Contains(out, leak) {
			t.Errorf("log leaks %q:\n%s", leak, out)
		}
	}
}

// A transport error names the webhook URL with its credential parameters
// redacted (redact.URL, the one URL redaction), redacted
// where it stands in the error (its URL field), not by searching the
// message for the configured text: Go's client reports the URL as it
// parsed it, which need not be the text configured (here: the scheme's
// case).
func TestWebhookTransportErrorHidesTheQuery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	logs := &logBuffer{}
	s, err := New(Config{WebhookURL: "HTTP://" + addr + "/h?token=hush-hush", WebhookSecret: []byte("whsec-hush"), Logf: logs.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.hooks.retryDelays = nil
	if _, err := s.Lifecycle("741302", "Nowhere", false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "failed") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	if !strings.Contains(out, "failed") || strings.Contains(out, "hush-hush") || !strings.Contains(out, addr+"/h?token=%5BREDACTED%5D") {
		t.Fatalf("log:\n%s", out)
	}
}
