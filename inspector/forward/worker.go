package forward

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/pace"
	"github.com/hookscope/hookscope/internal/plural"
)

// worker is one route's queue: deliveries the store says the route still
// owes from earlier runs (the backlog, oldest first), then the ones the
// receiver hands over in this run, in id order. It sends one at a time.
type worker struct {
	f     *Forwarder
	route Route
	kick  chan struct{}

	mu sync.Mutex
	// live holds this run's deliveries, ascending ids above liveFrom; an
	// item's body is dropped past the memory budget and read back later.
	live      []item
	liveBytes int64
	liveFrom  int64
	// cur is the delivery being sent (0 when none).
	cur int64
	// The backlog: everything the route owes at or below liveFrom, read
	// from the store a page at a time above backlogAfter.
	backlogDone  bool
	backlogAfter int64
	owed         int64
	// cursor is the store's cursor when the route opened.
	cursor int64
	status RouteStatus

	// The worker goroutine's own state.
	page []Owed
	// startedBefore is the started mark the previous run left: an owed
	// delivery at or below it may have reached the app already.
	startedBefore int64
	// marked is the mark as last written.
	marked    int64
	markErred bool
	// streak is set once a delivery was given up and none delivered
	// since: while it lasts, a rejected delivery gets one try only, so
	// an app that fails everything does not hold the queue for each one.
	streak    bool
	downTries int
	// interrupted: Hookscope stopped during an attempt.
	interrupted bool
	// reported is the status last published as RouteChanged (the
	// recorder's goroutine only).
	reported RouteStatus
}

type item struct {
	id int64
	d  *inspector.Delivery
	// before: every ticket up to it must be finished before the item is
	// sent (a request storing meanwhile may carry a lower id).
	before   uint64
	attempts int
	verdicts int
	backlog  bool
}

// push queues a delivery of this run.
func (w *worker) push(d *inspector.Delivery, before uint64) {
	w.mu.Lock()
	if d.ID <= w.liveFrom {
		w.mu.Unlock()
		return
	}
	it := item{id: d.ID, d: d, before: before}
	if w.liveBytes+int64(len(d.Body)) > w.f.memLimit {
		it.d = nil
	} else {
		w.liveBytes += int64(len(d.Body))
	}
	// Requests answered at the same moment hand over in any order.
	i := len(w.live)
	for i > 0 && w.live[i-1].id > it.id {
		i--
	}
	w.live = append(w.live, item{})
	copy(w.live[i+1:], w.live[i:])
	w.live[i] = it
	w.mu.Unlock()
}

// wake tells the worker its queue changed.
func (w *worker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *worker) run() {
	defer w.f.wg.Done()
	for {
		it, ok := w.next()
		if !ok {
			return
		}
		w.done(it, w.deliver(it))
	}
}

// next returns the next delivery to send, waiting for one.
func (w *worker) next() (item, bool) {
	ctx := w.f.ctx
	for ctx.Err() == nil {
		w.mu.Lock()
		backlogDone, after := w.backlogDone, w.backlogAfter
		w.mu.Unlock()
		if !backlogDone {
			if len(w.page) == 0 {
				page, err := w.f.store.PendingForwards(ctx, w.route.name, after, w.liveFrom, 64)
				if err != nil {
					if ctx.Err() == nil {
						w.f.logf("forward %s: read the queue: %v", w.route.name, err)
						sleep(ctx, time.Second)
					}
					continue
				}
				if len(page) == 0 {
					w.mu.Lock()
					w.backlogDone, w.owed = true, 0
					w.mu.Unlock()
					continue
				}
				w.page = page
			}
			o := w.page[0]
			w.page = w.page[1:]
			w.mu.Lock()
			w.cur = o.ID
			w.mu.Unlock()
			return item{id: o.ID, attempts: o.Attempts, verdicts: o.Verdicts, backlog: true}, true
		}
		w.mu.Lock()
		if len(w.live) > 0 && w.f.tickets.finished(w.live[0].before) {
			it := w.live[0]
			w.live = w.live[1:]
			if it.d != nil {
				w.liveBytes -= int64(len(it.d.Body))
			}
			w.cur = it.id
			w.mu.Unlock()
			return it, true
		}
		// A head waiting for lower ids is woken by the dispatcher; the
		// timer covers tickets finished without a delivery (a failed store).
		var retry <-chan time.Time
		if len(w.live) > 0 {
			retry = time.After(time.Millisecond)
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-w.kick:
		case <-retry:
		}
	}
	return item{}, false
}

// done ends the work on it: finished, or abandoned at a stop (then it
// stays the lowest delivery owed, so the cursor stays below it).
func (w *worker) done(it item, finished bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cur = 0
	switch {
	case !finished && it.backlog:
		w.page = append([]Owed{{ID: it.id, Attempts: it.attempts, Verdicts: it.verdicts}}, w.page...)
	case !finished:
		it.d = nil
		w.live = append([]item{it}, w.live...)
	case it.backlog:
		w.backlogAfter = it.id
		w.owed = max(w.owed-1, 0)
	}
}

// deliver sends one delivery until the queue is done with it: delivered,
// given up, or (false) Hookscope stopping.
func (w *worker) deliver(it item) bool {
	f, ctx := w.f, w.f.ctx
	d := it.d
	for d == nil {
		var err error
		d, err = f.store.ForwardDelivery(ctx, it.id)
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			f.logf("forward %s: read delivery %d: %v", w.route.name, it.id, err)
			sleep(ctx, time.Second)
		case d == nil:
			// Deleted by the user while it waited: nothing to send.
			return true
		}
	}
	if it.backlog {
		matched := false
		for _, m := range f.routesFor(d) {
			matched = matched || m == w
		}
		if !matched {
			return true
		}
	}
	reforward := it.backlog && it.id <= w.startedBefore
	for n := it.attempts + 1; ; n++ {
		if w.marked < it.id {
			w.mark(it.id)
		}
		a, _ := f.attempt(ctx, w, d, KindAck, n, f.sender)
		a.Reforward, reforward = reforward, false
		var wait time.Duration
		switch a.Outcome {
		case Stopped:
			w.interrupted = true
			f.rec.add(a)
			return false
		case Delivered:
			a.Final, w.streak, w.downTries = true, false, 0
		case Rejected, Timeout, Dropped:
			w.downTries = 0
			it.verdicts++
			if w.streak || it.verdicts > f.cfg.Policy.retries() {
				a.Final, a.GaveUp, w.streak = true, true, true
				a.Error += fmt.Sprintf("; given up after %s: Forward again sends it once more", plural.S(n, "attempt"))
				break
			}
			wait = backoff(it.verdicts, RetryBackoffMin, RetryBackoffMax)
			a.Error += fmt.Sprintf("; Hookscope tries again in %s (retry %d of %d)", wait, it.verdicts, f.cfg.Policy.retries())
		default:
			w.downTries++
			wait = backoff(w.downTries, DownBackoffMin, DownBackoffMax)
			a.Error += fmt.Sprintf("; Hookscope keeps trying every few seconds, the deliveries wait in order (next in %s)", wait)
			if a.unsent {
				// The app cannot have it: a crash now is no re-forward.
				w.mark(it.id - 1)
			}
		}
		if wait > 0 {
			a.NextAt = f.now().Add(wait)
		}
		w.observe(a)
		w.report(a)
		w.yield(a.Latency)
		if a.Final {
			return true
		}
		if !sleep(ctx, wait) {
			return false
		}
	}
}

// yield steps back after a send that took worked while the receiver is
// flooded (pace.FloodWaiting requests or more storing at once), by the
// rule analysis and the inbox mover follow (pace.For): acks
// come first, the queue catches up after the flood. At the rates of a
// developer's app (one or two requests at a time) it never pauses, so the
// lag stays a send's.
func (w *worker) yield(worked time.Duration) {
	if n := w.f.tickets.outstanding(); n >= pace.FloodWaiting {
		sleep(w.f.ctx, pace.For(worked, n))
	}
}

// mark records that deliveries up to id may have been sent. The mark
// outlives the process (kill -9 included), not a power cut: there only the
// re-forward flag is lost (storage.ForwardMarks).
func (w *worker) mark(id int64) {
	if w.f.marks == nil || w.marked == id {
		return
	}
	if err := w.f.marks.MarkStarted(w.route.name, id); err != nil {
		if !w.markErred {
			w.f.logf("forward %s: cannot record the started mark (re-forwards after a crash will not be marked): %v", w.route.name, err)
			w.markErred = true
		}
		return
	}
	w.marked = id
}

// finishOnce records and reports a one-off attempt (pass-through).
func (w *worker) finishOnce(a *Attempt) {
	if a.Outcome != Stopped {
		a.Final = true
	}
	w.observe(a)
	w.report(a)
}

// report records an attempt and tells the subscribers. They get a copy:
// the recorder writes the stored id into a while they read theirs.
func (w *worker) report(a *Attempt) {
	seen := *a
	w.f.rec.add(a)
	w.f.hub.Publish(Event{Kind: AttemptDone, Attempt: &seen, Route: w.snapshot()})
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

func (w *worker) snapshot() RouteStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	st.Waiting = w.owed + int64(len(w.live))
	if w.cur > w.liveFrom {
		st.Waiting++
	}
	return st
}

// holds reports whether id waits in (or may belong to) the queue.
func (w *worker) holds(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id == w.cur || (!w.backlogDone && id > w.backlogAfter && id <= w.liveFrom) {
		return true
	}
	i := sort.Search(len(w.live), func(i int) bool { return w.live[i].id >= id })
	return i < len(w.live) && w.live[i].id == id
}

// lowest is the lowest id the route may still owe (MaxInt64 for none).
func (w *worker) lowest() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := int64(math.MaxInt64)
	if w.cur != 0 {
		l = w.cur
	}
	if !w.backlogDone {
		l = min(l, w.backlogAfter+1)
	}
	if len(w.live) > 0 {
		l = min(l, w.live[0].id)
	}
	return l
}

// restingMark is the started mark a clean stop leaves: below everything
// owed, but not below a delivery of the previous run's mark that this run
// has not reached again (it may still have reached the app then).
func (w *worker) restingMark(top int64) int64 {
	m := min(w.lowest()-1, top)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.backlogDone && w.backlogAfter < w.startedBefore {
		m = max(m, w.startedBefore)
	}
	return m
}
