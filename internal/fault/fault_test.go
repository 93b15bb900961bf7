package fault

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A run of failures is one line when it starts and one when it ends, with
// the count; successes without failures write nothing.
func TestStateReportsChangesOnce(t *testing.T) {
	var lines []string
	s := &State{Failing: "cannot store deliveries", Meanwhile: "answering 503", Recovered: "storing deliveries again",
		Attempts: "requests answered 503", Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }}
	s.OK()
	if len(lines) != 0 || s.IsFailing() {
		t.Fatalf("success with no failure wrote %q", lines)
	}
	full := errors.New("no space left on device")
	for range 1000 {
		s.Fail(full)
	}
	if !s.IsFailing() || len(lines) != 1 || !strings.HasPrefix(lines[0], "cannot store deliveries since ") ||
		!strings.HasSuffix(lines[0], ": no space left on device; answering 503") {
		t.Fatalf("after 1000 failures: %q", lines)
	}
	s.OK()
	s.OK()
	if s.IsFailing() || len(lines) != 2 || !strings.HasPrefix(lines[1], "storing deliveries again after ") ||
		!strings.Contains(lines[1], ": 1000 requests answered 503 since ") {
		t.Fatalf("after recovery: %q", lines)
	}
	s.Fail(full)
	if len(lines) != 3 {
		t.Fatalf("a new failure after recovery is reported again: %q", lines)
	}
}
