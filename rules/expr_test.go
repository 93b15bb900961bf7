package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// message builds a webhook message body with one event per type.
func message(hook string, events ...string) []byte {
	var parts []string
	for i, typ := range events {
		payload := `{"media":{"id":"m1","name":"Intro"}}`
		if typ == "media.updated" {
			payload = `{"media":{"id":"m1","name":"Intro"},"previous_attributes":{"thumbnail":{"url":"https://x/old.jpg"}}}`
		}
		if typ == "viewing_session.percent_watched" {
			payload = `{"visitor":{"id":"v9"},"percent_watched":50,"media":{"id":"m1"}}`
		}
		parts = append(parts, fmt.Sprintf(`{"uuid":"%s-%d","type":%q,"generated_at":"2026-03-01T11:59:0%dZ","metadata":{"account_id":"acct-1"},"payload":%s}`,
			hook, i, typ, i, payload))
	}
	return []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[%s]}`, hook, strings.Join(parts, ",")))
}

// stored makes a stored record of body with an analysis: the event
// fields from the body, dedupe as given (per event: "", "duplicate",
// "divergent").
func stored(id int64, body []byte, sig inspector.SignatureStatus, dedupe ...string) *inspector.Record {
	d := &inspector.Delivery{
		ID: id, ReceivedAt: t0.Add(time.Duration(id) * time.Minute), Method: "POST", Path: "/webhooks", Source: "receiver",
		Headers: []inspector.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Service-Signature", Value: "abc"},
			{Name: "X-Tag", Value: "a"}, {Name: "x-tag", Value: "b"}},
		Body: body, BodyLength: int64(len(body)), Status: 200,
	}
	m, err := inspector.DecodeMessage(body)
	if err != nil {
		return &inspector.Record{Delivery: d, Analysis: &inspector.Analysis{DeliveryID: id, Signature: inspector.SignatureResult{Status: sig}, Error: &inspector.DecodeError{Reason: err.Error()}}}
	}
	a := &inspector.Analysis{DeliveryID: id, Signature: inspector.SignatureResult{Status: sig}, HookUUID: m.HookUUID}
	for i, ev := range m.Events {
		ea := inspector.EventAnalysis{Index: i, UUID: ev.UUID, Type: ev.Type, AccountID: ev.AccountID, GeneratedRaw: ev.GeneratedRaw, GeneratedAt: ev.GeneratedAt, Raw: ev.Raw}
		if i < len(dedupe) {
			ea.Duplicate = dedupe[i] != ""
			ea.Divergent = dedupe[i] == DedupeDivergent
		}
		a.Events = append(a.Events, ea)
	}
	return &inspector.Record{Delivery: d, Analysis: a}
}

func mustCompile(t *testing.T, src string, v View) *Expr {
	t.Helper()
	e, err := Compile(src, v)
	if err != nil {
		t.Fatalf("compile %q: %s", src, Render(err))
	}
	return e
}

// TestEval: the example and every variable, on stored records.
func TestEval(t *testing.T) {
	updated := stored(1, message("h1", "media.updated"), inspector.SignatureValid)
	ready := stored(2, message("h2", "media.ready", "viewing_session.percent_watched"), inspector.SignatureInvalid, "", DedupeDivergent)
	ready.Analysis.Problems = []catalog.Problem{{Path: "User-Agent", Message: "User-Agent is missing"}}
	forwarded := Input{Record: ready, Forward: []RouteResult{{Route: "http://localhost:3000", Status: 500, Outcome: "rejected", Attempts: 3}}}
	cases := []struct {
		expr string
		in   Input
		want bool
	}{
		{`events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`, Input{Record: updated}, true},
		{`events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`, Input{Record: ready}, false},
		// has() is false, not an error, when a level above is missing.
		{`events.exists(e, has(e.payload.previous_attributes.thumbnail))`, Input{Record: ready}, false},
		{`events.exists(e, e.type == "viewing_session.percent_watched" && e.payload.percent_watched == 50 && e.payload.visitor.id == "v9")`, Input{Record: ready}, true},
		{`events.exists(e, e.payload.percent_watched >= 50)`, Input{Record: ready}, true},
		{`delivery.signature == "invalid"`, Input{Record: ready}, true},
		{`delivery.signature == "valid"`, Input{Record: ready}, false},
		{`delivery.headers["x-tag"] == "a, b" && delivery.header_values["x-tag"] == ["a", "b"]`, Input{Record: ready}, true},
		{`delivery.headers["content-type"].startsWith("application/json")`, Input{Record: updated}, true},
		{`delivery.id == 2 && delivery.path == "/webhooks" && delivery.method == "POST"`, Input{Record: ready}, true},
		{`delivery.size > 100 && delivery.body.contains("percent_watched")`, Input{Record: ready}, true},
		{`delivery.hook_uuid == "h2" && delivery.source == "receiver" && delivery.status == 200 && delivery.answer == "status"`, Input{Record: ready}, true},
		{`events.exists(e, e.dedupe == "divergent")`, Input{Record: ready}, true},
		{`events.all(e, e.dedupe == "first")`, Input{Record: updated}, true},
		{`events.size() == 2 && events[1].uuid == "h2-1" && events[0].metadata.account_id == "acct-1" && events[0].account_id == "acct-1"`, Input{Record: ready}, true},
		{`delivery.received_at > now - duration("2h")`, Input{Record: ready, Now: t0.Add(time.Hour)}, true},
		{`delivery.received_at > now - duration("2h")`, Input{Record: ready, Now: t0.Add(3 * time.Hour)}, false},
		{`delivery.received_at > timestamp("2026-03-01T12:01:00Z")`, Input{Record: ready}, true},
		{`events.exists(e, e.generated_at < delivery.received_at)`, Input{Record: ready}, true},
		{`delivery.forward.exists(f, f.status == 500 && f.outcome == "rejected")`, forwarded, true},
		{`delivery.forward.size() == 0`, Input{Record: ready}, true},
		{`events.map(e, e.type).exists(t, t.startsWith("viewing_session."))`, Input{Record: ready}, true},
		{`delivery.decode_error == "" && !delivery.resend`, Input{Record: ready}, true},
		{`delivery.problems.exists(p, p.startsWith("User-Agent"))`, Input{Record: ready}, true},
		{`delivery.problems.size() == 0`, Input{Record: updated}, true},
	}
	for _, c := range cases {
		e := mustCompile(t, c.expr, Stored)
		got, err := e.Eval(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s on delivery %d = %v, want %v", c.expr, c.in.Record.Delivery.ID, got, c.want)
		}
	}
}

// TestEvalUnanalyzed: a stored delivery not analyzed yet is read from its
// body; its signature is "pending".
func TestEvalUnanalyzed(t *testing.T) {
	r := stored(3, message("h3", "media.ready"), inspector.SignatureValid)
	r.Analysis = nil
	for expr, want := range map[string]bool{
		`events.exists(e, e.type == "media.ready") && delivery.hook_uuid == "h3"`: true,
		`delivery.signature == "pending"`:                                         true,
		`events.exists(e, e.dedupe == "pending")`:                                 true,
	} {
		if got, err := mustCompile(t, expr, Stored).Eval(Input{Record: r}); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
}

// TestCompileErrors: every error points at the column of its cause.
func TestCompileErrors(t *testing.T) {
	cases := []struct {
		expr   string
		view   View
		column int
		msg    string
	}{
		{`evnts.exists(e, e.type == "x")`, Stored, 1, `unknown name "evnts"`},
		{`events.exists(e, e.tpye == "media.ready")`, Stored, 19, "undefined field 'tpye'"},
		{`delivery.signature == "unsigned"`, Stored, 23, `did you mean "missing"?`},
		{`events.exists(e, e.dedupe in ["first", "dupe"])`, Stored, 40, `"dupe" is not a value of dedupe`},
		{`delivery.size > "big"`, Stored, 15, "no matching overload"},
		{`delivery.path`, Stored, 1, "it must give true or false"},
		{`delivery.path == `, Stored, 18, "Syntax error"},
		{`events.exists(e, e.dedupe == "duplicate")`, Arrival, 19, "event.dedupe is not known on arrival"},
		{`delivery.id > 4`, Arrival, 9, "delivery.id is not known on arrival"},
		{`delivery.forward.size() > 0`, Arrival, 9, "delivery.forward is not known"},
		{"  ", Stored, 1, "the expression is empty"},
	}
	for _, c := range cases {
		_, err := Compile(c.expr, c.view)
		var ce CompileErrors
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want compile errors", c.expr, err)
			continue
		}
		if ce[0].Column != c.column || !strings.Contains(ce[0].Message, c.msg) {
			t.Errorf("%s: column %d %q, want column %d %q", c.expr, ce[0].Column, ce[0].Message, c.column, c.msg)
		}
		// The caret sits under the column.
		lines := strings.Split(ce.Render(), "\n")
		if len(lines) < 3 || strings.Index(lines[1], "^") != c.column+1 {
			t.Errorf("%s: rendered\n%s", c.expr, ce.Render())
		}
	}
}

// TestArrival: what the receiver knows before answering, the signature
// checked with its secrets.
func TestArrival(t *testing.T) {
	body := message("h7", "media.updated")
	secret := []byte("s3cret")
	d := &inspector.Delivery{ReceivedAt: t0, Method: "POST", Path: "/hooks", Body: body, BodyLength: int64(len(body)),
		Headers: []inspector.Header{{Name: "X-Service-Signature", Value: inspector.Sign(secret, body)}}}
	in := Input{Record: &inspector.Record{Delivery: d}, Secrets: [][]byte{secret}}
	for expr, want := range map[string]bool{
		`delivery.signature == "valid"`: true,
		`delivery.hook_uuid == "h7" && events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`: true,
		`events.exists(e, e.problems.exists(p, p.startsWith("payload.media.url is missing")))`:                                      true,
	} {
		if got, err := mustCompile(t, expr, Arrival).Eval(in); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
	in.Secrets = [][]byte{[]byte("other")}
	if got, _ := mustCompile(t, `delivery.signature == "invalid"`, Arrival).Eval(in); !got {
		t.Error("a signature made with another secret is not invalid")
	}
}

// TestNarrowing: the conjuncts the store can check first.
func TestNarrowing(t *testing.T) {
	now := t0
	cases := []struct {
		expr string
		want Narrowing
	}{
		{`events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`, Narrowing{Types: []string{"media.updated"}}},
		{`events.exists(e, e.type in ["media.ready", "media.failed"]) && delivery.signature == "invalid"`, Narrowing{Types: []string{"media.ready", "media.failed"}, Signatures: []string{"invalid"}}},
		{`delivery.received_at > now - duration("2h") && delivery.received_at <= timestamp("2026-03-01T11:30:00Z")`, Narrowing{Since: now.Add(-2 * time.Hour), Until: t0.Add(-30 * time.Minute)}},
		{`now - duration("1h") < delivery.received_at`, Narrowing{Since: now.Add(-time.Hour)}},
		{`delivery.id >= 10 && delivery.id < 20 && delivery.path == "/a"`, Narrowing{MinID: 10, MaxID: 19, Paths: []string{"/a"}}},
		{`delivery.id > 5 && 9 >= delivery.id`, Narrowing{MinID: 6, MaxID: 9}},
		{`delivery.id < 1`, Narrowing{None: true}},
		{`delivery.id in [3, 4] && delivery.status == 500 && delivery.hook_uuid == "h"`, Narrowing{IDs: []int64{3, 4}, Statuses: []int{500}, HookUUIDs: []string{"h"}}},
		{`events.exists(e, e.dedupe == "divergent")`, Narrowing{Divergent: true}},
		{`events.exists(e, e.dedupe != "first")`, Narrowing{Duplicates: true}},
		{`delivery.signature == "valid" && delivery.signature == "invalid"`, Narrowing{Signatures: []string{}, None: true}},
		// Disjunctions and negations narrow nothing.
		{`delivery.signature == "valid" || events.exists(e, e.type == "media.ready")`, Narrowing{}},
		{`!events.exists(e, e.type == "media.ready")`, Narrowing{}},
		{`events.all(e, e.type == "media.ready")`, Narrowing{}},
	}
	for _, c := range cases {
		got := mustCompile(t, c.expr, Stored).Narrowing(now)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(c.want)
		if string(gb) != string(wb) {
			t.Errorf("%s:\n got %s\nwant %s", c.expr, gb, wb)
		}
	}
}

// TestNeeds: only what an expression reads is loaded.
func TestNeeds(t *testing.T) {
	cases := map[string]Needs{
		`delivery.signature == "valid"`:                               {},
		`events.exists(e, e.type == "media.ready")`:                   {Events: true},
		`events.exists(e, has(e.payload.media))`:                      {Events: true, Body: true},
		`delivery.headers["user-agent"] != ""`:                        {Headers: true},
		`delivery.forward.exists(f, f.status == 500)`:                 {Forward: true},
		`events.exists(e, e.problems.size() > 0)`:                     {Events: true, Problems: true},
		`delivery.body.contains("x") && delivery.header_values != {}`: {Body: true, Headers: true},
	}
	for expr, want := range cases {
		if got := mustCompile(t, expr, Stored).Needs(); got != want {
			t.Errorf("%s: needs %+v, want %+v", expr, got, want)
		}
	}
}
