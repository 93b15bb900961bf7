package inspector

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) logf(f string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, fmt.Sprintf(f, a...))
}

func (l *lines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.l {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

// A store that refuses every insert (a full disk) is reported once when it
// starts and once when it stops, not once per refused request.
func TestStoreFaultReportedOnce(t *testing.T) {
	ms := newMemStore()
	ms.failWrite = errors.New("write inbox: no space left on device")
	log := &lines{}
	eng := NewEngine(ms, Options{Logf: log.logf})
	srv, err := Serve("127.0.0.1:0", eng.Handler(), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	post := func() int {
		resp, err := http.Post("http://"+srv.Addr()+"/webhooks", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 200 {
		if code := post(); code != http.StatusServiceUnavailable {
			t.Fatalf("refused delivery answered %d", code)
		}
	}
	ms.mu.Lock()
	ms.failWrite = nil
	ms.mu.Unlock()
	if code := post(); code != http.StatusOK {
		t.Fatalf("after the disk freed: %d", code)
	}
	if log.count("cannot store deliveries since") != 1 || log.count("no space left on device; answering 503") != 1 ||
		log.count("storing deliveries again after") != 1 || log.count(": 200 requests answered 503 since") != 1 || len(log.l) != 2 {
		t.Fatalf("reports:\n%s", log)
	}
}

// While the store cannot be used, analysis waits and says so once; when
// the store works again it resumes where it stopped, in order; and a stop
// ends it at once, failing store or not.
func TestAnalysisResumesAfterStoreFault(t *testing.T) {
	ms := newMemStore()
	log := &lines{}
	eng := NewEngine(ms, Options{Logf: log.logf})
	var mu sync.Mutex
	var order []int64
	eng.Subscribe(func(r *Record) {
		mu.Lock()
		order = append(order, r.Delivery.ID)
		mu.Unlock()
	})
	ms.setFailRead(errors.New("database or disk is full"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	for i := range 20 {
		body := message(fmt.Sprint("h", i), event(fmt.Sprint("e", i), "media.ready", "m", "2026-01-01T00:00:00Z"))
		if _, err := eng.Ingest(ctx, &Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // several attempts
	mu.Lock()
	analyzed := len(order)
	mu.Unlock()
	if analyzed != 0 || log.count("cannot analyze stored deliveries since") != 1 {
		t.Fatalf("while failing: %d analyzed; reports:\n%s", analyzed, log)
	}
	ms.setFailRead(nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 analyzed after the store recovered; reports:\n%s", n, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i, id := range order {
		if id != int64(i+1) {
			t.Fatalf("analyzed out of order: %v", order)
		}
	}
	if log.count("analyzing stored deliveries again") != 1 {
		t.Errorf("reports:\n%s", log)
	}
	// A stop while the store fails ends Run promptly.
	ms.setFailRead(errors.New("disk I/O error"))
	body := message("late", event("late", "media.ready", "m", "2026-01-01T00:00:00Z"))
	eng.Ingest(ctx, &Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body))})
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not stop within 3 s of its context ending while the store failed")
	}
}

// A body that cannot be read (a broken chunked encoding) is answered 400
// and stored; its analysis says why, not only that the body is empty.
func TestReadErrorExplainsTheDecodeError(t *testing.T) {
	h := newHarness(t, Options{})
	conn, err := net.Dial("tcp", h.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("broken chunked body answered %d, want 400", resp.StatusCode)
	}
	r := h.next()
	if r.Delivery.ReadError == "" || r.Analysis.Error == nil {
		t.Fatalf("read error %q, analysis error %+v", r.Delivery.ReadError, r.Analysis.Error)
	}
	if reason := r.Analysis.Error.Reason; !strings.Contains(reason, "reading the request body failed after 0 bytes") ||
		!strings.Contains(reason, r.Delivery.ReadError) || !strings.Contains(reason, "answered 400") {
		t.Errorf("reason: %q", reason)
	}
}

// gateStore holds every insert until its gate opens.
type gateStore struct {
	*memStore
	gate    chan struct{}
	entered chan struct{}
}

func (g *gateStore) InsertDelivery(ctx context.Context, d *Delivery) (int64, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.memStore.InsertDelivery(ctx, d)
}

// Big bodies are read within the body memory budget: while one holds it,
// the next waits before reading; small bodies never wait.
func TestBigBodiesShareTheBodyBudget(t *testing.T) {
	gs := &gateStore{memStore: newMemStore(), gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	eng := NewEngine(gs, Options{BodyMemory: 300 << 10})
	srv, err := Serve("127.0.0.1:0", eng.Handler(), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	post := func(size int, done chan<- int) {
		resp, err := http.Post("http://"+srv.Addr()+"/webhooks", "application/json", strings.NewReader(strings.Repeat(" ", size)))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}
	done := make(chan int, 3)
	go post(200<<10, done)
	<-gs.entered // the first big body is read and waits in the store
	go post(200<<10, done)
	go post(1<<10, done)
	<-gs.entered // the small one reaches the store
	select {
	case <-gs.entered:
		t.Fatal("a second big body was read while the first held the budget")
	case <-time.After(300 * time.Millisecond):
	}
	close(gs.gate)
	for range 3 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("answer %d", code)
		}
	}
}
