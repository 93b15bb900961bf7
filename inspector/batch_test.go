package inspector

import (
	"testing"
	"time"
)

// Background work steps back by how busy the receiver is: not at all when
// idle, a tenth of the time under steady traffic, a fiftieth in a flood,
// never longer than maxYield.
func TestYieldFor(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		worked  time.Duration
		waiting int64
		want    time.Duration
	}{
		{2 * ms, 0, 0},
		{2 * ms, -1, 0},
		{2 * ms, 1, 18 * ms},
		{2 * ms, FloodWaiting - 1, 18 * ms},
		{2 * ms, FloodWaiting, 98 * ms},
		{2 * ms, 64, 98 * ms},
		{50 * ms, 1, maxYield},
		{50 * ms, 64, maxYield},
	} {
		if got := YieldFor(tc.worked, tc.waiting); got != tc.want {
			t.Errorf("YieldFor(%v, %d) = %v, want %v", tc.worked, tc.waiting, got, tc.want)
		}
	}
}
