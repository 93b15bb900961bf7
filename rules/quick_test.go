package rules

import (
	"encoding/json"
	"testing"
	"time"
)

// TestQuick: the quick filters become an expression that compiles and
// that the store narrows by as it did by the filters.
func TestQuick(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		q      Quick
		expr   string
		narrow Narrowing
	}{
		{Quick{}, "", Narrowing{}},
		{Quick{Types: []string{"media.ready"}, Signatures: []string{"invalid"}},
			`events.exists(e, e.type == "media.ready") && delivery.signature == "invalid"`,
			Narrowing{Types: []string{"media.ready"}, Signatures: []string{"invalid"}}},
		{Quick{Types: []string{"media.ready", "media.failed"}, Duplicates: true, Path: `/we"ird`, Since: since},
			`events.exists(e, e.type in ["media.ready", "media.failed"]) && events.exists(e, e.dedupe != "first") && delivery.path == "/we\"ird" && delivery.received_at >= timestamp("2026-03-01T12:00:00Z")`,
			Narrowing{Types: []string{"media.ready", "media.failed"}, Paths: []string{`/we"ird`}, Since: since, Duplicates: true}},
		{Quick{Divergent: true, Problems: true},
			`events.exists(e, e.dedupe == "divergent") && (delivery.decode_error != "" || delivery.problems.size() > 0 || events.exists(e, e.problems.size() > 0))`,
			Narrowing{Divergent: true, Problems: true}},
		{Quick{Text: "  abc-123 clip ", Signatures: []string{"valid", "missing"}},
			`delivery.signature in ["valid", "missing"] && delivery.mentions("abc-123 clip")`,
			Narrowing{Signatures: []string{"valid", "missing"}, Text: "abc-123 clip"}},
	}
	for _, c := range cases {
		got := c.q.Expr()
		if got != c.expr {
			t.Errorf("%+v:\n got %s\nwant %s", c.q, got, c.expr)
			continue
		}
		if got == "" {
			continue
		}
		n := mustCompile(t, got, Stored).Narrowing(t0)
		gb, _ := json.Marshal(n)
		wb, _ := json.Marshal(c.narrow)
		if string(gb) != string(wb) {
			t.Errorf("%s narrows to %s, want %s", got, gb, wb)
		}
	}
}
