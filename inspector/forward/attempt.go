package forward

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/human"
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
	Skipped     Outcome = "skipped"     // not sent: its signature did not verify (SkipUnverified)
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
	// NotResigned says why a delivery went without a signature (or, with
	// Outcome Skipped, not at all) although re-signing was asked for:
	// its own signature did not verify ("invalid: ...").
	NotResigned string `json:"not_resigned,omitempty"`
	// Insecure: the https target's certificate was not checked
	// (--forward-insecure).
	Insecure bool `json:"insecure,omitempty"`
	// Relayed is the status the service got in pass-through (the app's,
	// or 502/504 when the app gave none).
	Relayed int `json:"relayed,omitempty"`
	// RelayCut: the app's answer was longer than RelayMaxResponse and
	// reached the service cut there (the CutHeader says so);
	// ResponseLength is its whole length.
	RelayCut       bool  `json:"relay_cut,omitempty"`
	ResponseLength int64 `json:"response_length,omitempty"`

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
		fmt.Fprintf(&b, "%d in %s", a.Status, human.Duration(a.Latency))
	default:
		b.WriteString(string(a.Outcome))
	}
	var notes []string
	if a.Number > 1 {
		notes = append(notes, fmt.Sprintf("attempt %d", a.Number))
	}
	if !a.NextAt.IsZero() {
		notes = append(notes, "next in "+human.Duration(max(a.NextAt.Sub(now), 0)))
	}
	if a.GaveUp {
		notes = append(notes, "given up")
	}
	if a.Reforward {
		notes = append(notes, "re-forward")
	}
	if a.NotResigned != "" && a.Outcome != Skipped {
		notes = append(notes, "not re-signed")
	}
	if a.RelayCut {
		notes = append(notes, fmt.Sprintf("answer cut to %d of %d bytes", RelayMaxResponse, a.ResponseLength))
	}
	if a.Insecure {
		notes = append(notes, "TLS NOT VERIFIED")
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	return b.String()
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
