package rules

import (
	"encoding/json"
	"testing"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// TestMentions: the search box's words as an expression, as the store's
// full-text index finds them: case-insensitive, each word a phrase of its
// tokens, in the body or an event's type or summary; a byte search for a
// stored delivery not analyzed yet.
func TestMentions(t *testing.T) {
	rec := stored(1, message("h1", "media.updated"), inspector.SignatureValid)
	rec.Analysis.Events[0].Summary = "Intro renamed to Outro"
	pending := stored(2, message("h2", "media.ready"), inspector.SignatureValid)
	pending.Analysis = nil
	cases := []struct {
		rec  *inspector.Record
		view View
		text string
		want bool
	}{
		{rec, Stored, "intro", true},             // the body, any case
		{rec, Stored, "OUTRO", true},             // the summary
		{rec, Stored, "media.updated", true},     // tokens media, updated, adjacent
		{rec, Stored, "updated media", true},     // every word, in any order
		{rec, Stored, "media.ready", false},      // not adjacent anywhere
		{rec, Stored, "intr", false},             // a word, not a part of one
		{rec, Stored, "intro nowhere", false},    // every word must occur
		{rec, Stored, "  ", true},                // nothing to look for
		{rec, Stored, "{", true},                 // no word: a byte search
		{rec, Stored, "}{", false},               // ... of the body as typed
		{pending, Stored, `"media.ready"`, true}, // not analyzed: bytes as typed
		{pending, Stored, "MEDIA.READY", false},  // ... case-sensitive
		{pending, Arrival, "MEDIA.READY", true},  // at arrival the events are decoded
		{pending, Arrival, "ready intro", true},  // body words
		{pending, Arrival, "ready outro", false}, // ...
		{rec, Arrival, "outro", false},           // the stored summary is not known at arrival
	}
	for _, c := range cases {
		e := mustCompile(t, `delivery.mentions(`+quote(c.text)+`)`, c.view)
		got, err := e.Eval(Input{Record: c.rec, Now: t0})
		if err != nil || got != c.want {
			t.Errorf("%s mentions(%q) on %d: %v, %v; want %v", c.view, c.text, c.rec.Delivery.ID, got, err, c.want)
		}
	}
}

// TestMentionsAndProblemsNarrow: the store narrows by a search and by
// the "problems only" test, alone or among other conjuncts, and what a
// search reads.
func TestMentionsAndProblemsNarrow(t *testing.T) {
	cases := []struct {
		expr string
		want Narrowing
	}{
		{`delivery.mentions("abc-123")`, Narrowing{Text: "abc-123"}},
		{`delivery.mentions(" a ") && delivery.mentions("b") && delivery.signature == "valid"`, Narrowing{Signatures: []string{"valid"}, Text: "a b"}},
		{`delivery.mentions("a") || delivery.path == "/x"`, Narrowing{}},
		{`!delivery.mentions("a")`, Narrowing{}},
		{`delivery.decode_error != "" || delivery.problems.size() > 0 || events.exists(e, e.problems.size() > 0)`, Narrowing{Problems: true}},
		{`events.exists(x, size(x.problems) > 0)`, Narrowing{Problems: true}},
		{`delivery.decode_error != ""`, Narrowing{Problems: true}},
		{`delivery.decode_error != "" || delivery.path == "/x"`, Narrowing{}},
		{`delivery.problems.size() > 1`, Narrowing{}},
	}
	for _, c := range cases {
		got := mustCompile(t, c.expr, Stored).Narrowing(t0)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(c.want)
		if string(gb) != string(wb) {
			t.Errorf("%s:\n got %s\nwant %s", c.expr, gb, wb)
		}
	}
	if n := mustCompile(t, `delivery.mentions("x")`, Stored).Needs(); n != (Needs{Body: true, Events: true}) {
		t.Errorf("mentions needs %+v", n)
	}
	// The problems test keeps its meaning where it does not narrow.
	bad := stored(3, []byte(`{"events":`), inspector.SignatureValid)
	ok := stored(4, message("h4", "media.ready"), inspector.SignatureValid)
	warned := stored(5, message("h5", "media.ready"), inspector.SignatureValid)
	warned.Analysis.Events[0].Problems = []catalog.Problem{{Message: "duration is null"}}
	e := mustCompile(t, Quick{Problems: true}.Expr(), Stored)
	for _, c := range []struct {
		r    *inspector.Record
		want bool
	}{{bad, true}, {ok, false}, {warned, true}} {
		if got, err := e.Eval(Input{Record: c.r}); err != nil || got != c.want {
			t.Errorf("problems on %d: %v, %v", c.r.Delivery.ID, got, err)
		}
	}
}

func TestTokenize(t *testing.T) {
	got := tokenize([]byte(`{"Name":"Café déjà-vu ２０２６", x_y}` + "\xff" + "z"))
	want := tokens{"name", "café", "déjà", "vu", "２０２６", "x", "y", "z"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q, want %q", got, want)
		}
	}
}
