package rawhttp

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"
)

// served is one request as net/http's reading rules see it.
type served struct {
	start, headEnd int // its header block is stream[start:headEnd]
	req            *http.Request
}

// countingReader counts what the bufio.Reader above it has taken.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// reference reads stream as net/http's server does: http.ReadRequest in a
// loop over a 4 KiB bufio.Reader, each body read to its end, up to four
// leading CR or LF bytes skipped after a POST. It returns the requests a
// server would serve; refusedAt, where the head it could not parse starts
// (-1 if none); and bodyFailed, whether the last request's body broke its
// framing, after which net/http closes the connection and reads nothing
// more.
func reference(stream []byte) (reqs []served, refusedAt int, bodyFailed bool) {
	cr := &countingReader{r: bytes.NewReader(stream)}
	br := bufio.NewReaderSize(cr, 4096)
	pos := func() int { return cr.n - br.Buffered() }
	lastPost := false
	for {
		if lastPost {
			peek, _ := br.Peek(4)
			n := 0
			for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
				n++
			}
			br.Discard(n)
		}
		start := pos()
		if _, err := br.Peek(1); err == io.EOF {
			return reqs, -1, false
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return reqs, start, false
		}
		reqs = append(reqs, served{start: start, headEnd: pos(), req: req})
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return reqs, -1, true
		}
		lastPost = req.Method == http.MethodPost
	}
}

// checkCapture feeds stream to a capture in pieces of step bytes, hands
// out blocks as a server would, and compares them with the reference.
func checkCapture(t *testing.T, stream []byte, step int) {
	t.Helper()
	ref, refusedAt, bodyFailed := reference(stream)
	c := capture{max: 1 << 20}
	var blocks [][]byte
	for p := stream; len(p) > 0; {
		n := min(step, len(p))
		c.feed(p[:n])
		p = p[n:]
		for {
			h, ok := c.next()
			if !ok {
				break
			}
			if line, fields := Parse(h.Block); line != h.RequestLine || !slices.Equal(fields, h.Fields) {
				t.Fatalf("head %q: cached %q %q, Parse gives %q %q", h.Block, h.RequestLine, h.Fields, line, fields)
			}
			blocks = append(blocks, h.Block)
		}
	}
	for i, b := range blocks {
		switch {
		case i < len(ref):
			want := stream[ref[i].start:ref[i].headEnd]
			if !bytes.Equal(b, want) {
				t.Fatalf("block %d:\n got %q\nwant %q", i, b, want)
			}
			compareFields(t, i, b, ref[i].req)
		case i == len(ref) && refusedAt >= 0:
			// The head of the request net/http refuses: what a refusal
			// is recorded with. It must be that request's.
			if !bytes.HasPrefix(stream[refusedAt:], b) {
				t.Fatalf("refused request's block %q is not where net/http read it (%q)", b, stream[refusedAt:min(len(stream), refusedAt+len(b)+8)])
			}
		case refusedAt < 0 && !bodyFailed:
			t.Fatalf("block %d %q: net/http reads no such request", i, b)
		}
	}
	if len(blocks) < len(ref) && c.state != stStopped {
		t.Fatalf("captured %d blocks of %d requests without stopping (state %d)", len(blocks), len(ref), c.state)
	}
}

// compareFields checks Parse's reading of a block against net/http's.
func compareFields(t *testing.T, i int, block []byte, req *http.Request) {
	t.Helper()
	line, fields := Parse(block)
	if want := req.Method + " " + req.RequestURI + " " + req.Proto; line != want {
		t.Fatalf("block %d: request line %q, want %q", i, line, want)
	}
	got := http.Header{}
	for _, f := range fields {
		k := textproto.CanonicalMIMEHeaderKey(f.Name)
		got[k] = append(got[k], f.Value)
	}
	// http.ReadRequest moves Host to req.Host and rewrites the others
	// while framing the body.
	skip := map[string]bool{"Host": true, "Transfer-Encoding": true, "Content-Length": true, "Trailer": true, "Cache-Control": true}
	if h := got["Host"]; req.URL.Host == "" && (len(h) > 1 || len(h) == 1 && h[0] != req.Host || len(h) == 0 && req.Host != "") {
		t.Fatalf("block %d: Host %q, net/http read %q", i, h, req.Host)
	}
	for k, vs := range req.Header {
		if !skip[k] && !slices.Equal(got[k], vs) {
			t.Fatalf("block %d: header %s = %q, net/http read %q", i, k, got[k], vs)
		}
	}
	for k := range got {
		if _, ok := req.Header[k]; !ok && !skip[k] {
			t.Fatalf("block %d: header %s = %q, net/http has none", i, k, got[k])
		}
	}
	if cl := got["Content-Length"]; len(cl) > 0 && len(req.TransferEncoding) == 0 {
		if v := req.Header.Get("Content-Length"); strings.Trim(cl[0], " \t") != strings.Trim(v, " \t") {
			t.Fatalf("block %d: Content-Length %q, net/http %q", i, cl, v)
		}
	}
}

// seeds are byte streams for the fuzz target and TestCaptureSeeds: one or
// several pipelined requests, Content-Length and chunked bodies, and the
// odd forms net/http accepts or refuses.
var seeds = []string{
	"POST /webhooks HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST /a HTTP/1.1\r\nhost: a\r\ncontent-length: 3\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\nabcPOST /b?q=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA \r\n0123456789\r\n0\r\nTrailer-X: t\r\n\r\nGET /c HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\nHost: a\nContent-Length: 2\n\nokGET / HTTP/1.1\nHost: a\n\n",
	"POST / HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n  two\r\n\tthree\r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n cont\r\nX-Blank: \r\n \r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"\r\nPOST / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello12",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\ncontent-length:  5 \r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nX-Nul: a\x00b\r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n00000000000000000\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\nB: 2\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbodyHEAD / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n 2\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\n Folded-First: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
	"GARBAGE\r\n\r\n",
	"POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999\r\n\r\nabc",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\nf\r\n0123456789abcde\r\n0;x\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
}

func TestCaptureSeeds(t *testing.T) {
	for _, s := range seeds {
		for _, step := range []int{1, 2, 3, 7, 64, len(s)} {
			checkCapture(t, []byte(s), step)
		}
	}
}

// FuzzCaptureMatchesReadRequest is the differential test of the capture:
// for every request net/http would serve, the capture yields the same
// header block (so the same request boundaries) and Parse the same header
// names and values in wire order, or the capture has stopped (and the
// receiver falls back to Go's headers, flagged as reconstructed). It never
// hands one request the head of another.
func FuzzCaptureMatchesReadRequest(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(6))
	}
	f.Fuzz(func(t *testing.T, stream []byte, step uint8) {
		checkCapture(t, stream, int(step)+1)
	})
}
