package listen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

// runCLI runs `hookscope <args>` in-process with listen as the only command.
func runCLI(ctx context.Context, env *cmdutil.Env, args []string) int {
	return cmdutil.RunCommand(ctx, env, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }, args)
}

const listenSecret = "whsec_listen_test"

func ev(uuid, typ, media, at string) string {
	return fmt.Sprintf(`{"uuid":%q,"type":%q,"payload":{"media":{"id":%q,"name":"Intro","url":"https://example.com/m/%s","duration":10.5,"thumbnail":{"url":"https://example.com/t.jpg"}}},"metadata":{"account_id":"a1"},"generated_at":%q}`, uuid, typ, media, media, at)
}

func msg(hook string, events ...string) string {
	return fmt.Sprintf(`{"hook":{"uuid":%q},"events":[%s]}`, hook, strings.Join(events, ","))
}

// TestListenEndToEnd runs `hookscope listen --json` in-process on a loopback
// port, sends every kind of delivery the issue names, and checks both the
// printed lines and the store.
func TestListenEndToEnd(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "hooks.db")
	out, errOut := &clitest.Buffer{}, &clitest.Buffer{}
	env := &cmdutil.Env{Stdout: out, Stderr: errOut, Getenv: func(k string) string {
		if k == "HS_SECRET" {
			return listenSecret
		}
		return ""
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runCLI(ctx, env, []string{"listen", "--addr", "127.0.0.1:0", "--db", dbPath, "--json", "--secret-env", "HS_SECRET", "--max-body", "4096"})
	}()
	var start struct {
		Listening string `json:"listening"`
	}
	if err := json.Unmarshal([]byte(out.WaitLines(t, 1)[0]), &start); err != nil || start.Listening == "" {
		t.Fatalf("first line: %v %q", err, out.Lines())
	}
	url := start.Listening

	e1 := ev("0123456789abcdef", "media.created", "m1", "2026-01-01T00:00:01Z")
	e2 := ev("fedcba9876543210fedcba9876543210", "media.ready", "m1", "2026-01-01T00:00:03Z")
	old := ev("aaaaaaaaaaaaaaaa", "media.processing", "m1", "2026-01-01T00:00:02Z")
	e1changed := strings.Replace(e1, "Intro", "Outro", 1)
	type send struct {
		name, method, body, sig string
		noSig                   bool
	}
	sends := []send{
		{name: "valid", body: msg("h1", e1)},
		{name: "invalid", body: msg("h2", e2), sig: inspector.Sign([]byte("wrong"), []byte(msg("h2", e2)))},
		{name: "missing", body: msg("h3", old), noSig: true},
		{name: "malformed", body: `{"hook":{"uuid":"h4"},"events":[`},
		{name: "wrong shape", body: `{"hook":{"uuid":"h5"},"events":{}}`},
		{name: "batched + out of order", body: msg("h6", e2, old)},
		{name: "re-sent", body: msg("h1", e1)},
		{name: "divergent", body: msg("h7", e1changed)},
		{name: "oversize", body: strings.Repeat("x", 5000)},
		{name: "get", method: http.MethodGet},
	}
	statuses := map[string]int{}
	for _, s := range sends {
		method := s.method
		if method == "" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, url, strings.NewReader(s.body))
		if method == http.MethodGet {
			req, _ = http.NewRequest(method, url, nil)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "Service-Webhooks/0.0.47")
		switch {
		case s.sig != "":
			req.Header.Set(inspector.SignatureHeader, s.sig)
		case !s.noSig:
			req.Header.Set(inspector.SignatureHeader, inspector.Sign([]byte(listenSecret), []byte(s.body)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[s.name] = resp.StatusCode
		// One at a time, so the ledger sees them in this order.
		out.WaitLines(t, 1+len(statuses))
	}
	lines := out.WaitLines(t, 1+len(sends))
	var got []listenLine
	for _, l := range lines[1:] {
		var ll listenLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		got = append(got, ll)
	}
	check := func(i int, what string, ok bool) {
		t.Helper()
		if !ok {
			b, _ := json.Marshal(got[i])
			t.Errorf("%s (%s): %s", sends[i].name, what, b)
		}
	}
	check(0, "valid, secret 0", got[0].Signature == "valid" && got[0].SecretMatched != nil && *got[0].SecretMatched == 0 && got[0].Error == nil && got[0].Status == 200)
	check(0, "event fields", len(got[0].Events) == 1 && got[0].Events[0].UUID == "0123456789abcdef" && !got[0].Events[0].Duplicate && got[0].Events[0].Copies == 1 && got[0].Events[0].AccountID == "a1")
	check(1, "invalid", got[1].Signature == "invalid" && got[1].SecretMatched == nil && got[1].Status == 200)
	check(2, "missing", got[2].Signature == "missing")
	check(3, "malformed", got[3].Error != nil && got[3].ErrorOffset != nil && len(got[3].Events) == 0)
	check(4, "wrong shape", got[4].Error != nil && strings.Contains(*got[4].Error, "events"))
	check(5, "batch", len(got[5].Events) == 2)
	check(5, "duplicates in batch", got[5].Events[0].Duplicate && got[5].Events[0].Copies == 2 && got[5].Events[1].Duplicate)
	check(6, "re-send", got[6].Resend && got[6].HookUUID == "h1" && got[6].Events[0].Duplicate && !got[6].Events[0].Divergent)
	check(7, "divergent", got[7].Events[0].Duplicate && got[7].Events[0].Divergent && !got[7].Resend)
	check(7, "what changed", len(got[7].Events[0].Changes) == 1 && got[7].Events[0].Changes[0].String() == `payload.media.name: "Intro" → "Outro"`)
	check(8, "oversize", got[8].Truncated && got[8].Status == 413 && got[8].Error != nil)
	check(9, "get", got[9].Rejected && got[9].Status == 405 && got[9].Method == "GET")
	if statuses["oversize"] != 413 || statuses["get"] != 405 || statuses["valid"] != 200 {
		t.Errorf("HTTP statuses: %v", statuses)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("listen exited %d: %s", code, errOut.Lines())
	}

	db, err := storage.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Invalid: the wrongly signed one, and the oversize one (its signature
	// covers bytes beyond the cap that were not kept).
	if st.Deliveries != int64(len(sends)) || st.InvalidSignatures != 2 || st.Divergent != 1 {
		t.Fatalf("store stats: %+v", st)
	}
	rec, err := db.Get(context.Background(), got[0].DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Delivery.Body) != sends[0].body || rec.Analysis == nil || rec.Analysis.Signature.Status != inspector.SignatureValid {
		t.Fatalf("stored record: %q %+v", rec.Delivery.Body, rec.Analysis)
	}
	copies, err := db.EventCopies(context.Background(), "0123456789abcdef")
	if err != nil || len(copies) != 3 {
		t.Fatalf("copies of e1: %d %v", len(copies), err)
	}
	trunc, _ := db.Get(context.Background(), got[8].DeliveryID)
	if len(trunc.Delivery.Body) != 4096 || !trunc.Delivery.Truncated {
		t.Fatalf("truncated body stored with %d bytes", len(trunc.Delivery.Body))
	}
}

func TestListenOutOfOrderText(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "hooks.db")
	out := &clitest.Buffer{}
	env := &cmdutil.Env{Stdout: out, Stderr: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- runCLI(ctx, env, []string{"listen", "--addr", "127.0.0.1:0", "--db", dbPath}) }()
	first := out.WaitLines(t, 1)[0]
	url := strings.Fields(strings.TrimPrefix(first, "Listening on "))[0]
	post := func(body string) {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post(msg("h1", ev("later0000000001", "media.ready", "m9", "2026-01-01T00:00:09Z")))
	out.WaitFor(t, "later0000000001")
	post(msg("h2", ev("earlier00000001", "media.processing", "m9", "2026-01-01T00:00:05Z")))
	out.WaitFor(t, "out of order: ")
	text := out.String()
	// The event line carries the mark, the indented line below it the reason.
	i := strings.Index(text, "earlier00000001")
	if i < 0 || !strings.Contains(text[i:], "out-of-order 1 problem\n      out of order: arrived after event later0000000001") ||
		!strings.Contains(text, "signature missing: the delivery has no X-Service-Signature header") {
		t.Fatalf("text output:\n%s", text)
	}
	cancel()
	<-done
}

func TestListenUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"listen", "--nope"},
		{"listen", "--answer", "4040"},
		{"listen", "--max-body", "0"},
		{"listen", "--addr", "0.0.0.0:8787"},
		{"listen", "--path", "webhooks"},
		{"listen", "--secret-env", "UNSET_VAR_FOR_TEST"},
		{"listen", "extra"},
	} {
		var stderr bytes.Buffer
		code := runCLI(context.Background(), &cmdutil.Env{Stdout: io.Discard, Stderr: &stderr}, args)
		if code != 2 || stderr.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
