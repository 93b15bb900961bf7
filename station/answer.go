package station

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/rules"
)

// answers is the home of the receiver's answer rules: the rule set in
// force and the one attempt counter every rule set of the station
// shares, so a sequence ("500 x2 then 200") goes on from each message's
// true count when the rules are edited, and, seeded from the store at
// Start, across a restart.
type answers struct {
	attempts *rules.Attempts
	mu       sync.Mutex
	rules    *rules.Rules
}

// newAnswers compiles the rules a station starts with.
func newAnswers(lines []string) (*answers, error) {
	a := &answers{attempts: rules.NewAttempts(rules.DefaultAttempts)}
	rs, err := rules.NewRules(lines, a.attempts)
	if err != nil {
		return nil, err
	}
	a.rules = rs
	return a, nil
}

// seedAttempts counts the store's recent attempts of each message
// (rules.Attempts.Seed), before the receiver serves; a failure only
// makes sequences start over, and is said.
func (s *Station) seedAttempts(ctx context.Context) {
	if err := s.answers.attempts.Seed(ctx, s.db, time.Time{}); err != nil {
		s.logf("answer rules: sequences start over for messages received before this start: %v", err)
	}
}

// SetAnswerRules replaces the receiver's answer rules from the next
// request on: lines in order, the first that matches answering, none
// answering 200 to every delivery (rules.NewRules). A line that does not
// compile is a *rules.RuleError (its index; rules.Render shows the column)
// and leaves the rules in force.
func (s *Station) SetAnswerRules(lines []string) error {
	rs, err := rules.NewRules(lines, s.answers.attempts)
	if err != nil {
		return err
	}
	s.answers.mu.Lock()
	s.answers.rules = rs
	s.answers.mu.Unlock()
	// Given even when empty: every delivery counts, so a sequence added
	// later goes on from the true count.
	s.eng.SetAnswerer(rs)
	return nil
}

// AnswerRules is the rule set in force (empty: 200 to every delivery).
func (s *Station) AnswerRules() *rules.Rules {
	s.answers.mu.Lock()
	defer s.answers.mu.Unlock()
	return s.answers.rules
}

// AnswerWarning says how the receiver answers while that is not 200 at
// once to every delivery ("answering 500 to media.* (rule 1 of 2)"), ""
// when it is: every face shows it while it lasts.
func (s *Station) AnswerWarning() string { return s.AnswerRules().Warning() }

// TryAnswerRules tells what lines would answer to a stored delivery
// arriving as the attempt-th attempt of its message (below 1: its next
// attempt, from the station's count), with the receiver's secrets; it
// counts nothing and changes nothing (the window's Rules editor tests a
// rule against the selected delivery with it). Lines that do not compile
// are a *rules.RuleError.
func (s *Station) TryAnswerRules(lines []string, rec *inspector.Record, attempt int) (rules.Trial, error) {
	rs, err := rules.NewRules(lines, s.answers.attempts)
	if err != nil {
		return rules.Trial{}, err
	}
	if attempt < 1 {
		attempt = 1
		if rec.Analysis != nil && rec.Analysis.HookUUID != "" {
			attempt = s.answers.attempts.Seen(rec.Analysis.HookUUID) + 1
		}
	}
	return rs.Try(rec, attempt, s.eng.Secrets()), nil
}

// PassThroughNote says, when forwarding is in pass-through and answer
// rules are set, that the rules answer only what no route takes (the app
// answers the rest); "" otherwise. Both faces say it when both are given.
func PassThroughNote(cfg *forward.Config, rules int) string {
	if cfg == nil || cfg.Mode != forward.ModePassThrough || rules == 0 {
		return ""
	}
	what := "the answer rule answers"
	if rules > 1 {
		what = fmt.Sprintf("the %d answer rules answer", rules)
	}
	return "pass-through: your app answers every delivery a route takes; " + what + " only the others"
}
