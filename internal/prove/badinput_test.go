package prove

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// receiver is a real receiver (engine, SQLite store, server) on loopback.
type receiver struct {
	addr string
	db   *storage.DB
	eng  *inspector.Engine
}

func newReceiver(t *testing.T, so inspector.ServerOptions) *receiver {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "bad.db"))
	if err != nil {
		t.Fatal(err)
	}
	eng := inspector.NewEngine(db, inspector.Options{Secrets: [][]byte{[]byte("survey-secret")}, Logf: t.Logf})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- eng.Run(ctx) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := inspector.ServeListener(ln, eng.Handler(), so)
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		srv.Shutdown(sctx)
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("engine: %v", err)
		}
		db.Close()
	})
	return &receiver{addr: srv.Addr(), db: db, eng: eng}
}

// raw sends request bytes (head, then body from r) on a fresh connection
// and reads the answer. Write errors after the head are ignored: a
// receiver may answer and close before a huge body is all sent.
func (rc *receiver) raw(t *testing.T, head string, body io.Reader) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", rc.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	go func() {
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		if body != nil {
			io.Copy(c, body)
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// record waits for the analyzed record of the delivery an answer names.
func (rc *receiver) record(t *testing.T, resp *http.Response) *inspector.Record {
	t.Helper()
	id, err := strconv.ParseInt(resp.Header.Get("X-Hookscope-Delivery"), 10, 64)
	if err != nil {
		t.Fatalf("answer %d names no delivery: %v", resp.StatusCode, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := rc.db.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Analysis != nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %d not analyzed within 30 s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func post(path string, headers []string, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n", path, len(body))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.String()
}

// heapWatch samples the live heap until stop, returning the peak growth
// over the starting point.
func heapWatch() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

// TestSlowlorisHeaders: a client trickling header lines forever is cut off
// by the header timeout (injected as 300 ms instead of the real 10 s) and
// nothing is recorded for it, since no request ever completed.
func TestSlowlorisHeaders(t *testing.T) {
	rc := newReceiver(t, inspector.ServerOptions{ReadHeaderTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", rc.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		io.Copy(io.Discard, c) // returns when the server closes
	}()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-closed:
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("closed only after %v", d)
			}
			n, err := rc.db.Count(context.Background(), storage.Filter{})
			if err != nil || n != 0 {
				t.Fatalf("recorded %d deliveries (%v) for a request that never completed", n, err)
			}
			return
		case <-tick.C:
			fmt.Fprintf(c, "X-Slow-%d: a\r\n", i)
		case <-time.After(10 * time.Second):
			t.Fatal("the receiver kept a slowloris connection open for 10 s")
		}
	}
}

// TestHugeBody: 100 MiB is answered 413 after the 10 MiB cap, recorded
// truncated with the sent length, and streamed: the heap grows by about
// the cap, not the body.
func TestHugeBody(t *testing.T) {
	rc := newReceiver(t, inspector.ServerOptions{})
	const size = 100 << 20
	head := fmt.Sprintf("POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
	stop := heapWatch()
	resp := rc.raw(t, head, io.LimitReader(repeatReader('x'), size))
	peak := stop()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	r := rc.record(t, resp)
	d := r.Delivery
	if !d.Truncated || len(d.Body) != inspector.DefaultMaxBody || d.BodyLength != size {
		t.Errorf("recorded truncated=%v, %d bytes kept, length %d; want truncated, %d kept, %d sent", d.Truncated, len(d.Body), d.BodyLength, inspector.DefaultMaxBody, size)
	}
	if r.Analysis.Error == nil || !strings.Contains(r.Analysis.Error.Reason, "cut at") {
		t.Errorf("analysis error %+v: want it to say the body was cut", r.Analysis.Error)
	}
	t.Logf("peak heap growth %d MiB for a %d MiB body (cap %d MiB)", peak>>20, size>>20, inspector.DefaultMaxBody>>20)
	if peak > 8*inspector.DefaultMaxBody {
		t.Errorf("heap grew by %d MiB: the body is not streamed against the cap", peak>>20)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestHostileBodies: each is answered 200 (the service's sender must not
// retry forever), stored byte-exact, and analyzed with a clear error or
// problem instead of a crash.
func TestHostileBodies(t *testing.T) {
	rc := newReceiver(t, inspector.ServerOptions{})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	msg := Body(simulate.New(5), 2048)
	zw.Write(msg)
	zw.Close()
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	cases := []struct {
		name    string
		headers []string
		body    []byte
		want    func(*inspector.Record) string // "" when fine
	}{
		{"invalid UTF-8", []string{"Content-Type: application/json"}, []byte("{\"hook\":{\"uuid\":\"\xff\xfe\"},\"events\":[\xc3\x28]}"),
			func(r *inspector.Record) string {
				if r.Analysis.Error == nil {
					return "no decode error"
				}
				return ""
			}},
		{"JSON nested 100,000 deep", []string{"Content-Type: application/json"}, []byte(deep),
			func(r *inspector.Record) string {
				if r.Analysis.Error == nil || !strings.Contains(strings.ToLower(r.Analysis.Error.Reason), "deep") {
					return fmt.Sprintf("want a nesting error, got %+v", r.Analysis.Error)
				}
				return ""
			}},
		{"gzip-encoded", []string{"Content-Type: application/json", "Content-Encoding: gzip"}, gz.Bytes(),
			func(r *inspector.Record) string {
				for _, p := range r.Analysis.Problems {
					if p.Path == "Content-Encoding" {
						return ""
					}
				}
				return fmt.Sprintf("no Content-Encoding problem among %+v", r.Analysis.Problems)
			}},
		{"empty", []string{"Content-Type: application/json"}, nil,
			func(r *inspector.Record) string {
				if r.Analysis.Error == nil {
					return "no decode error"
				}
				return ""
			}},
		{"NUL bytes", []string{"Content-Type: application/json"}, []byte("{\x00\x00}"),
			func(r *inspector.Record) string {
				if r.Analysis.Error == nil {
					return "no decode error"
				}
				return ""
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := rc.raw(t, post("/webhooks", tc.headers, tc.body), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			r := rc.record(t, resp)
			if !bytes.Equal(r.Delivery.Body, tc.body) {
				t.Errorf("stored body differs from what was sent (%d vs %d bytes)", len(r.Delivery.Body), len(tc.body))
			}
			if msg := tc.want(r); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestHugeHeadersAndPath: 10,000 headers and a 1 MB path reach the
// handler and are recorded whole (the header limit is 4 MiB).
func TestHugeHeadersAndPath(t *testing.T) {
	rc := newReceiver(t, inspector.ServerOptions{})
	t.Run("10,000 headers", func(t *testing.T) {
		hs := make([]string, 10_000)
		for i := range hs {
			hs[i] = fmt.Sprintf("X-Flood-%d: v%d", i, i)
		}
		resp := rc.raw(t, post("/webhooks", hs, []byte(`{}`)), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		r := rc.record(t, resp)
		n := 0
		for _, h := range r.Delivery.Headers {
			if strings.HasPrefix(h.Name, "X-Flood-") {
				n++
			}
		}
		if n != 10_000 || r.Delivery.HeadersReconstructed {
			t.Errorf("recorded %d of 10,000 headers (reconstructed=%v)", n, r.Delivery.HeadersReconstructed)
		}
	})
	t.Run("headers up to the limit", func(t *testing.T) {
		big := "X-Big: " + strings.Repeat("b", inspector.MaxHeaderBytes-1024)
		resp := rc.raw(t, post("/webhooks/limit", []string{"x-after: 1", big, "x-last: 2"}, []byte(`{}`)), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		hs := rc.record(t, resp).Delivery
		if len(hs.Headers) != 5 || hs.HeadersReconstructed || hs.Headers[2].Name != "x-after" || len(hs.Headers[3].Value) != inspector.MaxHeaderBytes-1024 {
			t.Errorf("%d headers, reconstructed=%v", len(hs.Headers), hs.HeadersReconstructed)
		}
	})
	t.Run("1 MB path", func(t *testing.T) {
		path := "/" + strings.Repeat("p", 1<<20)
		resp := rc.raw(t, post(path, nil, []byte(`{}`)), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		if r := rc.record(t, resp); r.Delivery.Path != path {
			t.Errorf("recorded a %d-byte path, want %d", len(r.Delivery.Path), len(path))
		}
	})
	t.Run("headers over the limit", func(t *testing.T) {
		// Beyond the 4 MiB limit Go answers 431 itself; the service never
		// sends such a request, and nothing is recorded.
		before, _ := rc.db.Count(context.Background(), storage.Filter{})
		big := "X-Big: " + strings.Repeat("b", inspector.MaxHeaderBytes+8192)
		resp := rc.raw(t, post("/webhooks/big", []string{big}, nil), nil)
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("status %d, want 431", resp.StatusCode)
		}
		if n, err := rc.db.Count(context.Background(), storage.Filter{}); err != nil || n != before {
			t.Fatalf("%d deliveries after %d (%v): the refused request was recorded", n, before, err)
		}
	})
}

// TestFlood: 300 concurrent connections each post a signed delivery; all
// are answered 200 and stored once, and the heap stays bounded.
func TestFlood(t *testing.T) {
	rc := newReceiver(t, inspector.ServerOptions{})
	const n = 300
	g := simulate.New(9)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = Body(g, 2048)
	}
	stop := heapWatch()
	var wg sync.WaitGroup
	var ok atomic.Int64
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{DisableKeepAlives: true}
			defer tr.CloseIdleConnections()
			req, _ := simulate.NewRequest(context.Background(), "http://"+rc.addr+"/webhooks", bodies[i], []byte("survey-secret"))
			<-start
			resp, err := (&http.Client{Transport: tr, Timeout: 60 * time.Second}).Do(req)
			if err != nil {
				t.Errorf("delivery %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	peak := stop()
	if ok.Load() != n {
		t.Fatalf("%d of %d answered 200", ok.Load(), n)
	}
	c, err := rc.db.Count(context.Background(), storage.Filter{})
	if err != nil || c != n {
		t.Fatalf("stored %d deliveries (%v), want %d", c, err, n)
	}
	t.Logf("peak heap growth %d MiB for %d concurrent deliveries", peak>>20, n)
	if peak > 256<<20 {
		t.Errorf("heap grew by %d MiB", peak>>20)
	}
}

// TestRefusedRequestsAreNotRecorded: requests Go's HTTP server refuses
// itself, before any handler runs, get its refusal and are not recorded
// (the service never sends them; docs/security.md says what is and is not
// recorded). The receiver goes on recording what comes next.
func TestRefusedRequestsAreNotRecorded(t *testing.T) {
	rc := newReceiver(t, inspector.ServerOptions{})
	for _, tc := range []struct {
		name, raw string
		status    int
	}{
		{"two different Content-Lengths", "POST /hooks?a=1 HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 5\r\nContent-Length: 7\r\n\r\nhello12", 400},
		{"NUL in a header", "POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Service-Signature: ab\x00cd\r\nContent-Length: 2\r\n\r\n{}", 400},
		{"no Host", "POST /hooks HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 400},
		{"unsupported transfer coding", "POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
		{"malformed request line", "POST /hooks HTTP/1.1 extra\r\nHost: 127.0.0.1\r\n\r\n", 400},
		{"an expectation other than 100-continue", "POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n{}", 417},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp := rc.raw(t, tc.raw, nil); resp.StatusCode != tc.status {
				t.Fatalf("answered %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	r := rc.record(t, rc.raw(t, post("/after", nil, []byte(`{}`)), nil))
	if n, err := rc.db.Count(context.Background(), storage.Filter{}); err != nil || n != 1 || r.Delivery.Path != "/after" {
		t.Fatalf("%d deliveries stored (%v), want only /after", n, err)
	}
}
