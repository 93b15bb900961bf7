package forward

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/networds"
)

// CutHeader is set on a pass-through answer whose body was longer than
// RelayMaxResponse: the service got the app's status and headers and the
// body cut there, and the attempt says so too.
const CutHeader = "X-Hookscope-Answer-Cut"

// LoadCA reads a PEM file of certificates trusted for https forward
// targets and returns the system's roots with them added; a file without
// a certificate is an error that says what is expected.
func LoadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("forward CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("forward CA file %s holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)", path)
	}
	return pool, nil
}

// newClient is the forwarder's HTTP client: a plain http.Transport (what
// the app sees is what net/http sends), no redirects followed (a 3xx is
// the app's answer), nothing added (no gzip negotiation), TLS with the
// system's roots plus cfg.CAFile, or none checked with cfg.Insecure.
func newClient(cfg Config) (*http.Client, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.Insecure} //nolint:gosec // the user asked for it, and every attempt says so
	if cfg.CAFile != "" {
		pool, err := LoadCA(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		tlsCfg.RootCAs = pool
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: cfg.Policy.timeout(), KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: cfg.Policy.timeout(),
		DisableCompression:  true,
		// Pass-through relays as many requests at once as the service
		// sends: keep as many idle connections as a reverse proxy would.
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// signing says what happens to a delivery's signature on its way to the
// app.
type signing struct {
	// secret re-signs the body (nil: the captured header goes as it is).
	secret []byte
	// strip removes the captured signature (re-signing was asked for and
	// the delivery's own signature did not verify).
	strip bool
}

// request is what goes to an app for d: the captured headers with their
// values and name spelling (net/http orders them), the body as stored,
// Host set for the target, hop-by-hop and framing headers left to
// net/http, the added headers replacing captured ones of the same name,
// the signature as sign says, and this process's loop mark appended to
// inspector.ForwardedHeader.
func (f *Forwarder) request(ctx context.Context, rt Route, d *inspector.Delivery, sign signing) (*http.Request, error) {
	body := d.Body
	req, err := http.NewRequestWithContext(ctx, cmp.Or(d.Method, http.MethodPost), rt.Target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{}
	hop := export.ConnectionTokens(d.Headers)
	var marks []string
	for _, h := range d.Headers {
		canon := http.CanonicalHeaderKey(h.Name)
		switch {
		case canon == "Host", canon == "Content-Length", export.IsHopByHop(h.Name), hop[strings.ToLower(h.Name)]:
			continue
		case canon == inspector.ForwardedHeader:
			marks = append(marks, h.Value)
			continue
		case canon == inspector.SignatureHeader && (sign.secret != nil || sign.strip):
			continue
		case slices.ContainsFunc(f.cfg.Headers, func(a inspector.Header) bool { return strings.EqualFold(a.Name, h.Name) }):
			continue
		case canon == "User-Agent":
			// net/http adds its own unless this key is canonical.
			h.Name = canon
		}
		req.Header[h.Name] = append(req.Header[h.Name], h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // none added
	}
	for _, a := range f.cfg.Headers {
		req.Header[a.Name] = append(req.Header[a.Name], a.Value)
	}
	if sign.secret != nil {
		req.Header[inspector.SignatureHeader] = []string{inspector.Sign(sign.secret, body)}
	}
	req.Header[inspector.ForwardedHeader] = []string{strings.Join(append(marks, f.instance), ", ")}
	return req, nil
}

// answer is an app's answer as an attempt keeps it.
type answer struct {
	status     int
	statusText string
	headers    http.Header
	// body is the answer's first keep bytes; total how many there were.
	body  []byte
	total int64
	cut   bool
}

// exchange is what one send found out about the connection.
type exchange struct {
	connected, reused, answered bool
	tlsErr                      error
}

// send sends req and reads the app's answer, keeping its first keep
// bytes: the whole answer is read, so one cut short is an error (the
// service must not get it as complete). A request that fails on a
// kept-alive connection before any answer is sent once more on a new
// one: the app closed that connection while it was idle.
func (f *Forwarder) send(req *http.Request, keep int64) (*answer, exchange, error) {
	for try := 0; ; try++ {
		// The trace's hooks run on the transport's goroutines, which may
		// still be running when Do returns (a time-out): ex is read under
		// mu, as a copy.
		var (
			mu sync.Mutex
			tr exchange
		)
		set := func(fn func(*exchange)) { mu.Lock(); fn(&tr); mu.Unlock() }
		trace := &httptrace.ClientTrace{
			GotConn:              func(i httptrace.GotConnInfo) { set(func(e *exchange) { e.connected, e.reused = true, i.Reused }) },
			TLSHandshakeDone:     func(_ tls.ConnectionState, err error) { set(func(e *exchange) { e.tlsErr = err }) },
			GotFirstResponseByte: func() { set(func(e *exchange) { e.answered = true }) },
		}
		r := req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := f.client.Do(r)
		mu.Lock()
		ex := tr
		mu.Unlock()
		if err != nil {
			if try == 0 && ex.reused && !ex.answered && req.Context().Err() == nil && req.GetBody != nil {
				f.client.CloseIdleConnections()
				if req.Body, err = req.GetBody(); err == nil {
					continue
				}
			}
			return nil, ex, err
		}
		a := &answer{status: resp.StatusCode, statusText: strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode))), headers: resp.Header}
		var buf bytes.Buffer
		n, err := io.Copy(&limitedBuffer{b: &buf, left: keep}, resp.Body)
		resp.Body.Close()
		a.body, a.total, a.cut = buf.Bytes(), n, n > keep
		if err != nil {
			return a, ex, &cutError{read: n, declared: resp.ContentLength, err: err}
		}
		return a, ex, nil
	}
}

// limitedBuffer keeps the first left bytes written and counts the rest.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int64
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.left > 0 {
		n := min(int64(len(p)), l.left)
		l.b.Write(p[:n])
		l.left -= n
	}
	return len(p), nil
}

// cutError is an answer that ended before its end: the connection closed
// (or failed) mid-body.
type cutError struct {
	read, declared int64
	err            error
}

func (e *cutError) Error() string {
	if e.declared >= 0 {
		return fmt.Sprintf("the answer was cut short after %d of the %d bytes it announced: %v", e.read, e.declared, e.err)
	}
	return fmt.Sprintf("the answer was cut short after %d bytes: %v", e.read, e.err)
}

func (e *cutError) Unwrap() error { return e.err }

// classify turns a send's result into an outcome and words a person
// understands. host is the target's host:port as the user wrote it.
func classify(a *answer, ex exchange, err error, host string, budget time.Duration) (Outcome, string) {
	var cut *cutError
	switch {
	case errors.As(err, &cut) && errors.Is(err, context.DeadlineExceeded):
		return Timeout, fmt.Sprintf("the app at %s answered %d but did not finish its answer within %s", host, a.status, budget)
	case errors.As(err, &cut):
		return Dropped, fmt.Sprintf("the app at %s answered %d, then its answer was cut short after %d bytes%s (the connection closed)", host, a.status, cut.read, announced(cut.declared))
	case err == nil && a.status >= 200 && a.status < 300:
		return Delivered, ""
	case err == nil:
		msg := fmt.Sprintf("the app answered %d %s", a.status, a.statusText)
		if s := bodyStart(a.body); s != "" {
			msg += ": " + s
		}
		return Rejected, msg
	}
	// A network failure in the words every face uses (internal/networds).
	stage := networds.Connect
	if ex.connected {
		stage = networds.Answer
	}
	w := networds.Explain(&networds.Error{Stage: stage, Budget: budget, Err: cmpErr(ex.tlsErr, err)}, host)
	if ex.tlsErr != nil {
		w.Fix = "an app with a private or self-signed certificate: --forward-ca FILE (the window: Trust CA file…), or --forward-insecure"
	}
	return outcomeOf(w.Kind), w.String()
}

// outcomeOf is an attempt's outcome for a kind of network failure (a
// cancelled one is Hookscope stopping: the caller says so).
func outcomeOf(k networds.Kind) Outcome {
	switch k {
	case networds.Refused:
		return Refused
	case networds.Timeout:
		return Timeout
	case networds.Dropped:
		return Dropped
	case networds.Cancelled:
		return Stopped
	}
	return Unreachable
}

func announced(n int64) string {
	if n < 0 {
		return ""
	}
	return fmt.Sprintf(" of the %d it announced", n)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// inspectDelivery reads what routing needs: the message's event types, or
// that the delivery is malformed (not a POST, cut, unreadable, not a
// webhook message), which sends it to catch-all routes only.
func inspectDelivery(d *inspector.Delivery) (types []string, malformed bool) {
	if d.Rejected || d.Truncated || d.ReadError != "" {
		return nil, true
	}
	m, err := inspector.DecodeMessage(d.Body)
	if err != nil {
		return nil, true
	}
	for _, e := range m.Events {
		types = append(types, e.Type)
	}
	return types, false
}

// headerList turns an answer's headers into a list, sorted by name.
func headerList(h http.Header) []inspector.Header {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []inspector.Header
	for _, k := range names {
		for _, v := range h[k] {
			out = append(out, inspector.Header{Name: k, Value: v})
		}
	}
	return out
}
