// Package pace is the one rule by which Hookscope's background work (the
// analysis and the store's inbox mover) steps back while the receiver is
// answering requests: acks come first, background work takes what is
// left. Each owner of a queue of requests keeps a Gauge of them; the
// background worker behind it calls Pause after every step.
package pace

import (
	"sync/atomic"
	"time"
)

// The rule. While requests wait for their answers, background work pauses
// after each step for Factor times as long as the step took (a tenth of
// the time), FloodFactor times (a fiftieth) when FloodWaiting or more
// wait at once, never longer than MaxPause. The numbers, and what other
// values cost, are in docs/benchmarks.md (finding 3, third and fourth
// rounds).
const (
	// Factor: at 3 a saturating flood was answered at 0.43 of a bare
	// server's rate, at 9 at 0.56, with the 1,000 req/s p99 unchanged.
	Factor = 9
	// FloodFactor: in a flood the analysis falls far behind anyway; the
	// tenth it kept cost each ack ~10 µs of CPU.
	FloodFactor = 49
	// FloodWaiting: at 1,000 req/s one or two requests wait at a time,
	// at saturation (64 connections) most of them.
	FloodWaiting = 8
	// MaxPause bounds one pause, so a slow step (a big save) cannot stop
	// the background work for seconds.
	MaxPause = 200 * time.Millisecond
	// BusyFor is how long after its last answer the receiver still counts
	// as busy: in a flood of keep-alive requests there are instants with
	// none waiting, and a worker resuming in each of them took enough CPU
	// to cut the rate answered from 0.56 to 0.36 of a bare server.
	BusyFor = 5 * time.Millisecond
	// recheck is how often a pause looks whether the receiver went idle,
	// so work resumes within a millisecond of the last answer.
	recheck = time.Millisecond
)

// For is how long background work pauses after a step that took worked
// while waiting requests wait for their answers: not at all with none,
// longer in a flood.
func For(worked time.Duration, waiting int64) time.Duration {
	switch {
	case waiting <= 0:
		return 0
	case waiting >= FloodWaiting:
		return min(FloodFactor*worked, MaxPause)
	default:
		return min(Factor*worked, MaxPause)
	}
}

// Gauge counts the requests waiting for their answers and remembers when
// the last one was answered. The zero Gauge is ready to use.
type Gauge struct {
	waiting atomic.Int64
	last    atomic.Int64 // Unix ns of the last answer
}

// Begin marks one request as waiting.
func (g *Gauge) Begin() { g.waiting.Add(1) }

// End marks one request as answered.
func (g *Gauge) End() {
	g.last.Store(time.Now().UnixNano())
	g.waiting.Add(-1)
}

// InFlight is how many requests wait now.
func (g *Gauge) InFlight() int64 { return g.waiting.Load() }

// Waiting is how many requests wait, counting a receiver that answered
// within BusyFor as one.
func (g *Gauge) Waiting() int64 {
	if n := g.waiting.Load(); n > 0 {
		return n
	}
	if time.Now().UnixNano()-g.last.Load() < int64(BusyFor) {
		return 1
	}
	return 0
}

// QuietFor reports whether no request has waited for at least d.
func (g *Gauge) QuietFor(d time.Duration) bool {
	return g.waiting.Load() == 0 && time.Now().UnixNano()-g.last.Load() >= int64(d)
}

// Pause holds background work after a step that took worked, by the rule
// above, until the receiver is idle, the pause is over or stop is closed
// (nil: never).
func (g *Gauge) Pause(worked time.Duration, stop <-chan struct{}) {
	d := For(worked, g.Waiting())
	if d <= 0 {
		return
	}
	t := time.NewTicker(recheck)
	defer t.Stop()
	for end := time.Now().Add(d); g.Waiting() > 0 && time.Now().Before(end); {
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
