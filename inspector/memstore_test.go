package inspector

import (
	"context"
	"sort"
	"sync"
	"time"
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

func (m *memStore) FirstEventCopy(ctx context.Context, uuid string) (EventCopy, int, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failRead != nil {
		return EventCopy{}, 0, false, m.failRead
	}
	var first EventCopy
	n := 0
	for _, id := range m.ids() {
		for _, e := range m.analyses[id].Events {
			if e.UUID == uuid {
				if n == 0 {
					first = EventCopy{DeliveryID: id, Hash: e.Hash, ReceivedAt: m.rows[id].ReceivedAt}
				}
				n++
			}
		}
	}
	return first, n, n > 0, nil
}

func (m *memStore) FirstHookDelivery(ctx context.Context, hook string) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failRead != nil {
		return 0, false, m.failRead
	}
	for _, id := range m.ids() {
		if m.analyses[id].HookUUID == hook {
			return id, true, nil
		}
	}
	return 0, false, nil
}

func (m *memStore) LatestForSubject(ctx context.Context, subject string) (string, time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failRead != nil {
		return "", time.Time{}, false, m.failRead
	}
	var uuid string
	var at time.Time
	found := false
	for _, id := range m.ids() {
		for _, e := range m.analyses[id].Events {
			if e.Subject == subject && (!found || e.GeneratedAt.After(at)) {
				uuid, at, found = e.UUID, e.GeneratedAt, true
			}
		}
	}
	return uuid, at, found, nil
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
