package forward

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
)

// Outcome classifies one attempt.
type Outcome string

// The outcomes. Refused and Unreachable (no connection) hold a route's
// queue: the app is down, and gets every delivery once it is back.
// Rejected, Timeout and Dropped are the app's verdict on one delivery,
// retried a few times: an app that accepts the connection and then closes
// it without an answer has most likely crashed on that payload, and
// retrying it forever would hold the queue forever.
const (
	Delivered   Outcome = "delivered"   // a 2xx answer
	Rejected    Outcome = "rejected"    // another status
	Timeout     Outcome = "timeout"     // no answer within the budget
	Dropped     Outcome = "dropped"     // connected, then closed (or reset) before any answer
	Refused     Outcome = "refused"     // nothing listens on the target's port
	Unreachable Outcome = "unreachable" // no connection otherwise: DNS, TLS, no route, connect timeout
	Stopped     Outcome = "stopped"     // Hookscope stopped during the attempt
)

// Down reports an outcome that says the app cannot be reached at all: its
// route waits (and retries forever) instead of judging the delivery.
func (o Outcome) Down() bool { return o == Refused || o == Unreachable }

// Verdict reports an outcome that is the app's answer (or lack of one) to
// this delivery: it counts against the delivery's retries.
func (o Outcome) Verdict() bool { return o == Rejected || o == Timeout || o == Dropped }

// Kind says what sent an attempt.
type Kind string

// The kinds of attempt.
const (
	KindAck         Kind = "ack"          // the queue, after the receiver acked
	KindPassThrough Kind = "pass-through" // before the answer, which was the app's
	KindAgain       Kind = "again"        // the user's Forward again
)

// Attempt is one request to an app and what came of it. Nothing secret is
// in it: the target's credentials are redacted, the re-sign secret and the
// request's headers are not kept (the request is the delivery as stored,
// re-signed when Resigned says so).
type Attempt struct {
	// ID is assigned by the store.
	ID         int64 `json:"id,omitempty"`
	DeliveryID int64 `json:"delivery_id"`
	// Route is the route's name (its spec, credentials redacted).
	Route string `json:"route"`
	// Target is the URL, credentials redacted.
	Target string `json:"target"`
	// Number counts this delivery's attempts on this route, from 1.
	Number    int       `json:"attempt"`
	Kind      Kind      `json:"kind"`
	StartedAt time.Time `json:"started_at"`
	// Status is the app's status, 0 when it gave none.
	Status            int                `json:"status"`
	StatusText        string             `json:"status_text,omitempty"`
	Latency           time.Duration      `json:"latency_ns"`
	ResponseHeaders   []inspector.Header `json:"response_headers,omitempty"`
	ResponseBody      []byte             `json:"response_body,omitempty"`
	ResponseTruncated bool               `json:"response_truncated,omitempty"`
	Outcome           Outcome            `json:"outcome"`
	// Error explains a failure to a person; Detail is the underlying
	// error as Go reported it.
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Reforward marks an attempt that may repeat one the app already
	// got: Hookscope stopped (or was killed) while it was under way.
	Reforward bool `json:"reforward,omitempty"`
	// Final: the queue is done with the delivery (delivered, or given up
	// after the last retry).
	Final  bool `json:"final,omitempty"`
	GaveUp bool `json:"gave_up,omitempty"`
	// NextAt is when the queue tries again (zero when it does not).
	NextAt   time.Time `json:"next_at,omitzero"`
	Resigned bool      `json:"resigned,omitempty"`
	// Relayed is the status the service got in pass-through (the app's,
	// or 502/504 when the app gave none).
	Relayed int `json:"relayed,omitempty"`

	// unsent: the request never left (no connection), so the app cannot
	// have it. timedOut: the budget ran out (even while connecting).
	unsent, timedOut bool
	// reason is Error without what Hookscope does next: the route's
	// LastError, a face's "is down" line.
	reason string
}

// OK reports a 2xx answer.
func (a *Attempt) OK() bool { return a.Outcome == Delivered }

// Reason is Error without what Hookscope does next ("the app answered 500
// Internal Server Error: boom"), for a line that says that already.
func (a *Attempt) Reason() string {
	if a.reason != "" {
		return a.reason
	}
	return a.Error
}

// Short is the attempt in a few words, as listen prints it after an
// arrow: "200 in 12 ms", "refused (attempt 3, next in 8 s)".
func (a *Attempt) Short(now time.Time) string {
	var b strings.Builder
	switch a.Outcome {
	case Delivered, Rejected:
		fmt.Fprintf(&b, "%d in %s", a.Status, Spoken(a.Latency))
	default:
		b.WriteString(string(a.Outcome))
	}
	var notes []string
	if a.Number > 1 {
		notes = append(notes, fmt.Sprintf("attempt %d", a.Number))
	}
	if !a.NextAt.IsZero() {
		notes = append(notes, "next in "+Spoken(max(a.NextAt.Sub(now), 0)))
	}
	if a.GaveUp {
		notes = append(notes, "given up")
	}
	if a.Reforward {
		notes = append(notes, "re-forward")
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	return b.String()
}

// classify turns an exchange's result into an outcome and words a person
// understands. host is the target's host:port as the user wrote it.
func classify(resp *replay.Response, err error, host string, budget time.Duration) (Outcome, string) {
	if resp != nil && resp.Status > 0 {
		if resp.Status >= 200 && resp.Status < 300 {
			return Delivered, ""
		}
		msg := fmt.Sprintf("the app answered %d %s", resp.Status, resp.StatusText)
		if s := bodyStart(resp.Body); s != "" {
			msg += ": " + s
		}
		return Rejected, msg
	}
	if err == nil {
		return Unreachable, "no answer"
	}
	var xe *replay.ExchangeError
	if !errors.As(err, &xe) {
		return Unreachable, err.Error()
	}
	var dnsErr *net.DNSError
	switch {
	case xe.TimedOut && xe.Stage != replay.StageConnect:
		return Timeout, fmt.Sprintf("no answer from %s within %s", host, budget)
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused, fmt.Sprintf("nothing is listening on %s: is your app running?", host)
	case errors.As(err, &dnsErr):
		return Unreachable, fmt.Sprintf("the host name in %s does not resolve (%s): check the URL", host, dnsErr.Err)
	case xe.Stage == replay.StageConnect && xe.TimedOut:
		return Unreachable, fmt.Sprintf("could not connect to %s within %s", host, budget)
	case xe.Stage == replay.StageConnect:
		return Unreachable, fmt.Sprintf("cannot reach %s: %v", host, rootCause(err))
	case xe.Stage == replay.StageTLS:
		return Unreachable, fmt.Sprintf("the TLS handshake with %s failed: %v", host, rootCause(err))
	}
	// Connected, sent (or began to), and the connection ended without a
	// byte of answer: the app's verdict on this delivery, most often a
	// crash on its payload. (A kept-alive connection that fails this way
	// is tried once more on a new one before it gets here.)
	return Dropped, fmt.Sprintf("the app at %s closed the connection without answering (did it crash on this delivery?)", host)
}

// rootCause is the innermost error: "connect: no route to host" rather
// than the dial's full chain.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// bodyStart is the first line of an app's answer, short enough for one
// line of output.
func bodyStart(b []byte) string {
	const max = 120
	s := strings.TrimSpace(string(b))
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + " …"
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("(%d bytes, not text)", len(b))
	}
	return s
}
