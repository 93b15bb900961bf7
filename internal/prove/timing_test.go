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

func (s *timedStore) Ledger(ctx context.Context, hooks, uuids, subjects []string) (inspector.Ledger, error) {
	defer s.add("Ledger", time.Now())
	return s.Store.Ledger(ctx, hooks, uuids, subjects)
}

func (s *timedStore) Unanalyzed(ctx context.Context, after int64, limit int) ([]*inspector.Delivery, error) {
	defer s.add("Unanalyzed", time.Now())
	return s.Store.Unanalyzed(ctx, after, limit)
}
