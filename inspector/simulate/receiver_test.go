package simulate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

// store is a minimal in-memory inspector.Store, so this end-to-end test
// goes through the real receiver and engine without SQLite.
type store struct {
	mu       sync.Mutex
	next     int64
	rows     map[int64]*inspector.Delivery
	analyses map[int64]*inspector.Analysis
}

func (s *store) ids() []int64 {
	var ids []int64
	for id := range s.analyses {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (s *store) InsertDelivery(_ context.Context, d *inspector.Delivery) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	cp := *d
	cp.ID = s.next
	cp.Body = append([]byte(nil), d.Body...)
	s.rows[cp.ID] = &cp
	return cp.ID, nil
}

func (s *store) SaveAnalysis(_ context.Context, a *inspector.Analysis) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.analyses[a.DeliveryID] = a
	return nil
}

func (s *store) FirstEventCopy(_ context.Context, uuid string) (inspector.EventCopy, int, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first inspector.EventCopy
	n := 0
	for _, id := range s.ids() {
		for _, e := range s.analyses[id].Events {
			if e.UUID == uuid {
				if n == 0 {
					first = inspector.EventCopy{DeliveryID: id, Hash: e.Hash, ReceivedAt: s.rows[id].ReceivedAt}
				}
				n++
			}
		}
	}
	return first, n, n > 0, nil
}

func (s *store) FirstHookDelivery(_ context.Context, hook string) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.ids() {
		if s.analyses[id].HookUUID == hook {
			return id, true, nil
		}
	}
	return 0, false, nil
}

func (s *store) LatestForSubject(_ context.Context, subject string) (string, time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var uuid string
	var at time.Time
	found := false
	for _, id := range s.ids() {
		for _, e := range s.analyses[id].Events {
			if e.Subject == subject && (!found || e.GeneratedAt.After(at)) {
				uuid, at, found = e.UUID, e.GeneratedAt, true
			}
		}
	}
	return uuid, at, found, nil
}

func (s *store) Unanalyzed(context.Context, int64, int) ([]*inspector.Delivery, error) {
	return nil, nil
}

// TestThroughReceiver sends every type and the at-least-once scenario to
// the real receiver and checks what the engine concluded.
func TestThroughReceiver(t *testing.T) {
	secret := []byte("receiver-secret")
	st := &store{rows: map[int64]*inspector.Delivery{}, analyses: map[int64]*inspector.Analysis{}}
	e := inspector.NewEngine(st, inspector.Options{Secrets: [][]byte{secret}})
	var mu sync.Mutex
	var recs []*inspector.Record
	cancel := e.Subscribe(func(r *inspector.Record) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	})
	defer cancel()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()

	g := simulate.New(21)
	var msgs []simulate.Message
	for _, typ := range catalog.TypeNames() {
		msgs = append(msgs, g.Message(g.Event(typ)))
	}
	alo, err := g.Scenario(simulate.ScenarioAtLeastOnce, simulate.ScenarioOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, alo...)
	for _, m := range msgs {
		req, err := m.Request(context.Background(), srv.URL+"/hooks", secret)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("receiver answered %d", resp.StatusCode)
		}
	}
	if err := e.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != len(msgs) {
		t.Fatalf("%d analyses for %d deliveries", len(recs), len(msgs))
	}
	dups, resends := 0, 0
	for i, r := range recs {
		a := r.Analysis
		if a.Signature.Status != inspector.SignatureValid || a.Error != nil || len(a.Problems) != 0 {
			t.Errorf("delivery %d: signature %s (%s), error %v, problems %+v", i, a.Signature.Status, a.Signature.Reason, a.Error, a.Problems)
		}
		for _, ev := range a.Events {
			if len(ev.Problems) != 0 {
				t.Errorf("delivery %d %s: %+v", i, ev.Type, ev.Problems)
			}
			if ev.Divergent {
				t.Errorf("delivery %d %s: a copy of the same event is reported divergent", i, ev.Type)
			}
			if ev.Duplicate {
				dups++
			}
		}
		if a.Resend {
			resends++
		}
	}
	// at-least-once: 9 events each sent at least twice, plus one whole resend.
	if dups < 9 || resends != 1 {
		t.Errorf("ledger saw %d duplicate events and %d resent messages", dups, resends)
	}
}
