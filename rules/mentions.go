package rules

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// mentionsFunction is `delivery.mentions(text)`: the window's search box
// as an expression. It is true when every word of text occurs in the
// body (its first MentionsBodyLimit bytes) or in an event's type or
// summary or the decode error, case-insensitively, each word as a phrase
// of its tokens ("media.updated" is the tokens media, updated, adjacent),
// which is what the store's full-text index finds, so the index can
// narrow it (Narrowing.Text). A stored delivery not analyzed yet has no
// index entry: for it the text is a case-sensitive byte search of the
// body, as the store does.
func mentionsFunction() cel.EnvOption {
	return cel.Function("mentions",
		cel.MemberOverload("delivery_mentions_string", []*cel.Type{deliveryType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(d, text ref.Val) ref.Val {
				dv, ok := d.(*deliveryVal)
				s, isStr := text.(types.String)
				if !ok || !isStr {
					return types.NewErr("mentions takes a delivery and a string")
				}
				return types.Bool(dv.mentions(string(s)))
			})))
}

// MentionsBodyLimit is how much of a body mentions reads: the store's
// full-text index holds a body's first MiB.
const MentionsBodyLimit = 1 << 20

// mentions is delivery.mentions(text); see mentionsFunction.
func (d *deliveryVal) mentions(text string) bool {
	text = strings.TrimSpace(text)
	if text == "" {
		return true
	}
	body := d.rec().Delivery.Body
	if d.view == Stored && d.rec().Analysis == nil {
		return bytes.Contains(body, []byte(text))
	}
	phrases := searchPhrases(text)
	if len(phrases) == 0 {
		// Nothing the index can look up (say "{"): a byte search.
		return bytes.Contains(body, []byte(text))
	}
	texts := [][]byte{body[:min(len(body), MentionsBodyLimit)]}
	for _, e := range d.eventVals() {
		texts = append(texts, []byte(e.typ), []byte(e.summaryText()))
	}
	if de, ok := d.decodeError().(types.String); ok && de != "" {
		texts = append(texts, []byte(de))
	}
	for _, p := range phrases {
		found := false
		for _, t := range texts {
			if hasPhrase(t, p) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// hasPhrase reports the phrase p (consecutive tokens, lower case) in b,
// folding b's case as it goes (no copy of b: a search reads thousands of
// bodies).
func hasPhrase(b []byte, p tokens) bool {
	for i := 0; ; {
		s, e := nextToken(b, i)
		if s < 0 {
			return false
		}
		if bytes.EqualFold(b[s:e], []byte(p[0])) {
			j, match := e, true
			for _, w := range p[1:] {
				ws, we := nextToken(b, j)
				// The next token, whatever separates it: the index's
				// phrases are adjacent tokens.
				if ws < 0 || !bytes.EqualFold(b[ws:we], []byte(w)) {
					match = false
					break
				}
				j = we
			}
			if match {
				return true
			}
		}
		i = e
	}
}

// isTokenRune reports a rune the index keeps in words.
func isTokenRune(r rune) bool {
	return r != utf8.RuneError && unicode.In(r, unicode.L, unicode.N, unicode.Co)
}

// nextToken returns the bounds of the first token at or after i, or -1.
func nextToken(b []byte, i int) (int, int) {
	start := -1
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		word := isTokenRune(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			return start, i
		}
		i += n
	}
	if start >= 0 {
		return start, len(b)
	}
	return -1, -1
}

// tokens are a text's words as the store's full-text index splits them
// (SQLite's unicode61: runs of letters, numbers and private-use
// characters), folded to lower case.
type tokens []string

// tokenize splits b into tokens. Invalid UTF-8 separates tokens.
func tokenize(b []byte) tokens {
	var out tokens
	start := -1
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		word := isTokenRune(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			out = append(out, strings.ToLower(string(b[start:i])))
			start = -1
		}
		i += n
	}
	if start >= 0 {
		out = append(out, strings.ToLower(string(b[start:])))
	}
	return out
}

// searchPhrases splits a search text on white space into the phrases
// the index looks up; words with no letter or digit are dropped, as the
// store drops them.
func searchPhrases(text string) []tokens {
	var out []tokens
	for _, w := range strings.Fields(text) {
		if p := tokenize([]byte(w)); len(p) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// mentionsConjunct narrows by `delivery.mentions("literal")`.
func (p *narrowPlan) mentionsConjunct(c celast.CallExpr) bool {
	if c.FunctionName() != "mentions" || !c.IsMemberFunction() || len(c.Args()) != 1 {
		return false
	}
	t := c.Target()
	if t.Kind() != celast.IdentKind || t.AsIdent() != "delivery" {
		return false
	}
	vals, ok := literals(c.Args()[0])
	if !ok || c.Args()[0].Kind() != celast.LiteralKind {
		return true
	}
	s, ok := vals[0].(string)
	if !ok || strings.TrimSpace(s) == "" {
		return true
	}
	switch {
	case p.fixed.Text == "":
		p.fixed.Text = strings.TrimSpace(s)
	case p.fixed.Text != strings.TrimSpace(s):
		// Two searches: the index takes their words together.
		p.fixed.Text += " " + strings.TrimSpace(s)
	}
	return true
}

// problemsConjunct narrows by a disjunction whose every part says the
// delivery has a problem: `delivery.decode_error != ""`,
// `delivery.problems.size() > 0`, `events.exists(e, e.problems.size() >
// 0)` (the quick filter "Problems only" writes all three).
func (p *narrowPlan) problemsConjunct(e celast.Expr) bool {
	parts := disjuncts(e)
	if len(parts) < 2 && !isProblemTest(e) {
		return false
	}
	for _, d := range parts {
		if !isProblemTest(d) {
			return false
		}
	}
	p.fixed.Problems = true
	return true
}

// disjuncts flattens a || b || c.
func disjuncts(e celast.Expr) []celast.Expr {
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.LogicalOr {
		var out []celast.Expr
		for _, arg := range e.AsCall().Args() {
			out = append(out, disjuncts(arg)...)
		}
		return out
	}
	return []celast.Expr{e}
}

// isProblemTest recognises one of the three problem tests.
func isProblemTest(e celast.Expr) bool {
	if e.Kind() == celast.ComprehensionKind {
		c := e.AsComprehension()
		r := c.IterRange()
		if r.Kind() != celast.IdentKind || r.AsIdent() != "events" {
			return false
		}
		step := c.LoopStep()
		if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.LogicalOr || len(step.AsCall().Args()) != 2 {
			return false
		}
		return sizeAboveZero(step.AsCall().Args()[1], func(x celast.Expr) bool {
			name, ok := varField(x, c.IterVar())
			return ok && name == "problems"
		})
	}
	if e.Kind() != celast.CallKind {
		return false
	}
	c := e.AsCall()
	if c.FunctionName() == operators.NotEquals && len(c.Args()) == 2 {
		name, ok := deliveryField(c.Args()[0])
		vals, lit := literals(c.Args()[1])
		return ok && name == "decode_error" && lit && c.Args()[1].Kind() == celast.LiteralKind && vals[0] == ""
	}
	return sizeAboveZero(e, func(x celast.Expr) bool {
		name, ok := deliveryField(x)
		return ok && name == "problems"
	})
}

// sizeAboveZero recognises `X.size() > 0` (or `size(X) > 0`) where list(X).
func sizeAboveZero(e celast.Expr, list func(celast.Expr) bool) bool {
	if e.Kind() != celast.CallKind || e.AsCall().FunctionName() != operators.Greater || len(e.AsCall().Args()) != 2 {
		return false
	}
	left, right := e.AsCall().Args()[0], e.AsCall().Args()[1]
	vals, ok := literals(right)
	if !ok || right.Kind() != celast.LiteralKind || vals[0] != int64(0) || left.Kind() != celast.CallKind {
		return false
	}
	sz := left.AsCall()
	if sz.FunctionName() != "size" {
		return false
	}
	switch {
	case sz.IsMemberFunction() && len(sz.Args()) == 0:
		return list(sz.Target())
	case !sz.IsMemberFunction() && len(sz.Args()) == 1:
		return list(sz.Args()[0])
	}
	return false
}
