package station

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/rules"
)

// answers is the home of the receiver's answer rules: the rule set in
// force and the one attempt counter every rule set of the station
// shares. A set with a sequence ("500 x2 then 200") counts each
// message's attempts; the counter is seeded from the store when such a
// set comes in force (at Start, or in place of one without), so a
// sequence goes on from each message's true count across edits and
// restarts.
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
// (rules.Attempts.Seed) when the rules in force have a sequence: at Start,
// before the receiver serves. A failure only makes sequences start over,
// and is said.
func (s *Station) seedAttempts(ctx context.Context) {
	if s.AnswerRules().Counts() {
		s.seed(ctx)
	}
}

func (s *Station) seed(ctx context.Context) {
	if err := s.answers.attempts.Seed(ctx, s.db, time.Time{}); err != nil {
		s.logf("answer rules: sequences start over for the messages received so far: %v", err)
	}
}

// SetAnswerRules replaces the receiver's answer rules from the next
// request on: lines in order, the first that matches answering, none
// answering 200 to every delivery (rules.NewRules). A set with a sequence
// in place of one without first counts the store's attempts of each
// message (a query on the store: call it off a UI goroutine). A line
// that does not compile is a *rules.RuleError (its index; rules.Render
// shows the column) and leaves the rules in force.
func (s *Station) SetAnswerRules(lines []string) error {
	if s.db == nil && len(lines) > 0 {
		return fmt.Errorf("station: %w", ErrRelayStation)
	}
	rs, err := rules.NewRules(lines, s.answers.attempts)
	if err != nil {
		return err
	}
	s.answers.mu.Lock()
	defer s.answers.mu.Unlock()
	if rs.Counts() && !s.answers.rules.Counts() && s.started.Load() {
		// The deliveries received meanwhile were not counted.
		s.seed(context.Background())
	}
	s.answers.rules = rs
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
// attempt, after those the store holds and the station counted), with
// the receiver's secrets; it counts nothing and changes nothing (the
// window's Rules editor tests a rule against the selected delivery with
// it; it reads the store: call it off a UI goroutine). Lines that do not
// compile are a *rules.RuleError.
func (s *Station) TryAnswerRules(ctx context.Context, lines []string, rec *inspector.Record, attempt int) (rules.Trial, error) {
	rs, err := rules.NewRules(lines, s.answers.attempts)
	if err != nil {
		return rules.Trial{}, err
	}
	if attempt < 1 {
		attempt = 1
		if hook := hookOf(rec); hook != "" {
			stored := 0
			err := s.db.EachArrival(ctx, []string{hook}, func(resends.Arrival) error {
				stored++
				return nil
			})
			if err != nil {
				return rules.Trial{}, fmt.Errorf("count the attempts of message %s: %w", hook, err)
			}
			attempt = max(stored, s.answers.attempts.Seen(hook)) + 1
		}
	}
	return rs.Try(rec, attempt, s.eng.Secrets()), nil
}

// hookOf is a stored delivery's hook uuid, "" before its analysis.
func hookOf(rec *inspector.Record) string {
	if rec.Analysis == nil {
		return ""
	}
	return rec.Analysis.HookUUID
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
