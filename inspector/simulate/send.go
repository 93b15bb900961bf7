package simulate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hookscope/hookscope/internal/networds"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/internal/redact"
)

// DefaultSendTimeout is how long Send waits for each answer unless told
// otherwise: the service's own webhook time-out (spec 8).
const DefaultSendTimeout = 10 * time.Second

// Outgoing is one message to post and the secret it is signed with (sent
// unsigned when empty).
type Outgoing struct {
	Message Message
	Secret  []byte
}

// SignedWith pairs each message with secret.
func SignedWith(secret []byte, msgs ...Message) []Outgoing {
	out := make([]Outgoing, len(msgs))
	for i, m := range msgs {
		out[i] = Outgoing{Message: m, Secret: secret}
	}
	return out
}

// Answer is what posting one message got.
type Answer struct {
	// N is the message's place in the set, from 1; Of the set's size.
	N, Of   int
	Message Message
	// Bytes is the body's length.
	Bytes int
	// Status is the answer's status code; 0 when there was no answer.
	Status int
	// Latency runs from sending the request to reading the answer's
	// headers.
	Latency time.Duration
	// Err says why there was no answer (with the URL's credentials
	// hidden); nil when there was one.
	Err error
}

// OK reports whether the message was answered 2xx: the only answer the
// service counts as delivered.
func (a Answer) OK() bool { return a.Err == nil && a.Status >= 200 && a.Status <= 299 }

// SendOptions tune Send.
type SendOptions struct {
	// Client posts the messages; nil means one that waits Timeout for
	// each answer and follows no redirect (the service follows none: a
	// 3xx is an answer to report).
	Client *http.Client
	// Timeout bounds each request of the default client; 0 means
	// DefaultSendTimeout.
	Timeout time.Duration
	// OnAnswer, when set, is called with each answer as it comes, in
	// order; a post that could not connect at all is said once, in
	// Report.Unreachable, instead.
	OnAnswer func(Answer)
}

// Report is what Send did.
type Report struct {
	// URL is where the messages went, with its credentials hidden.
	URL string
	// Answers holds one answer per message posted, in order (the one
	// that met Unreachable included).
	Answers []Answer
	// Unsent counts the messages not posted: a connection could not be
	// made (Unreachable says why), or the context ended.
	Unsent int
	// Unreachable says in plain words why a connection could not be made
	// ("nothing is listening on 127.0.0.1:8787"); nil when every post
	// connected. The messages after the one that met it are not posted:
	// each would meet the same.
	Unreachable error
}

// Counts returns how many messages were answered 2xx, answered otherwise,
// and got no answer.
func (r Report) Counts() (ok, notOK, failed int) {
	for _, a := range r.Answers {
		switch {
		case a.Err != nil:
			failed++
		case a.OK():
			ok++
		default:
			notOK++
		}
	}
	return ok, notOK, failed
}

// Err is nil when every message was posted and answered 2xx; otherwise it
// says in one line what went wrong ("3 of 20 answers were not 2xx",
// "nothing is listening on 127.0.0.1:8787; no message was sent").
func (r Report) Err() error {
	ok, notOK, failed := r.Counts()
	total := len(r.Answers) + r.Unsent
	switch {
	case r.Unreachable != nil && ok+notOK == 0:
		return fmt.Errorf("%w; no message was sent", r.Unreachable)
	case r.Unreachable != nil:
		return fmt.Errorf("%w; %d of %s were sent before that", r.Unreachable, ok+notOK, plural.S(total, "message"))
	case failed > 0:
		return fmt.Errorf("%d of %s got no answer", failed, plural.S(total, "message"))
	case r.Unsent > 0:
		return fmt.Errorf("stopped after %d of %s", len(r.Answers), plural.S(total, "message"))
	case notOK > 0:
		return fmt.Errorf("%d of %s not 2xx", notOK, plural.Count(len(r.Answers), "answer was", "answers were"))
	}
	return nil
}

// Send builds, signs and posts each message to target as the service
// would (the headers of spec 4.3, X-Service-Signature over the exact body),
// one after the other, and reports each answer. It stops early when ctx
// ends, or when a connection cannot be made at all (refused, a host that
// does not resolve): Report.Unreachable then says why, once, instead of
// one failure per message. Every face that sends simulated deliveries
// (send, the window's Send test deliveries, the sandbox's webhooks) goes
// through it.
func Send(ctx context.Context, target string, out []Outgoing, o SendOptions) Report {
	client := o.Client
	if client == nil {
		client = &http.Client{
			Timeout:       cmp.Or(o.Timeout, DefaultSendTimeout),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	rep := Report{URL: redact.URL(target)}
	for i, og := range out {
		if ctx.Err() != nil {
			rep.Unsent = len(out) - i
			return rep
		}
		a := post(ctx, client, target, og)
		a.N, a.Of = i+1, len(out)
		rep.Answers = append(rep.Answers, a)
		if why := unreachable(a.Err, target); why != nil && ctx.Err() == nil {
			rep.Unreachable = why
			rep.Unsent = len(out) - i - 1
			return rep
		}
		if o.OnAnswer != nil {
			o.OnAnswer(a)
		}
	}
	return rep
}

// post sends one message and measures the answer.
func post(ctx context.Context, client *http.Client, target string, og Outgoing) Answer {
	body := og.Message.Body()
	a := Answer{Message: og.Message, Bytes: len(body)}
	req, err := NewRequest(ctx, target, body, og.Secret)
	if err != nil {
		a.Err = errors.New(redact.Error(err))
		return a
	}
	start := time.Now()
	resp, err := client.Do(req)
	a.Latency = time.Since(start)
	if err != nil {
		a.Err = redactedError{err}
		return a
	}
	// Drain a little so the connection can be reused; the body is not shown.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	a.Status = resp.StatusCode
	return a
}

// redactedError is a client error whose text leaves out the URL (the
// Report names it, redacted); errors.Is and errors.As still see the cause.
type redactedError struct{ err error }

func (e redactedError) Error() string {
	var ue *url.Error
	if errors.As(e.err, &ue) {
		return redact.Error(ue.Err)
	}
	return redact.Error(e.err)
}

func (e redactedError) Unwrap() error { return e.err }

// unreachable says in plain words why no connection could be made to
// target, or returns nil when err is not such a failure (an answer, a
// time-out, a connection cut mid-answer).
func unreachable(err error, target string) error {
	if err == nil {
		return nil
	}
	host := target
	if u, perr := url.Parse(target); perr == nil && u.Host != "" {
		host = u.Host
	}
	if w := networds.Explain(err, host); w.Kind == networds.Refused || w.Kind == networds.Unreachable {
		return errors.New(w.What)
	}
	return nil
}
