package station_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/station"
)

// hookMessage is a message with one event of typ, under hook uuid hook
// (the same hook uuid is the service re-sending it).
func hookMessage(hook, typ string) []byte {
	return []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[{"uuid":"%s-e","type":%q,"generated_at":"2026-03-01T09:00:00Z","metadata":{"account_id":"a"},"payload":{"media":{"id":"m1"}}}]}`,
		hook, hook, typ))
}

// openRules starts a station on dbPath (a fresh store when "") with
// answer rules.
func openRules(t *testing.T, dbPath string, lines []string, fwd *forward.Config) *station.Station {
	t.Helper()
	if dbPath == "" {
		dbPath = filepath.Join(t.TempDir(), "hooks.db")
	}
	st, err := station.Open(context.Background(), station.Config{DBPath: dbPath, Addr: "127.0.0.1:0", Answer: lines, Forward: fwd,
		Engine: inspector.Options{Logf: t.Logf}})
	if err != nil {
		t.Fatal(rules.Render(err))
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// answered posts body to st and says what came back: the status, or
// "closed" when the connection was closed without an answer.
func answered(t *testing.T, st *station.Station, path string, body []byte) string {
	t.Helper()
	resp, err := http.Post("http://"+st.Addr()+path, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return "closed"
	}
	resp.Body.Close()
	return fmt.Sprint(resp.StatusCode)
}

// storedAnswer is what the store says a delivery was answered.
func storedAnswer(t *testing.T, st *station.Station, id int64) string {
	t.Helper()
	rec, err := st.Store().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Delivery.Reply().String()
}

// TestAnswerRulesEachAction: every action against the real receiver,
// first match wins, each answer stored with its delivery; sequences per
// hook uuid across re-sends, a used-up one falling through.
func TestAnswerRulesEachAction(t *testing.T) {
	st := openRules(t, "", []string{
		`media.deleted => close`,
		`events.exists(e, e.type == "media.failed") => 200 after 300ms`,
		`media.ready => 500 x2 then 200`,
		`delivery.path == "/flaky" => 503 x1`,
		`media.* => close after 200ms x1`,
	}, nil)
	steps := []struct {
		path, hook, typ string
		want, stored    string
	}{
		{"/webhooks", "d1", "media.deleted", "closed", "close"},
		{"/webhooks", "f1", "media.failed", "200", "200 after 300ms"},
		{"/webhooks", "r1", "media.ready", "500", "500"},
		{"/webhooks", "r2", "media.ready", "500", "500"},
		{"/webhooks", "r1", "media.ready", "500", "500"},
		{"/webhooks", "r1", "media.ready", "200", "200"},
		{"/webhooks", "r2", "media.ready", "500", "500"},
		{"/webhooks", "r2", "media.ready", "200", "200"},
		{"/flaky", "p1", "playlist.created", "503", "503"},
		{"/flaky", "p1", "playlist.created", "200", "200"},
		{"/webhooks", "u1", "media.updated", "closed", "close after 200ms"},
		{"/webhooks", "u1", "media.updated", "200", "200"},
		{"/webhooks", "n1", "playlist.created", "200", "200"},
	}
	for i, s := range steps {
		got := answered(t, st, s.path, hookMessage(s.hook, s.typ))
		if got != s.want {
			t.Errorf("step %d (%s %s): answered %s, want %s", i+1, s.hook, s.typ, got, s.want)
		}
		if got := storedAnswer(t, st, int64(i+1)); got != s.stored {
			t.Errorf("step %d (%s %s): stored %q, want %q", i+1, s.hook, s.typ, got, s.stored)
		}
	}
}

// waitAnalyzed waits until the store has analyzed n deliveries (their
// hook uuids are what a restart counts).
func waitAnalyzed(t *testing.T, st *station.Station, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left bool
		for id := range int64(n) {
			rec, err := st.Store().Get(context.Background(), id+1)
			if err != nil || rec.Analysis == nil {
				left = true
				break
			}
		}
		if !left {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries not analyzed within 10 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSequenceAcrossRestart: a message's sequence goes on after the
// receiver restarts on the same store (the counter is seeded from it).
func TestSequenceAcrossRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hooks.db")
	lines := []string{`500 x2 then 200`}
	first := openRules(t, db, lines, nil)
	if got := answered(t, first, "/webhooks", hookMessage("h1", "media.ready")); got != "500" {
		t.Fatalf("first attempt: %s", got)
	}
	waitAnalyzed(t, first, 1)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := openRules(t, db, lines, nil)
	for i, want := range []string{"500", "200"} {
		if got := answered(t, again, "/webhooks", hookMessage("h1", "media.ready")); got != want {
			t.Errorf("attempt %d after the restart: %s, want %s", i+2, got, want)
		}
	}
	if got := answered(t, again, "/webhooks", hookMessage("h2", "media.ready")); got != "500" {
		t.Errorf("another message's first attempt: %s", got)
	}
}

// TestSequenceAddedLater: a sequence put in force while the receiver
// runs goes on from each message's stored count (no set before it
// counted).
func TestSequenceAddedLater(t *testing.T) {
	st := openRules(t, "", []string{`delivery.path == "/x" => 500`}, nil)
	for range 2 {
		if got := answered(t, st, "/webhooks", hookMessage("h1", "media.ready")); got != "200" {
			t.Fatalf("before the sequence: %s", got)
		}
	}
	waitAnalyzed(t, st, 2)
	if err := st.SetAnswerRules([]string{`500 x3 then 200`}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"500", "200"} {
		if got := answered(t, st, "/webhooks", hookMessage("h1", "media.ready")); got != want {
			t.Errorf("attempt %d: %s, want %s", i+3, got, want)
		}
	}
}

// TestAnswerRulesRefused: a rule that does not compile is refused with
// its place and column, at start and when set; the rules in force stay.
func TestAnswerRulesRefused(t *testing.T) {
	bad := []string{`500`, `events.exists(e, e.tpye == "media.ready") => 500`}
	_, err := station.New(station.Config{DBPath: filepath.Join(t.TempDir(), "no.db"), Answer: bad})
	var re *rules.RuleError
	var ce rules.CompileErrors
	if !errors.As(err, &re) || re.Index != 1 || !errors.As(err, &ce) || ce[0].Column != 19 {
		t.Fatalf("a bad rule at start: %v", err)
	}
	st := openRules(t, "", []string{`media.* => 500`}, nil)
	if err := st.SetAnswerRules([]string{`media.* => 5000`}); err == nil || !strings.Contains(err.Error(), "answer rule 1") {
		t.Fatalf("a bad action: %v", err)
	}
	if got := answered(t, st, "/webhooks", hookMessage("m", "media.ready")); got != "500" {
		t.Errorf("the rules in force after a refused set: answered %s, want 500", got)
	}
	if w := st.AnswerWarning(); w != "answering 500 to media.*" {
		t.Errorf("warning %q", w)
	}
	if err := st.SetAnswerRules(nil); err != nil || st.AnswerWarning() != "" {
		t.Fatalf("no rules: %v, warning %q", err, st.AnswerWarning())
	}
	if got := answered(t, st, "/webhooks", hookMessage("m", "media.ready")); got != "200" {
		t.Errorf("no rules: answered %s", got)
	}
}

// TestTryAnswerRules: the Rules editor's test of rules against a stored
// delivery, by default as the message's next attempt, counting nothing.
func TestTryAnswerRules(t *testing.T) {
	st := openRules(t, "", nil, nil)
	answered(t, st, "/webhooks", hookMessage("h7", "media.ready"))
	waitAnalyzed(t, st, 1)
	rec, err := st.Store().Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{`media.ready => 500 x1 then 200 after 12s`}
	tr, err := st.TryAnswerRules(context.Background(), lines, rec, 0)
	if err != nil || tr.Rule != 0 || tr.Attempt != 2 || tr.Explain != "rule 1 answers delivery 1 (attempt 2 of message h7): waits 12 s, then 200 OK" {
		t.Fatalf("the next attempt: %+v, %v", tr, err)
	}
	if tr, _ := st.TryAnswerRules(context.Background(), lines, rec, 1); tr.Step.Status != 500 {
		t.Errorf("attempt 1: %+v", tr)
	}
	if _, err := st.TryAnswerRules(context.Background(), []string{`x =>`}, rec, 1); err == nil {
		t.Error("a bad rule was tried")
	}
	if got := answered(t, st, "/webhooks", hookMessage("h7", "media.ready")); got != "200" {
		t.Errorf("trying set rules in force: %s", got)
	}
}

// TestPassThroughAndAnswerRules: in pass-through the app answers what a
// route takes (an expression route here) and the answer rules answer
// only the others.
func TestPassThroughAndAnswerRules(t *testing.T) {
	app := newRawApp(t, "")
	app.setAnswer(func([]byte) (int, string, time.Duration) { return 202, "app", 0 })
	fwd := &forward.Config{Mode: forward.ModePassThrough, Routes: routes(t, `where events.exists(e, e.type.startsWith("media.")) => `+app.url("/m"))}
	st := openRules(t, "", []string{`500`}, fwd)
	if got := answered(t, st, "/webhooks", hookMessage("a", "media.ready")); got != "202" {
		t.Errorf("a delivery the route takes: %s, want the app's 202", got)
	}
	if got := answered(t, st, "/webhooks", hookMessage("b", "playlist.created")); got != "500" {
		t.Errorf("a delivery no route takes: %s, want the rule's 500", got)
	}
	if n := len(app.requests()); n != 1 {
		t.Errorf("the app got %d deliveries, want 1", n)
	}
	if note := station.PassThroughNote(fwd, 1); !strings.Contains(note, "the answer rule answers only the others") {
		t.Errorf("note %q", note)
	}
}

// TestExpressionRouteAck: in ack mode an expression route takes what
// its condition chooses, in order, as soon as it is stored.
func TestExpressionRouteAck(t *testing.T) {
	app := newRawApp(t, "")
	fwd := &forward.Config{Routes: routes(t, `where delivery.path == "/media" || events.exists(e, e.type == "media.ready") => `+app.url("/m"))}
	st := openRules(t, "", nil, fwd)
	answered(t, st, "/webhooks", hookMessage("a", "media.ready"))
	answered(t, st, "/webhooks", hookMessage("b", "playlist.created"))
	answered(t, st, "/media", hookMessage("c", "playlist.created"))
	app.waitFor(t, "got two deliveries", 10*time.Second, func(r [][]byte) bool { return len(r) == 2 })
	if got := app.bodies(); len(got) != 2 || !strings.Contains(got[0], `"a"`) || !strings.Contains(got[1], `"c"`) {
		t.Errorf("the app got %q", got)
	}
}
