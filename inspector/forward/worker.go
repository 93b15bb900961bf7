package forward

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// The worker's reading: a page of deliveries at a time, bounded in
// number and in bytes held, and how often an idle worker looks for
// deliveries another process stored (this process's own wake it).
const (
	pageSize  = 64
	pageBytes = 8 << 20
	idlePoll  = 250 * time.Millisecond
	// recordAfter is how long a finished attempt may wait for the next
	// delivery's mark to share its commit (the app has it already; only
	// its record and report wait), and how long a run may last before its
	// attempts are recorded.
	recordAfter = 20 * time.Millisecond
)

// MaxRun bounds a run: the deliveries one commit marks as being sent,
// which then go out one by one, in order, before the next commit records
// their attempts. After a crash (kill -9, power cut) every delivery of the
// run under way is sent again and marked as a re-forward, so at most
// MaxRun deliveries reach the app twice per crash; one of the run that had
// not gone out yet is marked all the same (it may have). A route starts
// with runs of one and doubles its run after each run delivered at the
// first try within recordAfter: runs grow only while the app answers
// quickly, and a failure or a slow answer makes them one again.
const MaxRun = 32

// worker is one ack route's sender: it holds the route's lease (or waits
// on standby for it), reads the deliveries above the route's cursor in id
// order and sends them in runs (MaxRun), one at a time. Before a run it
// commits the run's last delivery as the mark of what is being sent,
// together with the attempts and cursor of the sends before it: an
// attempt that cannot be recorded is not sent, and the sends a crash cut
// short are known (and marked as re-forwards) next time.
type worker struct {
	f     *Forwarder
	route Route
	kick  chan struct{}

	mu     sync.Mutex
	status RouteStatus
	// cursor is the route's cursor as last committed or read; sending the
	// mark as last committed: the deliveries above the cursor up to it
	// may be under way.
	cursor, sending int64
	// waiting is the last count of deliveries above the cursor.
	waiting int64

	// The worker goroutine's own state.
	held bool
	// sendingMark is the mark a previous holder left when it stopped
	// recording: the next attempt of each delivery up to it is a
	// re-forward.
	sendingMark int64
	// runLen is how many deliveries the next run may take (1 to MaxRun).
	runLen int
	// cut is the delivery whose send a stop interrupted after it went out
	// (0: none): what the last commit marks as being sent.
	cut int64
	// pending are attempts made and not yet recorded, with the cursor
	// they move the route to (0: none).
	pending       []*Attempt
	pendingCursor int64
	// streak is set once a delivery was given up and none delivered
	// since: while it lasts, a rejected delivery gets one try only, so
	// an app that fails everything does not hold the queue for each one.
	streak    bool
	downTries int
	// reported is the status last published as RouteChanged (the
	// watcher's goroutine only).
	reported RouteStatus
}

// wake tells the worker a delivery was stored.
func (w *worker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// claim takes (or renews) the route's lease; on standby it says who
// forwards instead.
func (w *worker) claim(ctx context.Context) error {
	f := w.f
	st, err := f.store.ClaimRoute(ctx, w.route.name, f.holder, f.started, LeaseTTL)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cursor = max(w.cursor, st.Cursor)
	w.held = st.Held
	switch {
	case st.Held:
		w.sendingMark = st.Sending
		if w.status.State == RouteStandby {
			w.status.State, w.status.Since, w.status.LastError = RouteIdle, f.now(), ""
		}
	case w.status.State != RouteStandby:
		w.status.State, w.status.Since = RouteStandby, f.now()
		w.status.LastError = fmt.Sprintf("another Hookscope process (%s) forwards this route from the same store; this one takes over when it stops", st.Holder)
	}
	return nil
}

func (w *worker) run() {
	defer w.f.wg.Done()
	f, ctx := w.f, w.f.ctx
	for ctx.Err() == nil {
		if !w.held {
			if err := w.claim(ctx); err != nil && ctx.Err() == nil {
				f.recording.Fail(err)
			}
			if !w.held {
				sleep(ctx, LeaseRenew)
				continue
			}
		}
		// After what is recorded, and what is done but not recorded yet.
		page, err := f.store.PendingForwards(ctx, w.route.name, max(w.cursorNow(), w.pendingCursor), pageSize, pageBytes)
		if err != nil {
			if ctx.Err() == nil {
				f.recording.Fail(err)
				sleep(ctx, time.Second)
			}
			continue
		}
		if len(page) == 0 {
			// What was sent is recorded once no delivery follows within
			// recordAfter: one that does rides in the same commit as its
			// mark, so a steady stream costs one commit per delivery.
			if len(w.pending) > 0 || w.pendingCursor > 0 {
				select {
				case <-ctx.Done():
				case <-w.kick:
					continue
				case <-time.After(recordAfter):
				}
			}
			w.flush(ctx, 0)
			select {
			case <-ctx.Done():
			case <-w.kick:
			case <-time.After(idlePoll):
			}
			continue
		}
		for len(page) > 0 {
			n, ok := w.sendRun(ctx, page)
			if !ok {
				break
			}
			page = page[n:]
		}
	}
	// Stopping: what was sent is recorded; an attempt cut short leaves its
	// delivery marked as being sent.
	w.flush(context.WithoutCancel(ctx), -1)
}

// sendRun sends a run from the head of page: one commit marks its
// deliveries as being sent (and records what was done before), then they
// go out one by one. It returns how many of page it dealt with, and false
// when Hookscope stops or another process took the route over.
func (w *worker) sendRun(ctx context.Context, page []Pending) (int, bool) {
	w.runLen = min(max(w.runLen, 1), MaxRun)
	n, taken, last := 0, 0, int64(0)
	takes := make([]bool, 0, min(len(page), MaxRun))
	for n < len(page) && taken < w.runLen {
		t := w.takes(page[n].Delivery)
		takes = append(takes, t)
		if t {
			taken++
			last = page[n].Delivery.ID
		}
		n++
	}
	if taken == 0 {
		w.pendingCursor = page[n-1].Delivery.ID
		return n, true
	}
	// The mark before the sends: recorded, or nothing is sent.
	if !w.flush(ctx, last) {
		return 0, false
	}
	start := time.Now()
	quick := true
	for i, p := range page[:n] {
		if !takes[i] {
			w.pendingCursor = p.Delivery.ID
			continue
		}
		first, ok := w.deliver(ctx, p)
		if !ok {
			return i, false
		}
		quick = quick && first
		switch {
		case !first:
			// Retried: the mark moved to this delivery alone, so the
			// rest of the run is not marked; a new run takes it.
			w.runLen = 1
			return i + 1, true
		case p.Delivery.ID < last && time.Since(start) >= recordAfter:
			// A slow run: its attempts are recorded now, the rest goes
			// in a shorter one.
			w.runLen = max(1, taken/2)
			return i + 1, true
		}
	}
	if quick && time.Since(start) < recordAfter {
		w.runLen = min(2*w.runLen, MaxRun)
	}
	return n, true
}

// takes reports whether d goes to w's route.
func (w *worker) takes(d *inspector.Delivery) bool {
	return slices.Contains(w.f.routesFor(d), w)
}

// deliver sends one delivery the route takes until the route is done
// with it (delivered or given up) and reports ok; false when Hookscope
// stops or another process took the route over. The run's commit marks
// it as being sent; first reports that its first attempt here was final.
func (w *worker) deliver(ctx context.Context, p Pending) (first, ok bool) {
	f, d := w.f, p.Delivery
	marked := true
	reforward := d.ID <= w.sendingMark
	verdicts := p.Verdicts
	for n := p.Attempts + 1; ; n++ {
		// The mark before the send: recorded, or not sent.
		if !marked && !w.flush(ctx, d.ID) {
			return false, false
		}
		a, _ := f.attempt(ctx, w, d, KindAck, n, DefaultMaxResponse)
		a.Reforward, reforward = reforward, false
		var wait time.Duration
		switch {
		case a.Outcome == Stopped:
			w.pending = append(w.pending, a)
			if !a.unsent {
				w.cut = d.ID
			}
			return false, false
		case a.Outcome == Delivered || a.Outcome == Skipped:
			a.Final = true
			if a.Outcome == Delivered {
				w.streak, w.downTries = false, 0
			}
		case a.Outcome.Verdict():
			w.downTries = 0
			verdicts++
			if w.streak || verdicts > f.cfg.Policy.retries() {
				a.Final, a.GaveUp, w.streak = true, true, true
				a.Error += fmt.Sprintf("; given up after %s: Forward again sends it once more", plural.S(n, "attempt"))
				break
			}
			wait = backoff(verdicts, RetryBackoffMin, RetryBackoffMax)
			a.Error += fmt.Sprintf("; Hookscope tries again in %s (retry %d of %d)", human.Duration(wait), verdicts, f.cfg.Policy.retries())
		default:
			w.downTries++
			wait = backoff(w.downTries, DownBackoffMin, DownBackoffMax)
			a.Error += fmt.Sprintf("; Hookscope keeps trying every few seconds, the deliveries wait in order (next in %s)", human.Duration(wait))
		}
		if wait > 0 {
			a.NextAt = f.now().Add(wait)
		}
		w.observe(a)
		w.pending = append(w.pending, a)
		if a.Final {
			w.pendingCursor = d.ID
			return marked, true
		}
		marked = false
		// A failed attempt is recorded before the wait: the delivery is
		// no longer being sent.
		if !w.flush(ctx, 0) || !sleep(ctx, wait) {
			return false, false
		}
	}
}

// flush records the pending attempts and cursor and marks sending as the
// last delivery about to be sent (0: none; -1: for a stop, the delivery
// whose send the stop cut short, and try once), in one transaction, then
// reports the attempts. While
// the store cannot record it retries (the fault said once), and nothing
// is sent. It reports false when Hookscope stops first or another process
// holds the route now (the attempts are then recorded without moving
// anything).
func (w *worker) flush(ctx context.Context, sending int64) bool {
	f := w.f
	mark := sending
	if sending < 0 {
		mark = w.cut
	}
	if len(w.pending) == 0 && w.pendingCursor == 0 && sending <= 0 && mark == w.sendingNow() {
		return true
	}
	for try := 1; ; try++ {
		err := f.store.RecordForward(ctx, w.route.name, f.holder, w.pending, w.pendingCursor, mark, LeaseTTL)
		switch {
		case err == nil:
			f.recording.OK()
			w.recorded(w.pendingCursor, mark)
			return true
		case errors.Is(err, ErrLeaseLost):
			// Another process forwards the route now (this one stopped
			// renewing long enough): what was done is history all the same.
			if err := f.store.SaveForwards(context.WithoutCancel(ctx), w.pending, nil); err != nil {
				f.recording.Fail(err)
			}
			w.recorded(0, 0)
			w.held = false
			w.claim(ctx)
			return false
		}
		f.recording.Fail(err)
		if sending < 0 || ctx.Err() != nil || !sleep(ctx, backoff(try, DownBackoffMin, DownBackoffMax)) {
			return false
		}
	}
}

// recorded publishes the pending attempts once they are in the store and
// moves the known cursor.
func (w *worker) recorded(cursor, sending int64) {
	for _, a := range w.pending {
		w.f.publish(w, a)
	}
	w.pending, w.pendingCursor = nil, 0
	w.mu.Lock()
	w.cursor = max(w.cursor, cursor)
	w.sending = sending
	w.mu.Unlock()
}

// observe updates the route's state from an attempt.
func (w *worker) observe(a *Attempt) {
	w.mu.Lock()
	defer w.mu.Unlock()
	state := w.status.State
	switch {
	case a.Outcome == Delivered || a.Outcome.Verdict():
		state = RouteUp
	case a.Outcome.Down():
		state = RouteDown
	}
	if state != w.status.State {
		w.status.State, w.status.Since = state, a.StartedAt
	}
	w.status.LastError, w.status.NextAt = a.reason, a.NextAt
}

// count refreshes how many deliveries wait for the route while its app is
// down (what the down and back lines say); while it is up the route keeps
// up, and counting a backlog every tick would cost as much as draining it.
func (w *worker) count(ctx context.Context) {
	w.mu.Lock()
	down := w.status.State == RouteDown
	if !down {
		w.waiting = 0
	}
	w.mu.Unlock()
	if w.f.cfg.Mode != ModeAck || !down {
		return
	}
	n, err := w.f.store.PendingCount(ctx, w.route.name, w.cursorNow())
	if err != nil {
		return
	}
	w.mu.Lock()
	w.waiting = n
	w.mu.Unlock()
}

func (w *worker) snapshot() RouteStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	st.Waiting = w.waiting
	return st
}

func (w *worker) cursorNow() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cursor
}

func (w *worker) sendingNow() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sending
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
