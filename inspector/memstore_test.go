package inspector

import (
	"context"
	"slices"
	"sort"
	"sync"
)

// memStore is an in-memory Store for engine tests, so inspector's tests do
// not depend on SQLite. storage has its own tests of the same contract.
type memStore struct {
	mu        sync.Mutex
	next      int64
	rows      map[int64]*Delivery
	analyses  map[int64]*Analysis
	failWrite error
	// failRead fails every read and every analysis save while set (a
	// store that cannot be used at all: a full disk, a damaged file).
	failRead error
}

func (m *memStore) setFailRead(err error) {
	m.mu.Lock()
	m.failRead = err
	m.mu.Unlock()
}

func newMemStore() *memStore {
	return &memStore{rows: map[int64]*Delivery{}, analyses: map[int64]*Analysis{}}
}

func (m *memStore) InsertDelivery(ctx context.Context, d *Delivery) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWrite != nil {
		return 0, m.failWrite
	}
	m.next++
	cp := *d
	cp.ID = m.next
	cp.Body = append([]byte(nil), d.Body...)
	m.rows[cp.ID] = &cp
	return cp.ID, nil
}

func (m *memStore) SaveAnalysis(ctx context.Context, a *Analysis) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failRead != nil {
		return m.failRead
	}
	m.analyses[a.DeliveryID] = a
	return nil
}

func (m *memStore) ids() []int64 {
	var ids []int64
	for id := range m.analyses {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (m *memStore) Ledger(_ context.Context, hooks, uuids, subjects []string) (Ledger, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failRead != nil {
		return Ledger{}, m.failRead
	}
	l := Ledger{Hooks: map[string]int64{}, Events: map[string]EventCopies{}, Subjects: map[string]SubjectEvent{}}
	for _, id := range m.ids() {
		a := m.analyses[id]
		if _, ok := l.Hooks[a.HookUUID]; !ok && a.HookUUID != "" && slices.Contains(hooks, a.HookUUID) {
			l.Hooks[a.HookUUID] = id
		}
		for _, e := range a.Events {
			if slices.Contains(uuids, e.UUID) {
				c, ok := l.Events[e.UUID]
				if !ok {
					c.First = EventCopy{DeliveryID: id, Hash: e.Hash, ReceivedAt: m.rows[id].ReceivedAt}
				}
				c.Copies++
				l.Events[e.UUID] = c
			}
			if cur, ok := l.Subjects[e.Subject]; slices.Contains(subjects, e.Subject) && !e.GeneratedAt.IsZero() && (!ok || e.GeneratedAt.After(cur.GeneratedAt)) {
				l.Subjects[e.Subject] = SubjectEvent{UUID: e.UUID, GeneratedAt: e.GeneratedAt}
			}
		}
	}
	return l, nil
}

func (m *memStore) Unanalyzed(ctx context.Context, after int64, limit int) ([]*Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failRead != nil {
		return nil, m.failRead
	}
	var ids []int64
	for id := range m.rows {
		if _, ok := m.analyses[id]; !ok && id > after {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []*Delivery
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		cp := *m.rows[id]
		out = append(out, &cp)
	}
	return out, nil
}

func (m *memStore) EachRecord(ctx context.Context, fn func(*Record) error) error {
	m.mu.Lock()
	var recs []*Record
	for _, id := range m.ids() {
		cp := *m.analyses[id]
		recs = append(recs, &Record{Delivery: m.rows[id], Analysis: &cp})
	}
	m.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) UpdateSignature(ctx context.Context, id int64, r SignatureResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.analyses[id].Signature = r
	return nil
}
