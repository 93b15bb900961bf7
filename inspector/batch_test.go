package inspector

import (
	"testing"
	"time"
)

// While deliveries arrive, an analysis chunk is sized from the last
// save's cost so its commit (which the next ack waits for) stays within
// saveBudget; once they stop, the backlog goes in big chunks.
func TestChunkSizeKeepsCommitsShortWhileReceiving(t *testing.T) {
	for _, tc := range []struct {
		name      string
		receiving bool
		cost      time.Duration // per delivery, of the last save (0: none yet)
		waiting   int
		want      int
	}{
		{"backlog, nothing arriving", false, time.Millisecond, 5000, maxChunk},
		{"backlog while receiving", true, time.Millisecond, 5000, int(saveBudget / time.Millisecond)},
		{"cheap saves while receiving", true, 20 * time.Microsecond, 5000, maxChunk},
		{"slow saves while receiving", true, 50 * time.Millisecond, 5000, minBusyChunk},
		{"no save measured yet", true, 0, 5000, maxChunk},
		{"little waiting", true, time.Millisecond, 10, min(minChunk, int(saveBudget/time.Millisecond))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(newMemStore(), Options{})
			e.saveCost.Store(int64(tc.cost))
			if tc.receiving {
				e.q.push(&Delivery{ID: 1})
			}
			if got := e.chunkSize(tc.waiting); got != tc.want {
				t.Errorf("chunkSize(%d) = %d, want %d", tc.waiting, got, tc.want)
			}
		})
	}
}
