package forward

import (
	"context"
	"sync"
	"time"
)

// maxUnrecorded bounds the attempts waiting to be written: past it the
// routes wait for the store instead of piling up memory.
const maxUnrecorded = 4096

// cursorEvery is how often route cursors are moved in the store.
const cursorEvery = 250 * time.Millisecond

// recorder writes attempts and cursors to the store on its own goroutine:
// everything that queued while the previous write ran goes in the next
// one (a group commit), so a route never waits for SQLite between sends.
type recorder struct {
	f    *Forwarder
	kick chan struct{}

	mu      sync.Mutex
	room    *sync.Cond
	pending []*Attempt
	written map[string]int64
}

func (r *recorder) add(a *Attempt) {
	r.mu.Lock()
	if r.room == nil {
		r.room = sync.NewCond(&r.mu)
	}
	for len(r.pending) >= maxUnrecorded && r.f.ctx.Err() == nil {
		r.room.Wait()
	}
	r.pending = append(r.pending, a)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *recorder) loop() {
	defer r.f.wg.Done()
	tick := time.NewTicker(cursorEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.f.ctx.Done():
			r.mu.Lock()
			if r.room != nil {
				r.room.Broadcast()
			}
			r.mu.Unlock()
			return
		case <-r.kick:
		case <-tick.C:
			r.f.publishRouteChanges()
		}
		if err := r.save(r.f.ctx); err != nil && r.f.ctx.Err() == nil {
			r.f.logf("forward: record attempts: %v", err)
			sleep(r.f.ctx, time.Second)
		}
	}
}

// flush writes what is left (Stop, after the routes stopped).
func (r *recorder) flush(ctx context.Context) error { return r.save(ctx) }

func (r *recorder) save(ctx context.Context) error {
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	if r.room != nil {
		r.room.Broadcast()
	}
	r.mu.Unlock()
	cursors := r.cursors()
	if len(batch) == 0 && len(cursors) == 0 {
		return nil
	}
	if err := r.f.store.SaveForwards(context.WithoutCancel(ctx), batch, cursors); err != nil {
		r.mu.Lock()
		r.pending = append(batch, r.pending...)
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	if r.written == nil {
		r.written = map[string]int64{}
	}
	for k, v := range cursors {
		r.written[k] = v
	}
	r.mu.Unlock()
	return nil
}

// cursors returns the routes whose cursor can move: below the lowest
// delivery a route still owes and at most safeTop.
func (r *recorder) cursors() map[string]int64 {
	if r.f.frozen.Load() {
		return nil
	}
	top := r.f.safeTop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]int64
	for _, w := range r.f.workers {
		c := min(w.lowest()-1, top)
		prev, ok := r.written[w.route.name]
		if !ok {
			prev = w.cursor
		}
		if c > prev {
			if out == nil {
				out = map[string]int64{}
			}
			out[w.route.name] = c
		}
	}
	return out
}

// sleep waits d or until ctx ends; it reports whether the wait was whole.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
