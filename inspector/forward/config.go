package forward

import (
	"fmt"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// Mode is how forwarding relates to the receiver's answer.
type Mode string

// The modes.
const (
	// ModeAck: the receiver answers the service once the delivery is
	// stored, and the queue forwards it afterwards, retried until the app
	// takes it, across restarts.
	ModeAck Mode = "ack"
	// ModePassThrough: the receiver stores the delivery, forwards it at
	// once and answers the service with the app's answer.
	ModePassThrough Mode = "pass-through"
)

// ParseMode checks a user-supplied mode; empty means ModeAck.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAck, ModePassThrough:
		return m, nil
	case "":
		return ModeAck, nil
	}
	return "", fmt.Errorf("unknown forward mode %q (expected ack or pass-through)", s)
}

// The defaults of the retry policy, in one place: the faces show them in
// their help (DefaultsHelp) and docs/forwarding.md explains them.
const (
	// DefaultTimeout is the budget of one attempt: under the service's
	// 10 s, so in pass-through the service hears 504 before it gives up.
	DefaultTimeout = 9 * time.Second
	// DefaultRetries is how many times a delivery the app answered with a
	// non-2xx status, or did not answer in time, is sent again.
	DefaultRetries = 5
	// RetryBackoffMin and RetryBackoffMax bound the wait before those
	// retries (doubling: 1 s, 2 s, 4 s, 8 s, 16 s).
	RetryBackoffMin = time.Second
	RetryBackoffMax = 30 * time.Second
	// DownBackoffMin and DownBackoffMax bound the wait between tries of an
	// app that does not answer at all (refused, reset, DNS): forever, so
	// the queue drains within seconds of the app coming back.
	DownBackoffMin = 250 * time.Millisecond
	DownBackoffMax = 5 * time.Second
	// DefaultMaxResponse caps the app's answer kept with an attempt.
	DefaultMaxResponse = 64 << 10
	// RelayMaxResponse caps the app's answer relayed to the service in
	// pass-through (the service reads only the status): a longer answer
	// is read whole (a cut one is a failed attempt) and relayed cut, said
	// in the CutHeader and the attempt.
	RelayMaxResponse = 1 << 20
)

// DefaultsHelp describes the retry policy in one line for --help.
func DefaultsHelp() string {
	return fmt.Sprintf("an app that answers non-2xx or not within %s is retried %d times (%s to %s apart, doubling), then given up; an app that cannot be reached holds its route's queue and is retried forever (%s to %s apart)",
		DefaultTimeout, DefaultRetries, RetryBackoffMin, RetryBackoffMax, DownBackoffMin, DownBackoffMax)
}

// Policy is how failed attempts are retried.
type Policy struct {
	// Timeout is one attempt's budget; zero means DefaultTimeout.
	Timeout time.Duration
	// Retries is how often a rejected or timed-out delivery is retried:
	// zero means DefaultRetries, NoRetries none (a face maps a user's
	// "--forward-retries 0" to NoRetries).
	Retries int
}

// NoRetries in Policy.Retries sends a rejected delivery once only.
const NoRetries = -1

func (p Policy) timeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultTimeout
	}
	return p.Timeout
}

func (p Policy) retries() int {
	switch {
	case p.Retries < 0:
		return 0
	case p.Retries == 0:
		return DefaultRetries
	}
	return p.Retries
}

// backoff is the wait before try n+1 (n >= 1 tries so far), doubling
// from lo to at most hi: the one retry rule of forwarding (the app's
// verdicts, the app down, a store that cannot record).
func backoff(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// Config is what the forwarder does.
type Config struct {
	// Routes in the order given: in pass-through the first matching one
	// answers the service.
	Routes []Route
	Mode   Mode
	Policy Policy
	// ResignSecret, when set, re-signs with the app's development secret
	// every forwarded delivery whose own signature verified with the
	// receiver's secrets; the others are forwarded without a signature
	// (or, with SkipUnverified, not at all), as their attempts say. It is
	// never stored or shown.
	ResignSecret []byte
	// SkipUnverified keeps deliveries whose signature did not verify from
	// the app when ResignSecret is set.
	SkipUnverified bool
	// Headers are added to every forwarded request, replacing captured
	// headers of the same name.
	Headers []inspector.Header
	// SkipMalformed keeps malformed and rejected deliveries (not a
	// message, not a POST, cut at the body cap, unreadable) from the
	// catch-all routes too.
	SkipMalformed bool
	// CAFile names a PEM file of certificates trusted for https targets
	// besides the system's (an app behind a private or self-signed CA).
	CAFile string
	// Insecure sends to https targets without checking their
	// certificates; every attempt says so.
	Insecure bool
}
