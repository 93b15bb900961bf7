package pace

import (
	"testing"
	"time"
)

// Background work steps back by how busy the receiver is: not at all when
// idle, a tenth of the time under steady traffic, a fiftieth in a flood,
// never longer than MaxPause.
func TestFor(t *testing.T) {
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
		{50 * ms, 1, MaxPause},
		{50 * ms, 64, MaxPause},
	} {
		if got := For(tc.worked, tc.waiting); got != tc.want {
			t.Errorf("For(%v, %d) = %v, want %v", tc.worked, tc.waiting, got, tc.want)
		}
	}
}

// A receiver counts as busy while a request waits and for BusyFor after
// the last answer; a pause ends early once it is idle.
func TestGauge(t *testing.T) {
	var g Gauge
	if g.Waiting() != 0 || !g.QuietFor(time.Hour) {
		t.Fatalf("new gauge: waiting %d, want 0 and quiet", g.Waiting())
	}
	g.Begin()
	g.Begin()
	if g.Waiting() != 2 || g.InFlight() != 2 || g.QuietFor(0) {
		t.Fatalf("two waiting: Waiting %d, InFlight %d", g.Waiting(), g.InFlight())
	}
	g.End()
	g.End()
	if g.Waiting() != 1 {
		t.Fatalf("just answered: Waiting %d, want 1 (busy for %v)", g.Waiting(), BusyFor)
	}
	start := time.Now()
	g.Pause(time.Second, nil) // would be MaxPause; ends when BusyFor is over
	if took := time.Since(start); took >= MaxPause {
		t.Errorf("pause took %v after the receiver went idle", took)
	}
	if g.Waiting() != 0 {
		t.Errorf("idle: Waiting %d, want 0", g.Waiting())
	}
	g.Begin()
	stop := make(chan struct{})
	close(stop)
	start = time.Now()
	g.Pause(time.Second, stop)
	if took := time.Since(start); took >= MaxPause {
		t.Errorf("pause took %v with stop closed", took)
	}
}
