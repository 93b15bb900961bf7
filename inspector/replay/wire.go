package replay

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// Sender, Pool and the types they use are inspector/forward's client until
// forward sends through net/http's http.Transport (issue 24, item 2):
// replay itself sends through internal/rawsend (a byte-exact replay) and
// net/http (chaos runs, the consumer check). Delete this file, pool.go and
// pool_test.go once forward no longer uses them.

// Response is what the target answered.
type Response struct {
	Status     int
	StatusText string
	// Headers are sorted by name: net/http's parser keeps no order.
	Headers   []inspector.Header
	Body      []byte
	Truncated bool
}

// Sender writes requests byte for byte. The zero value is ready to use.
type Sender struct {
	// Timeout bounds one exchange; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxResponse caps the kept response body; zero means DefaultMaxResponse.
	MaxResponse int64
	// TLSConfig is used for https targets; nil means the system roots.
	TLSConfig *tls.Config
	// Pool, when set, keeps connections alive between exchanges (a
	// forwarder sending hundreds of requests a second to one app); nil
	// dials a connection per exchange, as a one-off replay wants.
	Pool *Pool
}

// Send writes req to target and reads the answer. The latency runs from
// the first byte written to the end of the response headers: the moment a
// sender like the service learns the answer.
//
// With a Pool the connection is taken from it and given back when the
// exchange left it reusable. A request that fails on a reused connection
// before a single byte of answer arrived (the app closed it while idle) is
// sent once more on a new connection.
func (s *Sender) Send(ctx context.Context, target *url.URL, req Request) (*Response, time.Duration, error) {
	wire, err := req.Wire(target)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	addr := target.Host
	if target.Port() == "" {
		if target.Scheme == "https" {
			addr = net.JoinHostPort(target.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(target.Hostname(), "80")
		}
	}
	key := target.Scheme + "://" + addr
	for retried := false; ; retried = true {
		c, reused, err := s.conn(ctx, target, addr, key, retried)
		if err != nil {
			return nil, 0, err
		}
		resp, latency, keep, err := s.exchange(ctx, c, wire, req.Method)
		// Not after a timeout: the connection's deadline can fire an
		// instant before ctx reports it, and a retry would then fail to
		// connect at all ("cannot reach") instead of saying "no answer".
		var xe *ExchangeError
		if err != nil && reused && !retried && c.read == 0 && ctx.Err() == nil && !(errors.As(err, &xe) && xe.TimedOut) {
			c.Close()
			continue
		}
		if keep && s.Pool != nil {
			s.Pool.put(key, c)
		} else {
			c.Close()
		}
		return resp, latency, err
	}
}

func (s *Sender) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultTimeout
	}
	return s.Timeout
}

// conn returns a connection to addr: an idle one from the pool unless
// fresh is set, else a new one (TLS for https).
func (s *Sender) conn(ctx context.Context, target *url.URL, addr, key string, fresh bool) (*poolConn, bool, error) {
	if s.Pool != nil && !fresh {
		if c := s.Pool.get(key); c != nil {
			return c, true, nil
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, &ExchangeError{Stage: StageConnect, Addr: addr, Err: err}
	}
	if target.Scheme == "https" {
		cfg := &tls.Config{}
		if s.TLSConfig != nil {
			cfg = s.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = target.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, false, &ExchangeError{Stage: StageTLS, Addr: addr, Err: err}
		}
		conn = tc
	}
	c := &poolConn{Conn: conn}
	c.br = bufio.NewReader(c)
	return c, false, nil
}

// exchange writes one request on c and reads its answer. keep reports
// whether c can carry another request: the answer was read to its end,
// neither side asked to close, and the deadline never fired.
func (s *Sender) exchange(ctx context.Context, c *poolConn, wire []byte, method string) (*Response, time.Duration, bool, error) {
	c.read = 0
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	start := time.Now()
	if _, err := c.Write(wire); err != nil {
		return nil, time.Since(start), false, &ExchangeError{Stage: StageSend, Err: s.ctxErr(ctx, err), TimedOut: timedOut(ctx, err)}
	}
	var hr *http.Response
	var err error
	// Interim answers (100 Continue to an Expect header carried over from
	// the capture, 103 Early Hints) come before the real one.
	for {
		hr, err = http.ReadResponse(c.br, &http.Request{Method: method})
		if err != nil || hr.StatusCode >= 200 || hr.StatusCode < 100 || hr.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		hr.Body.Close()
	}
	latency := time.Since(start)
	if err != nil {
		return nil, latency, false, &ExchangeError{Stage: StageRead, Err: s.ctxErr(ctx, err), TimedOut: timedOut(ctx, err)}
	}
	defer hr.Body.Close()
	limit := s.MaxResponse
	if limit <= 0 {
		limit = DefaultMaxResponse
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, limit+1))
	resp := &Response{Status: hr.StatusCode, StatusText: http.StatusText(hr.StatusCode)}
	if i := strings.IndexByte(hr.Status, ' '); i >= 0 {
		resp.StatusText = hr.Status[i+1:]
	}
	if int64(len(body)) > limit {
		body, resp.Truncated = body[:limit], true
	}
	resp.Body = body
	names := make([]string, 0, len(hr.Header))
	for k := range hr.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range hr.Header[k] {
			resp.Headers = append(resp.Headers, inspector.Header{Name: k, Value: v})
		}
	}
	if err != nil {
		// The status arrived; a body cut short is worth keeping with a note.
		return resp, latency, false, &ExchangeError{Stage: StageBody, Err: s.ctxErr(ctx, err), TimedOut: timedOut(ctx, err)}
	}
	keep := !resp.Truncated && !hr.Close && hr.StatusCode != http.StatusSwitchingProtocols
	if keep && stop() {
		// The deadline cannot fire any more: clear it for the next exchange.
		c.SetDeadline(time.Time{})
		return resp, latency, true, nil
	}
	return resp, latency, false, nil
}

// timedOut reports an exchange whose budget ran out. The connection's
// deadline is the context's, and on a busy machine it can fire before the
// context's own timer has marked the context done.
func timedOut(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || (ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded))
}

// Stage says how far an exchange got before it failed.
type Stage string

// The stages of an exchange.
const (
	StageConnect Stage = "connect" // no connection: refused, unreachable, DNS
	StageTLS     Stage = "tls"     // the TLS handshake failed
	StageSend    Stage = "send"    // the request could not be written
	StageRead    Stage = "read"    // no answer (status line and headers) arrived
	StageBody    Stage = "body"    // the status arrived, the body was cut short
)

// ExchangeError is a failed exchange: where it failed and why. Its text is
// the one replay has always shown; callers that explain failures to a
// person (forwarding) read Stage, TimedOut and the wrapped error.
type ExchangeError struct {
	Stage Stage
	// Addr is the host:port dialled (connect and TLS stages).
	Addr string
	// TimedOut is set when the exchange's time budget ran out.
	TimedOut bool
	Err      error
}

// Error says what failed, in replay's words.
func (e *ExchangeError) Error() string {
	switch e.Stage {
	case StageConnect:
		return fmt.Sprintf("connect to %s: %v", e.Addr, e.Err)
	case StageTLS:
		return fmt.Sprintf("TLS handshake with %s: %v", e.Addr, e.Err)
	case StageSend:
		return fmt.Sprintf("send request: %v", e.Err)
	case StageRead:
		return fmt.Sprintf("read response: %v", e.Err)
	}
	return fmt.Sprintf("read response body: %v", e.Err)
}

// Unwrap returns the underlying error.
func (e *ExchangeError) Unwrap() error { return e.Err }

func (s *Sender) ctxErr(ctx context.Context, err error) error {
	if timedOut(ctx, err) {
		return fmt.Errorf("no answer within %s", s.timeout())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
