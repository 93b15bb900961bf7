package prove

import (
	"context"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// timedStore wraps a Store and adds up the wall time of each method, to
// see where the analysis goroutine waits.
type timedStore struct {
	inspector.Store
	mu    sync.Mutex
	total map[string]time.Duration
	calls map[string]int
}

func (s *timedStore) add(name string, start time.Time) {
	s.mu.Lock()
	s.total[name] += time.Since(start)
	s.calls[name]++
	s.mu.Unlock()
}

func (s *timedStore) SaveAnalysis(ctx context.Context, a *inspector.Analysis) error {
	defer s.add("SaveAnalysis", time.Now())
	return s.Store.SaveAnalysis(ctx, a)
}

func (s *timedStore) FirstEventCopy(ctx context.Context, uuid string) (inspector.EventCopy, int, bool, error) {
	defer s.add("FirstEventCopy", time.Now())
	return s.Store.FirstEventCopy(ctx, uuid)
}

func (s *timedStore) FirstHookDelivery(ctx context.Context, h string) (int64, bool, error) {
	defer s.add("FirstHookDelivery", time.Now())
	return s.Store.FirstHookDelivery(ctx, h)
}

func (s *timedStore) LatestForSubject(ctx context.Context, subj string) (string, time.Time, bool, error) {
	defer s.add("LatestForSubject", time.Now())
	return s.Store.LatestForSubject(ctx, subj)
}

func (s *timedStore) Unanalyzed(ctx context.Context, after int64, limit int) ([]*inspector.Delivery, error) {
	defer s.add("Unanalyzed", time.Now())
	return s.Store.Unanalyzed(ctx, after, limit)
}
