package send

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// runSendCLI runs `hookscope <args>` in-process with send as the only command.
func runSendCLI(t *testing.T, getenv map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r := clitest.Run(t, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, getenv, args...)
	return r.Code, r.Stdout, r.Stderr
}

// sendTarget records deliveries and answers with status.
type sendTarget struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
}

func newSendTarget(t *testing.T, status int) *sendTarget {
	h := &sendTarget{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, b)
		h.heads = append(h.heads, r.Header.Clone())
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.Close)
	return h
}

func TestSendAllTypes(t *testing.T) {
	srv := newSendTarget(t, http.StatusOK)
	code, out, errOut := runSendCLI(t, map[string]string{"HOOK_SECRET": "s3cret"},
		"send", "--to", srv.URL+"/hooks", "--secret-env", "HOOK_SECRET", "--all-types", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if len(srv.bodies) != 17 {
		t.Fatalf("server got %d deliveries, want 17", len(srv.bodies))
	}
	seen := map[string]bool{}
	for i, b := range srv.bodies {
		h := srv.heads[i]
		sig := h.Get(inspector.SignatureHeader)
		if v := inspector.Verify(sig, sig != "", b, [][]byte{[]byte("s3cret")}); v.Status != inspector.SignatureValid {
			t.Errorf("delivery %d: %s", i, v.Reason)
		}
		if h.Get("User-Agent") != "Service-Webhooks/0.0.47" || h.Get("Content-Type") != "application/json" || h.Get("Content-Length") != strconv.Itoa(len(b)) {
			t.Errorf("delivery %d headers %v", i, h)
		}
		m, err := inspector.DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m.Events {
			e := catalog.DecodeEvent(r.Raw)
			seen[e.Type] = true
			if len(e.Problems) != 0 {
				t.Errorf("%s: %+v", e.Type, e.Problems)
			}
		}
	}
	if len(seen) != 17 {
		t.Errorf("types seen: %v", seen)
	}
	if strings.Contains(out+errOut, "s3cret") {
		t.Errorf("the secret appears in the output")
	}
	if !strings.Contains(out, "17 answered 2xx") || !strings.Contains(out, "200 OK") {
		t.Errorf("output:\n%s", out)
	}
}

func TestSendScenarioJSON(t *testing.T) {
	srv := newSendTarget(t, http.StatusOK)
	code, out, errOut := runSendCLI(t, nil, "send", "--to", srv.URL, "--scenario", "at-least-once", "--batch", "2", "--json", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(srv.bodies) || len(lines) < 5 {
		t.Fatalf("%d lines for %d deliveries", len(lines), len(srv.bodies))
	}
	uuids := map[string]int{}
	for _, l := range lines {
		var s sendLine
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if s.Status != 200 || s.Error != "" || len(s.Events) == 0 || len(s.Events) > 2 {
			t.Errorf("line %+v", s)
		}
		for _, e := range s.Events {
			uuids[e.UUID]++
		}
	}
	for u, n := range uuids {
		if n < 2 {
			t.Errorf("event %s sent %d times in at-least-once", u, n)
		}
	}
	if srv.heads[0].Get(inspector.SignatureHeader) != "" {
		t.Errorf("no secret given, yet the delivery is signed")
	}
}

func TestSendStatus(t *testing.T) {
	srv := newSendTarget(t, http.StatusInternalServerError)
	code, out, errOut := runSendCLI(t, nil, "send", "--to", srv.URL, "--type", "media.ready", "--count", "2")
	if code != 1 || !strings.Contains(errOut, "2 of 2 answers were not 2xx") || !strings.Contains(out, "500 Internal Server Error") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	// One answer reads in the singular.
	code, _, errOut = runSendCLI(t, nil, "send", "--to", srv.URL, "--type", "media.ready")
	if code != 1 || !strings.Contains(errOut, "1 of 1 answer was not 2xx") {
		t.Errorf("one answer: exit %d: %s", code, errOut)
	}
	code, _, errOut = runSendCLI(t, nil, "send", "--to", srv.URL, "--type", "media.ready", "--ignore-status")
	if code != 0 {
		t.Errorf("--ignore-status: exit %d: %s", code, errOut)
	}
}

// TestSendNothingListening: with the receiver down, send says why in one
// line (not one failure per message) and exits 1, even with
// --ignore-status: no answer is not a status.
func TestSendNothingListening(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	host := strings.TrimPrefix(dead.URL, "http://")
	for _, args := range [][]string{
		{"send", "--to", dead.URL + "/webhooks", "--all-types"},
		{"send", "--to", dead.URL + "/webhooks", "--all-types", "--ignore-status", "--json"},
	} {
		code, out, errOut := runSendCLI(t, nil, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 1 || out != "" || len(lines) != 1 || !strings.Contains(lines[0], "nothing is listening on "+host) ||
			!strings.Contains(lines[0], "no message was sent") || !strings.Contains(lines[0], "hookscope listen") {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
}

func TestSendBatchDuplicates(t *testing.T) {
	srv := newSendTarget(t, http.StatusOK)
	code, _, errOut := runSendCLI(t, nil, "send", "--to", srv.URL, "--type", "media.created", "--type", "media.ready", "--count", "3", "--duplicates", "1", "--batch", "4", "--shuffle")
	if code != 0 {
		t.Fatal(errOut)
	}
	// 6 events + 6 copies = 12 events in messages of at most 4, no
	// message carrying an event and its copy.
	sent := map[string]int{}
	for i, b := range srv.bodies {
		m, err := inspector.DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		inMsg := map[string]bool{}
		for _, e := range m.Events {
			if inMsg[e.UUID] {
				t.Errorf("message %d carries event %s twice", i, e.UUID)
			}
			inMsg[e.UUID] = true
			sent[e.UUID]++
		}
		if len(m.Events) > 4 {
			t.Errorf("message %d has %d events", i, len(m.Events))
		}
	}
	if len(sent) != 6 {
		t.Errorf("%d distinct events, want 6", len(sent))
	}
	for u, n := range sent {
		if n != 2 {
			t.Errorf("event %s sent %d times, want 2", u, n)
		}
	}
}

// TestSendAtLeastOnceBatches: the at-least-once scenario batches by 3
// unless --batch says otherwise, as its description says; the summary
// counts in words.
func TestSendAtLeastOnceBatches(t *testing.T) {
	for _, tc := range []struct {
		args []string
		most int
	}{
		{nil, 3},
		{[]string{"--batch", "1"}, 1},
	} {
		srv := newSendTarget(t, http.StatusOK)
		code, out, errOut := runSendCLI(t, nil, append([]string{"send", "--to", srv.URL, "--scenario", "at-least-once", "--seed", "4"}, tc.args...)...)
		if code != 0 {
			t.Fatal(errOut)
		}
		most := 0
		for _, b := range srv.bodies {
			m, _ := inspector.DecodeMessage(b)
			most = max(most, len(m.Events))
		}
		if most != tc.most {
			t.Errorf("%v: the largest message has %d events, want %d\n%s", tc.args, most, tc.most, out)
		}
	}
	srv := newSendTarget(t, http.StatusOK)
	if _, out, _ := runSendCLI(t, nil, "send", "--to", srv.URL, "--type", "media.ready"); !strings.Contains(out, "sent 1 message (1 event) to") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestSendUsage(t *testing.T) {
	cases := []struct {
		args   []string
		phrase string
	}{
		{[]string{"send", "--all-types"}, "the consumer URL is required"},
		{[]string{"send", "--to", "ftp://x", "--all-types"}, "not an http(s) URL"},
		{[]string{"send", "--to", "http://127.0.0.1:1"}, "choose what to send"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--type", "media.exploded"}, "media.created, media.processing"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--scenario", "nope"}, "media-lifecycle, media-failed"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--scenario", "media-lifecycle", "--all-types"}, "cannot be combined"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--all-types", "--batch", "0"}, "--batch must be at least 1"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--all-types", "--count", "0"}, "--count must be at least 1"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--all-types", "--duplicates", "-1"}, "negative"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--all-types", "--secret-env", "UNSET"}, "unset or empty"},
		{[]string{"send", "--to", "http://127.0.0.1:1", "--all-types", "--bogus"}, "unknown flag: --bogus"},
	}
	for _, c := range cases {
		code, _, errOut := runSendCLI(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.phrase) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errOut)
		}
	}
	code, out, _ := runSendCLI(t, nil, "send", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") {
		t.Errorf("--help: %d %s", code, out)
	}
}
