// Package rawhttp keeps each HTTP/1.1 request's header block as it was
// written on the wire, for a net/http server. Go parses headers into a map
// and loses their order, case and spelling; a developer comparing a request
// with its sender's documentation wants the wire form.
//
// It is used in three places:
//
//	srv := &http.Server{Handler: rawhttp.Claim(h), ConnContext: rawhttp.ConnContext}
//	srv.Serve(rawhttp.NewListener(ln, rawhttp.Options{...}))
//
// and in the handler, HeadOf(r).
//
// Each connection follows HTTP/1.1 framing on the bytes as net/http reads
// them, with net/http's own rules (lines ending in LF or CRLF,
// Content-Length, chunked bodies and trailers, the blank lines it skips
// after a POST), queues every header block and skips bodies. Claim gives
// the blocks to the requests in order and checks each against the
// request's line. Where the capture cannot follow the bytes (a framing it
// does not mirror, a block over the limit, too many blocks waiting, a
// request line that does not match), it stops for the rest of the
// connection and HeadOf reports false, so the caller falls back to
// Go's parsed headers and says so. FuzzCaptureMatchesReadRequest holds
// the capture to http.ReadRequest.
//
// The connection also notices when net/http refuses a request on its own
// (400, 431, 501, 505: before any handler runs) and reports it, with the
// head that was captured, before the refusal is written.
package rawhttp

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Options configure NewListener.
type Options struct {
	// MaxHeaderBytes bounds one captured header block; past it the
	// connection stops capturing. Zero means http.DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// Refused, when set, is called for each request net/http refuses
	// itself, on the connection's goroutine, before the refusal is
	// written: a caller that stores the request in Refused has stored it
	// before it is answered.
	Refused func(Refusal)
}

// Refusal is a request net/http answered itself with an error, before any
// handler saw it.
type Refusal struct {
	// Status is the refusal's status code (400, 431, 501, 505).
	Status int
	// Answer is net/http's text of the refusal, for example
	// "400 Bad Request" or "400 Bad Request: missing required Host header".
	Answer string
	// Head is the request's head as captured: its whole header block when
	// Complete, else the bytes read of it so far. Nil when the connection
	// had stopped capturing.
	Head     []byte
	Complete bool
	// RemoteAddr is the client's address.
	RemoteAddr string
}

// maxPending bounds the header blocks read ahead of their requests. net/http
// reads at most a buffer (4 KiB) ahead, so blocks waiting are few and small;
// more than this means something is wrong, and the capture stops.
const maxPending = 64

// NewListener wraps ln so that every connection it accepts captures header
// blocks. Serve it with Claim around the handler and ConnContext as the
// server's ConnContext.
func NewListener(ln net.Listener, o Options) net.Listener {
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	return &listener{Listener: ln, o: o}
}

type listener struct {
	net.Listener
	o Options
}

// Accept wraps the next connection.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, refused: l.o.Refused, cap: capture{max: l.o.MaxHeaderBytes}}, nil
}

type connKey struct{}

// ConnContext is the http.Server ConnContext hook: it makes a capturing
// connection reachable from its requests.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*conn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// Claim wraps a server's whole handler: each request on a capturing
// connection takes the oldest captured header block before h runs. Every
// request must pass through it, or blocks would be handed to the wrong
// requests; the request-line check would then stop the capture.
func Claim(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil {
			h.ServeHTTP(w, r)
			return
		}
		c.claim(r)
		defer c.release()
		h.ServeHTTP(w, r)
	})
}

// Head is a request's head as captured.
type Head struct {
	// Block is the header block byte for byte: the request line, the
	// header lines and the blank line that ends them.
	Block []byte
	// RequestLine and Fields are Block as Parse reads it.
	RequestLine string
	Fields      []Field
}

// HeadOf returns r's head as captured, or false when r's connection does
// not capture or could not follow. Call it while r's handler runs; the
// Head must not be changed.
func HeadOf(r *http.Request) (*Head, bool) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current, c.current != nil
}

// conn is a capturing connection.
type conn struct {
	net.Conn
	refused func(Refusal)

	mu  sync.Mutex
	cap capture
	// active is set while a handler runs: net/http refuses requests only
	// between handlers.
	active bool
	// current is the head claimed by the running handler.
	current *Head
}

// Read feeds what net/http reads to the capture.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.cap.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// Write reports a refusal before it goes out.
func (c *conn) Write(p []byte) (int, error) {
	if c.refused != nil {
		if status, answer, ok := refusalAnswer(p); ok {
			c.refuse(status, answer)
		}
	}
	return c.Conn.Write(p)
}

func (c *conn) refuse(status int, answer string) {
	c.mu.Lock()
	if c.active {
		c.mu.Unlock()
		return
	}
	rf := Refusal{Status: status, Answer: answer, RemoteAddr: c.Conn.RemoteAddr().String()}
	switch {
	case len(c.cap.pending) > 0:
		// Every request served before claimed its block, so the oldest
		// waiting one is the refused request's.
		rf.Head, rf.Complete = c.cap.pending[0].Block, true
	case c.cap.state == stHead && len(c.cap.buf) > 0:
		rf.Head = c.cap.buf
	}
	c.cap.stop()
	c.cap.pending = nil
	c.mu.Unlock()
	c.refused(rf)
}

func (c *conn) claim(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active, c.current = true, nil
	h, ok := c.cap.next()
	if !ok || h.RequestLine != r.Method+" "+r.RequestURI+" "+r.Proto {
		// The capture stopped, or is out of step with net/http (a head
		// not claimed, or not seen): nothing it holds can be trusted.
		c.cap.stop()
		c.cap.pending = nil
		return
	}
	c.current = h
}

func (c *conn) release() {
	c.mu.Lock()
	c.active, c.current = false, nil
	c.mu.Unlock()
}

// goErrorHeaders is what net/http writes between the status line and the
// text of a refusal (server.go). Its own answers to requests always carry
// a Date header and sort Connection before Content-Type, so no handler's
// answer starts this way.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// refusalAnswer recognises net/http's refusal of a request in one write.
func refusalAnswer(p []byte) (status int, answer string, ok bool) {
	const prefix = "HTTP/1.1 "
	if len(p) < len(prefix)+3 || string(p[:len(prefix)]) != prefix || (p[len(prefix)] != '4' && p[len(prefix)] != '5') {
		return 0, "", false
	}
	i := bytes.Index(p, []byte(goErrorHeaders))
	if i < 0 {
		return 0, "", false
	}
	answer = string(p[len(prefix):i])
	status, err := strconv.Atoi(answer[:3])
	if err != nil {
		return 0, "", false
	}
	return status, answer, true
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
