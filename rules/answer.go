package rules

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// Answer rules decide how the receiver answers a delivery. A rule is one
// line, `EXPR => ACTION` (or ACTION alone, for every delivery); rules are
// tried in order and the first that matches answers. ACTION is one step
// or a sequence of steps joined by "then", each step answering one or
// more attempts of the same message (hook uuid):
//
//	500                          500 to every matching delivery
//	200 after 12s                200 after a 12 s wait (past the service's 10 s)
//	close                        close the connection without answering
//	close after 3s               hold 3 s, then close
//	500 x2 then 200              500 to a message's first 2 attempts, then 200
//	503 x3                       503 to the first 3 attempts; later ones fall
//	                             through to the next rule (or the default 200)
//	hang                         200 after 15 s, as listen's --answer hang
//
// docs/rules.md has the whole grammar.

// MaxDelay bounds a step's delay: enough to outlast any sender's timeout,
// short enough that a typo (12h for 12s) does not hold connections for a
// day.
const MaxDelay = 10 * time.Minute

// Step is one answer.
type Step struct {
	// Status is the HTTP status to answer (0 with Close).
	Status int `json:"status,omitempty"`
	// Close closes the connection without an answer.
	Close bool `json:"close,omitempty"`
	// Delay is how long to wait before answering (or closing).
	Delay time.Duration `json:"delay,omitempty"`
	// Times is how many attempts of a message the step answers in a
	// sequence; 0 means every later attempt (only the last step).
	Times int `json:"times,omitempty"`
}

// String writes the step as the grammar does: "500 after 12s x2".
func (s Step) String() string {
	var b strings.Builder
	if s.Close {
		b.WriteString("close")
	} else {
		b.WriteString(strconv.Itoa(s.Status))
	}
	if s.Delay > 0 {
		b.WriteString(" after " + s.Delay.String())
	}
	if s.Times > 0 {
		fmt.Fprintf(&b, " x%d", s.Times)
	}
	return b.String()
}

// Action is a rule's answer: one step, or a sequence of steps taken in
// turn by a message's attempts.
type Action struct {
	Steps []Step `json:"steps"`
}

// String writes the action as the grammar does.
func (a Action) String() string {
	parts := make([]string, len(a.Steps))
	for i, s := range a.Steps {
		parts[i] = s.String()
	}
	return strings.Join(parts, " then ")
}

// Sequence reports an action whose answer depends on the attempt.
func (a Action) Sequence() bool {
	return len(a.Steps) > 1 || (len(a.Steps) == 1 && a.Steps[0].Times > 0)
}

// StepFor returns the step that answers a message's attempt-th attempt
// (1-based), and false once the sequence is used up.
func (a Action) StepFor(attempt int) (Step, bool) {
	n := max(attempt, 1)
	for _, s := range a.Steps {
		if s.Times == 0 {
			return s, true
		}
		if n <= s.Times {
			return s, true
		}
		n -= s.Times
	}
	return Step{}, false
}

// ParseAction reads an action ("500 x2 then 200").
func ParseAction(s string) (Action, error) {
	var a Action
	text := strings.TrimSpace(s)
	if text == "" {
		return a, errors.New("no action: give a status (500), a delay (200 after 12s), close, or a sequence (500 x2 then 200)")
	}
	// Steps are the words between "then"s.
	var parts [][]string
	cur := []string{}
	for _, w := range strings.Fields(text) {
		if strings.EqualFold(w, "then") {
			parts, cur = append(parts, cur), []string{}
			continue
		}
		cur = append(cur, w)
	}
	parts = append(parts, cur)
	for i, p := range parts {
		st, err := parseStep(p)
		if err != nil {
			return a, fmt.Errorf("%q: %w", text, err)
		}
		if st.Times == 0 && i < len(parts)-1 {
			step := strings.Join(p, " ")
			return a, fmt.Errorf("%q answers every later attempt, so nothing after it would run: give it a count (%s x2) or drop what follows", step, step)
		}
		a.Steps = append(a.Steps, st)
	}
	return a, nil
}

func parseStep(words []string) (Step, error) {
	var s Step
	if len(words) == 0 {
		return s, errors.New(`an empty step: "then" needs a step on both sides`)
	}
	switch w := strings.ToLower(words[0]); {
	case w == "close":
		s.Close = true
	case w == "hang":
		// The answer mode of the same name: held past the service's time-out.
		s.Status, s.Delay = http.StatusOK, inspector.HangFor
	case w == "delay":
		// "delay 12s" is "200 after 12s".
		s.Status = http.StatusOK
		words = append([]string{"200", "after"}, words[1:]...)
	default:
		n, err := strconv.Atoi(w)
		if err != nil {
			return s, fmt.Errorf("%q is not an answer: give a status (200-599), close, hang, or delay DURATION", words[0])
		}
		if n < 200 || n > 599 {
			return s, fmt.Errorf("status %d: give one from 200 to 599 (1xx are not final answers)", n)
		}
		s.Status = n
	}
	rest := words[1:]
	for len(rest) > 0 {
		w := strings.ToLower(rest[0])
		switch {
		case w == "after" && len(rest) > 1:
			d, err := time.ParseDuration(rest[1])
			if err != nil || d <= 0 {
				return s, fmt.Errorf("after %q: give a duration such as 500ms, 12s or 2m", rest[1])
			}
			if d > MaxDelay {
				return s, fmt.Errorf("after %s: at most %s", d, MaxDelay)
			}
			s.Delay = d
			rest = rest[2:]
		case w == "after":
			return s, errors.New("after what? give a duration such as 12s")
		case strings.HasPrefix(w, "x") || strings.HasPrefix(w, "×"):
			n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(w, "x"), "×"))
			if err != nil || n < 1 {
				return s, fmt.Errorf("%q: a count is x followed by a number, such as x2", rest[0])
			}
			s.Times = n
			rest = rest[1:]
		default:
			return s, fmt.Errorf("unexpected %q: a step is STATUS|close [after DURATION] [xN]", rest[0])
		}
	}
	return s, nil
}

// Rule is one answer rule.
type Rule struct {
	// Text is the rule as written.
	Text string `json:"text"`
	// Cond is the condition as written ("" for a rule without one): an
	// expression, or an event-type glob (IsGlob).
	Cond string `json:"cond,omitempty"`
	// When is the condition; nil for a rule without one (every delivery).
	When   *Expr  `json:"-"`
	Action Action `json:"action"`
}

// ParseRule reads one rule, `COND => ACTION` or ACTION, compiling the
// condition (an expression, or an event-type glob such as media.*) for
// the Arrival view. A bad condition gives CompileErrors (with the column
// in the whole line).
func (c *Compiler) ParseRule(line string) (*Rule, error) {
	if c.view != Arrival {
		return nil, errors.New("answer rules are compiled for the arrival view")
	}
	r := &Rule{Text: strings.TrimSpace(line)}
	cond, act, found := CutArrow(line)
	if !found {
		act = line
	}
	var err error
	if r.Action, err = ParseAction(act); err != nil {
		return nil, err
	}
	if !found {
		return r, nil
	}
	r.Cond = strings.TrimSpace(cond)
	r.When, err = c.Condition(cond)
	var ce CompileErrors
	if errors.As(err, &ce) {
		return nil, ce.Within(line, "")
	}
	return r, err
}

// Rules is an ordered rule set; the first rule that matches answers. It
// is safe for concurrent use.
type Rules struct {
	list     []*Rule
	attempts *Attempts
	// counts: a rule has a sequence (Counts).
	counts bool
}

// RuleError says which rule of a set is wrong.
type RuleError struct {
	// Index is the rule's place, from 0.
	Index int
	Err   error
}

// Error names the rule (from 1) and what is wrong with it.
func (e *RuleError) Error() string { return fmt.Sprintf("answer rule %d: %v", e.Index+1, e.Err) }

// Unwrap is the rule's own error (CompileErrors or an action error).
func (e *RuleError) Unwrap() error { return e.Err }

// NewRules parses lines into a rule set counting attempts in attempts (nil
// makes a counter of DefaultAttempts messages, unseeded). Give every rule
// set of one receiver the same counter, seeded (Attempts.Seed) whenever a
// set with a sequence is put in force after one without, so editing the
// rules keeps the counts. A wrong line is a *RuleError wrapping its
// CompileErrors or action error.
func NewRules(lines []string, attempts *Attempts) (*Rules, error) {
	c, err := NewCompiler(Arrival)
	if err != nil {
		return nil, err
	}
	rs := &Rules{attempts: attempts}
	if rs.attempts == nil {
		rs.attempts = NewAttempts(DefaultAttempts)
	}
	for i, l := range lines {
		r, err := c.ParseRule(l)
		if err != nil {
			return nil, &RuleError{Index: i, Err: err}
		}
		rs.list = append(rs.list, r)
		rs.counts = rs.counts || r.Action.Sequence()
	}
	return rs, nil
}

// List returns the rules in order.
func (rs *Rules) List() []*Rule { return rs.list }

// Counts reports a rule set with a sequence: only such a set counts each
// message's attempts (which needs every delivery's hook uuid).
func (rs *Rules) Counts() bool { return rs.counts }

// Decision is how to answer one delivery.
type Decision struct {
	// Rule is the index of the rule that answers, -1 when none matched
	// (answer as without rules).
	Rule int `json:"rule"`
	// Step is the answer (zero when Rule is -1).
	Step Step `json:"step"`
	// Attempt is the message's attempt number (1 for the first).
	Attempt int `json:"attempt,omitempty"`
	// HookUUID is the message the attempt was counted for.
	HookUUID string `json:"hook_uuid,omitempty"`
	// Failed lists rules whose condition failed on the delivery (they do
	// not match), for the log: "rule 2: no such key: visitor".
	Failed []string `json:"failed,omitempty"`
}

// Decide chooses the answer to a delivery that has just arrived: what
// the receiver knows of it (no id, no analysis), the receiver's secrets
// for delivery.signature, now the arrival time. While a rule has a
// sequence (Counts), the delivery is counted as one more attempt of its
// message; otherwise nothing is counted and the body is read only as far
// as a condition needs (a set with a sequence put in force later goes on
// from the store's count: Attempts.Seed).
func (rs *Rules) Decide(d *inspector.Delivery, secrets [][]byte, now time.Time) Decision {
	in := &Input{Record: &inspector.Record{Delivery: d}, Secrets: secrets, Now: now}
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	act := newActivation(in, Arrival)
	dec := Decision{Rule: -1, Attempt: 1}
	if rs.counts {
		dec.HookUUID = act.d.hookUUID().Value().(string)
		dec.Attempt = rs.attempts.Next(dec.HookUUID)
	}
	return rs.decide(act, dec)
}

// The rules answer for the receiver.
var _ inspector.Answerer = (*Rules)(nil)

// Answer is Decide for the receiver (inspector.Answerer) at the
// delivery's arrival time: the step of the rule that answers, or 200 at
// once when none does.
func (rs *Rules) Answer(d *inspector.Delivery, secrets [][]byte) inspector.Reply {
	dec := rs.Decide(d, secrets, d.ReceivedAt)
	if dec.Rule < 0 {
		return inspector.Reply{Status: http.StatusOK}
	}
	return dec.Step.Reply()
}

// Reply is the receiver's answer the step gives.
func (s Step) Reply() inspector.Reply {
	return inspector.Reply{Status: s.Status, Close: s.Close, Delay: s.Delay}
}

// normal reports an action that answers 200 at once, every time: the
// receiver's answer without rules.
func (a Action) normal() bool {
	for _, s := range a.Steps {
		if s.Close || s.Status != http.StatusOK || s.Delay > 0 {
			return false
		}
	}
	return true
}

// Lines returns the rules as written, in order.
func (rs *Rules) Lines() []string {
	out := make([]string, len(rs.list))
	for i, r := range rs.list {
		out[i] = r.Text
	}
	return out
}

// Warning says in a few words how the rules answer when that is not 200
// at once to every delivery, "" when it is: the service takes other
// answers as failures and sends again, so every face shows it while it
// lasts. It names the first rule that answers otherwise, briefly enough
// for a header: "answering 500 to media.* (rule 1 of 2)", "answering 500
// x2 then 200 to every delivery", "holding every delivery 15 s, then
// answering 200".
func (rs *Rules) Warning() string {
	if rs == nil {
		return ""
	}
	first, others := -1, 0
	for i, r := range rs.list {
		switch {
		case r.Action.normal():
		case first < 0:
			first = i
		default:
			others++
		}
	}
	if first < 0 {
		return ""
	}
	r := rs.list[first]
	s := actionWords(r.Action, r.Cond)
	if len(rs.list) > 1 {
		s += fmt.Sprintf(" (rule %d of %d", first+1, len(rs.list))
		if others > 0 {
			s += "; " + plural.Count(others, "more rule answers", "more rules answer") + " other than 200"
		}
		s += ")"
	}
	return s
}

// maxCondWords is the longest condition a warning quotes.
const maxCondWords = 24

// whoWords names the deliveries a condition picks, for a warning.
func whoWords(cond string) string {
	switch {
	case cond == "":
		return "every delivery"
	case IsGlob(cond) || utf8.RuneCountInString(cond) <= maxCondWords:
		return cond
	}
	return "some deliveries"
}

// actionWords says what an action does to the deliveries cond picks.
func actionWords(a Action, cond string) string {
	who := whoWords(cond)
	if a.Sequence() {
		return fmt.Sprintf("answering %s to %s", a, who)
	}
	s := a.Steps[0]
	switch {
	case s.Close && s.Delay > 0:
		return fmt.Sprintf("holding %s %s, then closing", who, human.Duration(s.Delay))
	case s.Close && cond == "":
		return "closing every connection unanswered"
	case s.Close:
		return "closing connections unanswered for " + who
	case s.Delay > 0:
		return fmt.Sprintf("holding %s %s, then answering %d", who, human.Duration(s.Delay), s.Status)
	}
	return fmt.Sprintf("answering %d to %s", s.Status, who)
}

// decide runs the rules on one activation (shared, so the body is
// decoded once for all of them).
func (rs *Rules) decide(act *activation, dec Decision) Decision {
	for i, r := range rs.list {
		if r.When != nil {
			ok, err := r.When.evalWith(act)
			if err != nil {
				dec.Failed = append(dec.Failed, fmt.Sprintf("rule %d: %v", i+1, err))
				continue
			}
			if !ok {
				continue
			}
		}
		step, ok := r.Action.StepFor(dec.Attempt)
		if !ok {
			continue
		}
		dec.Rule, dec.Step = i, step
		return dec
	}
	return dec
}

// evalWith evaluates on a prepared activation.
func (e *Expr) evalWith(act *activation) (bool, error) {
	out, _, err := e.prg.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression gave %v, not true or false", out)
	}
	return b, nil
}

// Trial is what a rule set would do to a stored delivery.
type Trial struct {
	Decision
	// Explain says it in a sentence for the Rules editor.
	Explain string `json:"explain"`
}

// Try tells what the rules would answer to a stored delivery, as if it
// arrived now as the attempt-th attempt of its message (attempt < 1: the
// first). It uses only what the receiver would know (the stored request
// and body, the secrets given), counts nothing, and is what the window's
// Rules editor calls to test a rule against the selected delivery.
func (rs *Rules) Try(rec *inspector.Record, attempt int, secrets [][]byte) Trial {
	d := *rec.Delivery
	d.ID, d.Status, d.Answer = 0, 0, ""
	in := &Input{Record: &inspector.Record{Delivery: &d}, Secrets: secrets, Now: rec.Delivery.ReceivedAt}
	act := newActivation(in, Arrival)
	dec := Decision{Rule: -1, Attempt: max(attempt, 1)}
	dec.HookUUID = act.d.hookUUID().Value().(string)
	dec = rs.decide(act, dec)
	t := Trial{Decision: dec}
	what := fmt.Sprintf("delivery %d", rec.Delivery.ID)
	if dec.HookUUID != "" {
		what += fmt.Sprintf(" (attempt %d of message %s)", dec.Attempt, dec.HookUUID)
	}
	switch {
	case dec.Rule < 0 && len(dec.Failed) > 0:
		t.Explain = fmt.Sprintf("no rule answers %s; %s", what, strings.Join(dec.Failed, "; "))
	case dec.Rule < 0:
		t.Explain = fmt.Sprintf("no rule answers %s: it gets the normal answer", what)
	default:
		t.Explain = fmt.Sprintf("rule %d answers %s: %s", dec.Rule+1, what, describe(dec.Step))
	}
	return t
}

// describe says what a step does, in words.
func describe(s Step) string {
	what := fmt.Sprintf("%d %s", s.Status, http.StatusText(s.Status))
	if s.Close {
		what = "closes the connection without an answer"
	}
	if s.Delay > 0 {
		return fmt.Sprintf("waits %s, then %s", human.Duration(s.Delay), what)
	}
	return what
}

// DefaultAttempts is how many messages an attempt counter remembers.
const DefaultAttempts = 100_000

// Attempts counts each message's attempts (by hook uuid) for sequences.
// It keeps about the max most recently seen messages: two generations of
// a map, the older dropped when the newer fills (the standard library has
// no LRU; this is one in a dozen lines, and exact recency does not
// matter). It is safe for concurrent use.
type Attempts struct {
	mu       sync.Mutex
	cur, old map[string]int
	max      int
}

// NewAttempts returns a counter of about size messages (at least 2).
func NewAttempts(size int) *Attempts {
	return &Attempts{cur: map[string]int{}, old: map[string]int{}, max: max(size, 2)}
}

// Next counts one more attempt of the message and returns its number
// (1 for the first). A delivery without a hook uuid (not a message) is
// always a first attempt.
func (a *Attempts) Next(hook string) int {
	if hook == "" {
		return 1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.lookup(hook) + 1
	a.put(hook, n)
	return n
}

// Seen returns how many attempts of the message were counted.
func (a *Attempts) Seen(hook string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lookup(hook)
}

func (a *Attempts) lookup(hook string) int {
	if n, ok := a.cur[hook]; ok {
		return n
	}
	return a.old[hook]
}

func (a *Attempts) put(hook string, n int) {
	if _, ok := a.cur[hook]; !ok && len(a.cur) >= a.max/2 {
		a.old, a.cur = a.cur, make(map[string]int, a.max/2)
	}
	a.cur[hook] = n
}

// AttemptSource gives the stored attempts per message (the store
// implements it): fn with each hook uuid received since the time given
// and how many deliveries carried it.
type AttemptSource interface {
	HookAttempts(ctx context.Context, since time.Time, fn func(hook string, n int) error) error
}

// SeedWindow is how far back Seed counts: the service's re-sends of one
// message seen in practice fall within hours.
const SeedWindow = 72 * time.Hour

// Seed counts the attempts the store holds of messages received since
// since (zero: SeedWindow before now), so a restarted receiver goes on
// with each message's sequence instead of starting it over. Deliveries
// the store has not analyzed yet carry no hook uuid and are not counted.
func (a *Attempts) Seed(ctx context.Context, src AttemptSource, since time.Time) error {
	if since.IsZero() {
		since = time.Now().Add(-SeedWindow)
	}
	err := src.HookAttempts(ctx, since, func(hook string, n int) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.lookup(hook) < n {
			a.put(hook, n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count stored attempts: %w", err)
	}
	return nil
}
