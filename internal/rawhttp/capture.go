package rawhttp

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// state is where the capture stands in a connection's byte stream.
type state uint8

const (
	stHead      state = iota // reading a header block into buf
	stBody                   // skipping a Content-Length body
	stChunkLine              // reading a chunk-size line into line
	stChunkData              // skipping a chunk's data
	stChunkCR                // the CR after a chunk's data
	stChunkLF                // the LF after it
	stTrailer                // reading the trailer after the last chunk
	stStopped                // not following the bytes any more
)

// Limits net/http keeps while reading a chunked body (net/http/internal
// chunked.go, transfer.go); past them it fails the body, and the capture
// stops.
const (
	maxChunkLine = 4096 // a chunk-size line, CRLF included (its read buffer)
	maxTrailer   = 4096 // the trailer, up to its blank line
)

// capture follows one connection's requests. It is not safe for concurrent
// use; conn guards it.
type capture struct {
	max   int
	state state
	buf   []byte // the header block read so far
	// lineLen and lineFirst are the length and first byte of buf's last
	// line while it has no LF yet.
	lineLen   int
	lineFirst byte
	line      []byte // the chunk-size or trailer line read so far
	trailer   int    // trailer bytes so far
	remain    uint64 // body or chunk bytes left to skip
	// skip is how many leading CR or LF bytes may still be skipped before
	// the next request line: net/http skips up to 4 after a POST
	// (server.go, readRequest).
	skip    int
	pending []*Head
}

// next returns the oldest captured head not yet handed out.
func (c *capture) next() (*Head, bool) {
	if len(c.pending) == 0 {
		return nil, false
	}
	h := c.pending[0]
	c.pending[0] = nil // the connection may live long; do not keep the head
	c.pending = c.pending[1:]
	return h, true
}

// stop gives up following the bytes. Blocks already captured stay: they
// were delimited before anything went wrong.
func (c *capture) stop() {
	c.state = stStopped
	c.buf, c.line, c.lineLen = nil, nil, 0
}

// feed follows p, the next bytes net/http read from the connection.
func (c *capture) feed(p []byte) {
	for len(p) > 0 {
		switch c.state {
		case stStopped:
			return
		case stHead:
			if len(c.buf) == 0 {
				for c.skip > 0 && len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
					p = p[1:]
					c.skip--
				}
				if len(p) == 0 {
					return
				}
				c.skip = 0
			}
			// Find where the block ends in p, line by line, then copy
			// once. A line that is empty once its LF and one CR before it
			// are cut ends the block (textproto's ReadLine); for the first
			// line that is an empty request line, which net/http refuses.
			end := -1
			for at := 0; end < 0; {
				i := bytes.IndexByte(p[at:], '\n')
				if i < 0 {
					if at < len(p) {
						if c.lineLen == 0 {
							c.lineFirst = p[at]
						}
						c.lineLen += len(p) - at
					}
					break
				}
				n, first := c.lineLen+i+1, c.lineFirst
				if c.lineLen == 0 {
					first = p[at]
				}
				c.lineLen = 0
				at += i + 1
				if n == 1 || n == 2 && first == '\r' {
					end = at
				}
			}
			take := len(p)
			if end >= 0 {
				take = end
			}
			if len(c.buf)+take > c.max {
				c.stop()
				continue
			}
			c.buf = append(c.buf, p[:take]...)
			p = p[take:]
			if end >= 0 {
				c.endHead()
			}
		case stBody, stChunkData:
			k := min(uint64(len(p)), c.remain)
			p = p[k:]
			c.remain -= k
			if c.remain > 0 {
				continue
			}
			if c.state == stBody {
				c.state = stHead
			} else {
				c.state = stChunkCR
			}
		case stChunkCR, stChunkLF:
			// Chunk data ends in exactly CRLF.
			want := byte('\r')
			if c.state == stChunkLF {
				want = '\n'
			}
			if p[0] != want {
				c.stop()
				continue
			}
			p = p[1:]
			if c.state == stChunkCR {
				c.state = stChunkLF
			} else {
				c.state = stChunkLine
			}
		case stChunkLine, stTrailer:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				c.line = append(c.line, p...)
				p = nil
			} else {
				c.line = append(c.line, p[:i+1]...)
				p = p[i+1:]
			}
			if c.state == stChunkLine && len(c.line) > maxChunkLine ||
				c.state == stTrailer && c.trailer+len(c.line) > maxTrailer {
				c.stop()
				continue
			}
			if i < 0 {
				continue
			}
			line := c.line
			c.line = c.line[:0]
			// Chunk lines and (as far as the capture follows them)
			// trailer lines end in CRLF with no other CR.
			if len(line) < 2 || bytes.IndexByte(line, '\r') != len(line)-2 {
				c.stop()
				continue
			}
			line = line[:len(line)-2]
			if c.state == stTrailer {
				c.trailer += len(line) + 2
				if len(line) == 0 {
					c.state = stHead
				}
				continue
			}
			size, ok := chunkSize(line)
			switch {
			case !ok:
				c.stop()
			case size == 0:
				c.state, c.trailer = stTrailer, 0
			default:
				c.state, c.remain = stChunkData, size
			}
		}
	}
}

// endHead queues the header block just read and sets out to skip its body.
func (c *capture) endHead() {
	block := c.buf
	c.buf, c.lineLen = nil, 0
	if len(c.pending) >= maxPending {
		c.stop()
		return
	}
	h := &Head{Block: block}
	h.RequestLine, h.Fields = Parse(block)
	c.pending = append(c.pending, h)
	f, ok := framingOf(h)
	if !ok {
		c.stop()
		return
	}
	c.skip = 0
	if f.post {
		c.skip = 4
	}
	switch {
	case f.chunked:
		c.state = stChunkLine
	case f.length > 0:
		c.state, c.remain = stBody, f.length
	default:
		c.state = stHead
	}
}

// framing is how a request's body is delimited.
type framing struct {
	post    bool
	chunked bool
	length  uint64
}

// framingOf decides a request's body framing as net/http does (transfer.go:
// parseTransferEncoding, fixLength). It reports false for a request
// net/http refuses or whose head the capture does not trust: the
// connection then stops capturing after this block.
func framingOf(h *Head) (framing, bool) {
	method, rest, ok1 := strings.Cut(h.RequestLine, " ")
	_, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return framing{}, false
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok || major != 1 {
		return framing{}, false
	}
	var te, cl []string
	for _, f := range h.Fields {
		if !isToken(f.Name) {
			return framing{}, false
		}
		switch {
		case asciiEqualFold(f.Name, "Transfer-Encoding"):
			te = append(te, f.Value)
		case asciiEqualFold(f.Name, "Content-Length"):
			cl = append(cl, f.Value)
		}
	}
	fr := framing{post: method == http.MethodPost}
	if len(cl) > 0 {
		first := strings.Trim(cl[0], " \t\r\n")
		for _, v := range cl[1:] {
			if strings.Trim(v, " \t\r\n") != first {
				return framing{}, false
			}
		}
		n, err := strconv.ParseUint(first, 10, 63)
		if err != nil {
			return framing{}, false
		}
		fr.length = n
	}
	// HTTP/1.0 requests' Transfer-Encoding is ignored.
	if len(te) > 0 && minor >= 1 {
		if len(te) != 1 || !asciiEqualFold(te[0], "chunked") {
			return framing{}, false
		}
		fr.chunked, fr.length = true, 0
	}
	return fr, true
}

// chunkSize reads a chunk-size line without its CRLF as net/http does:
// trailing blanks and any extension cut, then 1 to 16 hex digits.
func chunkSize(line []byte) (uint64, bool) {
	line = bytes.TrimRight(line, " \t")
	line, _, _ = bytes.Cut(line, []byte(";"))
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, b := range line {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(b)
	}
	return n, true
}

// isToken reports whether s is an RFC 9110 token, as a header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// asciiEqualFold is strings.EqualFold for ASCII only, as HTTP compares.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
