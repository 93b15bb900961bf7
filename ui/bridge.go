package ui

import (
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/tunnel"
)

// flushEvery is the shortest gap between two batches applied to the UI: a
// delivery shows within it. While deliveries stream in faster than
// floodRate a second, batches are floodEvery apart instead: nobody reads
// rows scrolling by at 100 a second, and every frame of new rows costs
// the UI goroutine their layout and the GL driver a texture per new text,
// kept for a minute (at 30 frames a second under 100 deliveries/s the
// window grew to 550 MB and a clicked row waited behind the frames).
const (
	flushEvery = 30 * time.Millisecond
	floodEvery = 500 * time.Millisecond
	floodRate  = 20
	// floodRowsEvery is how often the list's rows follow the newest
	// during a flood (the counts keep floodEvery): the rows cost a
	// texture each per text, the counts one.
	floodRowsEvery = time.Second
)

// batch is what the domain goroutines reported since the last flush.
type batch struct {
	// records holds the latest version of each reported delivery, in
	// arrival order.
	records []*inspector.Record
	// tunnel is the latest tunnel event, nil when none arrived.
	tunnel *tunnel.Event
	// relay is the relay link's latest state, nil when none arrived.
	relay *relay.State
	// attempts are the forward attempts finished, oldest first.
	attempts []*forward.Attempt
	// routes holds each forward route's latest state, by name.
	routes map[string]forward.RouteStatus
	// warnings are the forwarder's one-time warnings.
	warnings []string
	// store is set when the store was written since the last batch, by
	// this process or another one (storage.DB.Watch).
	store bool
}

// empty reports a batch with nothing in it.
func (b batch) empty() bool {
	return len(b.records) == 0 && b.tunnel == nil && b.relay == nil && len(b.attempts) == 0 && len(b.routes) == 0 && len(b.warnings) == 0 && !b.store
}

// bridge is the only place that touches the UI goroutine from elsewhere.
// Domain callbacks push into it from any goroutine; a loop collapses what
// arrived into one batch at most every flushEvery, lets prepare do the slow
// part (store queries) off the UI goroutine, and applies the result with
// one fyne.Do.
type bridge struct {
	// prepare turns a batch into a UI update; it runs on the bridge's
	// goroutine (or the caller's, for Flush) and may query the store.
	prepare func(batch) func()
	// inline runs Go work and flushes synchronously: tests use it so every
	// action has finished when the call returns.
	inline bool
	// started is set once the batching loop runs.
	started bool

	// flood is set while deliveries stream in faster than floodRate.
	flood atomic.Bool

	mu      sync.Mutex
	pending batch
	seen    map[int64]int // delivery id -> index in pending.records
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	work    sync.WaitGroup
	flushMu sync.Mutex // one flush at a time keeps batches in order
}

func newBridge(prepare func(batch) func(), inline bool) *bridge {
	return &bridge{
		prepare: prepare,
		inline:  inline,
		seen:    map[int64]int{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// start runs the batching loop until close.
func (b *bridge) start() {
	b.started = true
	go b.loop()
}

func (b *bridge) loop() {
	defer close(b.done)
	var rate flowRate
	for {
		select {
		case <-b.stop:
			return
		case <-b.kick:
		}
		started := time.Now()
		n := b.Flush()
		// Whatever arrives during the wait is collected into the next
		// batch instead of causing its own repaint.
		gap := flushEvery
		b.flood.Store(rate.add(started, n) > floodRate)
		if b.flood.Load() {
			gap = floodEvery
		}
		if wait := gap - time.Since(started); wait > 0 {
			select {
			case <-b.stop:
				return
			case <-time.After(wait):
			}
		}
	}
}

// close stops the loop and waits for running work.
func (b *bridge) close() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
		if b.started {
			<-b.done
		}
	}
	b.work.Wait()
}

// pushRecord reports an analyzed (or re-verified) delivery; any goroutine.
func (b *bridge) pushRecord(r *inspector.Record) {
	if r == nil || r.Delivery == nil {
		return
	}
	b.mu.Lock()
	if i, ok := b.seen[r.Delivery.ID]; ok {
		b.pending.records[i] = r
	} else {
		b.seen[r.Delivery.ID] = len(b.pending.records)
		b.pending.records = append(b.pending.records, r)
	}
	b.mu.Unlock()
	b.signal()
}

// flooding reports deliveries streaming in faster than floodRate a second.
func (b *bridge) flooding() bool { return b.flood.Load() }

// pushStoreChanged reports that the store was written, by any process;
// any goroutine.
func (b *bridge) pushStoreChanged() {
	b.mu.Lock()
	b.pending.store = true
	b.mu.Unlock()
	b.signal()
}

// pushTunnel reports a tunnel event; any goroutine.
func (b *bridge) pushTunnel(ev tunnel.Event) {
	b.mu.Lock()
	b.pending.tunnel = &ev
	b.mu.Unlock()
	b.signal()
}

// pushRelay reports the relay link's state; any goroutine. Only the
// latest of a batch is shown (catch-up progress comes per batch).
func (b *bridge) pushRelay(st relay.State) {
	b.mu.Lock()
	b.pending.relay = &st
	b.mu.Unlock()
	b.signal()
}

// pushForward reports a forwarder event; any goroutine.
func (b *bridge) pushForward(ev forward.Event) {
	b.mu.Lock()
	switch ev.Kind {
	case forward.AttemptDone:
		b.pending.attempts = append(b.pending.attempts, ev.Attempt)
		fallthrough
	case forward.RouteChanged:
		if b.pending.routes == nil {
			b.pending.routes = map[string]forward.RouteStatus{}
		}
		if ev.Route.Name != "" {
			b.pending.routes[ev.Route.Name] = ev.Route
		}
	case forward.Warning:
		b.pending.warnings = append(b.pending.warnings, ev.Message)
	}
	b.mu.Unlock()
	b.signal()
}

func (b *bridge) signal() {
	if b.inline {
		return // tests call Flush
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Flush prepares and applies what is pending now. It returns how many
// deliveries the batch reported.
func (b *bridge) Flush() int {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	p := b.pending
	b.pending = batch{}
	clear(b.seen)
	b.mu.Unlock()
	if p.empty() {
		return 0
	}
	if apply := b.prepare(p); apply != nil {
		b.do(apply)
	}
	return len(p.records)
}

// flowRate counts the deliveries flushed in the last second.
type flowRate struct {
	at []time.Time
	n  []int
}

// add records n deliveries flushed at t and returns the count of the
// second up to t.
func (r *flowRate) add(t time.Time, n int) int {
	if n > 0 {
		r.at, r.n = append(r.at, t), append(r.n, n)
	}
	drop := 0
	for drop < len(r.at) && t.Sub(r.at[drop]) > time.Second {
		drop++
	}
	r.at, r.n = r.at[drop:], r.n[drop:]
	sum := 0
	for _, k := range r.n {
		sum += k
	}
	return sum
}

// Go runs work off the UI goroutine and applies the update it returns on
// the UI goroutine. Work must not touch widgets; apply may.
func (b *bridge) Go(work func() (apply func())) {
	if b.inline {
		if apply := work(); apply != nil {
			apply()
		}
		return
	}
	b.work.Add(1)
	go func() {
		defer b.work.Done()
		if apply := work(); apply != nil {
			b.do(apply)
		}
	}()
}

// do applies f on the UI goroutine.
func (b *bridge) do(f func()) {
	if b.inline {
		f()
		return
	}
	fyne.Do(f)
}
