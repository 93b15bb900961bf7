package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

// fakeStore is an in-memory Store with the filter semantics the views rely on.
type fakeStore struct {
	mu   sync.Mutex
	recs map[int64]*inspector.Record
	kv   map[string][]byte
	next int64
}

func newFakeStore() *fakeStore {
	return &fakeStore{recs: map[int64]*inspector.Record{}, kv: map[string][]byte{}}
}

// add stores a delivery of one event and returns its record.
func (s *fakeStore) add(typ, summary string, sig inspector.SignatureStatus, mutate func(*inspector.Record)) *inspector.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := s.next
	uuid := fmt.Sprintf("ev%04d", id)
	raw := json.RawMessage(fmt.Sprintf(`{"uuid":%q,"type":%q,"payload":{"media":{"id":"m%d","name":"Clip %d"}},"metadata":{"account_id":"acc1"},"generated_at":"2026-11-22T03:00:00Z"}`, uuid, typ, id, id))
	body := []byte(fmt.Sprintf(`{"hook":{"uuid":"h%d"},"events":[%s]}`, id, raw))
	r := &inspector.Record{
		Delivery: &inspector.Delivery{ID: id, ReceivedAt: time.Date(2026, 11, 22, 3, 0, int(id), 0, time.UTC), Method: "POST", Path: "/webhooks",
			Headers: []inspector.Header{{Name: "User-Agent", Value: "Service-Webhooks/0.0.47"}, {Name: "X-Service-Signature", Value: "abc123"}, {Name: "Content-Type", Value: "application/json"}},
			Body:    body, BodyLength: int64(len(body)), RemoteAddr: "127.0.0.1:5555", Status: 200},
		Analysis: &inspector.Analysis{DeliveryID: id, Signature: inspector.SignatureResult{Status: sig, Received: "abc123", SecretIndex: -1, Expected: []string{"def456"}, Reason: "the digest does not match"},
			HookUUID: fmt.Sprintf("h%d", id),
			Events:   []inspector.EventAnalysis{{UUID: uuid, Type: typ, Summary: summary, Raw: raw, Copies: 1, GeneratedRaw: "2026-11-22T03:00:00Z"}}},
	}
	if mutate != nil {
		mutate(r)
	}
	s.recs[id] = r
	return r
}

func summaryOf(r *inspector.Record) storage.Summary {
	d, a := r.Delivery, r.Analysis
	s := storage.Summary{ID: d.ID, ReceivedAt: d.ReceivedAt, Method: d.Method, Path: d.Path, Status: d.Status, BodyLength: d.BodyLength, Truncated: d.Truncated,
		Source: d.Source, RelaySeq: d.RelaySeq}
	if a != nil {
		s.Analyzed = true
		s.Signature = a.Signature.Status
		s.EventCount = len(a.Events)
		if len(a.Events) > 0 {
			s.FirstType, s.FirstSummary = a.Events[0].Type, a.Events[0].Summary
		}
		s.Duplicates = a.Duplicates()
		s.Divergent = a.Divergent()
		s.Problems = a.ProblemCount()
	}
	return s
}

// match applies the only filters the fake honours: the ids and the paging
// bound the list and its live updates send. Filtering by content is the
// store's (type across a batch, text by words, …): tests of it run against
// a real store (newStoreHarness), so the fake refuses such filters rather
// than imitate them.
func (s *fakeStore) match(r *inspector.Record, f storage.Filter) bool {
	if len(f.Types) > 0 || len(f.Signatures) > 0 || f.DuplicatesOnly || f.DivergentOnly || f.ProblemsOnly || f.Text != "" || f.Path != "" || !f.Since.IsZero() {
		panic(fmt.Sprintf("fakeStore cannot filter by %+v: use newStoreHarness", f))
	}
	id := r.Delivery.ID
	if len(f.IDs) > 0 && !slices.Contains(f.IDs, id) {
		return false
	}
	return f.BeforeID == 0 || id < f.BeforeID
}

func (s *fakeStore) List(_ context.Context, f storage.Filter, limit int) ([]storage.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.Summary
	for id := s.next; id > 0 && len(out) < limit; id-- {
		if r, ok := s.recs[id]; ok && s.match(r, f) {
			out = append(out, summaryOf(r))
		}
	}
	return out, nil
}

func (s *fakeStore) Count(_ context.Context, f storage.Filter) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.recs {
		if s.match(r, f) {
			n++
		}
	}
	return n, nil
}

func (s *fakeStore) Stats(context.Context) (storage.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st storage.Stats
	for _, r := range s.recs {
		st.Deliveries++
		st.Events += int64(len(r.Analysis.Events))
		if r.Analysis.Signature.Status == inspector.SignatureInvalid {
			st.InvalidSignatures++
		}
		st.Duplicates += int64(r.Analysis.Duplicates())
	}
	return st, nil
}

func (s *fakeStore) Get(_ context.Context, id int64) (*inspector.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[id]
	if !ok {
		return nil, fmt.Errorf("delivery %d not found", id)
	}
	return r, nil
}

func (s *fakeStore) EventCopies(_ context.Context, uuid string) ([]storage.EventRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.EventRef
	for id := int64(1); id <= s.next; id++ {
		r, ok := s.recs[id]
		if !ok {
			continue
		}
		for i, e := range r.Analysis.Events {
			if e.UUID == uuid {
				out = append(out, storage.EventRef{DeliveryID: id, Index: i, ReceivedAt: r.Delivery.ReceivedAt, Duplicate: e.Duplicate, Divergent: e.Divergent})
			}
		}
	}
	return out, nil
}

func (s *fakeStore) Delete(_ context.Context, ids ...int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.recs, id)
	}
	return nil
}

// EachNarrowed hands every delivery within the id bounds to fn, in the
// order asked, and lets the expression decide (rules.Source: a source may
// return more than the narrowing allows).
func (s *fakeStore) EachNarrowed(_ context.Context, q rules.Query, fn func(*rules.Input) error) error {
	s.mu.Lock()
	var recs []*inspector.Record
	for id := int64(1); id <= s.next; id++ {
		r, ok := s.recs[id]
		if !ok || q.MinID > 0 && id < q.MinID || q.MaxID > 0 && id > q.MaxID || len(q.IDs) > 0 && !slices.Contains(q.IDs, id) {
			continue
		}
		recs = append(recs, r)
	}
	s.mu.Unlock()
	if q.NewestFirst {
		slices.Reverse(recs)
	}
	for _, r := range recs {
		if err := fn(&rules.Input{Record: r}); err != nil {
			return err
		}
	}
	return nil
}

// EachArrival gives the deliveries of each hook uuid, oldest first.
func (s *fakeStore) EachArrival(_ context.Context, hooks []string, fn func(resends.Arrival) error) error {
	s.mu.Lock()
	byHook := map[string][]resends.Arrival{}
	for id := int64(1); id <= s.next; id++ {
		r, ok := s.recs[id]
		if !ok || r.Analysis == nil || r.Analysis.HookUUID == "" || hooks != nil && !slices.Contains(hooks, r.Analysis.HookUUID) {
			continue
		}
		d := r.Delivery
		byHook[r.Analysis.HookUUID] = append(byHook[r.Analysis.HookUUID], resends.Arrival{HookUUID: r.Analysis.HookUUID, DeliveryID: id, ReceivedAt: d.ReceivedAt, Status: d.Status, Answer: d.Answer})
	}
	s.mu.Unlock()
	for _, h := range slices.Sorted(maps.Keys(byHook)) {
		for _, a := range byHook[h] {
			if err := fn(a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *fakeStore) Value(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return v, ok, nil
}

func (s *fakeStore) SetValue(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv[key] = append([]byte(nil), value...)
	return nil
}

// fakeEngine records what the window asks of the engine.
type fakeEngine struct {
	mu      sync.Mutex
	sub     func(*inspector.Record)
	secrets [][]byte
	answer  []string
	maxBody int64
}

func (e *fakeEngine) Subscribe(fn func(*inspector.Record)) func() {
	e.mu.Lock()
	e.sub = fn
	e.mu.Unlock()
	return func() {}
}
func (e *fakeEngine) SetSecrets(s [][]byte) { e.secrets = s }
func (e *fakeEngine) SetMaxBody(n int64)    { e.maxBody = n }

// setAnswerRules is the station's SetAnswerRules, recorded.
func (e *fakeEngine) setAnswerRules(lines []string) error {
	e.mu.Lock()
	e.answer = lines
	e.mu.Unlock()
	return nil
}

// fakeReceiver pretends to listen; busy addresses are another program's.
type fakeReceiver struct {
	addr string
	err  error
	busy map[string]bool
}

func (r *fakeReceiver) Addr() string { return r.addr }
func (r *fakeReceiver) Err() error   { return r.err }
func (r *fakeReceiver) Restart(addr string) error {
	if r.busy[addr] {
		err := &inspector.PortInUseError{Addr: addr}
		if r.addr == "" {
			r.err = err
		}
		return err
	}
	r.addr, r.err = addr, nil
	return nil
}

// fakeTunnel is a tunnel that is "installed" and becomes ready at once.
type fakeTunnel struct {
	installed        bool
	st               tunnel.Status
	binary, localURL string // as last configured
}

func (t *fakeTunnel) Installed() (bool, string) { return t.installed, "install cloudflared" }
func (t *fakeTunnel) Configure(binary, localURL string) {
	t.binary, t.localURL = binary, localURL
}
func (t *fakeTunnel) Start() error {
	t.st = tunnel.Status{State: tunnel.Ready, PublicURL: "https://quiet-lake.trycloudflare.com"}
	return nil
}
func (t *fakeTunnel) Stop()                 { t.st = tunnel.Status{State: tunnel.Stopped} }
func (t *fakeTunnel) Status() tunnel.Status { return t.st }
func (t *fakeTunnel) Subscribe(func(tunnel.Event)) func() {
	return func() {}
}

// memVault keeps secrets in memory.
type memVault struct {
	secrets [][]byte
	relay   string
}

func (v *memVault) LoadRelay() (string, error) { return v.relay, nil }
func (v *memVault) SaveRelay(c string) error   { v.relay = c; return nil }

func (v *memVault) Load() ([][]byte, error) { return v.secrets, nil }
func (v *memVault) Save(s [][]byte) error   { v.secrets = s; return nil }
func (v *memVault) Where() string           { return "memory (test)" }

// fakeRelay is a relay link that connects at once (or refuses with err)
// and reports what publish gives it.
type fakeRelay struct {
	mu     sync.Mutex
	err    error
	conn   *relay.ConnString
	state  relay.State
	linked bool
	subs   []func(relay.State)
	// afterRead runs once after the next RelayState has read the state
	// (a change racing the reader).
	afterRead func()
}

func (f *fakeRelay) SetRelay(_ context.Context, conn *relay.ConnString) error {
	if f.err != nil {
		return f.err
	}
	f.mu.Lock()
	f.conn, f.linked = conn, conn != nil
	st := relay.State{}
	if conn != nil {
		st = relay.State{Phase: relay.Connecting}
	}
	f.mu.Unlock()
	f.publish(st)
	return nil
}

func (f *fakeRelay) SubscribeRelay(fn func(relay.State)) func() {
	f.mu.Lock()
	f.subs = append(f.subs, fn)
	f.mu.Unlock()
	return func() {}
}

func (f *fakeRelay) RelayState() (relay.State, bool) {
	f.mu.Lock()
	st, linked, after := f.state, f.linked, f.afterRead
	f.afterRead = nil
	f.mu.Unlock()
	if after != nil {
		after()
	}
	return st, linked
}

func (f *fakeRelay) publish(st relay.State) {
	f.mu.Lock()
	f.state = st
	subs := slices.Clone(f.subs)
	f.mu.Unlock()
	for _, fn := range subs {
		fn(st)
	}
}
