package listen

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// TestDeliveryTextGivesReasons: what --json and the window say about a
// delivery, a person at a terminal reads too: why a signature is not
// valid, the note on a valid one sent in another form, each problem with
// its place, and counts in words.
func TestDeliveryTextGivesReasons(t *testing.T) {
	secret := []byte("whsec_text")
	body := []byte(msg("h1", ev("0123456789abcdef", "media.created", "m1", "2026-01-01T00:00:01Z")))
	good := inspector.Sign(secret, body)
	rec := func(sigHeader string, problems []catalog.Problem, evProblems []catalog.Problem) *inspector.Record {
		d := &inspector.Delivery{ID: 7, Method: "POST", Path: "/webhooks", Status: 200, ReceivedAt: time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), Body: body}
		sig := inspector.Verify(sigHeader, sigHeader != "", body, [][]byte{secret})
		a := &inspector.Analysis{DeliveryID: 7, Signature: sig, Problems: problems, Events: []inspector.EventAnalysis{{
			UUID: "0123456789abcdef", Type: "media.created", Copies: 2, Duplicate: true, FirstDeliveryID: 3, Problems: evProblems}}}
		return &inspector.Record{Delivery: d, Analysis: a}
	}
	cl := catalog.Problem{Severity: catalog.SeverityError, Path: "Content-Length", Message: "Content-Length says 10 bytes but the body has 12"}
	ua := catalog.Problem{Severity: catalog.SeverityWarning, Path: "User-Agent", Message: "User-Agent is \"curl/8\""}
	name := catalog.Problem{Severity: catalog.SeverityWarning, Path: "payload.media.name", Message: "payload.media.name is missing"}
	for _, tc := range []struct {
		name      string
		rec       *inspector.Record
		want, not []string
	}{
		{"invalid: the reason under the head", rec(strings.Repeat("0", 64), nil, nil),
			[]string{"signature invalid\n", "    signature invalid: the digest does not match the configured secret"}, []string{"note"}},
		{"missing", rec("", nil, nil), []string{"    signature missing: the delivery has no X-Service-Signature header"}, nil},
		{"sha256= prefix: valid, with a note", rec("sha256="+good, nil, nil),
			[]string{"signature valid (with a note)", `    signature note: sent with a "sha256=" prefix`}, []string{"invalid"}},
		{"upper-case hex: valid, with a note", rec(strings.ToUpper(good), nil, nil),
			[]string{"signature valid (with a note)", "    signature note: sent in upper-case hex"}, nil},
		{"service form: no note", rec(good, nil, nil), []string{"signature valid\n"}, []string{"note"}},
		{"one header problem, with its place", rec(good, []catalog.Problem{cl}, nil),
			[]string{"  1 header problem\n", "    error Content-Length: Content-Length says 10 bytes"}, []string{"problem(s)"}},
		{"two header problems", rec(good, []catalog.Problem{cl, ua}, nil),
			[]string{"  2 header problems\n", "    warning User-Agent: "}, nil},
		{"event problems under the event", rec(good, nil, []catalog.Problem{name}),
			[]string{"duplicate: copy 2, first in #3 1 problem\n      warning payload.media.name: payload.media.name is missing"}, []string{"×"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deliveryText(tc.rec, nil, false)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("has %q:\n%s", n, got)
				}
			}
		})
	}
	// A divergent copy lists what changed from the first copy, a few
	// changes on the terminal, every one in JSON.
	div := rec(good, nil, nil)
	div.Analysis.Events[0].Divergent = true
	var changes []inspector.JSONChange
	for i := range 7 {
		changes = append(changes, inspector.JSONChange{Path: fmt.Sprintf("payload.media.tags[%d]", i), Old: `"a"`, New: `"b"`})
	}
	firsts := map[int]*inspector.FirstCopy{0: {DeliveryID: 3, Changes: changes}}
	got := deliveryText(div, firsts, false)
	if !strings.Contains(got, "      divergent: same uuid as #3, other content:\n        payload.media.tags[0]: \"a\" → \"b\"\n") ||
		strings.Contains(got, "tags[5]") || !strings.Contains(got, "… and 2 more changes") {
		t.Errorf("divergent:\n%s", got)
	}
	if l := listenJSON(div, firsts); len(l.Events[0].Changes) != 7 {
		t.Errorf("JSON changes: %d", len(l.Events[0].Changes))
	}
	// The JSON line carries the note too.
	if l := listenJSON(rec("sha256="+good, nil, nil), nil); l.Signature != "valid" || !strings.Contains(l.SignatureNote, "sha256=") {
		t.Errorf("JSON: signature %q, note %q", l.Signature, l.SignatureNote)
	}
}

// TestListenChecksFlagsFirst: a wrong flag is a usage error (exit 2) said
// before anything is bound, opened or started: nothing on stdout, no store
// file.
func TestListenChecksFlagsFirst(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-cloudflared")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tunnel", "--cloudflared", missing}, []string{"--cloudflared " + missing + " does not exist"}},
		{[]string{"--tunnel", "--cloudflared", dir}, []string{"--cloudflared " + dir + " is a directory"}},
		{[]string{"--tunnel", "--cloudflared", plain}, []string{"--cloudflared " + plain + " is not executable", "chmod +x"}},
		{[]string{"--addr", "localhost"}, []string{`--addr "localhost": want host:port`}},
		{[]string{"--addr", "127.0.0.1:99999"}, []string{"the port must be a number from 0 to 65535"}},
		{[]string{"--pprof", "6060"}, []string{`--pprof "6060": want host:port`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "hooks.db")
			var stdout, stderr bytes.Buffer
			args := append([]string{"listen", "--addr", "127.0.0.1:0", "--db", db}, tc.args...)
			code := runCLI(context.Background(), &cmdutil.Env{Stdout: &stdout, Stderr: &stderr}, args)
			if code != 2 || stdout.Len() > 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Errorf("the store was created (%v)", err)
			}
		})
	}
}

// TestListenPortTaken: a taken port fails (exit 1), said in the window's
// words, before the store is created.
func TestListenPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	db := filepath.Join(t.TempDir(), "hooks.db")
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), &cmdutil.Env{Stdout: &stdout, Stderr: &stderr}, []string{"listen", "--addr", ln.Addr().String(), "--db", db})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if code != 1 || stdout.Len() > 0 || !strings.Contains(stderr.String(), "port "+port+" is in use by another program") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the store was created (%v)", err)
	}
}

// TestDeliveryViaRelay: a delivery that came through a team relay says
// so with its stream sequence, in text and in --json; a direct one
// says nothing of it.
func TestDeliveryViaRelay(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	via := &inspector.Record{Delivery: &inspector.Delivery{ID: 9, Method: "POST", Path: "/webhooks", Status: 200, ReceivedAt: at, Source: "relay", RelaySeq: 1240}}
	direct := &inspector.Record{Delivery: &inspector.Delivery{ID: 10, Method: "POST", Path: "/webhooks", Status: 200, ReceivedAt: at, Source: "receiver"}}
	if got := deliveryText(via, nil, false); !strings.Contains(got, "#9     POST /webhooks  200  via relay #1240") {
		t.Errorf("text: %q", got)
	}
	if got := deliveryText(direct, nil, false); strings.Contains(got, "relay") {
		t.Errorf("direct text: %q", got)
	}
	if l := listenJSON(via, nil); l.Source != "relay" || l.RelaySeq != 1240 {
		t.Errorf("JSON: %+v", l)
	}
	if l := listenJSON(direct, nil); l.Source != "" || l.RelaySeq != 0 {
		t.Errorf("direct JSON: %+v", l)
	}
}
