package replay

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// DefaultMaxResponse caps the response body kept with a replay: enough to
// read any error page a consumer returns, small enough to store thousands.
const DefaultMaxResponse = 64 << 10

// DefaultTimeout bounds one replay from dialling to the end of the response.
const DefaultTimeout = 30 * time.Second

// Request is one request in wire order. Host is not among Headers: the
// sender puts the target's host where the original Host header stood (or
// first), under the original name's spelling.
type Request struct {
	// Method is the request method; empty means POST.
	Method  string
	Headers []inspector.Header
	// HostIndex is where Host goes among Headers; -1 puts it first.
	HostIndex int
	// HostName spells the Host header; empty means "Host".
	HostName string
	Body     []byte
}

// ParseTarget checks a target URL: http or https with a host.
func ParseTarget(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("no target URL given")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("target URL %q: %w", RedactURL(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target URL %q: the scheme must be http or https", RedactURL(raw))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("target URL %q has no host", RedactURL(raw))
	}
	return u, nil
}

// Wire renders the request exactly as a byte-exact replay puts it on the
// wire.
func (r Request) Wire(target *url.URL) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	uri := target.RequestURI()
	if uri == "" {
		uri = "/"
	}
	method := r.method()
	hostName := r.HostName
	if hostName == "" || !strings.EqualFold(hostName, "Host") {
		hostName = "Host"
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, uri)
	host := func() { fmt.Fprintf(&b, "%s: %s\r\n", hostName, target.Host) }
	if r.HostIndex < 0 {
		host()
	}
	for i, h := range r.Headers {
		if i == r.HostIndex {
			host()
		}
		b.WriteString(h.Name)
		b.WriteString(": ")
		b.WriteString(h.Value)
		b.WriteString("\r\n")
	}
	if r.HostIndex >= len(r.Headers) {
		host()
	}
	b.WriteString("\r\n")
	b.Write(r.Body)
	return b.Bytes(), nil
}

// method is the request's method, POST when none is set.
func (r Request) method() string { return cmp.Or(r.Method, http.MethodPost) }

// check refuses a method or header HTTP does not allow, before anything
// is sent.
func (r Request) check() error {
	if err := checkHeader(inspector.Header{Name: r.method()}); err != nil {
		return fmt.Errorf("method %q is not a valid HTTP token", r.method())
	}
	for _, h := range r.Headers {
		if err := checkHeader(h); err != nil {
			return err
		}
	}
	return nil
}

func checkHeader(h inspector.Header) error {
	if h.Name == "" {
		return errors.New("a header has an empty name")
	}
	for i := 0; i < len(h.Name); i++ {
		c := h.Name[i]
		if c <= ' ' || c == ':' || c >= 0x7f {
			return fmt.Errorf("header name %q contains a character HTTP does not allow", h.Name)
		}
	}
	if strings.ContainsAny(h.Value, "\r\n\x00") {
		return fmt.Errorf("the value of header %s contains a line break or NUL", h.Name)
	}
	return nil
}
