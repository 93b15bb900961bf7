package resends

import (
	"context"
	"slices"
	"time"

	"github.com/hookscope/hookscope/rules"
)

// Store is what Observe reads: the deliveries an expression selects
// (rules.Source) and the arrivals of messages (Source). The store
// implements both.
type Store interface {
	rules.Source
	Source
}

// Report is the observatory's answer: the timelines (oldest message
// first, by their latest attempt) and the schedule learned from them. It
// is what `hookscope resends --json` prints, the agent interface's
// timeline tool returns and the window's Re-sends view draws.
type Report struct {
	Timelines []Timeline `json:"timelines"`
	Schedule  Schedule   `json:"schedule"`
	// Sentence is the schedule in words.
	Sentence string `json:"sentence"`
}

// Observe reads the timelines of the messages hooks name, or that e
// selects a delivery of (nil e and hooks: every message), and learns the
// schedule from them. now is the expression's `now`.
func Observe(ctx context.Context, st Store, e *rules.Expr, hooks []string, now time.Time) (*Report, error) {
	sel := hooks
	if e != nil {
		seen := map[string]bool{}
		var found []string
		if _, err := rules.Find(ctx, st, e, rules.FindOptions{Now: now}, func(in *rules.Input) error {
			if a := in.Record.Analysis; a != nil && a.HookUUID != "" && !seen[a.HookUUID] {
				seen[a.HookUUID] = true
				found = append(found, a.HookUUID)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		if hooks != nil {
			found = slices.DeleteFunc(found, func(h string) bool { return !slices.Contains(hooks, h) })
		}
		sel = append([]string{}, found...)
	}
	tls, err := Timelines(ctx, st, sel)
	if err != nil {
		return nil, err
	}
	SortNewest(tls)
	s := Learn(tls)
	return &Report{Timelines: append([]Timeline{}, tls...), Schedule: s, Sentence: s.Sentence()}, nil
}
