package inspector

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// maxAnalysisBatch bounds how many deliveries are analyzed before their
// analyses are saved together while the receiver is busy. Larger chunks
// analyze faster (128: ~900/s, one by one: ~200/s) but hold the store's
// writer longer, and an insert waits for the commit in progress when it
// arrives, which showed as ack latency; 16 keeps most of the gain
// (docs/benchmarks.md). Once the receiver has been quiet for quietAfter,
// a backlog is worked off in chunks of maxQuietBatch.
const (
	maxAnalysisBatch = 16
	maxQuietBatch    = 128
	quietAfter       = 50 * time.Millisecond
)

// chunkSize is how many deliveries the next chunk analyzes: one at a time
// while the store fails, so a chunk too big for the room left on a disk
// does not fail forever.
func (e *Engine) chunkSize() int {
	if e.saving.IsFailing() {
		return 1
	}
	if e.recv.QuietFor(quietAfter) {
		return maxQuietBatch
	}
	return maxAnalysisBatch
}

// analyzeBatch analyzes deliveries in order, in chunks: each chunk is
// judged against the store plus the chunk's earlier analyses (so the
// ledger sees exactly what one-by-one analysis would), then all of its
// analyses are saved at once, which the store's group commit turns into
// one transaction. Saving one by one cost a commit per delivery and held
// analysis to ~200 deliveries/s (docs/benchmarks.md). Subscribers are
// notified in order once a chunk is saved.
//
// A delivery that fails alone is left unanalyzed for the next start; the
// others go on. When nothing of a chunk can be analyzed and saved, the
// store is failing (a full disk, a locked or damaged file): with stop
// set, analysis reports that once, waits and tries the same chunk again
// until the store works or stop is closed, so it resumes where it was
// (later deliveries' ledger reads what these save) instead of stopping
// for good. It returns the errors it did not retry.
func (e *Engine) analyzeBatch(ctx context.Context, ds []*Delivery, stop <-chan struct{}) error {
	var errs []error
	backoff := retryMin
	for len(ds) > 0 {
		n := chunkLen(ds, e.chunkSize())
		worked, saved, chunkErrs := e.analyzeChunk(ctx, ds[:n])
		if saved == 0 && len(chunkErrs) > 0 && stop != nil {
			e.saving.Fail(chunkErrs[0])
			select {
			case <-stop:
				return errors.Join(chunkErrs...)
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, retryMax)
			// Deleted (or analyzed by someone else) meanwhile: drop it.
			// If the store cannot say, try the same chunk again.
			if still, err := e.stillUnanalyzed(ctx, ds[:n]); err == nil {
				ds = append(still, ds[n:]...)
			}
			continue
		}
		if saved > 0 {
			e.saving.OK()
		}
		backoff = retryMin
		errs = append(errs, chunkErrs...)
		ds = ds[n:]
		e.yieldToReceiver(worked)
	}
	return errors.Join(errs...)
}

// chunkLen is how many of ds the next chunk takes: up to size, and no
// more bodies than maxChunkBytes (each analysis holds a copy of its body
// until the chunk is saved), but at least one.
func chunkLen(ds []*Delivery, size int) int {
	n, bytes := 0, 0
	for n < len(ds) && n < size && (n == 0 || bytes+len(ds[n].Body) <= maxChunkBytes) {
		bytes += len(ds[n].Body)
		n++
	}
	return n
}

// maxChunkBytes bounds the bodies of one analysis chunk.
const maxChunkBytes = 16 << 20

// retryMin and retryMax bound the wait before analysis tries again while
// the store fails.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// stillUnanalyzed returns the deliveries of chunk (ascending ids) the
// store still holds unanalyzed, as stored.
func (e *Engine) stillUnanalyzed(ctx context.Context, chunk []*Delivery) ([]*Delivery, error) {
	lo, hi := chunk[0].ID, chunk[len(chunk)-1].ID
	got, err := e.store.Unanalyzed(ctx, lo-1, int(hi-lo+1))
	if err != nil {
		return nil, err
	}
	want := make(map[int64]bool, len(chunk))
	for _, d := range chunk {
		want[d.ID] = true
	}
	var out []*Delivery
	for _, d := range got {
		if want[d.ID] {
			out = append(out, d)
		}
	}
	return out, nil
}

// yieldToReceiver pauses analysis while requests are being received, by
// the rule every background worker follows (pace), so acks come first
// (the design's rule: the answer never waits for analysis). With no
// request in flight it does not pause, and the backlog of a burst is
// worked off at full speed afterwards.
func (e *Engine) yieldToReceiver(worked time.Duration) {
	e.recv.Pause(worked, nil)
}

// analyzeChunk analyzes and saves one chunk and returns how long both
// took (a save is most of a chunk's cost, and the pause after it must
// count it) and how many analyses it saved.
func (e *Engine) analyzeChunk(ctx context.Context, ds []*Delivery) (time.Duration, int, []error) {
	start := time.Now()
	var errs []error
	pl := newPendingLedger(e.store)
	recs := make([]*Record, 0, len(ds))
	for _, d := range ds {
		a := e.Analyze(ctx, d)
		if err := ledgerWith(ctx, pl, d, a); err != nil {
			errs = append(errs, fmt.Errorf("analyze delivery %d: %w", d.ID, err))
			continue
		}
		pl.add(d, a)
		recs = append(recs, &Record{Delivery: d, Analysis: a})
		if e.recv.InFlight() > 0 {
			// Let a handler waiting for a CPU run now rather than at the
			// scheduler's next 10 ms preemption: on two cores a chunk of
			// analysis otherwise holds one of them for milliseconds
			// while an ack waits in the run queue.
			runtime.Gosched()
		}
	}
	saveErrs := make([]error, len(recs))
	if len(recs) == 1 {
		saveErrs[0] = e.store.SaveAnalysis(ctx, recs[0].Analysis)
	} else {
		var wg sync.WaitGroup
		for i, r := range recs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				saveErrs[i] = e.store.SaveAnalysis(ctx, r.Analysis)
			}()
		}
		wg.Wait()
	}
	worked := time.Since(start)
	saved := 0
	for i, r := range recs {
		if saveErrs[i] != nil {
			errs = append(errs, fmt.Errorf("save analysis of delivery %d: %w", r.Delivery.ID, saveErrs[i]))
			continue
		}
		saved++
		e.notify(r)
	}
	return worked, saved, errs
}

// pendingLedger answers the ledger's questions from the store plus the
// analyses of the current chunk, which are not saved yet.
type pendingLedger struct {
	store    ledgerStore
	hooks    map[string]int64
	events   map[string]*pendingEvent
	subjects map[string]pendingSubject
}

type pendingEvent struct {
	first  EventCopy
	idx    int
	copies int
}

type pendingSubject struct {
	uuid string
	at   time.Time
}

func newPendingLedger(st ledgerStore) *pendingLedger {
	return &pendingLedger{store: st, hooks: map[string]int64{}, events: map[string]*pendingEvent{}, subjects: map[string]pendingSubject{}}
}

// add records an analysis as if it were saved: every event is a copy, and
// every event with a subject and a parsed generated_at counts for order.
func (p *pendingLedger) add(d *Delivery, a *Analysis) {
	if a.HookUUID != "" {
		if cur, ok := p.hooks[a.HookUUID]; !ok || d.ID < cur {
			p.hooks[a.HookUUID] = d.ID
		}
	}
	for i := range a.Events {
		ev := &a.Events[i]
		if ev.UUID != "" {
			pe := p.events[ev.UUID]
			switch {
			case pe == nil:
				p.events[ev.UUID] = &pendingEvent{first: EventCopy{DeliveryID: d.ID, Hash: ev.Hash, ReceivedAt: d.ReceivedAt}, idx: i, copies: 1}
			default:
				pe.copies++
				if d.ID < pe.first.DeliveryID || (d.ID == pe.first.DeliveryID && i < pe.idx) {
					pe.first, pe.idx = EventCopy{DeliveryID: d.ID, Hash: ev.Hash, ReceivedAt: d.ReceivedAt}, i
				}
			}
		}
		if ev.Subject != "" && !ev.GeneratedAt.IsZero() {
			if cur, ok := p.subjects[ev.Subject]; !ok || ev.GeneratedAt.After(cur.at) {
				p.subjects[ev.Subject] = pendingSubject{uuid: ev.UUID, at: ev.GeneratedAt}
			}
		}
	}
}

func (p *pendingLedger) FirstEventCopy(ctx context.Context, uuid string) (EventCopy, int, bool, error) {
	first, copies, found, err := p.store.FirstEventCopy(ctx, uuid)
	if err != nil {
		return first, copies, found, err
	}
	pe := p.events[uuid]
	switch {
	case pe == nil:
		return first, copies, found, nil
	case !found:
		return pe.first, pe.copies, true, nil
	}
	if pe.first.DeliveryID < first.DeliveryID {
		first = pe.first
	}
	return first, copies + pe.copies, true, nil
}

func (p *pendingLedger) FirstHookDelivery(ctx context.Context, hookUUID string) (int64, bool, error) {
	id, found, err := p.store.FirstHookDelivery(ctx, hookUUID)
	if err != nil {
		return id, found, err
	}
	if pid, ok := p.hooks[hookUUID]; ok && (!found || pid < id) {
		return pid, true, nil
	}
	return id, found, nil
}

func (p *pendingLedger) LatestForSubject(ctx context.Context, subject string) (string, time.Time, bool, error) {
	uuid, at, found, err := p.store.LatestForSubject(ctx, subject)
	if err != nil {
		return uuid, at, found, err
	}
	if ps, ok := p.subjects[subject]; ok && (!found || ps.at.After(at)) {
		return ps.uuid, ps.at, true, nil
	}
	return uuid, at, found, nil
}
