package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// manyEvents is a valid message whose events array holds n copies of ev.
func manyEvents(n int, ev string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"hook":{"uuid":"h-many"},"events":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ev)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// A 3 MB message of a million empty events (under the body cap) is
// analyzed in bounded memory: the first MaxEventsAnalyzed events, and a
// notice on the delivery saying the rest were not (it drove a listener to
// 17.9 GB and a 121 MB stored analysis, then "string or blob too big").
func TestAnalysisOfAHugeMessageIsBounded(t *testing.T) {
	body := manyEvents(1_000_000, "{}")
	eng := NewEngine(newMemStore(), Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := eng.Analyze(context.Background(), &Delivery{ID: 1, Method: "POST", Body: body, BodyLength: int64(len(body))})
	runtime.ReadMemStats(&after)
	if len(a.Events) != MaxEventsAnalyzed || a.Error != nil {
		t.Fatalf("%d events analyzed (error %v), want the first %d", len(a.Events), a.Error, MaxEventsAnalyzed)
	}
	if !strings.Contains(fmt.Sprint(a.Problems), "the message holds 1000000 events; Hookscope analyzed the first 1000") {
		t.Errorf("the delivery does not say its events were cut: %+v", a.Problems)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("analysis allocated %d MB for a %d-byte body", alloc>>20, len(body))
	}
	if b, _ := json.Marshal(a); len(b) > maxAnalysisBytes {
		t.Errorf("stored analysis of %d bytes", len(b))
	}
	// Cut, the message still says what is wrong with it as a whole.
	bad := append(manyEvents(2000, "{}"), '}')
	if a := eng.Analyze(context.Background(), &Delivery{ID: 2, Method: "POST", Body: bad}); a.Error == nil || !strings.Contains(a.Error.Reason, "after the JSON object") {
		t.Errorf("a message with trailing data, cut: %+v", a.Error)
	}
}

// failingStore fails the analysis saves of one delivery (as SQLite does
// for an analysis it cannot take), not the others.
type failingStore struct {
	*memStore
	mu    sync.Mutex
	bad   int64
	saves map[int64]int
}

func (f *failingStore) SaveAnalysis(ctx context.Context, a *Analysis) error {
	f.mu.Lock()
	f.saves[a.DeliveryID]++
	f.mu.Unlock()
	if a.DeliveryID == f.bad && len(a.Events) > 0 {
		return errors.New("string or blob too big")
	}
	return f.memStore.SaveAnalysis(ctx, a)
}

// A delivery whose analysis cannot be saved is saved as failed, once,
// saying why, and the ones after it are analyzed (it was retried forever,
// and every later delivery stayed unanalyzed).
func TestFailedAnalysisIsMarkedOnceAndNeverBlocks(t *testing.T) {
	fs := &failingStore{memStore: newMemStore(), bad: 2, saves: map[int64]int{}}
	log := &lines{}
	eng := NewEngine(fs, Options{Logf: log.logf})
	ctx := context.Background()
	for i := range 4 {
		body := message(fmt.Sprint("h", i), event(fmt.Sprint("e", i), "media.ready", "m", "2026-01-01T00:00:00Z"))
		if _, err := eng.Ingest(ctx, &Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 4; id++ {
		a := fs.analyses[id]
		switch {
		case a == nil:
			t.Errorf("delivery %d not analyzed", id)
		case id == 2 && (a.Error == nil || !strings.Contains(a.Error.Reason, "could not store this delivery's analysis (") || len(a.Events) != 0):
			t.Errorf("the failing delivery's analysis: %+v", a)
		case id != 2 && (a.Error != nil || len(a.Events) != 1):
			t.Errorf("delivery %d: %+v", id, a)
		}
	}
	if n := fs.saves[2]; n != 2 {
		t.Errorf("the failing delivery was saved %d times, want 2 (its analysis, then as failed)", n)
	}
	if log.count("analysis of delivery 2 failed and is marked so") != 1 {
		t.Errorf("reports:\n%s", log)
	}
	if err := eng.Drain(ctx); err != nil || fs.saves[2] != 2 {
		t.Errorf("a second drain touched it again: %v, %d saves", err, fs.saves[2])
	}
}

// A stop is honoured between deliveries, whatever the backlog: Run
// returns, and what it did not reach stays unanalyzed for the next start.
func TestRunStopsWithABacklog(t *testing.T) {
	ms := newMemStore()
	eng := NewEngine(ms, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	body := manyEvents(MaxEventsAnalyzed, `{"uuid":"u","type":"media.ready","payload":{"media":{"id":"m"}}}`)
	for range 200 {
		if _, err := eng.Ingest(ctx, &Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	first := make(chan struct{})
	var once sync.Once
	eng.Subscribe(func(*Record) { once.Do(func() { close(first) }) })
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	<-first
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	ms.mu.Lock()
	n := len(ms.analyses)
	ms.mu.Unlock()
	if n == 0 || n == 200 {
		t.Errorf("%d of 200 analyzed before the stop; want some, not all", n)
	}
}

// FuzzAnalysisBounded: whatever the body, an analysis keeps at most
// MaxEventsAnalyzed events and maxProblemsPerEvent (+1 notice) problems
// per event, and its stored form stays near maxAnalysisBytes.
func FuzzAnalysisBounded(f *testing.F) {
	// Small seeds: the fuzzer mutates them; analysing a thousand real
	// events per input would leave it a few inputs a second.
	f.Add(manyEvents(MaxEventsAnalyzed+1, "{}"))
	f.Add(manyEvents(3, `{"type":"media.updated","payload":{"media":{"id":"`+strings.Repeat("m", 5000)+`"}}}`))
	f.Add([]byte(`{"events":[{},{}],"hook":{"uuid":"h"},"events":[{}]}`))
	f.Add([]byte(`{"hook":{"uuid":"h"},"events":[` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `]}`))
	eng := NewEngine(newMemStore(), Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		a := eng.Analyze(context.Background(), &Delivery{ID: 1, Method: "POST", Body: body, BodyLength: int64(len(body))})
		if len(a.Events) > MaxEventsAnalyzed {
			t.Fatalf("%d events analyzed", len(a.Events))
		}
		for _, e := range a.Events {
			if len(e.Problems) > maxProblemsPerEvent+1 {
				t.Fatalf("%d problems kept for one event", len(e.Problems))
			}
		}
		if b, err := json.Marshal(a); err != nil || len(b) > maxAnalysisBytes+64<<10 {
			t.Fatalf("stored analysis: %d bytes, %v", len(b), err)
		}
	})
}
