// Package networds says in plain words why a request to an HTTP endpoint
// got no whole answer, and what to do about it: one wording for replay,
// the consumer check, forwarding, OAuth and the window, so that none of
// them matches error strings of its own.
//
//	w := networds.Explain(err, "127.0.0.1:3000")
//	// w.Kind == networds.Refused
//	// w.String() == "nothing is listening on 127.0.0.1:3000 (connection refused); start it, or check the port in the URL"
//
// Explain reads the error's types (net, DNS, TLS, x509, context), not its
// text. How far the exchange got decides between "could not connect" and
// "connected, then no answer"; a caller that knows it says so by wrapping
// the error in an *Error (Traced finds it out for net/http clients).
package networds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptrace"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Kind is what happened, for code that acts on it (forwarding holds a
// route's queue while its app is Refused or Unreachable, and counts
// Timeout and Dropped against the delivery).
type Kind string

// The kinds.
const (
	// Refused: nothing listens on the target's port.
	Refused Kind = "refused"
	// Unreachable: no connection otherwise (DNS, no route, a connect
	// timeout, TLS): the request was not sent.
	Unreachable Kind = "unreachable"
	// Timeout: connected, and no whole answer within the time allowed.
	Timeout Kind = "timeout"
	// Dropped: connected, then the connection ended before a whole answer.
	Dropped Kind = "dropped"
	// Cancelled: the caller stopped the exchange.
	Cancelled Kind = "cancelled"
)

// Stage is how far an exchange got before it failed.
type Stage uint8

// The stages.
const (
	// Unknown lets Explain work the stage out from the error.
	Unknown Stage = iota
	// Connect: dialling or the TLS handshake; nothing was sent.
	Connect
	// Answer: connected, the request sent or being sent, no answer yet.
	Answer
	// Body: the status and headers arrived; the body broke off.
	Body
)

// Error is a client error with how far its exchange got and the time it
// was allowed, for Explain. Its text is the wrapped error's.
type Error struct {
	Stage Stage
	// Budget is the time the exchange was allowed; zero when not known.
	Budget time.Duration
	Err    error
}

// Error returns the wrapped error's text.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Words is a failed exchange said for a developer: what happened and what
// to do.
type Words struct {
	Kind Kind `json:"kind"`
	// What says what happened, naming the host and, in parentheses, the
	// system's own reason: "nothing is listening on 127.0.0.1:3000
	// (connection refused)".
	What string `json:"what"`
	// Fix says what to do; empty when there is nothing to do (cancelled).
	Fix string `json:"fix,omitempty"`
}

// String is What and Fix in one line.
func (w Words) String() string {
	if w.Fix == "" {
		return w.What
	}
	return w.What + "; " + w.Fix
}

// Explain says why err, from a request to host (host:port as the user
// wrote it), got no whole answer. err must not be nil.
func Explain(err error, host string) Words {
	if host == "" {
		host = "the server"
	}
	stage, budget := Unknown, time.Duration(0)
	var xe *Error
	if errors.As(err, &xe) {
		stage, budget = xe.Stage, xe.Budget
	}
	within := "in time"
	if budget > 0 {
		within = "within " + budget.String()
	}
	var (
		dnsErr   *net.DNSError
		opErr    *net.OpError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	tlsFailed := errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		// net/http's own error for the record header above, which it does
		// not wrap.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
	if stage == Unknown && (errors.As(err, &dnsErr) || tlsFailed || errors.As(err, &opErr) && opErr.Op == "dial") {
		stage = Connect
	}
	cause := rootCause(err)
	switch {
	case errors.Is(err, context.Canceled):
		return Words{Cancelled, fmt.Sprintf("the request to %s was cancelled before a whole answer arrived", host), ""}
	case errors.Is(err, syscall.ECONNREFUSED):
		return Words{Refused, fmt.Sprintf("nothing is listening on %s (connection refused)", host),
			"start it, or check the port in the URL"}
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return Words{Unreachable, fmt.Sprintf("the host name %s does not resolve (%s)", dnsErr.Name, dnsErr.Err),
			"check the host name in the URL"}
	case errors.As(err, &dnsErr):
		return Words{Unreachable, fmt.Sprintf("the host name %s could not be looked up (%s)", dnsErr.Name, dnsErr.Err),
			"check the network connection and its DNS settings"}
	case errors.As(err, &unknown):
		return Words{Unreachable, fmt.Sprintf("the certificate of %s is not signed by an authority this machine trusts (%s)", host, cause),
			"trust the authority that signed it (where the command offers a CA file, give it), or use http:// for an app on this machine"}
	case errors.As(err, &hostname):
		return Words{Unreachable, fmt.Sprintf("the certificate of %s is for another name (%s)", host, cause),
			"use the host name the certificate is for"}
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return Words{Unreachable, fmt.Sprintf("the certificate of %s has expired or is not valid yet (%s)", host, cause),
			"renew the certificate, or check this machine's clock"}
	case errors.As(err, &record) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return Words{Unreachable, fmt.Sprintf("%s answered in plain HTTP, not TLS", host),
			"use http:// instead of https:// in the URL"}
	case tlsFailed:
		return Words{Unreachable, fmt.Sprintf("the TLS handshake with %s failed (%s)", host, cause),
			"check that it serves HTTPS on this port"}
	case timedOut(err) && stage == Connect:
		return Words{Unreachable, fmt.Sprintf("could not connect to %s %s", host, within),
			"check the host and port (a firewall may be dropping the connection)"}
	case timedOut(err) && stage == Answer:
		return Words{Timeout, fmt.Sprintf("%s accepted the connection but did not answer %s", host, within),
			"it is slow or stuck on this request: look at its log (a webhook consumer should answer first, then do the work)"}
	case timedOut(err) && stage == Body:
		return Words{Timeout, fmt.Sprintf("the answer from %s began but did not finish %s", host, within),
			"it is slow to write its answer: look at its log"}
	case timedOut(err):
		return Words{Timeout, fmt.Sprintf("no answer from %s %s", host, within),
			"check that it is running and reachable, or allow more time"}
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return Words{Unreachable, fmt.Sprintf("%s cannot be reached (%s)", host, cause),
			"check the address and the network (VPN, firewall)"}
	case stage == Connect:
		return Words{Unreachable, fmt.Sprintf("cannot connect to %s (%s)", host, cause),
			"check the host and port in the URL"}
	case stage == Body:
		return Words{Dropped, fmt.Sprintf("%s closed the connection in the middle of its answer (%s)", host, cause),
			"look at its log: it may have crashed while answering"}
	case stage == Answer || dropped(err):
		return Words{Dropped, fmt.Sprintf("%s closed the connection without answering (%s)", host, cause),
			"look at its log: it may have crashed on this request"}
	}
	return Words{Unreachable, fmt.Sprintf("the request to %s failed (%s)", host, cause),
		"check the URL and the network"}
}

// timedOut reports an error that says time ran out.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// dropped reports an error that says the peer ended the connection.
func dropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// rootCause is the innermost error's text: "connection refused" rather
// than the dial's whole chain.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// Traced returns ctx with a net/http client trace, and stage, which says
// how far an exchange under ctx got: Connect until a connection was had,
// then Answer. Wrap a client error in an *Error with it:
//
//	ctx, stage := networds.Traced(ctx)
//	resp, err := client.Do(req.WithContext(ctx))
//	if err != nil {
//		err = &networds.Error{Stage: stage(), Budget: timeout, Err: err}
//	}
func Traced(ctx context.Context) (context.Context, func() Stage) {
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	return ctx, func() Stage {
		if connected.Load() {
			return Answer
		}
		return Connect
	}
}
