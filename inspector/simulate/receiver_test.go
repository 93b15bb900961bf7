package simulate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

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

func (s *store) Ledger(_ context.Context, hooks, uuids, subjects []string) (inspector.Ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := inspector.Ledger{Hooks: map[string]int64{}, Events: map[string]inspector.EventCopies{}, Subjects: map[string]inspector.SubjectEvent{}}
	for _, id := range s.ids() {
		a := s.analyses[id]
		if _, ok := l.Hooks[a.HookUUID]; !ok && a.HookUUID != "" && slices.Contains(hooks, a.HookUUID) {
			l.Hooks[a.HookUUID] = id
		}
		for _, e := range a.Events {
			if slices.Contains(uuids, e.UUID) {
				c, ok := l.Events[e.UUID]
				if !ok {
					c.First = inspector.EventCopy{DeliveryID: id, Hash: e.Hash, ReceivedAt: s.rows[id].ReceivedAt}
				}
				c.Copies++
				l.Events[e.UUID] = c
			}
			if cur, ok := l.Subjects[e.Subject]; slices.Contains(subjects, e.Subject) && !e.GeneratedAt.IsZero() && (!ok || e.GeneratedAt.After(cur.GeneratedAt)) {
				l.Subjects[e.Subject] = inspector.SubjectEvent{UUID: e.UUID, GeneratedAt: e.GeneratedAt}
			}
		}
	}
	return l, nil
}

func (s *store) Unanalyzed(context.Context, int64, int) ([]*inspector.Delivery, error) {
	return nil, nil
}

// TestThroughReceiver sends every type and the at-least-once scenario to
// the real receiver and checks what the engine concluded.
func TestThroughReceiver(t *testing.T) {
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
	recs := postAll(t, msgs)
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

// TestLedgerSeesOnlyMeantDuplicates runs every scenario and every type,
// each from a generator of the same seed (as separate `hookscope send
// --seed 7` runs would), through the real receiver and engine, and holds
// the ledger's duplicates to the copies the simulator made on purpose: no
// uuid shared by two runs, no copy in the same message as its twin, no
// divergent copy, one whole-message re-send per at-least-once run.
func TestLedgerSeesOnlyMeantDuplicates(t *testing.T) {
	const seed = 7
	type run struct {
		name string
		msgs []simulate.Message
	}
	var runs []run
	for _, name := range simulate.Scenarios() {
		opts := simulate.ScenarioOptions{Batch: 4, Duplicates: 1}
		if name == simulate.ScenarioAtLeastOnce {
			opts = simulate.ScenarioOptions{Duplicates: 2} // batched by 3, shuffled: its own
		}
		ms, err := simulate.New(seed).Scenario(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run{name, ms})
	}
	// --count 2: the same scenario twice from one generator is two media.
	// (Another seed: with seed 7 its first run would be the media-lifecycle
	// run above again, the same events reproduced.)
	g := simulate.New(seed + 1)
	var twice []simulate.Message
	for range 2 {
		ms, _ := g.Scenario(simulate.ScenarioMediaLifecycle, simulate.ScenarioOptions{})
		twice = append(twice, ms...)
	}
	runs = append(runs, run{"media-lifecycle x2", twice})
	for _, types := range [][]string{catalog.TypeNames(), {catalog.TypeMediaReady}, {catalog.TypeMediaDeleted}} {
		g := simulate.New(seed)
		var evs []simulate.Event
		for _, typ := range types {
			evs = append(evs, g.Event(typ))
		}
		runs = append(runs, run{"types " + strings.Join(types, ","), g.Batch(evs, simulate.ScenarioOptions{Batch: 5, Duplicates: 1})})
	}

	meant, meantResends := 0, 0
	var all []simulate.Message
	for _, r := range runs {
		seen := map[string]int{}
		for _, m := range r.msgs {
			inMsg := map[string]bool{}
			for _, e := range m.Events {
				if inMsg[e.UUID] {
					t.Errorf("%s: message %s carries event %s twice; a copy goes in another message", r.name, m.Hook.UUID, e.UUID)
				}
				inMsg[e.UUID] = true
				if seen[e.UUID] > 0 {
					meant++
				}
				seen[e.UUID]++
			}
		}
		if r.name == simulate.ScenarioAtLeastOnce {
			meantResends++
			// Every event three times (two copies), the re-sent message's
			// events once more.
			resent := r.msgs[len(r.msgs)-1]
			for u, n := range seen {
				want := 3
				for _, e := range resent.Events {
					if e.UUID == u {
						want++
					}
				}
				if n != want {
					t.Errorf("at-least-once: event %s sent %d times, want %d", u, n, want)
				}
			}
			if len(seen) != 9 || len(r.msgs[0].Events) != 3 {
				t.Errorf("at-least-once: %d events, first message of %d (want 9, batched by 3)", len(seen), len(r.msgs[0].Events))
			}
		}
		all = append(all, r.msgs...)
	}

	recs := postAll(t, all)
	dups, resends := 0, 0
	for _, r := range recs {
		if r.Analysis.Resend {
			resends++
		}
		for _, ev := range r.Analysis.Events {
			if ev.Duplicate {
				dups++
			}
			if ev.Divergent {
				t.Errorf("delivery %d %s %s: a divergent copy the simulator did not make", r.Delivery.ID, ev.Type, ev.UUID)
			}
		}
	}
	if dups != meant || resends != meantResends {
		t.Errorf("ledger: %d duplicate events and %d re-sent messages; the simulator made %d and %d", dups, resends, meant, meantResends)
	}
}

// postAll sends msgs, signed, one at a time to the real receiver on an
// in-memory store and returns the engine's analyses in order.
func postAll(t *testing.T, msgs []simulate.Message) []*inspector.Record {
	t.Helper()
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
	for i, status := range sendAll(t, srv.URL+"/hooks", secret, msgs) {
		if status != http.StatusOK {
			t.Fatalf("message %d: the receiver answered %d", i, status)
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
	return recs
}

// sendAll posts msgs to url, signed with secret, one after the other, and
// returns the answers' statuses.
func sendAll(t *testing.T, url string, secret []byte, msgs []simulate.Message) []int {
	t.Helper()
	var out []int
	for _, m := range msgs {
		req, err := m.Request(context.Background(), url, secret)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		out = append(out, resp.StatusCode)
	}
	return out
}
