package inspector

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Go's net/http parses headers into a map, losing their order and case.
// A developer comparing a delivery with the service's documentation wants
// the wire form, so the receiver's listener wraps each connection and
// follows HTTP/1.1 framing on the bytes as they are read: it keeps each
// request's header block and skips bodies (Content-Length or chunked).
// If the framing ever looks wrong the connection stops capturing and the
// handler falls back to Go's parsed headers, flagged as reconstructed.

type captureListener struct {
	net.Listener
	maxHeader int
}

func (l *captureListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &captureConn{Conn: c, max: l.maxHeader}, nil
}

type connKey struct{}

// withCaptureConn is the server's ConnContext hook.
func withCaptureConn(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*captureConn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

type frameState int

const (
	stHeader frameState = iota
	stBody
	stChunkSize
	stChunkData
	stChunkEnd
	stTrailer
	stLost
)

type captureConn struct {
	net.Conn
	max int

	mu    sync.Mutex
	state frameState
	buf   []byte // header block or chunk-size / trailer line being read
	// lineStart is where the current header line starts in buf.
	lineStart int
	remain    int64 // body or chunk bytes left to skip
	pending   [][]byte
}

func (c *captureConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// next returns the oldest captured header block not yet claimed.
func (c *captureConn) next() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil, false
	}
	b := c.pending[0]
	c.pending = c.pending[1:]
	return b, true
}

func (c *captureConn) feed(p []byte) {
	for len(p) > 0 && c.state != stLost {
		switch c.state {
		case stHeader:
			// Leading blank lines between requests are allowed (RFC 9112 2.2).
			if len(c.buf) == 0 {
				for len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
					p = p[1:]
				}
				if len(p) == 0 {
					return
				}
			}
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				c.buf = append(c.buf, p...)
				p = nil
			} else {
				c.buf = append(c.buf, p[:i+1]...)
				p = p[i+1:]
				line := c.buf[c.lineStart:]
				c.lineStart = len(c.buf)
				if len(line) <= 2 && (len(line) == 1 || line[0] == '\r') {
					c.headerDone()
					continue
				}
			}
			if len(c.buf) > c.max {
				c.lose()
			}
		case stBody:
			k := min(int64(len(p)), c.remain)
			p = p[k:]
			c.remain -= k
			if c.remain == 0 {
				c.state = stHeader
			}
		case stChunkSize, stTrailer:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				c.buf = append(c.buf, p...)
				p = nil
				if len(c.buf) > 4096 {
					c.lose()
				}
				continue
			}
			c.buf = append(c.buf, p[:i+1]...)
			p = p[i+1:]
			line := strings.TrimRight(string(c.buf), "\r\n")
			c.buf = c.buf[:0]
			if c.state == stTrailer {
				if line == "" {
					c.state = stHeader
				}
				continue
			}
			if j := strings.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
			switch {
			case err != nil || size < 0:
				c.lose()
			case size == 0:
				c.state = stTrailer
			default:
				c.remain, c.state = size, stChunkData
			}
		case stChunkData:
			k := min(int64(len(p)), c.remain)
			p = p[k:]
			c.remain -= k
			if c.remain == 0 {
				c.state = stChunkEnd
			}
		case stChunkEnd:
			if p[0] == '\n' {
				c.state = stChunkSize
			} else if p[0] != '\r' {
				c.lose()
			}
			p = p[1:]
		}
	}
}

func (c *captureConn) lose() {
	c.state = stLost
	c.buf = nil
	c.lineStart = 0
	c.pending = nil
}

func (c *captureConn) headerDone() {
	block := c.buf
	c.buf = nil
	c.lineStart = 0
	c.pending = append(c.pending, block)
	if len(c.pending) > 64 {
		c.lose()
		return
	}
	var cl int64 = -1
	chunked := false
	lines := strings.Split(string(block), "\n")
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.EqualFold(strings.TrimSpace(name), "Content-Length"):
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				c.lose()
				return
			}
			cl = n
		case strings.EqualFold(strings.TrimSpace(name), "Transfer-Encoding"):
			chunked = strings.Contains(strings.ToLower(value), "chunked")
		}
	}
	switch {
	case chunked:
		c.state = stChunkSize
	case cl > 0:
		c.state, c.remain = stBody, cl
	default:
		c.state = stHeader
	}
}

// parseHeaderBlock splits a captured header block into its request line
// and headers as written. Obsolete line folding is joined with one space.
func parseHeaderBlock(block []byte) (requestLine string, hs []Header) {
	lines := strings.Split(string(block), "\n")
	requestLine = strings.TrimRight(lines[0], "\r")
	for _, l := range lines[1:] {
		l = strings.TrimRight(l, "\r")
		if l == "" {
			break
		}
		if (l[0] == ' ' || l[0] == '\t') && len(hs) > 0 {
			hs[len(hs)-1].Value += " " + strings.TrimSpace(l)
			continue
		}
		name, value, _ := strings.Cut(l, ":")
		hs = append(hs, Header{Name: name, Value: strings.Trim(value, " \t")})
	}
	return requestLine, hs
}
