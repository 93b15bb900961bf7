package replay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/networds"
	"github.com/hookscope/hookscope/internal/rawsend"
)

// Replay has two senders. A replay of one delivery (raw, re-signed,
// edited) is byte-exact: internal/rawsend writes the captured headers in
// their order and case. Chaos runs and the consumer check send through
// net/http: they test what a consumer does with many deliveries (repeats,
// order, signatures), not how it reads a header block, so Go's canonical,
// sorted header names do not matter there and its kept-alive connections
// do (hundreds of sends to an https target). Both send the body and the
// header values as built, and keep the answer the same way.

// answer is what a target answered, from either sender.
type answer struct {
	status     int
	statusText string
	headers    []inspector.Header
	body       []byte
	truncated  bool
	latency    time.Duration
}

func (r *Replayer) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

func (r *Replayer) maxResponse() int64 {
	if r.MaxResponse <= 0 {
		return DefaultMaxResponse
	}
	return r.MaxResponse
}

// sendExact writes req to target byte for byte.
func (r *Replayer) sendExact(ctx context.Context, target *url.URL, req Request) (*answer, error) {
	wire, err := req.Wire(target)
	if err != nil {
		return nil, err
	}
	a, err := rawsend.Send(ctx, target, wire, rawsend.Options{Timeout: r.timeout(), MaxBody: r.maxResponse(), TLSConfig: r.TLSConfig})
	if a == nil {
		return nil, err
	}
	return &answer{status: a.Status, statusText: a.StatusText, headers: sortedHeaders(a.Header),
		body: a.Body, truncated: a.Truncated, latency: a.Latency}, err
}

// httpClient is the net/http client of one chaos run or consumer check:
// HTTP/1.1, connections kept alive for the run (close them with
// CloseIdleConnections), no proxy (a replay goes where it is told, as the
// byte-exact one does), no redirects followed (the service follows none,
// and the check judges them), no Accept-Encoding added.
func (r *Replayer) httpClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     r.TLSConfig,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// sendHTTP sends req to target through client, allowing timeout for the
// whole exchange. The latency runs from when a connection was had to the
// end of the answer's headers, as the byte-exact sender's does.
func sendHTTP(ctx context.Context, client *http.Client, target *url.URL, req Request, timeout time.Duration, maxBody int64) (*answer, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, stage := networds.Traced(ctx)
	var mu sync.Mutex
	var start time.Time
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		mu.Lock()
		start = time.Now()
		mu.Unlock()
	}})
	hreq, err := http.NewRequestWithContext(ctx, req.method(), target.String(), bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	for _, h := range req.Headers {
		if !strings.EqualFold(h.Name, "Content-Length") { // net/http writes it from the body
			hreq.Header.Add(h.Name, h.Value)
		}
	}
	if _, ok := hreq.Header["User-Agent"]; !ok {
		hreq.Header["User-Agent"] = []string{""} // no Go-http-client of net/http's own
	}
	resp, err := client.Do(hreq)
	mu.Lock()
	latency := time.Since(start)
	mu.Unlock()
	if err != nil {
		// *url.Error's text quotes the whole URL, credentials included;
		// only its cause goes on.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &networds.Error{Stage: stage(), Budget: timeout, Err: err}
	}
	defer resp.Body.Close()
	a := &answer{status: resp.StatusCode, statusText: http.StatusText(resp.StatusCode), headers: sortedHeaders(resp.Header), latency: latency}
	if _, text, ok := strings.Cut(resp.Status, " "); ok {
		a.statusText = text
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if int64(len(body)) > maxBody {
		body, a.truncated = body[:maxBody], true
	}
	a.body = body
	if err != nil {
		return a, &networds.Error{Stage: networds.Body, Budget: timeout, Err: err}
	}
	return a, nil
}

// sortedHeaders lists h sorted by name: net/http's parser keeps no order.
func sortedHeaders(h http.Header) []inspector.Header {
	var out []inspector.Header
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			out = append(out, inspector.Header{Name: k, Value: v})
		}
	}
	return out
}

// failure says why a send got no whole answer: a network failure in plain
// words (internal/networds), anything else (a header HTTP does not allow)
// as it is.
func failure(err error, target *url.URL) string {
	var ne *networds.Error
	if errors.As(err, &ne) {
		return networds.Explain(err, target.Host).String()
	}
	return err.Error()
}
