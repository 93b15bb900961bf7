// Package rawsend writes one HTTP/1.1 request byte for byte and reads its
// answer. net/http's client writes headers from a map, canonical and
// sorted; a byte-exact replay must put a captured header block on the wire
// in its order and case, so the request is written by hand over a plain
// (or TLS) connection and only the answer is parsed, by net/http.
//
// Everything else Hookscope sends goes through net/http.
package rawsend

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
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/networds"
)

// Options bound one exchange.
type Options struct {
	// Timeout bounds the exchange from dialling to the end of the answer;
	// zero leaves it to ctx.
	Timeout time.Duration
	// MaxBody caps the answer's body kept; the rest is not read. Zero
	// keeps none of it.
	MaxBody int64
	// TLSConfig is used for https targets; nil means the system roots.
	TLSConfig *tls.Config
}

// Answer is what the target answered.
type Answer struct {
	Status int
	// StatusText is the reason phrase as the target wrote it.
	StatusText string
	Header     http.Header
	Body       []byte
	// Truncated is set when the body was longer than MaxBody.
	Truncated bool
	// Latency runs from the first byte written to the end of the answer's
	// headers: when a sender like the service learns the answer.
	Latency time.Duration
}

// Send dials target (TLS for https), writes wire, which must be one whole
// request, and reads one answer, skipping interim ones (100 Continue, 103).
// A failure is a *networds.Error that says how far the exchange got; an
// Answer comes with an error when its body broke off. Each exchange has a
// connection of its own: a replay is sent by hand, one at a time, and a
// dial costs far less than a person notices.
func Send(ctx context.Context, target *url.URL, wire []byte, o Options) (*Answer, error) {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	fail := func(stage networds.Stage, err error) error {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return &networds.Error{Stage: stage, Budget: o.Timeout, Err: err}
	}
	addr := target.Host
	if target.Port() == "" {
		port := "80"
		if target.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(target.Hostname(), port)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fail(networds.Connect, err)
	}
	defer c.Close()
	if target.Scheme == "https" {
		cfg := &tls.Config{}
		if o.TLSConfig != nil {
			cfg = o.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = target.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fail(networds.Connect, err)
		}
		c = tc
	}
	// The connection's deadline is the context's, and ending the context
	// ends any read or write under way.
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	start := time.Now()
	if _, err := c.Write(wire); err != nil {
		return nil, fail(networds.Answer, err)
	}
	method, _, _ := strings.Cut(string(wire[:min(len(wire), 32)]), " ")
	br := bufio.NewReader(c)
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, &http.Request{Method: method})
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close()
	}
	latency := time.Since(start)
	if err != nil {
		return nil, fail(networds.Answer, err)
	}
	defer resp.Body.Close()
	a := &Answer{Status: resp.StatusCode, StatusText: http.StatusText(resp.StatusCode), Header: resp.Header, Latency: latency}
	if _, text, ok := strings.Cut(resp.Status, " "); ok {
		a.StatusText = text
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBody+1))
	if int64(len(body)) > o.MaxBody {
		body, a.Truncated = body[:o.MaxBody], true
	}
	a.Body = body
	if err != nil {
		return a, fail(networds.Body, err)
	}
	return a, nil
}
