package rules

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A condition is what an answer rule (`COND => ACTION`) or an expression
// route (`where COND => URL`) tests: a CEL expression, or an event-type
// glob, the shorthand forward routes have always taken ("media.*": a
// message one of whose events has a type matching it, with path.Match's
// rules).

// Arrow separates a condition from what follows it in a rule or a route.
const Arrow = "=>"

// CutArrow splits "COND => REST" at its separator: the first "=>" outside
// the condition's string literals (CEL has no "=>" operator, so no other
// can be the separator). A line whose literals do not close is cut at its
// last "=>", so that the compiler reports the literal. found is false
// without any "=>".
func CutArrow(s string) (cond, rest string, found bool) {
	quote, raw := "", false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != "" {
			switch {
			case c == '\\' && !raw:
				i++
			case strings.HasPrefix(s[i:], quote):
				i += len(quote) - 1
				quote = ""
			}
			continue
		}
		switch {
		case c == '"' || c == '\'':
			quote = string(c)
			if q3 := strings.Repeat(quote, 3); strings.HasPrefix(s[i:], q3) {
				quote = q3
			}
			raw = rawPrefix(s[:i])
			i += len(quote) - 1
		case strings.HasPrefix(s[i:], Arrow):
			return s[:i], s[i+len(Arrow):], true
		}
	}
	if i := strings.LastIndex(s, Arrow); i >= 0 {
		return s[:i], s[i+len(Arrow):], true
	}
	return s, "", false
}

// rawPrefix reports a CEL string literal prefix that makes it raw (r"…",
// rb"…", Br"…"): backslashes in it escape nothing.
func rawPrefix(before string) bool {
	n := 0
	for n < len(before) && n < 3 && strings.ContainsRune("rRbB", rune(before[len(before)-1-n])) {
		n++
	}
	if n == 0 || n == 3 || (n < len(before) && isIdentByte(before[len(before)-1-n])) {
		return false
	}
	return strings.ContainsAny(before[len(before)-n:], "rR")
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// globShape is what an event-type glob looks like: event types are
// lower-case words joined by dots (media.updated, viewing_session.play),
// with path.Match's * ? and [classes].
var globShape = regexp.MustCompile(`^[A-Za-z0-9_.*?\[\]^-]+$`)

// IsGlob reports whether a condition is an event-type glob rather than an
// expression: the glob's characters only, with a dot or a wildcard, and
// not a selection on one of the variables (delivery.truncated is CEL).
func IsGlob(cond string) bool {
	cond = strings.TrimSpace(cond)
	if !globShape.MatchString(cond) || !strings.ContainsAny(cond, ".*?[") {
		return false
	}
	first, _, _ := strings.Cut(cond, ".")
	switch first {
	case "delivery", "events", "now":
		return false
	}
	return true
}

// globExpr writes a glob as the expression it stands for.
func globExpr(glob string) string {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			re.WriteString(`[^/]*`)
		case '?':
			re.WriteString(`[^/]`)
		case '[':
			// A class as path.Match reads it; its characters are the
			// glob's, which RE2 reads the same within brackets.
			j := strings.IndexByte(glob[i:], ']')
			re.WriteString(glob[i : i+j+1])
			i += j
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return fmt.Sprintf("events.exists(e, e.type.matches(%q))", re.String())
}

// Condition compiles a condition: an event-type glob (IsGlob), or an
// expression, which must give true or false. Its errors are
// CompileErrors that point into cond (CompileErrors.Within places them in
// a longer line).
func (c *Compiler) Condition(cond string) (*Expr, error) {
	if !IsGlob(cond) {
		return c.Compile(cond)
	}
	glob := strings.TrimSpace(cond)
	if _, err := path.Match(glob, ""); err != nil {
		return nil, CompileErrors{{Expr: cond, Line: 1, Column: 1 + strings.Index(cond, glob),
			Message: fmt.Sprintf("the event-type glob %q is malformed (%v): use * and ? as in media.* or viewing_session.*", glob, err)}}
	}
	e, err := c.Compile(globExpr(glob))
	if err != nil {
		return nil, fmt.Errorf("event-type glob %q: %w", glob, err)
	}
	e.src = cond
	return e, nil
}

// Within places errors found in a part of a longer line, after prefix,
// into the line: the columns count in the line and the caret goes under
// them there.
func (ce CompileErrors) Within(line, prefix string) CompileErrors {
	shift := utf8.RuneCountInString(prefix)
	out := make(CompileErrors, len(ce))
	for i, e := range ce {
		cp := *e
		cp.Expr = line
		if cp.Line <= 1 {
			cp.Column += shift
		}
		out[i] = &cp
	}
	return out
}
