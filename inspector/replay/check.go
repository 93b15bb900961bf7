package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// ServiceTimeout is the service's webhook time-out (spec section 8): an
// answer later than this may make it send the message again.
const ServiceTimeout = inspector.ServiceTimeout

// Verdict judges one case of the consumer check.
type Verdict string

// The verdicts.
const (
	Pass Verdict = "pass"
	Warn Verdict = "warn"
	Fail Verdict = "fail"
)

// CheckOptions configure a consumer check.
type CheckOptions struct {
	Target string
	// Secret is the webhook secret the consumer verifies with.
	Secret []byte
	// Limit is how fast a 2xx must arrive; zero means ServiceTimeout.
	Limit time.Duration
	// Seed makes the generated messages reproducible; zero is random.
	Seed int64
	// FailFast stops the check after the first case that fails; the
	// report counts the cases not run as Skipped.
	FailFast bool
	// OnStart, when set, is called as each case starts, with its name (for
	// progress: a case can wait for an answer up to the time-out).
	OnStart func(name string)
	// OnCase, when set, is called as each case finishes (for progress).
	OnCase func(c CaseResult)
}

// Send is one request of a case and its answer.
type Send struct {
	HookUUID  string        `json:"hook_uuid"`
	Events    []string      `json:"events"`
	Types     []string      `json:"types"`
	Signature string        `json:"signature"` // "valid", "wrong" or "missing"
	Status    int           `json:"status"`
	Latency   time.Duration `json:"latency_ns"`
	Error     string        `json:"error,omitempty"`
	// Response is the start of the answer's body, for the explanation.
	Response string `json:"response,omitempty"`
}

// CaseResult is one case of the check with its verdict.
type CaseResult struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Expect says what a correct consumer does, in plain words.
	Expect      string  `json:"expect"`
	Sends       []Send  `json:"sends"`
	Verdict     Verdict `json:"verdict"`
	Explanation string  `json:"explanation"`
}

// CheckReport is the outcome of a consumer check.
type CheckReport struct {
	Target    string        `json:"target"`
	StartedAt time.Time     `json:"started_at"`
	Limit     time.Duration `json:"limit_ns"`
	// Findings lead the report: what the endpoint did across every case
	// (the same status for everything, correctly signed deliveries
	// refused, forged ones accepted, answers too slow), judged by its
	// answers, most fundamental first. Empty when it behaved.
	Findings []Finding    `json:"findings"`
	Cases    []CaseResult `json:"cases"`
	Passed   int          `json:"passed"`
	Warned   int          `json:"warned"`
	Failed   int          `json:"failed"`
	// Skipped counts the cases not run: the check stopped at the first
	// failed case (CheckOptions.FailFast).
	Skipped int `json:"skipped,omitempty"`
}

// Finding is one thing the endpoint did across the check, with the cases
// it concerns.
type Finding struct {
	// Kind names the behaviour, stable for scripts: no-answer,
	// same-status, redirect, refused-signed, rejected-signed,
	// failed-signed, accepted-forged, slow, not-200.
	Kind string `json:"kind"`
	// Severity is Fail or Warn, as the cases it concerns.
	Severity Verdict `json:"severity"`
	// Text says what the endpoint did and what to look at, in plain words.
	Text  string   `json:"text"`
	Cases []string `json:"cases"`
}

// OK reports whether no case failed (warnings allowed).
func (r *CheckReport) OK() bool { return r.Failed == 0 }

type checkCase struct {
	name, title, expect string
	// refuse: a correct consumer answers non-2xx.
	refuse bool
	msgs   []checkMsg
}

type checkMsg struct {
	msg simulate.Message
	// body, when set, is sent instead of msg.Body() (a re-send of the same bytes).
	body []byte
	sig  string
}

// CheckCases lists the cases a check runs, in order: one per event type,
// then the delivery behaviours. Names are stable for scripts.
func CheckCases() []string {
	var out []string
	for _, t := range catalog.Types() {
		out = append(out, "type:"+t.Name)
	}
	return append(out, "duplicate", "resend", "out-of-order", "bad-signature", "missing-signature")
}

func planCheck(g *simulate.Generator) []checkCase {
	var cases []checkCase
	byType := map[string]simulate.Message{}
	for _, t := range catalog.Types() {
		m := g.Message(g.Event(t.Name))
		byType[t.Name] = m
		cases = append(cases, checkCase{
			name: "type:" + t.Name, title: t.Name + " (" + t.OccursWhen + ")",
			expect: "answers 2xx within the time-out",
			msgs:   []checkMsg{{msg: m, sig: "valid"}},
		})
	}
	first := byType[catalog.TypeMediaCreated]
	cases = append(cases, checkCase{
		name: "duplicate", title: "the media.created event again, in a new message",
		expect: "answers 2xx and processes the event once (same event uuid: keep one)",
		msgs:   []checkMsg{{msg: g.Message(first.Events[0]), sig: "valid"}},
	})
	again := byType[catalog.TypeMediaReady]
	cases = append(cases, checkCase{
		name: "resend", title: "the media.ready message sent again, byte for byte (same hook uuid)",
		expect: "answers 2xx and processes nothing new",
		msgs:   []checkMsg{{msg: again, body: again.Body(), sig: "valid"}},
	})
	life, _ := g.Scenario(simulate.ScenarioMediaLifecycle, simulate.ScenarioOptions{})
	// life is created, processing, ready about one media: send ready first.
	cases = append(cases, checkCase{
		name: "out-of-order", title: "media.ready, then the earlier media.processing of the same media",
		expect: "answers 2xx to both and orders by generated_at, so the media stays ready",
		msgs:   []checkMsg{{msg: life[2], sig: "valid"}, {msg: life[1], sig: "valid"}},
	})
	cases = append(cases, checkCase{
		name: "bad-signature", title: "a new media.updated signed with the wrong secret",
		expect: "refuses it with a non-2xx answer (401 or 403)", refuse: true,
		msgs: []checkMsg{{msg: g.Message(g.Event(catalog.TypeMediaUpdated)), sig: "wrong"}},
	})
	cases = append(cases, checkCase{
		name: "missing-signature", title: "a new media.deleted without X-Service-Signature",
		expect: "refuses it with a non-2xx answer (401 or 403)", refuse: true,
		msgs: []checkMsg{{msg: g.Message(g.Event(catalog.TypeMediaDeleted)), sig: "missing"}},
	})
	return cases
}

// CheckConsumer runs the standard check against a consumer endpoint: every
// event type once, a duplicate event, a re-sent message, an out-of-order
// pair, a wrong and a missing signature. Each case gets a verdict with a
// plain explanation. Nothing is recorded: these are not captured deliveries.
func (r *Replayer) CheckConsumer(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	target, err := ParseTarget(opts.Target)
	if err != nil {
		return nil, err
	}
	if len(opts.Secret) == 0 {
		return nil, errors.New("the consumer check needs the webhook secret your endpoint verifies with")
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = ServiceTimeout
	}
	wrong := append([]byte("hookscope-wrong-"), opts.Secret...)
	// Wait a little past the limit so a late answer is reported as late,
	// with its status, rather than as silence.
	timeout := limit + min(limit, 5*time.Second)
	client := r.httpClient()
	defer client.CloseIdleConnections()
	rep := &CheckReport{Target: RedactURL(target.String()), StartedAt: r.now().UTC(), Limit: limit}
	plan := planCheck(simulate.New(opts.Seed))
	for i, c := range plan {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("consumer check stopped after %d of %s: %w", i, plural.S(len(plan), "case"), err)
		}
		if opts.OnStart != nil {
			opts.OnStart(c.name)
		}
		cr := CaseResult{Name: c.name, Title: c.title, Expect: c.expect}
		for _, m := range c.msgs {
			body := m.body
			if body == nil {
				body = m.msg.Body()
			}
			var secret []byte
			switch m.sig {
			case "valid":
				secret = opts.Secret
			case "wrong":
				secret = wrong
			}
			req := Request{HostIndex: -1, Headers: simulate.HeadersFor(body, secret), Body: body}
			s := Send{HookUUID: m.msg.Hook.UUID, Types: m.msg.Types(), Signature: m.sig}
			for _, e := range m.msg.Events {
				s.Events = append(s.Events, e.UUID)
			}
			a, err := sendHTTP(ctx, client, target, req, timeout, DefaultMaxResponse)
			if err != nil {
				s.Error = failure(err, target)
			}
			if a != nil {
				s.Status, s.Latency = a.status, a.latency
				s.Response = snippet(a.body)
			}
			cr.Sends = append(cr.Sends, s)
		}
		cr.Verdict, cr.Explanation = judge(c, cr.Sends, limit)
		switch cr.Verdict {
		case Pass:
			rep.Passed++
		case Warn:
			rep.Warned++
		default:
			rep.Failed++
		}
		rep.Cases = append(rep.Cases, cr)
		if opts.OnCase != nil {
			opts.OnCase(cr)
		}
		if opts.FailFast && cr.Verdict == Fail {
			rep.Skipped = len(plan) - i - 1
			break
		}
	}
	rep.Findings = findings(rep.Cases, limit)
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	return rep, nil
}

func snippet(b []byte) string {
	const n = 200
	s := strings.ToValidUTF8(string(b[:min(len(b), n)]), "?")
	if len(b) > n {
		s += "…"
	}
	return s
}

func judge(c checkCase, sends []Send, limit time.Duration) (Verdict, string) {
	if c.refuse {
		s := sends[0]
		switch {
		case s.Status == 0:
			return Warn, fmt.Sprintf("no answer: %s. The forged delivery was not accepted, but answer it with 401 or 403 at once so nothing waits on it", s.Error)
		case s.Status >= 200 && s.Status < 300:
			what := "a signature that does not match"
			if s.Signature == "missing" {
				what = "no signature at all"
			}
			return Fail, fmt.Sprintf("answered %d to a delivery with %s: anyone who learns your URL can post forged events. Compute HMAC-SHA256 of the raw body with your secret, compare it with X-Service-Signature in constant time, and answer 401 when it differs or is missing", s.Status, what)
		case s.Status >= 500:
			return Warn, fmt.Sprintf("refused with %d: right to refuse, but a 5xx says 'try again later'; answer 401 or 403 for a bad signature", s.Status)
		default:
			return Pass, fmt.Sprintf("refused with %d", s.Status)
		}
	}
	verdict, notes := Pass, []string{}
	for i, s := range sends {
		which := ""
		if len(sends) > 1 {
			which = fmt.Sprintf("message %d of %d: ", i+1, len(sends))
		}
		switch {
		case s.Status == 0:
			return Fail, which + fmt.Sprintf("no answer: %s. The service would give up after %s and send the message again", s.Error, ServiceTimeout)
		case s.Latency > limit:
			return Fail, which + fmt.Sprintf("answered %d after %s, later than the %s time-out: the service would send it again. Answer first, process afterwards (queue the work)", s.Status, human.Duration(s.Latency), limit)
		case s.Status >= 300 && s.Status < 400:
			return Fail, which + fmt.Sprintf("answered a redirect (%d): the service does not follow redirects; configure the final URL", s.Status)
		case s.Status >= 400:
			why := refusalReason(s.Status)
			switch {
			case s.Status >= 500:
			case c.name == "duplicate" || c.name == "resend":
				why = "a duplicate must still get a 2xx (skip the work, not the answer), or the service keeps sending it"
			case c.name == "out-of-order":
				why = "an older event arriving late is normal: answer 2xx and ignore it if a newer one (by generated_at) was already applied"
			}
			if s.Response != "" {
				why += fmt.Sprintf(" (it answered %q)", s.Response)
			}
			return Fail, which + fmt.Sprintf("answered %d: %s", s.Status, why)
		case s.Status != 200:
			verdict = Warn
			notes = append(notes, which+fmt.Sprintf("answered %d: the service expects 200; most senders accept any 2xx, but 200 is what is documented", s.Status))
		}
	}
	if verdict == Warn {
		return Warn, strings.Join(notes, "; ")
	}
	var slow time.Duration
	for _, s := range sends {
		slow = max(slow, s.Latency)
	}
	msg := fmt.Sprintf("answered 200 in %s", human.Duration(slow))
	switch c.name {
	case "duplicate":
		msg += fmt.Sprintf("; check that event %s was processed once, not twice (it also came in the media.created case)", sends[0].Events[0])
	case "resend":
		msg += fmt.Sprintf("; check that message %s was processed once", sends[0].HookUUID)
	case "out-of-order":
		msg += "; check that the media ended up ready, not processing"
	}
	return Pass, msg
}

// WriteText prints the report for a terminal: one line per case, an
// explanation under every case that is not a plain pass, and a total.
func (r *CheckReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Consumer check of %s (answers expected within %s)\n\n", r.Target, r.Limit)
	if len(r.Findings) > 0 {
		b.WriteString("What the endpoint did:\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "  %s  %s\n", strings.ToUpper(string(f.Severity)), f.Text)
		}
		b.WriteString("\nCase by case:\n")
	}
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "%s  %-46s %s\n", c.Verdict.Mark(), c.Name, c.Answers(false))
		fmt.Fprintf(&b, "      %s\n", c.Explanation)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, "\nStopped at the first failed case: %s not run.\n", plural.S(r.Skipped, "case"))
	}
	fmt.Fprintf(&b, "\n%d passed, %s, %d failed\n", r.Passed, plural.S(r.Warned, "warning"), r.Failed)
	_, err := io.WriteString(w, b.String())
	return err
}

// Mark is the verdict as the text report prints it: PASS, WARN or FAIL.
func (v Verdict) Mark() string { return strings.ToUpper(string(v)) }

// Answers says what each send of the case got, "200, 409" or "no answer";
// with latency, how long each answer took: "200 in 2.1ms".
func (c CaseResult) Answers(latency bool) string {
	out := make([]string, len(c.Sends))
	for i, s := range c.Sends {
		switch {
		case s.Status == 0:
			out[i] = "no answer"
		case latency:
			out[i] = fmt.Sprintf("%d in %s", s.Status, human.Duration(s.Latency))
		default:
			out[i] = strconv.Itoa(s.Status)
		}
	}
	return strings.Join(out, ", ")
}

// MarshalJSON adds a top-level ok to the report.
func (r *CheckReport) MarshalJSON() ([]byte, error) {
	type plain CheckReport
	return json.Marshal(struct {
		OK bool `json:"ok"`
		*plain
	}{r.OK(), (*plain)(r)})
}

// refusalReason says what a non-2xx answer to a correctly signed delivery
// points at, by the status itself: only 401 and 403 are about the
// signature.
func refusalReason(status int) string {
	switch {
	case status == 401 || status == 403:
		return "a correctly signed delivery was refused as unauthorized: check that the endpoint verifies with the same secret, over the raw body bytes (not re-encoded JSON)"
	case status == 404 || status == 405:
		return "the endpoint does not take a POST at this URL: check the path and the method it is routed for"
	case status == 413:
		return "the body was refused as too large: allow at least a few hundred KiB (batches and localization events are large)"
	case status == 415:
		return "the endpoint refused Content-Type application/json"
	case status >= 500:
		return "the endpoint failed while handling it (a 5xx means 'try again later': the service sends it again); look at its log"
	case status == 429:
		return "the endpoint rate-limited the delivery: the service sends it again later, in a burst"
	}
	return "a well-formed, correctly signed delivery was refused: the endpoint rejects its content (it must accept every documented event type, and ignore fields it does not know)"
}

// findings judges the endpoint by what it answered across all cases,
// before any case's own verdict: an endpoint that answers 500 to
// everything fails every case for one reason, and that reason leads.
func findings(cases []CaseResult, limit time.Duration) []Finding {
	type send struct {
		Send
		cas string
	}
	var all, signed, forged []send
	for _, c := range cases {
		for _, s := range c.Sends {
			x := send{s, c.Name}
			all = append(all, x)
			if s.Signature == "valid" {
				signed = append(signed, x)
			} else {
				forged = append(forged, x)
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	names := func(ss []send) []string {
		var out []string
		for _, s := range ss {
			if len(out) == 0 || out[len(out)-1] != s.cas {
				out = append(out, s.cas)
			}
		}
		return out
	}
	where := func(ss []send, keep func(send) bool) []send {
		var out []send
		for _, s := range ss {
			if keep(s) {
				out = append(out, s)
			}
		}
		return out
	}
	quote := func(ss []send) string {
		for _, s := range ss {
			if s.Response != "" {
				return fmt.Sprintf(" Its answer: %q.", strings.TrimSpace(s.Response))
			}
		}
		return ""
	}
	var out []Finding
	// One answer to everything: one cause, said once.
	silent := where(all, func(s send) bool { return s.Status == 0 })
	if len(silent) == len(all) {
		return []Finding{{Kind: "no-answer", Severity: Fail, Cases: names(all),
			Text: fmt.Sprintf("It answered none of the %s: %s.", plural.S(len(all), "request"), silent[0].Error)}}
	}
	if st := all[0].Status; st != 0 && len(where(all, func(s send) bool { return s.Status == st })) == len(all) && (st < 200 || st > 299) {
		f := Finding{Kind: "same-status", Severity: Fail, Cases: names(all)}
		what := fmt.Sprintf("It answered %d to all %s, correctly signed or not", st, plural.S(len(all), "request"))
		switch {
		case st >= 300 && st < 400:
			f.Text = what + ": a redirect, which the service does not follow. Configure the final URL."
		case st == 401 || st == 403:
			f.Text = what + ": it refuses even correctly signed deliveries. Check that it verifies with the same secret as the check, over the raw body bytes."
		case st >= 500:
			f.Text = what + ": it fails before telling deliveries apart (a crash, a missing dependency or configuration), so no case says anything about your webhook code yet. Look at its log."
		default:
			f.Text = what + ": " + refusalReason(st) + "."
		}
		f.Text += quote(all)
		return append(out, f)
	}
	if len(silent) > 0 {
		out = append(out, Finding{Kind: "no-answer", Severity: Fail, Cases: names(silent),
			Text: fmt.Sprintf("It answered nothing to %s: the service gives up after %s and sends again. The first: %s.", plural.S(len(silent), "request"), ServiceTimeout, silent[0].Error)})
	}
	redirects := where(all, func(s send) bool { return s.Status >= 300 && s.Status < 400 })
	if len(redirects) > 0 {
		out = append(out, Finding{Kind: "redirect", Severity: Fail, Cases: names(redirects),
			Text: fmt.Sprintf("It answered a redirect (%d) to %s: the service does not follow redirects.", redirects[0].Status, plural.S(len(redirects), "request"))})
	}
	// Correctly signed deliveries refused, grouped by what the status
	// points at: the signature (401/403), the endpoint failing (5xx), or
	// the content (other 4xx).
	for _, g := range []struct {
		kind string
		is   func(int) bool
		what string
	}{
		{"refused-signed", func(st int) bool { return st == 401 || st == 403 },
			"It refused %s as unauthorized (%s) although each was signed with the secret given: it verifies with another secret, or over re-encoded JSON instead of the raw body bytes."},
		{"failed-signed", func(st int) bool { return st >= 500 },
			"It failed (%[2]s) on %[1]s; the service takes a 5xx as 'try again later'. Look at its log for these cases."},
		{"rejected-signed", func(st int) bool { return st >= 400 && st < 500 && st != 401 && st != 403 },
			"It rejected %s (%s): a correctly signed, well-formed delivery must get a 2xx, even a duplicate, an old event or a type it does not handle."},
	} {
		bad := where(signed, func(s send) bool { return g.is(s.Status) })
		if len(bad) == 0 {
			continue
		}
		out = append(out, Finding{Kind: g.kind, Severity: Fail, Cases: names(bad),
			Text: fmt.Sprintf(g.what, plural.Count(len(bad), "correctly signed delivery", "correctly signed deliveries"), statuses(bad, func(s send) int { return s.Status })) + quote(bad)})
	}
	accepted := where(forged, func(s send) bool { return s.Status >= 200 && s.Status < 300 })
	if len(accepted) > 0 {
		out = append(out, Finding{Kind: "accepted-forged", Severity: Fail, Cases: names(accepted),
			Text: fmt.Sprintf("It accepted %s with a wrong or missing signature (%s): it does not verify X-Service-Signature, so anyone who learns the URL can post events.", plural.Count(len(accepted), "delivery", "deliveries"), statuses(accepted, func(s send) int { return s.Status }))})
	}
	slow := where(all, func(s send) bool { return s.Status != 0 && s.Latency > limit })
	if len(slow) > 0 {
		var worst time.Duration
		for _, s := range slow {
			worst = max(worst, s.Latency)
		}
		out = append(out, Finding{Kind: "slow", Severity: Fail, Cases: names(slow),
			Text: fmt.Sprintf("It answered %s later than the %s limit (the slowest after %s): the service would send them again. Answer first, then process (queue the work).", plural.S(len(slow), "request"), limit, human.Duration(worst))})
	}
	other := where(signed, func(s send) bool { return s.Status > 200 && s.Status < 300 })
	if len(other) > 0 {
		out = append(out, Finding{Kind: "not-200", Severity: Warn, Cases: names(other),
			Text: fmt.Sprintf("It answered %s to %s: the service documents 200; most senders accept any 2xx.", statuses(other, func(s send) int { return s.Status }), plural.Count(len(other), "delivery", "deliveries"))})
	}
	return out
}

// statuses lists the distinct statuses of ss in order: "500" or "400, 422".
func statuses[T any](ss []T, status func(T) int) string {
	var out []string
	seen := map[int]bool{}
	for _, s := range ss {
		if st := status(s); !seen[st] {
			seen[st] = true
			out = append(out, strconv.Itoa(st))
		}
	}
	return strings.Join(out, ", ")
}
