package inspector

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSink records what the receiver commits to it, or fails, or cuts
// what is over its limit as the relay's sink does.
type fakeSink struct {
	mu    sync.Mutex
	got   []*Delivery
	fail  error
	limit int
}

func (s *fakeSink) Record(_ context.Context, d *Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.limit > 0 && len(d.Body) > s.limit {
		d.Body, d.Truncated, d.Status = d.Body[:s.limit], true, http.StatusRequestEntityTooLarge
	}
	s.got = append(s.got, d)
	d.ID = int64(100 + len(s.got))
	return nil
}

// TestSinkReplacesTheStore: with a Sink the receiver answers after the
// sink's Record (200 with its id), 503 when it fails (nothing recorded,
// the sender tries again), the sink's 413 when it stored the delivery
// cut; analysis judges each delivery alone, without a store, and reports
// it to the subscribers.
func TestSinkReplacesTheStore(t *testing.T) {
	secret := []byte("s3cret")
	body := `{"hook":{"uuid":"h1","event_count":0},"events":[]}`
	for _, tc := range []struct {
		name       string
		sink       *fakeSink
		body       string
		wantStatus int
		wantID     string
		recorded   bool
	}{
		{"stored", &fakeSink{}, body, 200, "101", true},
		{"sink fails", &fakeSink{fail: errors.New("no stream")}, body, 503, "", false},
		{"sink cuts", &fakeSink{limit: 10}, body, 413, "101", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(nil, Options{Sink: tc.sink, Secrets: [][]byte{secret}})
			recs := make(chan *Record, 1)
			e.Subscribe(func(r *Record) { recs <- r })
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			defer func() { cancel(); <-done }()
			srv := httptest.NewServer(e.Handler())
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks", strings.NewReader(tc.body))
			req.Header.Set(SignatureHeader, Sign(secret, []byte(tc.body)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || resp.Header.Get("X-Hookscope-Delivery") != tc.wantID {
				t.Fatalf("answer %d (delivery %q), want %d (%q)", resp.StatusCode, resp.Header.Get("X-Hookscope-Delivery"), tc.wantStatus, tc.wantID)
			}
			if !tc.recorded {
				if len(tc.sink.got) != 0 {
					t.Fatalf("recorded %d", len(tc.sink.got))
				}
				return
			}
			select {
			case r := <-recs:
				if r.Delivery.ID != 101 || r.Analysis == nil {
					t.Fatalf("record %+v", r)
				}
				if want := SignatureValid; tc.sink.limit == 0 && r.Analysis.Signature.Status != want {
					t.Errorf("signature %s, want %s", r.Analysis.Signature.Status, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no record within 10 s")
			}
		})
	}
}

// memTap counts the deliveries it is told of.
type memTap struct {
	mu     sync.Mutex
	stored []int64
}

func (m *memTap) Relays(*Delivery) bool                               { return false }
func (m *memTap) Relay(http.ResponseWriter, *http.Request, *Delivery) {}
func (m *memTap) Stored(d *Delivery) {
	m.mu.Lock()
	m.stored = append(m.stored, d.ID)
	m.mu.Unlock()
}

// TestCommittedIsAnalysedAndTapped: deliveries another path committed to
// the store while analysis runs are analysed and saved as the receiver's
// are, and the tap (forwarding) hears of each, in order.
func TestCommittedIsAnalysedAndTapped(t *testing.T) {
	st := newMemStore()
	e := NewEngine(st, Options{})
	tap := &memTap{}
	e.SetTap(tap)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var ds []*Delivery
	for i := range 3 {
		d := &Delivery{Method: "POST", Path: "/", Source: "relay", RelaySeq: uint64(i + 1), Body: []byte(`{"hook":{"uuid":"h"},"events":[]}`)}
		d.BodyLength = int64(len(d.Body))
		id, err := st.InsertDelivery(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		d.ID = id
		ds = append(ds, d)
	}
	e.Committed(ds...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		n := len(st.analyses)
		st.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 analysed after 10 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if len(tap.stored) != 3 || tap.stored[0] != ds[0].ID || tap.stored[2] != ds[2].ID {
		t.Errorf("tap heard of %v", tap.stored)
	}
}
