// Package rawhttp keeps each HTTP/1.1 request's header fields as they were
// written on the wire, for a net/http server. Go parses headers into a map
// and loses their order, case and spelling; a developer comparing a request
// with its sender's documentation wants the wire form.
//
// It is used in three places:
//
//	srv := &http.Server{Handler: rawhttp.Claim(h), ConnContext: rawhttp.ConnContext, MaxHeaderBytes: max}
//	srv.Serve(rawhttp.NewListener(ln, max))
//
// and in the handler, HeadOf(r).
//
// Each connection copies the bytes net/http reads of a request's head, up
// to the blank line that ends it, and then ignores what it reads until
// that request's body has been read to its end (or, for a body the
// handler leaves unread, until the handler has returned): it does not
// follow bodies. The next request's head starts with the next byte read,
// which holds for a client that waits for each answer before it sends the
// next request, as every webhook sender and HTTP client does by default.
// (Copying again at the body's end, not at the handler's, keeps the first
// byte of a request sent as soon as a handler flushed its answer: net/http
// reads it while the handler still runs.) Claim checks the copy
// against what net/http parsed (request line, every header name and value)
// before handing it on; a copy that does not agree (pipelined requests, a
// handler that answered before reading its body, a head net/http handled
// without calling the handler) is dropped and HeadOf reports false, so the
// caller falls back to Go's parsed headers and says so. A wrong head is
// never handed on.
package rawhttp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"sync"
)

// headSlop is what net/http reads of a head beyond MaxHeaderBytes before it
// refuses the request (its bufio slop, server.go initialReadLimitSize).
const headSlop = 4096

// NewListener wraps ln so that every connection it accepts copies request
// heads. maxHeaderBytes is the server's MaxHeaderBytes (zero means
// http.DefaultMaxHeaderBytes): no head net/http accepts is longer than it
// plus net/http's slop, and a copy stops there. Serve it with Claim around
// the handler and ConnContext as the server's ConnContext.
func NewListener(ln net.Listener, maxHeaderBytes int) net.Listener {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	return &listener{Listener: ln, max: maxHeaderBytes + headSlop}
}

type listener struct {
	net.Listener
	max int
}

// Accept wraps the next connection.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, max: l.max}, nil
}

type connKey struct{}

type headKey struct{}

// ConnContext is the http.Server ConnContext hook: it makes a copying
// connection reachable from its requests.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*conn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// Claim wraps a server's whole handler: each request on a copying
// connection takes the head copied for it, checks it and keeps it for
// HeadOf, and when h returns the connection copies the next head. Every
// request must pass through it (wrap the whole handler, before anything
// can change r.Header).
func Claim(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil {
			h.ServeHTTP(w, r)
			return
		}
		body := r.Body != nil && r.Body != http.NoBody
		ctx := r.Context()
		if fields, ok := agree(c.claim(body), r); ok {
			ctx = context.WithValue(ctx, headKey{}, fields)
		}
		r = r.WithContext(ctx)
		if body {
			r.Body = &bodyEnd{ReadCloser: r.Body, c: c}
		}
		defer c.release()
		h.ServeHTTP(w, r)
	})
}

// HeadOf returns r's header fields as they were on the wire, or false when
// they were not copied (see the package comment). The fields must not be
// changed.
func HeadOf(r *http.Request) ([]Field, bool) {
	fields, ok := r.Context().Value(headKey{}).([]Field)
	return fields, ok
}

// state is where a connection's copy stands.
type state uint8

const (
	copying  state = iota // copying a head into buf
	held                  // a whole head is in buf, waiting for its request
	ignoring              // a request is being served: its body, and anything else, is not copied
)

// conn is a copying connection. net/http reads it from one goroutine at a
// time (the connection's, or its background read while a handler runs);
// the mutex orders those reads with claim and release on the handler's.
type conn struct {
	net.Conn
	max int

	mu    sync.Mutex
	state state
	buf   []byte
	// line is the length of buf's last line while it has no LF yet, and
	// lineCR whether that line so far is a single CR.
	line   int
	lineCR bool
}

// Read copies what net/http reads of a head.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.state == copying {
			c.copyHead(p[:n])
		}
		c.mu.Unlock()
	}
	return n, err
}

// copyHead appends p up to the end of the head to buf. A head ends at the
// first line that is empty once its LF and one CR before it are cut, as
// net/http reads lines. Blank lines before a request line are skipped, as
// net/http skips them after a POST.
func (c *conn) copyHead(p []byte) {
	if len(c.buf) == 0 {
		p = bytes.TrimLeft(p, "\r\n")
	}
	end := -1 // where the head ends in p, once found
	for at := 0; end < 0; {
		i := bytes.IndexByte(p[at:], '\n')
		if i < 0 {
			if rest := p[at:]; len(rest) > 0 {
				c.lineCR = c.line == 0 && len(rest) == 1 && rest[0] == '\r'
				c.line += len(rest)
			}
			break
		}
		seg := p[at : at+i]
		blank := c.line == 0 && (len(seg) == 0 || len(seg) == 1 && seg[0] == '\r') ||
			c.line == 1 && c.lineCR && len(seg) == 0
		c.line, c.lineCR = 0, false
		at += i + 1
		if blank {
			end = at
		}
	}
	take := end
	if end < 0 {
		take = len(p)
	}
	if len(c.buf)+take > c.max {
		// Longer than any head net/http accepts: it refuses the request.
		c.state, c.buf = ignoring, nil
		return
	}
	c.buf = append(c.buf, p[:take]...)
	if end >= 0 {
		c.state = held
	}
}

// claim takes the head copied for the request about to be served, if a
// whole one was. A request with a body has its body read next, which is
// ignored until copyNext; without one, the next byte read is the next
// request's.
func (c *conn) claim(body bool) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var head []byte
	if c.state == held {
		head = c.buf
	}
	c.state, c.buf, c.line, c.lineCR = ignoring, nil, 0, false
	if !body {
		c.state = copying
	}
	return head
}

// copyNext copies the next head: the request's body was read to its end,
// or its handler returned. A copy already under way is kept.
func (c *conn) copyNext() {
	c.mu.Lock()
	if c.state == ignoring {
		c.state, c.buf, c.line, c.lineCR = copying, nil, 0, false
	}
	c.mu.Unlock()
}

// release is called when the request's handler returns: a body it left
// unread is read by net/http after this (up to a limit, to keep the
// connection), and copied as if it were a head; the check then drops it.
func (c *conn) release() { c.copyNext() }

// bodyEnd copies the next head once the body is read to its end.
type bodyEnd struct {
	io.ReadCloser
	c *conn
}

// Read reads the body, noting its end.
func (b *bodyEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.c.copyNext()
	}
	return n, err
}

// agree parses head and reports whether it is r's: the same request line
// and, name by name, the same header values in the same order as net/http
// parsed them. net/http takes Host and Transfer-Encoding out of r.Header,
// folds equal Content-Lengths into one and adds Cache-Control for a
// Pragma: no-cache; those are not compared.
func agree(head []byte, r *http.Request) ([]Field, bool) {
	if head == nil {
		return nil, false
	}
	line, fields := Parse(head)
	if line != r.Method+" "+r.RequestURI+" "+r.Proto {
		return nil, false
	}
	parsed := make(http.Header, len(fields))
	for _, f := range fields {
		k := textproto.CanonicalMIMEHeaderKey(f.Name)
		parsed[k] = append(parsed[k], f.Value)
	}
	for _, k := range []string{"Host", "Transfer-Encoding", "Content-Length"} {
		delete(parsed, k)
	}
	n := 0
	for k, vs := range r.Header {
		_, copied := parsed[k]
		switch {
		case k == "Content-Length", k == "Cache-Control" && !copied:
			continue
		case !slices.Equal(parsed[k], vs):
			return nil, false
		}
		n++
	}
	return fields, n == len(parsed)
}

// Field is one header field as written: Name as on the wire, Value as
// net/http reads it (outer spaces and tabs trimmed; an obsolete folded
// continuation joined with one space).
type Field struct {
	Name  string
	Value string
}

// Parse splits a header block into its request line and its fields in
// wire order, by net/http's reading rules (see Field).
func Parse(block []byte) (requestLine string, fields []Field) {
	text := string(block)
	fields = make([]Field, 0, strings.Count(text, "\n"))
	var kv string // the field being read, continuations joined
	flush := func() {
		if kv == "" {
			return
		}
		name, value, _ := strings.Cut(kv, ":")
		fields = append(fields, Field{Name: name, Value: strings.TrimLeft(value, " \t")})
		kv = ""
	}
	for first := true; text != ""; first = false {
		l, rest, _ := strings.Cut(text, "\n")
		text = rest
		l = strings.TrimSuffix(l, "\r")
		switch {
		case first:
			requestLine = l
			continue
		case l == "":
			text = ""
			continue
		case (l[0] == ' ' || l[0] == '\t') && kv != "":
			kv += " " + strings.Trim(l, " \t")
			continue
		}
		flush()
		kv = strings.Trim(l, " \t")
	}
	flush()
	return requestLine, fields
}
