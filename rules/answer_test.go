package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
)

func TestParseAction(t *testing.T) {
	cases := []struct {
		in   string
		want string // canonical form, or "error: <part of the message>"
	}{
		{"500", "500"},
		{" 200 after 12s ", "200 after 12s"},
		{"delay 12s", "200 after 12s"},
		{"close", "close"},
		{"hang", "200 after 15s"},
		{"close after 3s", "close after 3s"},
		{"500 x2 then 200", "500 x2 then 200"},
		{"503 x3", "503 x3"},
		{"500 after 1s x2 then close x1 then 200", "500 after 1s x2 then close x1 then 200"},
		{"", "error: no action"},
		{"500 then 200", "error: answers every later attempt"},
		{"700", "error: from 200 to 599"},
		{"100", "error: from 200 to 599"},
		{"ok", "error: is not an answer"},
		{"200 after", "error: after what"},
		{"200 after soon", "error: give a duration"},
		{"200 after 2h", "error: at most 10m0s"},
		{"500 x0", "error: a count is x"},
		{"500 twice", "error: unexpected"},
		{"500 x2 then", "error: empty step"},
	}
	for _, c := range cases {
		a, err := ParseAction(c.in)
		got := a.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != c.want && !(strings.HasPrefix(c.want, "error: ") && strings.Contains(got, strings.TrimPrefix(c.want, "error: "))) {
			t.Errorf("ParseAction(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// arrival makes a delivery as the receiver has it before answering.
func arrival(hook string, types ...string) *inspector.Delivery {
	body := message(hook, types...)
	return &inspector.Delivery{ReceivedAt: t0, Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)),
		Headers: []inspector.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "User-Agent", Value: "Service-Webhooks/0.0.47"}}}
}

// TestDecide: each action, first match wins, sequences per hook uuid.
func TestDecide(t *testing.T) {
	rs, err := NewRules([]string{
		`events.exists(e, e.type == "media.deleted") => close`,
		`events.exists(e, e.type == "media.failed") => 200 after 12s`,
		`events.exists(e, e.type == "media.ready") => 500 x2 then 200`,
		`delivery.path == "/flaky" => 503 x1`,
		`delivery.headers["user-agent"].startsWith("curl/") => 418`,
	}, nil)
	if err != nil {
		t.Fatal(Render(err))
	}
	type step struct {
		d       *inspector.Delivery
		rule    int
		answer  string
		attempt int
	}
	flaky := arrival("f1", "media.created")
	flaky.Path = "/flaky"
	curl := arrival("c1", "media.created")
	curl.Headers[1].Value = "curl/8.5"
	steps := []step{
		{arrival("d1", "media.deleted"), 0, "close", 1},
		{arrival("x1", "media.failed"), 1, "200 after 12s", 1},
		// Each message gets 500 twice, then 200, counted per hook uuid.
		{arrival("r1", "media.ready"), 2, "500 x2", 1},
		{arrival("r2", "media.ready"), 2, "500 x2", 1},
		{arrival("r1", "media.ready"), 2, "500 x2", 2},
		{arrival("r1", "media.ready"), 2, "200", 3},
		{arrival("r2", "media.ready"), 2, "500 x2", 2},
		{arrival("r1", "media.ready"), 2, "200", 4},
		{arrival("r2", "media.ready"), 2, "200", 3},
		// A used-up sequence falls through to the default answer.
		{flaky, 3, "503 x1", 1},
		{flaky, -1, "", 2},
		{curl, 4, "418", 1},
		{arrival("n1", "media.created"), -1, "", 1},
	}
	for i, s := range steps {
		dec := rs.Decide(s.d, nil, t0)
		got := ""
		if dec.Rule >= 0 {
			got = dec.Step.String()
		}
		if dec.Rule != s.rule || got != s.answer || dec.Attempt != s.attempt {
			t.Errorf("step %d (%s): rule %d %q attempt %d, want rule %d %q attempt %d", i, dec.HookUUID, dec.Rule, got, dec.Attempt, s.rule, s.answer, s.attempt)
		}
	}
}

// TestDecideSignature: answer rules see the signature checked with the
// receiver's secrets.
func TestDecideSignature(t *testing.T) {
	rs, err := NewRules([]string{`delivery.signature != "valid" => 401`}, nil)
	if err != nil {
		t.Fatal(Render(err))
	}
	secret := []byte("s")
	d := arrival("h", "media.ready")
	if dec := rs.Decide(d, [][]byte{secret}, t0); dec.Rule != 0 || dec.Step.Status != 401 {
		t.Errorf("unsigned: %+v", dec)
	}
	d.Headers = append(d.Headers, inspector.Header{Name: "X-Service-Signature", Value: inspector.Sign(secret, d.Body)})
	if dec := rs.Decide(d, [][]byte{secret}, t0); dec.Rule != -1 {
		t.Errorf("signed: %+v", dec)
	}
}

// TestRuleErrors: a wrong rule says which one, and its column counts in
// the whole line; stored-only fields are refused.
func TestRuleErrors(t *testing.T) {
	cases := []struct {
		lines  []string
		index  int
		column int
		msg    string
	}{
		{[]string{"500", `events.exists(e, e.tpye == "x") => 500`}, 1, 19, "undefined field 'tpye'"},
		{[]string{`events.exists(e, e.dedupe == "duplicate") => 200`}, 0, 19, "not known on arrival"},
		{[]string{`delivery.status == 500 => 200`}, 0, 9, "delivery.status is not known"},
		{[]string{`delivery.path == "/a" => 500 x1 then`}, 0, 0, "empty step"},
		{[]string{`delivery.path == "=>" => 500`}, -1, 0, ""},
	}
	for _, c := range cases {
		_, err := NewRules(c.lines, nil)
		if c.index < 0 {
			if err != nil {
				t.Errorf("%q: %v", c.lines, err)
			}
			continue
		}
		var re *RuleError
		if !errors.As(err, &re) || re.Index != c.index || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v, want rule %d: %s", c.lines, err, c.index+1, c.msg)
			continue
		}
		var ce CompileErrors
		if c.column > 0 && (!errors.As(err, &ce) || ce[0].Column != c.column) {
			t.Errorf("%q: %v, want column %d", c.lines, err, c.column)
		}
	}
}

// TestTry: testing a rule set against a stored delivery uses only what
// the receiver would know and counts nothing.
func TestTry(t *testing.T) {
	rs, err := NewRules([]string{`events.exists(e, e.type == "media.updated") => 500 x2 then 200 after 11s`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := stored(42, message("h9", "media.updated"), inspector.SignatureValid)
	tr := rs.Try(rec, 1, nil)
	if tr.Rule != 0 || tr.Step.Status != 500 || tr.Explain != "rule 1 answers delivery 42 (attempt 1 of message h9): 500 Internal Server Error" {
		t.Errorf("attempt 1: %+v", tr)
	}
	if tr := rs.Try(rec, 3, nil); tr.Step.Status != 200 || tr.Step.Delay != 11*time.Second || !strings.Contains(tr.Explain, "waits 11 s, then 200 OK") {
		t.Errorf("attempt 3: %+v", tr)
	}
	if n := rs.attempts.Seen("h9"); n != 0 {
		t.Errorf("Try counted %d attempts", n)
	}
	closing, err := NewRules([]string{`close after 3s`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr := closing.Try(rec, 1, nil); !strings.HasSuffix(tr.Explain, ": waits 3 s, then closes the connection without an answer") {
		t.Errorf("close after a hold: %q", tr.Explain)
	}
	other := stored(43, message("h8", "media.ready"), inspector.SignatureValid)
	if tr := rs.Try(other, 1, nil); tr.Rule != -1 || !strings.Contains(tr.Explain, "no rule answers delivery 43") {
		t.Errorf("no match: %+v", tr)
	}
}

// TestAttemptsBounded: the counter forgets the oldest messages past its
// size, and a seed from the store goes on where the store was.
func TestAttemptsBounded(t *testing.T) {
	a := NewAttempts(10)
	for i := range 100 {
		a.Next(fmt.Sprint(i))
	}
	if n := len(a.cur) + len(a.old); n > 10 {
		t.Errorf("remembers %d messages, want at most 10", n)
	}
	if a.Seen("99") != 1 || a.Seen("0") != 0 {
		t.Errorf("newest %d, oldest %d", a.Seen("99"), a.Seen("0"))
	}
	for range 2 {
		if a.Next("") != 1 {
			t.Error("a delivery without a hook uuid is not a first attempt")
		}
	}
	src := fakeAttempts{"h1": 2, "h2": 5}
	if err := a.Seed(context.Background(), src, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if a.Next("h1") != 3 || a.Next("h2") != 6 {
		t.Errorf("after seeding: h1 %d, h2 %d", a.Seen("h1"), a.Seen("h2"))
	}
}

type fakeAttempts map[string]int

func (f fakeAttempts) HookAttempts(_ context.Context, _ time.Time, fn func(string, int) error) error {
	for h, n := range f {
		if err := fn(h, n); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkDecide: a typical rule set (four rules, one a sequence) on
// signed deliveries: one media.updated event (~600 bytes), and ~2.5 KB
// messages of five events as the service batches them (make bench's
// load): what answer rules add to the receiver's ack path (the target:
// < 0.5 ms on the ack's p99 at 1,000/s).
func BenchmarkDecide(b *testing.B) {
	rs, err := NewRules([]string{
		`delivery.path == "/slow" => 200 after 12s`,
		`events.exists(e, e.type == "media.deleted") => close`,
		`events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail)) => 500 x2 then 200`,
		`delivery.signature == "invalid" => 401`,
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	secret := []byte("secret")
	g := simulate.New(3)
	// A thousand messages each, so the sequence's counter is exercised.
	small, batches := make([][]byte, 1000), make([][]byte, 1000)
	for i := range small {
		small[i] = message(fmt.Sprint("h", i), "media.updated")
		var evs []simulate.Event
		for _, typ := range []string{"media.created", "media.processing", "media.ready", "media.failed", "media.updated"} {
			evs = append(evs, g.Event(typ))
		}
		batches[i] = g.Message(evs...).Body()
	}
	for _, bc := range []struct {
		name   string
		bodies [][]byte
	}{{"1-event", small}, {"5-events-2.5KB", batches}} {
		b.Run(bc.name, func(b *testing.B) {
			ds := make([]*inspector.Delivery, len(bc.bodies))
			for i, body := range bc.bodies {
				ds[i] = arrival("", "media.updated")
				ds[i].Body, ds[i].BodyLength = body, int64(len(body))
				ds[i].Headers = append(ds[i].Headers, inspector.Header{Name: "X-Service-Signature", Value: inspector.Sign(secret, body)})
			}
			// Each call's time too: deciding runs on the request's
			// goroutine before the commit, so what it adds to the ack's
			// latency is its own duration, and its p99 bounds what it
			// adds to the ack's p99.
			took := make([]time.Duration, 0, 1<<20)
			i := 0
			for b.Loop() {
				i++
				start := time.Now()
				rs.Decide(ds[i%len(ds)], [][]byte{secret}, t0)
				if len(took) < cap(took) {
					took = append(took, time.Since(start))
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// TestCounterAcrossEdits: only a set with a sequence counts (a set
// without one reads no hook uuid); a set with a sequence on the same
// counter, seeded, goes on from the stored count.
func TestCounterAcrossEdits(t *testing.T) {
	a := NewAttempts(100)
	before, err := NewRules([]string{`delivery.path == "/other" => 500`}, a)
	if err != nil {
		t.Fatal(err)
	}
	if before.Counts() {
		t.Fatal("a set without a sequence counts")
	}
	if dec := before.Decide(arrival("m1", "media.ready"), nil, t0); dec.Attempt != 1 || a.Seen("m1") != 0 {
		t.Fatalf("without a sequence: %+v, counted %d", dec, a.Seen("m1"))
	}
	after, err := NewRules([]string{`500 x2 then 200`}, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Seed(context.Background(), fakeAttempts{"m1": 1}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if dec := after.Decide(arrival("m1", "media.ready"), nil, t0); dec.Attempt != 2 || dec.Step.Status != 500 {
		t.Errorf("second attempt: %+v", dec)
	}
	if dec := after.Decide(arrival("m1", "media.ready"), nil, t0); dec.Attempt != 3 || dec.Step.Status != 200 {
		t.Errorf("third attempt: %+v", dec)
	}
}
