package inspector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/internal/fault"
	"github.com/hookscope/hookscope/internal/pubsub"
	"golang.org/x/sync/semaphore"
)

// Tap sees what the receiver stores, to forward it (see inspector/forward).
type Tap interface {
	// Relays reports whether d, read whole and about to be stored with a
	// 200 answer, is to be answered by Relay instead.
	Relays(d *Delivery) bool
	// Stored is called with each delivery once it is committed, before it
	// is answered: forwarding's workers wake and read it from the store.
	// It must not block.
	Stored(d *Delivery)
	// Relay answers d in the receiver's place (when Relays said so) and
	// sets d.Status to the status the service got.
	Relay(w http.ResponseWriter, r *http.Request, d *Delivery)
}

// ForwardedHeader carries the names of the Hookscope processes a request
// was forwarded by (comma-separated, in order). A receiver refuses a
// request that carries its own name (Options.Instance): a forwarding loop,
// directly or through other hops.
const ForwardedHeader = "X-Hookscope-Forwarded"

// DefaultMaxBody is the default body cap: far above any real message, small
// enough that a runaway client cannot fill the disk quickly.
const DefaultMaxBody = 10 << 20

// Options configures an Engine.
type Options struct {
	// Secrets are the webhook secret keys, several during a rotation.
	Secrets [][]byte
	// MaxBody caps the stored body; larger bodies are answered 413 and kept
	// truncated. Zero means DefaultMaxBody.
	MaxBody int64
	// Answer chooses the answer to each delivery the receiver takes
	// (answer rules); nil answers 200 to every one.
	Answer Answerer
	// Logf receives operational messages (never secrets). Nil discards.
	Logf func(format string, args ...any)
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// QueueBytes bounds the bodies held in memory awaiting analysis; beyond
	// it, queued deliveries are re-read from the store. Zero means 64 MiB.
	QueueBytes int64
	// BodyMemory bounds the bytes of big request bodies (over 64 KiB)
	// being received at once; a body that does not fit waits until
	// others are stored. Zero means DefaultBodyMemory.
	BodyMemory int64
	// Instance names this Hookscope process in ForwardedHeader: a request
	// carrying it is refused (508) and not stored. Empty checks nothing.
	Instance string
	// Sink, when set, is where the receiver commits each delivery in place
	// of the store (a team relay's stream; see Sink). The store may then
	// be nil: analysis judges each delivery alone and saves nothing.
	Sink Sink
}

// DefaultBodyMemory is the default BodyMemory: three bodies at the
// default cap at once.
const DefaultBodyMemory = 32 << 20

// Engine receives deliveries, stores them, and analyzes them in order on
// one goroutine so the ledger's decisions are consistent.
type Engine struct {
	store Store
	logf  func(string, ...any)
	now   func() time.Time

	mu      sync.RWMutex
	secrets [][]byte
	answer  Answerer
	maxBody int64
	tap     Tap
	// instance is this process's forward mark (Options.Instance).
	instance string
	// sink replaces the store's insert when set (Options.Sink).
	sink Sink

	q queue
	// bodies is the budget of BodyMemory bytes big bodies are read into
	// (see readBody); bodyBudget its size.
	bodies     *semaphore.Weighted
	bodyBudget int64
	// recovered is the highest id analyzed by recovery from the store.
	recovered atomic.Int64
	// storing and saving report the store's faults once per change of
	// state: the receiver's inserts, the analysis' reads and saves.
	storing, saving fault.State

	subs pubsub.Hub[*Record]
}

// NewEngine returns an engine over store. Call Run to analyze.
func NewEngine(store Store, opts Options) *Engine {
	e := &Engine{
		store:    store,
		logf:     opts.Logf,
		now:      opts.Now,
		maxBody:  opts.MaxBody,
		answer:   opts.Answer,
		instance: opts.Instance,
		sink:     opts.Sink,
	}
	if e.logf == nil {
		e.logf = func(string, ...any) {}
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.maxBody <= 0 {
		e.maxBody = DefaultMaxBody
	}
	e.q.limit = opts.QueueBytes
	if e.q.limit <= 0 {
		e.q.limit = 64 << 20
	}
	e.q.kick = make(chan struct{}, 1)
	e.bodyBudget = opts.BodyMemory
	if e.bodyBudget <= 0 {
		e.bodyBudget = DefaultBodyMemory
	}
	e.bodies = semaphore.NewWeighted(e.bodyBudget)
	e.storing = fault.State{
		Failing:   "cannot store deliveries",
		Meanwhile: "answering 503 (the sender retries) until the store works again",
		Recovered: "storing deliveries again",
		Attempts:  "requests answered 503",
		Logf:      e.logf,
	}
	e.saving = fault.State{
		Failing:   "cannot analyze stored deliveries",
		Meanwhile: "analysis retries and resumes where it stopped",
		Recovered: "analyzing stored deliveries again",
		Attempts:  "attempts failed",
		Logf:      e.logf,
	}
	e.SetSecrets(opts.Secrets)
	return e
}

// SetSecrets replaces the webhook secrets used for deliveries analyzed from
// now on; call Reverify to judge stored ones again.
func (e *Engine) SetSecrets(secrets [][]byte) {
	cp := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		if len(s) > 0 {
			cp = append(cp, append([]byte(nil), s...))
		}
	}
	e.mu.Lock()
	e.secrets = cp
	e.mu.Unlock()
}

// Secrets returns a copy of the webhook secrets, for what judges a
// delivery as the receiver would (an answer rule tried in the window).
func (e *Engine) Secrets() [][]byte {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([][]byte, len(e.secrets))
	for i, s := range e.secrets {
		out[i] = append([]byte(nil), s...)
	}
	return out
}

// SecretCount says how many secrets are configured (never the secrets).
func (e *Engine) SecretCount() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.secrets)
}

// SetAnswerer changes how the receiver answers from the next request on
// (nil: 200 to every delivery).
func (e *Engine) SetAnswerer(a Answerer) {
	e.mu.Lock()
	e.answer = a
	e.mu.Unlock()
}

// SetMaxBody changes the body cap from the next request on.
func (e *Engine) SetMaxBody(n int64) {
	if n <= 0 {
		n = DefaultMaxBody
	}
	e.mu.Lock()
	e.maxBody = n
	e.mu.Unlock()
}

// SetTap gives every delivery the receiver stores from now on to t (nil
// stops). A delivery t relays (pass-through) is answered by the app, not
// by the Answerer.
func (e *Engine) SetTap(t Tap) {
	e.mu.Lock()
	e.tap = t
	e.mu.Unlock()
}

// Subscribe registers fn to be called, on the analysis goroutine, with
// every record once it is analyzed (or re-verified). fn must not block for
// long: the UI hands the record to its bridge, the CLI prints a line.
func (e *Engine) Subscribe(fn func(*Record)) (cancel func()) {
	return e.subs.Subscribe(fn)
}

func (e *Engine) notify(r *Record) { e.subs.Publish(r) }

// Ingest stores a delivery durably and queues it for analysis. It is what
// the receiver calls before answering, and what import uses. It returns
// the stored id.
func (e *Engine) Ingest(ctx context.Context, d *Delivery) (int64, error) {
	id, err := e.commit(ctx, d)
	if err != nil {
		return 0, err
	}
	e.q.push(d)
	return id, nil
}

// commit stores d (its ID set) without queueing it for analysis; a
// failure is reported once until the store works again.
func (e *Engine) commit(ctx context.Context, d *Delivery) (int64, error) {
	if e.sink != nil {
		return e.record(ctx, d)
	}
	id, err := e.store.InsertDelivery(ctx, d)
	if err != nil {
		e.storing.Fail(err)
		return 0, fmt.Errorf("store delivery: %w", err)
	}
	e.storing.OK()
	d.ID = id
	return id, nil
}

// VerifySignature judges d's signature with the current secrets (what
// analysis will say of it), without touching the store.
func (e *Engine) VerifySignature(d *Delivery) SignatureResult {
	e.mu.RLock()
	secrets := e.secrets
	e.mu.RUnlock()
	sig, present := d.Header(SignatureHeader)
	return Verify(sig, present, d.Body, secrets)
}

// Run analyzes deliveries until ctx ends: first whatever a previous run
// stored but did not analyze (a crash between ack and analysis), then each
// new delivery as it is ingested.
//
// Whatever the store does, Run keeps going, and it returns as soon as ctx
// ends (after the delivery it is analyzing at most): while the store
// fails it reports that once and retries (see analyzeBatch), and what a
// stop leaves unanalyzed stays stored for the next start.
func (e *Engine) Run(ctx context.Context) error {
	if e.sink != nil {
		return e.runSink(ctx)
	}
	stop := ctx.Done()
	for backoff := retryMin; ; backoff = min(2*backoff, retryMax) {
		err := e.recover(ctx, stop)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		e.saving.Fail(err)
		select {
		case <-stop:
			return nil
		case <-time.After(backoff):
		}
	}
	for {
		batch := e.fresh(e.q.take())
		if len(batch) == 0 {
			select {
			case <-stop:
				return nil
			case <-e.q.kick:
				continue
			}
		}
		// The chunk under way is finished without the caller's context
		// ("context canceled" is no verdict); the stop ends the rest.
		e.analyzeQueued(context.WithoutCancel(ctx), batch, stop)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Drain analyzes everything queued now, on the caller's goroutine. Tests
// and one-shot commands use it instead of Run.
func (e *Engine) Drain(ctx context.Context) error {
	if err := e.recover(ctx, nil); err != nil {
		return err
	}
	for {
		batch := e.fresh(e.q.take())
		if len(batch) == 0 {
			return nil
		}
		e.analyzeQueued(ctx, batch, nil)
	}
}

// recover analyzes what the store holds unanalyzed above what recovery
// already did; stop as for analyzeBatch.
func (e *Engine) recover(ctx context.Context, stop <-chan struct{}) error {
	after := e.recovered.Load()
	defer func() { e.recovered.Store(after) }()
	for {
		ds, err := e.store.Unanalyzed(ctx, after, 500)
		if err != nil {
			return fmt.Errorf("find unanalyzed deliveries: %w", err)
		}
		if len(ds) == 0 {
			return nil
		}
		if err := e.analyzeBatch(ctx, ds, stop); err != nil {
			return err
		}
		after = ds[len(ds)-1].ID
	}
}

// fresh drops queued deliveries that recovery already analyzed: a delivery
// ingested before Run or Drain started is both queued and unanalyzed in
// the store, and must be analyzed once.
func (e *Engine) fresh(batch []*Delivery) []*Delivery {
	done := e.recovered.Load()
	out := batch[:0]
	for _, d := range batch {
		if d.ID > done {
			out = append(out, d)
		}
	}
	return out
}

func (e *Engine) analyzeQueued(ctx context.Context, batch []*Delivery, stop <-chan struct{}) {
	ds := make([]*Delivery, 0, len(batch))
	// Analyze what is gathered once its bodies reach maxChunkBytes, so
	// bodies read back from the store are held a chunk at a time.
	held := 0
	flush := func() {
		if err := e.analyzeBatch(ctx, ds, stop); err != nil {
			e.logf("%v", err)
		}
		ds, held = ds[:0], 0
	}
	for i := 0; i < len(batch); {
		if stopped(stop) {
			return // left unanalyzed in the store for the next start
		}
		if held >= maxChunkBytes {
			flush()
		}
		d := batch[i]
		if !(d.Body == nil && d.BodyLength > 0) {
			ds = append(ds, d)
			held += len(d.Body)
			i++
			continue
		}
		// Bodies dropped from memory under load (see queue) are read back
		// from the store a run at a time: one query for up to
		// maxReloadRun of them instead of one per delivery, which made a
		// flood's backlog drain several times slower than analysis.
		j := i
		lo, hi := d.ID, d.ID
		var bytes int64
		for j < len(batch) && j-i < maxReloadRun && batch[j].Body == nil && batch[j].BodyLength > 0 &&
			max(hi, batch[j].ID)-min(lo, batch[j].ID) < 4*maxReloadRun && (j == i || bytes+batch[j].BodyLength <= maxReloadBytes) {
			lo, hi = min(lo, batch[j].ID), max(hi, batch[j].ID)
			bytes += batch[j].BodyLength
			j++
		}
		got, err := e.store.Unanalyzed(ctx, lo-1, int(hi-lo+1))
		for backoff := retryMin; err != nil && stop != nil && !stopped(stop); backoff = min(2*backoff, retryMax) {
			e.saving.Fail(err)
			select {
			case <-stop:
				return // left unanalyzed in the store for the next start
			case <-time.After(backoff):
			}
			got, err = e.store.Unanalyzed(ctx, lo-1, int(hi-lo+1))
		}
		if err != nil {
			e.logf("analyze deliveries %d-%d: read them back from the store: %v", lo, hi, err)
		}
		byID := make(map[int64]*Delivery, len(got))
		for _, g := range got {
			byID[g.ID] = g
		}
		for _, q := range batch[i:j] {
			// Missing: deleted, or analyzed by another process meanwhile.
			if g := byID[q.ID]; g != nil {
				ds = append(ds, g)
				held += len(g.Body)
			}
		}
		i = j
	}
	flush()
}

// maxReloadRun and maxReloadBytes bound how many dropped bodies one store
// query reads back, and their size: 256 small ones at a time, but not 26
// bodies of 9.5 MiB at once.
const (
	maxReloadRun   = 256
	maxReloadBytes = 16 << 20
)

// Analyze verifies, decodes and checks one delivery without touching the
// ledger: the pure part of analysis, also used to preview an edited body.
func (e *Engine) Analyze(ctx context.Context, d *Delivery) *Analysis {
	e.mu.RLock()
	secrets := e.secrets
	e.mu.RUnlock()
	a := &Analysis{DeliveryID: d.ID, AnalyzedAt: e.now().UTC(), Events: []EventAnalysis{}}
	sig, present := d.Header(SignatureHeader)
	if d.Rejected {
		a.Signature = Verify(sig, present, d.Body, secrets)
		a.Error = &DecodeError{Reason: fmt.Sprintf("not a webhook delivery: the method was %s (the service always POSTs)", d.Method), Offset: -1}
		return a
	}
	// The HMAC of a big body takes as long as a good part of its decoding
	// and needs nothing from it: compute it on another core meanwhile.
	// Small bodies are not worth a goroutine.
	var verified chan SignatureResult
	if len(d.Body) >= concurrentVerifyMin {
		verified = make(chan SignatureResult, 1)
		go func() { verified <- Verify(sig, present, d.Body, secrets) }()
	} else {
		a.Signature = Verify(sig, present, d.Body, secrets)
	}
	a.Problems = catalog.CheckDelivery(d.HTTPHeader(), d.BodyLength)
	hook, events, total, err := decodeForAnalysis(d.Body)
	if verified != nil {
		a.Signature = <-verified
	}
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			de = &DecodeError{Reason: err.Error(), Offset: -1}
		}
		switch {
		case d.Truncated:
			de.Reason = fmt.Sprintf("the body was cut at the %d-byte cap (the client sent %d bytes or more): %s", len(d.Body), d.BodyLength, de.Reason)
		case d.ReadError != "":
			de.Reason = fmt.Sprintf("reading the request body failed after %d bytes (%s), so the receiver answered %d: %s", len(d.Body), d.ReadError, d.Status, de.Reason)
		}
		a.Error = de
		return a
	}
	a.HookUUID = hook
	a.Events = events
	if total > len(events) {
		a.Problems = append(a.Problems, catalog.Problem{Severity: catalog.SeverityNotice, Path: "events",
			Message: fmt.Sprintf("the message holds %d events; Hookscope analyzed the first %d (their types, duplicates, order and contract); the body is stored whole", total, len(events))})
	}
	bound(a)
	return a
}

// concurrentVerifyMin is the body size from which Analyze verifies the
// signature while it decodes.
const concurrentVerifyMin = 64 << 10

// ledgerWith fills the dedupe and order facts of a from what st says was
// analyzed before it. Events earlier in the same message count as "before".
func ledgerWith(st *pendingLedger, d *Delivery, a *Analysis) {
	if a.HookUUID != "" {
		first, found := st.FirstHookDelivery(a.HookUUID)
		if found && first != d.ID {
			a.Resend, a.ResendOf = true, first
		}
	}
	type seen struct {
		hash   string
		copies int
	}
	inMsg := map[string]*seen{}
	latest := map[string]EventAnalysis{}
	for i := range a.Events {
		ev := &a.Events[i]
		ev.FirstDeliveryID = d.ID
		if ev.UUID != "" {
			// What was there before this message (st learns of it after).
			first, copies, found := st.FirstEventCopy(ev.UUID)
			// A re-analysis of the same delivery must not count itself.
			if found && first.DeliveryID == d.ID {
				found = false
			}
			local := inMsg[ev.UUID]
			switch {
			case found:
				ev.Duplicate = true
				ev.FirstDeliveryID = first.DeliveryID
				ev.Copies = copies + 1
				ev.Divergent = first.Hash != ev.Hash
				if local != nil {
					ev.Copies += local.copies
				}
			case local != nil:
				ev.Duplicate = true
				ev.Copies = local.copies + 1
				ev.Divergent = local.hash != ev.Hash
			}
			if local == nil {
				inMsg[ev.UUID] = &seen{hash: ev.Hash, copies: 1}
			} else {
				local.copies++
			}
		}
		if ev.Subject == "" || ev.Duplicate || ev.GeneratedAt.IsZero() {
			continue
		}
		uuid, at, found := st.LatestForSubject(ev.Subject)
		if prev, ok := latest[ev.Subject]; ok && (!found || prev.GeneratedAt.After(at)) {
			uuid, at, found = prev.UUID, prev.GeneratedAt, true
		}
		if found && uuid != ev.UUID && at.After(ev.GeneratedAt) {
			ev.OutOfOrder = true
			ev.OrderNote = fmt.Sprintf("arrived after event %s about the same %s, generated later (%s vs %s): order by generated_at, not by arrival",
				uuid, subjectKind(ev.Subject), at.UTC().Format(time.RFC3339Nano), ev.GeneratedAt.UTC().Format(time.RFC3339Nano))
		}
		if p, ok := latest[ev.Subject]; !ok || ev.GeneratedAt.After(p.GeneratedAt) {
			latest[ev.Subject] = *ev
		}
	}
}

func subjectKind(subject string) string {
	for i := 0; i < len(subject); i++ {
		if subject[i] == ':' {
			return subject[:i]
		}
	}
	return subject
}

// ReverifySource is what Reverify needs from the store.
type ReverifySource interface {
	// EachRecord calls fn for every stored record, oldest first.
	EachRecord(ctx context.Context, fn func(*Record) error) error
	UpdateSignature(ctx context.Context, id int64, r SignatureResult) error
}

// ReverifyReport says what Reverify did.
type ReverifyReport struct {
	// Checked counts the deliveries judged again.
	Checked int `json:"checked"`
	// Changed counts those whose verdict changed: another status, or
	// another secret matched. Transitions counts them by "from -> to"
	// ("invalid -> valid with secret #2", "valid with secret #1 -> valid
	// with secret #2").
	Changed     int            `json:"changed"`
	Transitions map[string]int `json:"transitions"`
	// Unchanged counts those whose verdict stayed the same (their stored
	// details, the digests expected under the new secrets, are refreshed).
	Unchanged int `json:"unchanged"`
}

// Reverify judges every stored delivery's signature again with the current
// secrets (after a secret was added, fixed or rotated), stores each result
// that differs in any detail, notifies subscribers of those records, and
// reports how many verdicts changed, and how, apart from those that did
// not.
func (e *Engine) Reverify(ctx context.Context, src ReverifySource) (ReverifyReport, error) {
	e.mu.RLock()
	secrets := e.secrets
	e.mu.RUnlock()
	rep := ReverifyReport{Transitions: map[string]int{}}
	err := src.EachRecord(ctx, func(r *Record) error {
		sig, present := r.Delivery.Header(SignatureHeader)
		res := Verify(sig, present, r.Delivery.Body, secrets)
		rep.Checked++
		from := "not analyzed"
		if r.Analysis != nil {
			from = verdictName(r.Analysis.Signature)
			if r.Analysis.Signature.Status == res.Status && r.Analysis.Signature.SecretIndex == res.SecretIndex {
				rep.Unchanged++
				if sameVerdict(r.Analysis.Signature, res) {
					return nil
				}
			}
		}
		if err := src.UpdateSignature(ctx, r.Delivery.ID, res); err != nil {
			return fmt.Errorf("update signature of delivery %d: %w", r.Delivery.ID, err)
		}
		if r.Analysis == nil || r.Analysis.Signature.Status != res.Status || r.Analysis.Signature.SecretIndex != res.SecretIndex {
			rep.Changed++
			rep.Transitions[from+" -> "+verdictName(res)]++
		}
		if r.Analysis != nil {
			r.Analysis.Signature = res
			e.notify(r)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("re-verify deliveries: %w", err)
	}
	return rep, nil
}

// verdictName names a verdict for a transition: its status, and for a
// valid one which secret matched ("valid with secret #2").
func verdictName(r SignatureResult) string {
	if r.Status == SignatureValid && r.SecretIndex >= 0 {
		return fmt.Sprintf("valid with secret #%d", r.SecretIndex+1)
	}
	return string(r.Status)
}

func sameVerdict(a, b SignatureResult) bool {
	if a.Status != b.Status || a.SecretIndex != b.SecretIndex || len(a.Expected) != len(b.Expected) {
		return false
	}
	for i := range a.Expected {
		if a.Expected[i] != b.Expected[i] {
			return false
		}
	}
	return true
}

// maxQueuedBody is the biggest body the queue keeps in memory.
const maxQueuedBody = 1 << 20

// queue holds deliveries awaiting analysis in arrival order. Bodies are
// kept up to a byte limit; past it only the id is kept and the body is
// read back from the store, so a flood cannot exhaust memory.
type queue struct {
	mu    sync.Mutex
	items []*Delivery
	bytes int64
	limit int64
	kick  chan struct{}
}

func (q *queue) push(d *Delivery) {
	q.mu.Lock()
	// A big body is never kept: analysis reads it back when its turn
	// comes, so bodies that arrive together are not all held at once.
	if len(d.Body) > 0 && (q.bytes+int64(len(d.Body)) > q.limit || len(d.Body) > maxQueuedBody) {
		d = &Delivery{ID: d.ID, ReceivedAt: d.ReceivedAt, Method: d.Method, Path: d.Path, Status: d.Status, Answer: d.Answer,
			Source: d.Source, RelaySeq: d.RelaySeq, Truncated: d.Truncated, Rejected: d.Rejected, BodyLength: max(d.BodyLength, 1)}
	}
	q.bytes += int64(len(d.Body))
	q.items = append(q.items, d)
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// len is how many deliveries wait in the queue.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *queue) take() []*Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	q.bytes = 0
	return items
}
