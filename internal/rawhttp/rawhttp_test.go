package rawhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is a real net/http server with the capture installed; its
// handler records each request's block.
type server struct {
	addr string
	mu   sync.Mutex
	got  []string // request line + " => " + block (or "fallback")
	refs []Refusal
	// hold, when set, is closed by the test to let a refusal be answered.
	hold chan struct{}
}

func newServer(t *testing.T, maxHeader int) *server {
	return newServerWith(t, maxHeader, nil)
}

// newServerWith serves h, or the recording handler when h is nil.
func newServerWith(t *testing.T, maxHeader int, h http.Handler) *server {
	t.Helper()
	s := &server{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h, ok := HeadOf(r)
		s.mu.Lock()
		if ok {
			s.got = append(s.got, string(h.Block))
		} else {
			s.got = append(s.got, "fallback: "+r.Method+" "+r.RequestURI)
		}
		s.mu.Unlock()
	})
	if h == nil {
		h = record
	}
	srv := &http.Server{Handler: Claim(h), ConnContext: ConnContext, MaxHeaderBytes: maxHeader, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(NewListener(ln, Options{MaxHeaderBytes: maxHeader + 64<<10, Refused: func(rf Refusal) {
		s.mu.Lock()
		s.refs = append(s.refs, rf)
		hold := s.hold
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
	}}))
	t.Cleanup(func() { srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

// send writes raw on a new connection and reads answers until the server
// closes it or n answers came.
func (s *server) send(t *testing.T, raw string, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []*http.Response
	for len(out) < n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, resp)
	}
	return out
}

func TestPipelinedRequestsGetTheirOwnBlocks(t *testing.T) {
	s := newServer(t, 1<<20)
	b1 := "POST /a HTTP/1.1\r\nhost: x\r\nX-B: 2\r\nX-A: 1\r\ncontent-length: 3\r\n\r\n"
	b2 := "POST /b?q=1 HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\nx-folded: one\n two\n\n"
	b3 := "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"
	raw := b1 + "abc" + "\r\n" + b2 + "3;e\r\nxyz\r\n0\r\nT: 1\r\n\r\n" + b3
	if got := s.send(t, raw, 3); len(got) != 3 {
		t.Fatalf("%d answers", len(got))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := []string{b1, b2, b3}
	if strings.Join(s.got, "|") != strings.Join(want, "|") {
		t.Fatalf("blocks:\n%q\nwant\n%q", s.got, want)
	}
}

// TestUnclaimedBlockIsNeverHandedOn: net/http answers "OPTIONS *" without
// calling the handler, so its block is never claimed; the next request
// must fall back rather than get it.
func TestUnclaimedBlockIsNeverHandedOn(t *testing.T) {
	s := newServer(t, 1<<20)
	raw := "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\nPOST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
		"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
	if got := s.send(t, raw, 3); len(got) != 3 {
		t.Fatalf("%d answers", len(got))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Not /q with /p's head, as a queue out of step would give.
	if len(s.got) != 2 || s.got[0] != "fallback: POST /p" || s.got[1] != "fallback: POST /q" {
		t.Fatalf("got %q", s.got)
	}
}

func TestRefusalsAreReportedBeforeTheAnswer(t *testing.T) {
	for _, tt := range []struct {
		name, raw string
		status    int
		complete  bool
		why       string
	}{
		{"two Content-Lengths", "POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello12", 400, true, "Content-Length is given 2 times with different values (5, 7)"},
		{"NUL in a header", "POST /w HTTP/1.1\r\nHost: x\r\nX-Sig: ab\x00cd\r\nContent-Length: 0\r\n\r\n", 400, true, "line 3: header X-Sig has the control byte 0x00 at byte 3 of its value"},
		{"no Host", "POST /w HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400, true, "HTTP/1.1 requires a Host header and there is none"},
		{"transfer coding", "POST /w HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, true, `Transfer-Encoding "gzip": only a single "chunked" is supported`},
		{"HTTP/2 line", "POST /w HTTP/2.0\r\nHost: x\r\n\r\n", 505, true, `the protocol "HTTP/2.0" is not HTTP/1.x`},
		{"too large", "POST /w HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, 2<<10)
			s.hold = make(chan struct{})
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tt.raw); err != nil {
				t.Fatal(err)
			}
			// While Refused runs, nothing is answered.
			deadline := time.Now().Add(5 * time.Second)
			for {
				s.mu.Lock()
				n := len(s.refs)
				s.mu.Unlock()
				if n > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no refusal reported")
				}
				time.Sleep(5 * time.Millisecond)
			}
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if n, _ := c.Read(make([]byte, 1)); n != 0 {
				t.Fatal("answered before Refused returned")
			}
			close(s.hold)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != tt.status {
				t.Fatalf("answer %v, %v", resp, err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			rf := s.refs[0]
			if rf.Status != tt.status || rf.Complete != tt.complete || !strings.HasPrefix(tt.raw, string(rf.Head)) || len(rf.Head) == 0 {
				t.Fatalf("refusal %d %q complete=%v head %q", rf.Status, rf.Answer, rf.Complete, rf.Head)
			}
			if rf.Complete && !strings.HasSuffix(string(rf.Head), "\r\n\r\n") {
				t.Fatalf("complete head %q does not end the block", rf.Head)
			}
			if why := Diagnose(rf.Head, rf.Complete); !strings.HasPrefix(why, tt.why) {
				t.Fatalf("Diagnose = %q, want %q", why, tt.why)
			}
			if len(s.got) != 0 {
				t.Fatalf("a handler ran: %q", s.got)
			}
		})
	}
}

// TestHandlerAnswersAreNotRefusals: a handler's own 400, even worded and
// headed like net/http's refusals, is not reported.
func TestHandlerAnswersAreNotRefusals(t *testing.T) {
	s := newServerWith(t, 1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "400 Bad Request")
	}))
	if got := s.send(t, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1); len(got) != 1 || got[0].StatusCode != 400 {
		t.Fatalf("answers %v", got)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refs) != 0 {
		t.Fatalf("a handler's 400 was taken for a refusal: %+v", s.refs)
	}
}

func TestParse(t *testing.T) {
	line, fs := Parse([]byte("POST /x HTTP/1.1\r\nhost:  a \r\nX-F: one\r\n  two \r\n\tthree\r\nX-E:\r\n cont\r\nname :v\r\n\r\nbody: no\r\n"))
	want := []Field{{"host", "a"}, {"X-F", "one two three"}, {"X-E", "cont"}, {"name ", "v"}}
	if line != "POST /x HTTP/1.1" || len(fs) != len(want) {
		t.Fatalf("%q %q", line, fs)
	}
	for i := range want {
		if fs[i] != want[i] {
			t.Fatalf("field %d = %q, want %q", i, fs[i], want[i])
		}
	}
}
