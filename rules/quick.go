package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Quick is the window's quick filters (types, verdicts, duplicates, ...),
// which the filter bar shows as the expression they stand for, for the
// user to see and edit (Expr). Every part is one the store narrows by.
type Quick struct {
	Types      []string
	Signatures []string
	Duplicates bool
	Divergent  bool
	Problems   bool
	Path       string
	Since      time.Time
	// Text is the search box's words (delivery.mentions).
	Text string
}

// Expr writes the quick filters as one expression ("" when none is set),
// their conjunction.
func (q Quick) Expr() string {
	var parts []string
	switch len(q.Types) {
	case 0:
	case 1:
		parts = append(parts, fmt.Sprintf("events.exists(e, e.type == %s)", quote(q.Types[0])))
	default:
		parts = append(parts, fmt.Sprintf("events.exists(e, e.type in %s)", quoteList(q.Types)))
	}
	switch len(q.Signatures) {
	case 0:
	case 1:
		parts = append(parts, "delivery.signature == "+quote(q.Signatures[0]))
	default:
		parts = append(parts, "delivery.signature in "+quoteList(q.Signatures))
	}
	switch {
	case q.Divergent:
		parts = append(parts, `events.exists(e, e.dedupe == "divergent")`)
	case q.Duplicates:
		parts = append(parts, `events.exists(e, e.dedupe != "first")`)
	}
	if q.Problems {
		parts = append(parts, `(delivery.decode_error != "" || delivery.problems.size() > 0 || events.exists(e, e.problems.size() > 0))`)
	}
	if q.Path != "" {
		parts = append(parts, "delivery.path == "+quote(q.Path))
	}
	if !q.Since.IsZero() {
		parts = append(parts, fmt.Sprintf("delivery.received_at >= timestamp(%s)", quote(q.Since.UTC().Format(time.RFC3339Nano))))
	}
	if t := strings.TrimSpace(q.Text); t != "" {
		parts = append(parts, "delivery.mentions("+quote(t)+")")
	}
	return strings.Join(parts, " && ")
}

// quote writes s as a CEL string literal (CEL's escapes are Go's).
func quote(s string) string { return strconv.Quote(s) }

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
