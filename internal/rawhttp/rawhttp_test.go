package rawhttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is a real net/http server with the copy installed; its handler
// records each request's fields as "Name: Value" lines, or "fallback".
type server struct {
	addr string
	mu   sync.Mutex
	got  []string
	// entered, when set, gets each request's path as its handler starts.
	entered chan string
}

// newServer serves with the given MaxHeaderBytes; readBody false leaves
// bodies for net/http to discard after the handler.
func newServer(t *testing.T, maxHeader int, readBody bool) *server {
	t.Helper()
	s := &server{entered: make(chan string, 100)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.entered <- r.URL.Path:
		default: // nobody waits for it
		}
		if readBody {
			io.Copy(io.Discard, r.Body)
		}
		got := r.Method + " " + r.RequestURI + ": fallback"
		if fields, ok := HeadOf(r); ok {
			var b strings.Builder
			b.WriteString(r.Method + " " + r.RequestURI + ":")
			for _, f := range fields {
				fmt.Fprintf(&b, " [%s: %s]", f.Name, f.Value)
			}
			got = b.String()
		}
		s.mu.Lock()
		s.got = append(s.got, got)
		s.mu.Unlock()
	})
	srv := &http.Server{Handler: Claim(h), ConnContext: ConnContext, MaxHeaderBytes: maxHeader, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(NewListener(ln, maxHeader)); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	s.addr = ln.Addr().String()
	return s
}

func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// client is one connection to the server.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (s *server) dial(t *testing.T) *client {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes raw and reads n answers.
func (cl *client) send(raw string, n int) []int {
	cl.t.Helper()
	if _, err := io.WriteString(cl.c, raw); err != nil {
		cl.t.Fatal(err)
	}
	var codes []int
	for range n {
		resp, err := http.ReadResponse(cl.br, nil)
		if err != nil {
			cl.t.Fatalf("answer %d of %d: %v", len(codes)+1, n, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// TestKeepAliveRequestsGetTheirOwnHeads: on one connection, each request
// sent after the answer to the one before gets its own fields in wire
// order and case, whatever its body's framing.
func TestKeepAliveRequestsGetTheirOwnHeads(t *testing.T) {
	s := newServer(t, 1<<20, true)
	cl := s.dial(t)
	reqs := []struct{ raw, want string }{
		{"POST /a HTTP/1.1\r\nhost: x\r\nX-B: 2\r\nX-A: 1\r\ncontent-length: 3\r\n\r\nabc",
			"POST /a: [host: x] [X-B: 2] [X-A: 1] [content-length: 3]"},
		// Chunked with an extension and a trailer; bare LF line ends; an
		// obsolete folded line.
		{"POST /b?q=1 HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\nx-folded: one\n two\n\n3;e\r\nxyz\r\n0\r\nT: 1\r\n\r\n",
			"POST /b?q=1: [Host: x] [Transfer-Encoding: chunked] [x-folded: one two]"},
		// Blank lines before the request line after a POST, and a value
		// with outer blanks.
		{"\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\nx-dup: 1\r\nX-Dup:  2 \r\n\r\n", "GET /c: [Host: x] [x-dup: 1] [X-Dup: 2]"},
		{"POST /d HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
			"POST /d: [Host: x] [Pragma: no-cache] [Content-Length: 2] [Content-Length: 2]"},
	}
	var want []string
	for round := range 10 {
		for _, r := range reqs {
			if got := cl.send(r.raw, 1); got[0] != 200 {
				t.Fatalf("round %d: answered %d", round, got[0])
			}
			want = append(want, r.want)
		}
	}
	if got := s.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("heads:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExpectContinue: a client that waits for 100 Continue before its body
// (curl does for bodies over 1 KiB) gets its head, and so does the next.
func TestExpectContinue(t *testing.T) {
	s := newServer(t, 1<<20, true)
	cl := s.dial(t)
	for i := range 3 {
		io.WriteString(cl.c, fmt.Sprintf("POST /e%d HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", i))
		line, err := cl.br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("interim answer %q, %v", line, err)
		}
		cl.br.ReadString('\n')
		if got := cl.send("hello", 1); got[0] != 200 {
			t.Fatalf("answered %d", got[0])
		}
	}
	for i, got := range s.seen() {
		if want := fmt.Sprintf("POST /e%d: [Host: x] [Expect: 100-continue] [Content-Length: 5]", i); got != want {
			t.Errorf("request %d: %s, want %s", i, got, want)
		}
	}
}

// TestPipelinedRequestsFallBack: requests sent before the answers to the
// ones before them cannot be told apart from bodies; those that follow the
// first get Go's headers, never another request's.
func TestPipelinedRequestsFallBack(t *testing.T) {
	s := newServer(t, 1<<20, true)
	cl := s.dial(t)
	cl.send("POST /1 HTTP/1.1\r\nHost: x\r\nX-N: 1\r\nContent-Length: 3\r\n\r\nabc"+
		"POST /2 HTTP/1.1\r\nHost: x\r\nX-N: 2\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"+
		"GET /3 HTTP/1.1\r\nHost: x\r\nX-N: 3\r\n\r\n", 3)
	// Once the pipeline drained, the connection copies again.
	cl.send("GET /4 HTTP/1.1\r\nHost: x\r\nX-N: 4\r\n\r\n", 1)
	want := []string{"POST /1: [Host: x] [X-N: 1] [Content-Length: 3]", "POST /2: fallback", "GET /3: fallback", "GET /4: [Host: x] [X-N: 4]"}
	if got := s.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("heads:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHeadNotClaimedIsNeverHandedOn: net/http answers "OPTIONS *" without
// calling the handler, and discards a body the handler left unread after
// it returned; the request after either must not get a wrong head, and the
// one after that gets its own again.
func TestHeadNotClaimedIsNeverHandedOn(t *testing.T) {
	t.Run("OPTIONS *", func(t *testing.T) {
		s := newServer(t, 1<<20, true)
		cl := s.dial(t)
		cl.send("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 1)
		cl.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1)
		cl.send("POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1)
		want := []string{"POST /p: fallback", "POST /q: [Host: x] [Content-Length: 0]"}
		if got := s.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("body left unread", func(t *testing.T) {
		s := newServer(t, 1<<20, false)
		cl := s.dial(t)
		// The body, sent once the handler runs, is read by net/http's
		// discard after the handler returned, so the connection copies
		// it. It looks like a request with the next one's request line:
		// the check of the header fields is what stops it.
		body := "POST /r HTTP/1.1\r\nHost: x\r\nX-Fake: 1\r\n\r\n"
		io.WriteString(cl.c, fmt.Sprintf("POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body)))
		<-s.entered
		cl.send(body, 1)
		cl.send("POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1)
		cl.send("POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1)
		got := s.seen()
		if len(got) != 3 || got[0] != fmt.Sprintf("POST /r: [Host: x] [Content-Length: %d]", len(body)) || strings.Contains(got[1], "X-Fake") ||
			got[2] != "POST /s: [Host: x] [Content-Length: 0]" {
			t.Fatalf("got %q", got)
		}
	})
}

// TestHeadsUpToTheLimit: a head up to net/http's limit is copied whole;
// one over it is refused by net/http (431), and no handler sees it.
func TestHeadsUpToTheLimit(t *testing.T) {
	const limit = 64 << 10
	s := newServer(t, limit, true)
	big := strings.Repeat("b", limit-100)
	cl := s.dial(t)
	cl.send("POST /big HTTP/1.1\r\nHost: x\r\nX-Big: "+big+"\r\nContent-Length: 0\r\n\r\n", 1)
	cl.send("POST /after HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1)
	if got := s.dial(t).send("POST /over HTTP/1.1\r\nHost: x\r\nX-Big: "+big+big+"\r\n\r\n", 1); got[0] != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("over the limit: answered %d", got[0])
	}
	got := s.seen()
	if len(got) != 2 || got[0] != "POST /big: [Host: x] [X-Big: "+big+"] [Content-Length: 0]" || got[1] != "POST /after: [Host: x] [Content-Length: 0]" {
		t.Fatalf("got %d heads: %.200q", len(got), got)
	}
}

// TestManyConnectionsAtOnce runs connections in parallel (with -race, the
// copy's locking is checked too): each request gets its own head.
func TestManyConnectionsAtOnce(t *testing.T) {
	s := newServer(t, 1<<20, true)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			cl := s.dial(t)
			for i := range 25 {
				cl.send(fmt.Sprintf("POST /c%d/%d HTTP/1.1\r\nhost: x\r\nx-conn: %d\r\nContent-Length: 2\r\n\r\n{}", c, i, c), 1)
			}
		})
	}
	wg.Wait()
	got := s.seen()
	if len(got) != 200 {
		t.Fatalf("%d requests served", len(got))
	}
	for _, g := range got {
		var c, i int
		if _, err := fmt.Sscanf(g, "POST /c%d/%d:", &c, &i); err != nil || g != fmt.Sprintf("POST /c%d/%d: [host: x] [x-conn: %d] [Content-Length: 2]", c, i, c) {
			t.Fatalf("head %q", g)
		}
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

// tapListener reports every read of its connections that returned data.
type tapListener struct {
	net.Listener
	reads chan string
}

func (l *tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return &tapConn{Conn: c, reads: l.reads}, err
}

type tapConn struct {
	net.Conn
	reads chan string
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads <- string(p[:n])
	}
	return n, err
}

// TestRequestSentWhileTheHandlerRuns: a handler flushes a whole answer and
// goes on running; the client sends its next request at once, and net/http
// reads its first byte (its background read) while that handler still
// runs. The next request still gets its own head.
func TestRequestSentWhileTheHandlerRuns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tap := &tapListener{Listener: ln, reads: make(chan string, 100)}
	proceed := make(chan struct{})
	got := make(chan string, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fields, ok := HeadOf(r)
		got <- fmt.Sprint(r.URL.Path, " ", ok, " ", fields)
		if r.URL.Path == "/first" {
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "ok")
			w.(http.Flusher).Flush()
			<-proceed
		}
	})
	srv := &http.Server{Handler: Claim(h), ConnContext: ConnContext}
	done := make(chan struct{})
	go func() { srv.Serve(NewListener(tap, 0)); close(done) }()
	defer func() { srv.Close(); <-done }()

	cl := (&server{addr: ln.Addr().String()}).dial(t)
	cl.send("POST /first HTTP/1.1\r\nHost: x\r\nx-n: 1\r\nContent-Length: 2\r\n\r\n{}", 1)
	<-tap.reads // the first request
	io.WriteString(cl.c, "POST /second HTTP/1.1\r\nHost: x\r\nx-n: 2\r\nContent-Length: 2\r\n\r\n{}")
	// net/http's background read takes the first byte while /first runs.
	if first := <-tap.reads; first != "P" {
		t.Fatalf("read %q while the handler ran, want the next request's first byte", first)
	}
	close(proceed)
	cl.send("", 1)
	if a, b := <-got, <-got; a != "/first true [{Host x} {x-n 1} {Content-Length 2}]" || b != "/second true [{Host x} {x-n 2} {Content-Length 2}]" {
		t.Fatalf("heads:\n%s\n%s", a, b)
	}
}
