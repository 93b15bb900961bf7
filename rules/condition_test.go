package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// TestCutArrow: the separator is the first "=>" outside the condition's
// string literals, whatever quotes they use.
func TestCutArrow(t *testing.T) {
	cases := []struct {
		in, cond, rest string
		found          bool
	}{
		{`500`, `500`, ``, false},
		{`a => b`, `a `, ` b`, true},
		{`delivery.path == "=>" => 500`, `delivery.path == "=>" `, ` 500`, true},
		{`delivery.path == '=>' => 500`, `delivery.path == '=>' `, ` 500`, true},
		{`delivery.body.contains("a\"=>") => close`, `delivery.body.contains("a\"=>") `, ` close`, true},
		{`delivery.body.contains(r"a\") => close`, `delivery.body.contains(r"a\") `, ` close`, true},
		{`delivery.body.contains("""x "=>" y""") => 1`, `delivery.body.contains("""x "=>" y""") `, ` 1`, true},
		{`where media.* => http://h/x?a=>b`, `where media.* `, ` http://h/x?a=>b`, true},
		// A literal that does not close: cut at the last arrow, so the
		// compiler reports the literal.
		{`delivery.path == "=> 500`, `delivery.path == "`, ` 500`, true},
	}
	for _, c := range cases {
		cond, rest, found := CutArrow(c.in)
		if cond != c.cond || rest != c.rest || found != c.found {
			t.Errorf("CutArrow(%q) = %q, %q, %v; want %q, %q, %v", c.in, cond, rest, found, c.cond, c.rest, c.found)
		}
	}
}

// TestGlobConditions: an event-type glob is the shorthand routes have
// always taken; a selection on a variable stays an expression.
func TestGlobConditions(t *testing.T) {
	for cond, want := range map[string]bool{
		"media.*": true, " media.updated ": true, "viewing_session.*.converted": true, "media.[rc]*": true, "*": true,
		"delivery.truncated": false, "events.size() > 1": false, "true": false, "media": false, `delivery.path == "/a"`: false,
	} {
		if got := IsGlob(cond); got != want {
			t.Errorf("IsGlob(%q) = %v, want %v", cond, got, want)
		}
	}
	rs, err := NewRules([]string{`media.* => 500`, `viewing_session.p?ay => close`, `*.created => 202`}, nil)
	if err != nil {
		t.Fatal(Render(err))
	}
	for _, c := range []struct {
		types []string
		rule  int
	}{
		{[]string{"media.updated"}, 0},
		{[]string{"viewing_session.play"}, 1},
		{[]string{"viewing_session.pause"}, -1},
		{[]string{"viewing_session.plays"}, -1},
		{[]string{"viewing_session.play", "media.ready"}, 0},
		{[]string{"playlist.created"}, 2},
		{[]string{"mediaXupdated"}, -1},
	} {
		if dec := rs.Decide(arrival("g", c.types...), nil, t0); dec.Rule != c.rule {
			t.Errorf("%v: rule %d, want %d", c.types, dec.Rule, c.rule)
		}
	}
	_, err = NewRules([]string{`media.[ => 500`}, nil)
	var ce CompileErrors
	if !errors.As(err, &ce) || ce[0].Column != 1 || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("a malformed glob: %v", err)
	}
}

// TestWarning: rules other than "200 to every delivery" are said, the
// first that answers otherwise named.
func TestWarning(t *testing.T) {
	cases := []struct {
		lines []string
		want  string
	}{
		{nil, ""},
		{[]string{"200"}, ""},
		{[]string{"media.* => 200"}, ""},
		{[]string{"500"}, "answering 500 to every delivery"},
		{[]string{"hang"}, "holding every delivery 15 s, then answering 200"},
		{[]string{"close"}, "closing every connection unanswered"},
		{[]string{"media.deleted => close"}, "closing connections unanswered for media.deleted"},
		{[]string{"close after 3s"}, "holding every delivery 3 s, then closing"},
		{[]string{"500 x2 then 200"}, "answering 500 x2 then 200 to every delivery"},
		{[]string{"media.* => 500", "200"}, "answering 500 to media.* (rule 1 of 2)"},
		{[]string{"media.ready => 200", "media.* => 500 x1", "close"}, "answering 500 x1 to media.* (rule 2 of 3; 1 more rule answers other than 200)"},
		{[]string{`delivery.path == "/a" => 401`}, `answering 401 to delivery.path == "/a"`},
		{[]string{`delivery.headers["user-agent"].startsWith("Service-Webhooks/0.0.4") => 401`}, `answering 401 to some deliveries`},
	}
	for _, c := range cases {
		rs, err := NewRules(c.lines, nil)
		if err != nil {
			t.Fatal(Render(err))
		}
		if got := rs.Warning(); got != c.want {
			t.Errorf("%q: Warning() = %q, want %q", c.lines, got, c.want)
		}
	}
	var none *Rules
	if none.Warning() != "" {
		t.Error("no rule set warns")
	}
}

// TestAnswer: the rules as the receiver's Answerer.
func TestAnswer(t *testing.T) {
	rs, err := NewRules([]string{`media.* => 500 x1 then 200 after 12s`, `close after 1s`}, nil)
	if err != nil {
		t.Fatal(Render(err))
	}
	var a inspector.Answerer = rs
	steps := []struct {
		d    *inspector.Delivery
		want inspector.Reply
	}{
		{arrival("m1", "media.ready"), inspector.Reply{Status: 500}},
		{arrival("m1", "media.ready"), inspector.Reply{Status: 200, Delay: 12 * time.Second}},
		{arrival("p1", "playlist.created"), inspector.Reply{Close: true, Delay: time.Second}},
	}
	for i, s := range steps {
		if got := a.Answer(s.d, nil); got != s.want {
			t.Errorf("step %d: %+v, want %+v", i, got, s.want)
		}
	}
	none, _ := NewRules([]string{`media.* => 500`}, nil)
	if got := none.Answer(arrival("x", "playlist.created"), nil); got != (inspector.Reply{Status: 200}) {
		t.Errorf("no rule matches: %+v", got)
	}
}

// TestAnswerFields: what was answered, as stored: delivery.answer and
// delivery.held; rows written before answer rules read the same way.
func TestAnswerFields(t *testing.T) {
	rec := func(status int, answer string) *inspector.Record {
		r := stored(1, message("h", "media.ready"), inspector.SignatureValid)
		r.Delivery.Status, r.Delivery.Answer = status, answer
		return r
	}
	cases := []struct {
		r    *inspector.Record
		expr string
	}{
		{rec(200, ""), `delivery.answer == "status" && delivery.held == duration("0s") && delivery.status == 200`},
		{rec(200, "after 12s"), `delivery.answer == "status" && delivery.held > duration("10s") && delivery.status == 200`},
		{rec(0, "close"), `delivery.answer == "close" && delivery.held == duration("0s")`},
		{rec(0, "close after 3s"), `delivery.answer == "close" && delivery.held == duration("3s")`},
		{rec(0, "hang"), `delivery.answer == "status" && delivery.held == duration("15s")`},
		{rec(502, "pass-through"), `delivery.answer == "pass-through" && delivery.status == 502`},
	}
	for _, c := range cases {
		if ok, err := mustCompile(t, c.expr, Stored).Eval(Input{Record: c.r}); !ok || err != nil {
			t.Errorf("%d %q: %s is %v, %v", c.r.Delivery.Status, c.r.Delivery.Answer, c.expr, ok, err)
		}
	}
	if _, err := Compile(`delivery.answer == "hang"`, Stored); err == nil || !strings.Contains(err.Error(), "not a value of answer") {
		t.Errorf(`"hang" is no longer a value of answer (delivery.held says it): %v`, err)
	}
	if _, err := Compile(`delivery.held > duration("1s")`, Arrival); err == nil {
		t.Error("delivery.held is known on arrival")
	}
}

// TestVerifyInput: at Arrival, Input.Verify judges the signature in place
// of Secrets (what a forward route uses: the engine's judgement).
func TestVerifyInput(t *testing.T) {
	calls := 0
	in := Input{Record: &inspector.Record{Delivery: arrival("v", "media.ready")}, Verify: func(*inspector.Delivery) inspector.SignatureResult {
		calls++
		return inspector.SignatureResult{Status: inspector.SignatureValid}
	}}
	e := mustCompile(t, `delivery.signature == "valid" && delivery.signature != "invalid"`, Arrival)
	if ok, err := e.Eval(in); !ok || err != nil || calls != 1 {
		t.Errorf("valid by Verify: %v, %v (%d calls, want 1)", ok, err, calls)
	}
}
