package inspector

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Analysis saves its analyses a chunk at a time, in one transaction:
// bigger chunks share more of a commit's cost (pages several deliveries
// touch are written once). A chunk is an eighth of the work waiting,
// between minChunk and maxChunk: small while analysis keeps up with the
// receiver (a delivery is shown analyzed soon after it came), big while
// it works off a backlog. The receiver's acks do not wait for these
// commits (the store keeps analysis in a file of its own).
const (
	minChunk = 8
	maxChunk = 256
)

// chunkSize is how many of waiting deliveries the next chunk analyzes:
// one at a time while the store fails, so a chunk too big for the room
// left on a disk does not fail forever.
func (e *Engine) chunkSize(waiting int) int {
	if e.saving.IsFailing() {
		return 1
	}
	return min(max(waiting/8, minChunk), maxChunk)
}

// batchSaver is a store that saves several analyses in one transaction
// (storage.DB); others get them one by one.
type batchSaver interface {
	SaveAnalyses(ctx context.Context, as []*Analysis) error
}

// ledgerPinner is a store whose ledger can be read as it is at one moment
// (storage.DB): the next chunk is judged while the chunk before it is
// saved, against the store as it was before that save plus the chunk's
// analyses, which is what the store says once the save is committed.
type ledgerPinner interface {
	PinLedger(ctx context.Context) (LedgerSnapshot, error)
}

// LedgerSnapshot reads a store's ledger as it was when it was pinned.
type LedgerSnapshot interface {
	Ledger(ctx context.Context, hooks, uuids, subjects []string) (Ledger, error)
	// Close lets the store go on past the moment.
	Close()
}

// stopped reports whether stop (nil: never) is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// analyzeBatch analyzes deliveries in order, in chunks: each chunk is
// judged against the store plus the chunk's earlier analyses (so the
// ledger sees exactly what one-by-one analysis would), then all of its
// analyses are saved at once. Subscribers are notified in order once a
// chunk is saved.
//
// A delivery whose analysis cannot be made or saved while the store works
// is saved as failed, once, with the reason, and never holds up the ones
// after it. When nothing of a chunk can be saved, the store is failing (a
// full disk, a locked or damaged file): with stop set, analysis reports
// that once, waits and tries the same chunk again until the store works
// or stop is closed, so it resumes where it was instead of stopping for
// good. It returns the errors it did not retry.
func (e *Engine) analyzeBatch(ctx context.Context, ds []*Delivery, stop <-chan struct{}) error {
	var errs []error
	backoff := retryMin
	var ahead *judged // the next chunk, judged while the one before it was saved
	for len(ds) > 0 {
		if stopped(stop) {
			return errors.Join(errs...)
		}
		var cur judged
		if ahead != nil && len(ahead.ds) <= len(ds) && ahead.ds[0] == ds[0] {
			cur = *ahead
		} else {
			cur = e.judge(ctx, ds[:chunkLen(ds, e.chunkSize(len(ds)+e.q.len()))], nil, nil)
		}
		ahead = nil
		n := len(cur.ds)
		var saved int
		var chunkErrs []error
		switch {
		case stopped(stop):
			return errors.Join(errs...) // a stop before the save leaves the chunk unanalyzed
		case cur.err != nil:
			chunkErrs = []error{cur.err}
		default:
			next := e.judgeAhead(ctx, ds[n:], cur.recs)
			var whole bool
			saved, chunkErrs, whole = e.save(ctx, cur.recs)
			if next != nil {
				if j := <-next; whole && j.err == nil {
					ahead = &j
				}
			}
		}
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
	}
	return errors.Join(errs...)
}

// judged is a chunk (ds) analyzed and judged against the ledger, not
// saved: its records, or why they could not be judged.
type judged struct {
	ds   []*Delivery
	recs []*Record
	err  error
}

// judgeAhead judges the chunk after before (the first of rest) on its own
// goroutine while before is being saved, against the ledger pinned now
// plus before's analyses; nil when the store cannot pin its ledger.
func (e *Engine) judgeAhead(ctx context.Context, rest []*Delivery, before []*Record) <-chan judged {
	p, ok := e.store.(ledgerPinner)
	if _, batches := e.store.(batchSaver); !ok || !batches || len(rest) == 0 {
		return nil
	}
	snap, err := p.PinLedger(ctx)
	if err != nil {
		return nil // judged after the save instead
	}
	ds := rest[:chunkLen(rest, e.chunkSize(len(rest)+e.q.len()))]
	out := make(chan judged, 1)
	go func() {
		defer snap.Close()
		out <- e.judge(ctx, ds, snap, before)
	}()
	return out
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

// judge analyzes ds and judges each analysis against the ledger: the
// store's (snap's when set), then before's analyses (a chunk being saved),
// then the chunk's earlier ones, so it sees exactly what one-by-one
// analysis would.
func (e *Engine) judge(ctx context.Context, ds []*Delivery, snap LedgerSnapshot, before []*Record) judged {
	as := e.analyzeAll(ctx, ds)
	pl, err := e.ledgerFor(ctx, snap, as)
	if err != nil {
		return judged{ds: ds, err: fmt.Errorf("analyze deliveries %d to %d: %w", ds[0].ID, ds[len(ds)-1].ID, err)}
	}
	for _, r := range before {
		pl.add(r.Delivery, r.Analysis)
	}
	recs := make([]*Record, len(ds))
	for i, d := range ds {
		ledgerWith(pl, d, as[i])
		pl.add(d, as[i])
		recs[i] = &Record{Delivery: d, Analysis: as[i]}
	}
	return judged{ds: ds, recs: recs}
}

// save saves a judged chunk and notifies the subscribers; it returns how
// many analyses it saved, and whether they were saved whole, in one
// transaction, as judged.
func (e *Engine) save(ctx context.Context, recs []*Record) (int, []error, bool) {
	var errs []error
	if bs, ok := e.store.(batchSaver); ok && len(recs) > 1 {
		as := make([]*Analysis, len(recs))
		for i, r := range recs {
			as[i] = r.Analysis
		}
		if bs.SaveAnalyses(ctx, as) == nil {
			for _, r := range recs {
				e.notify(r)
			}
			return len(recs), errs, true
		}
	}
	// One by one: a chunk that failed as a whole, or a store without
	// batches. One that fails alone while others save is the delivery's
	// fault (a disk that is full fails them all): it is saved as failed.
	saved := 0
	failed := map[*Record]error{}
	for _, r := range recs {
		if err := e.store.SaveAnalysis(ctx, r.Analysis); err != nil {
			failed[r] = err
			continue
		}
		saved++
		e.notify(r)
	}
	for _, r := range recs {
		err, ok := failed[r]
		if !ok {
			continue
		}
		if (saved > 0 || len(recs) == 1) && e.saveFailed(ctx, r, err) {
			saved++
			continue
		}
		errs = append(errs, fmt.Errorf("save analysis of delivery %d: %w", r.Delivery.ID, err))
	}
	return saved, errs, len(failed) == 0
}

// analyzeAll analyzes ds on up to GOMAXPROCS goroutines, in ds's order:
// decoding needs nothing from the store or the other deliveries, and it
// is most of analysis's CPU, so a drain uses every core for it.
func (e *Engine) analyzeAll(ctx context.Context, ds []*Delivery) []*Analysis {
	as := make([]*Analysis, len(ds))
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < len(ds); i = int(next.Add(1) - 1) {
			as[i] = e.analyzeSafely(ctx, ds[i])
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ds)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return as
}

// ledgerFor reads what the store (snap, when set) knows of the hooks,
// event uuids and subjects of as, in one go, for a chunk's pendingLedger.
func (e *Engine) ledgerFor(ctx context.Context, snap LedgerSnapshot, as []*Analysis) (*pendingLedger, error) {
	var hooks, uuids, subjects []string
	for _, a := range as {
		if a.HookUUID != "" {
			hooks = append(hooks, a.HookUUID)
		}
		for _, ev := range a.Events {
			if ev.UUID != "" {
				uuids = append(uuids, ev.UUID)
			}
			if ev.Subject != "" && !ev.GeneratedAt.IsZero() {
				subjects = append(subjects, ev.Subject)
			}
		}
	}
	dedupe := func(keys []string) []string { return slices.Compact(slices.Sorted(slices.Values(keys))) }
	read := e.store.Ledger
	if snap != nil {
		read = snap.Ledger
	}
	l, err := read(ctx, dedupe(hooks), dedupe(uuids), dedupe(subjects))
	if err != nil {
		return nil, fmt.Errorf("read the dedupe ledger: %w", err)
	}
	return newPendingLedger(l), nil
}

// analyzeSafely is Analyze that turns a panic (a bug meeting an odd
// body) into a failed analysis instead of a crash of the receiver.
func (e *Engine) analyzeSafely(ctx context.Context, d *Delivery) (a *Analysis) {
	defer func() {
		if p := recover(); p != nil {
			a = e.failedAnalysis(d, fmt.Sprintf("Hookscope could not analyze this delivery (%v); it is stored whole", p))
		}
	}()
	return e.Analyze(ctx, d)
}

// failedAnalysis is the analysis of a delivery that could not be
// analyzed: its signature verdict, and the reason as its decode error.
func (e *Engine) failedAnalysis(d *Delivery, reason string) *Analysis {
	return &Analysis{DeliveryID: d.ID, AnalyzedAt: e.now().UTC(), Events: []EventAnalysis{},
		Signature: e.VerifySignature(d), Error: &DecodeError{Reason: reason, Offset: -1}}
}

// saveFailed saves r as failed, once, after its analysis could not be
// saved; it reports whether that worked (when it did not, the store
// itself fails, and the chunk is tried again later).
func (e *Engine) saveFailed(ctx context.Context, r *Record, cause error) bool {
	a := e.failedAnalysis(r.Delivery, fmt.Sprintf("Hookscope could not store this delivery's analysis (%v); the delivery is stored whole", cause))
	if err := e.store.SaveAnalysis(ctx, a); err != nil {
		return false
	}
	e.logf("analysis of delivery %d failed and is marked so: %v", r.Delivery.ID, cause)
	r.Analysis = a
	e.notify(r)
	return true
}

// pendingLedger answers the ledger's questions from what the store knew
// before the chunk plus the analyses of the chunk so far, which are not
// saved yet.
type pendingLedger struct {
	stored   Ledger
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

func newPendingLedger(stored Ledger) *pendingLedger {
	return &pendingLedger{stored: stored, hooks: map[string]int64{}, events: map[string]*pendingEvent{}, subjects: map[string]pendingSubject{}}
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

// FirstEventCopy returns the first copy of an event uuid and how many
// copies there are.
func (p *pendingLedger) FirstEventCopy(uuid string) (EventCopy, int, bool) {
	sc, found := p.stored.Events[uuid]
	first, copies := sc.First, sc.Copies
	pe := p.events[uuid]
	switch {
	case pe == nil:
		return first, copies, found
	case !found:
		return pe.first, pe.copies, true
	}
	if pe.first.DeliveryID < first.DeliveryID {
		first = pe.first
	}
	return first, copies + pe.copies, true
}

// FirstHookDelivery returns the first delivery carrying a hook uuid.
func (p *pendingLedger) FirstHookDelivery(hookUUID string) (int64, bool) {
	id, found := p.stored.Hooks[hookUUID]
	if pid, ok := p.hooks[hookUUID]; ok && (!found || pid < id) {
		return pid, true
	}
	return id, found
}

// LatestForSubject returns the event with the latest generated_at about
// a subject.
func (p *pendingLedger) LatestForSubject(subject string) (string, time.Time, bool) {
	se, found := p.stored.Subjects[subject]
	if ps, ok := p.subjects[subject]; ok && (!found || ps.at.After(se.GeneratedAt)) {
		return ps.uuid, ps.at, true
	}
	return se.UUID, se.GeneratedAt, found
}
