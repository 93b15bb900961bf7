// Package forward sends every delivery the receiver stores on to the
// developer's own app, byte-exact: in ack mode from a durable queue per
// route, in arrival order, retried until the app takes it and resumed
// after a restart (kill -9 included); in pass-through mode at once, with
// the app's answer relayed to the service. Every attempt is recorded with
// its delivery and reported to subscribers (the CLI's lines, the window's
// badges). It never imports Fyne; docs/forwarding.md has the design.
package forward

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/pubsub"
)

// Options are the forwarder's collaborators.
type Options struct {
	// Store keeps the queue and the attempts; required.
	Store Store
	// Marks keeps the started marks; nil keeps none, so re-forwards
	// after a crash are not marked (tests of other things).
	Marks Marks
	// Logf receives operational messages (never secrets). Nil discards.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MemoryBytes bounds the bodies a route's queue holds in memory;
	// beyond it the queue keeps ids and reads bodies back from the store.
	// Zero means 32 MiB.
	MemoryBytes int64
	// TLSConfig is used for https targets; nil means the system roots.
	TLSConfig *tls.Config
}

// EventKind says what an Event reports.
type EventKind int

// The event kinds.
const (
	// AttemptDone: Attempt holds one finished attempt; Route the state of
	// its route just after it.
	AttemptDone EventKind = iota
	// RouteChanged: Route went up or down, or the number of deliveries
	// waiting for it changed (reported at most every 250 ms).
	RouteChanged
	// Warning: Message says something the user should know once (a
	// target off this machine).
	Warning
)

// Event is one report to subscribers.
type Event struct {
	Kind    EventKind
	Attempt *Attempt
	Route   RouteStatus
	Message string
}

// RouteStateName says whether a route's app answers.
type RouteStateName string

// The route states.
const (
	RouteIdle RouteStateName = "idle" // nothing sent yet
	RouteUp   RouteStateName = "up"   // the last attempt got an answer
	RouteDown RouteStateName = "down" // the last attempt got none: the queue waits
)

// RouteStatus is a route as the faces show it.
type RouteStatus struct {
	Name   string         `json:"route"`
	Target string         `json:"target"`
	State  RouteStateName `json:"state"`
	// Waiting is how many deliveries wait for the route (the one being
	// tried included).
	Waiting int64 `json:"waiting"`
	// Since is when the route entered its state.
	Since time.Time `json:"since,omitzero"`
	// LastError is the last attempt's failure in plain words, without
	// what Hookscope does next ("nothing is listening on localhost:3000:
	// is your app running?").
	LastError string    `json:"last_error,omitempty"`
	NextAt    time.Time `json:"next_at,omitzero"`
}

// Forwarder forwards deliveries. Create it with New, Start it, give it to
// the engine as its Tap (inspector.Engine.SetTap), Stop it last. A
// forwarder that replaces another at run time is given the tap before it
// starts: until Start it keeps what the receiver hands over (and relays in
// pass-through), so nothing stored during the switch is missed
// (station.SetForward has the order).
type Forwarder struct {
	cfg       Config
	store     Store
	marks     Marks
	logf      func(string, ...any)
	now       func() time.Time
	memLimit  int64
	needTypes bool

	pool   *replay.Pool
	sender *replay.Sender // ack and background sends
	relay  *replay.Sender // pass-through's answer, relayed whole up to RelayMaxResponse

	workers []*worker
	byName  map[string]*worker
	hub     pubsub.Hub[Event]
	rec     recorder

	// tickets follow every request the receiver stores; intake holds
	// stored deliveries not yet handed to the routes' queues (a ticket is
	// finished once its delivery is).
	tickets    tickets
	intakeMu   sync.Mutex
	intake     []intaken
	intakeKick chan struct{}
	// maxSeen is the highest id the receiver handed over.
	maxSeen atomic.Int64
	// top: every acked delivery at or below it has reached the routes'
	// queues (see safeTop).
	top atomic.Int64
	// frozen stops the cursors: the receiver's deliveries go to another
	// forwarder now (Freeze).
	frozen atomic.Bool

	warnings []string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bg     sync.WaitGroup // pass-through's side sends
	state  atomic.Int32   // 0 new, 1 started, 2 stopped
	// stopping: Stop is under way (it waits for tickets first).
	stopping atomic.Bool
}

// New checks cfg and returns a forwarder; nothing runs until Start.
func New(cfg Config, o Options) (*Forwarder, error) {
	if o.Store == nil {
		return nil, errors.New("forward: no store")
	}
	if len(cfg.Routes) == 0 {
		return nil, errors.New("forward: no route (give at least one target URL)")
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeAck
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	f := &Forwarder{
		cfg:      cfg,
		store:    o.Store,
		marks:    o.Marks,
		logf:     o.Logf,
		now:      o.Now,
		memLimit: o.MemoryBytes,
		// Pass-through relays as many requests at once as the service
		// sends (the load generator's 64 connections): keep as many idle
		// connections as a reverse proxy would, not the one-off default.
		pool:       &replay.Pool{MaxIdle: 64},
		byName:     map[string]*worker{},
		intakeKick: make(chan struct{}, 1),
	}
	// The context exists from the start: a forwarder given the tap before
	// Start relays in pass-through already.
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if f.logf == nil {
		f.logf = func(string, ...any) {}
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.memLimit <= 0 {
		f.memLimit = 32 << 20
	}
	f.sender = &replay.Sender{Timeout: cfg.Policy.timeout(), MaxResponse: DefaultMaxResponse, TLSConfig: o.TLSConfig, Pool: f.pool}
	f.relay = &replay.Sender{Timeout: cfg.Policy.timeout(), MaxResponse: RelayMaxResponse, TLSConfig: o.TLSConfig, Pool: f.pool}
	f.needTypes = cfg.SkipMalformed
	for _, r := range cfg.Routes {
		if r.Target == nil {
			return nil, fmt.Errorf("forward route %q has no target", r.name)
		}
		if r.name == "" {
			r.name = r.TargetName()
		}
		if !r.CatchAll() {
			f.needTypes = true
		}
		if _, dup := f.byName[r.name]; dup {
			return nil, fmt.Errorf("forward route %q is given twice", r.name)
		}
		w := &worker{f: f, route: r, kick: make(chan struct{}, 1)}
		w.status = RouteStatus{Name: r.name, Target: r.TargetName(), State: RouteIdle}
		f.workers = append(f.workers, w)
		f.byName[r.name] = w
		if !r.Loopback() {
			f.warnings = append(f.warnings, fmt.Sprintf("forwarding to %s, which is not on this machine: every delivery's body leaves it", r.TargetName()))
		}
	}
	f.rec.f = f
	f.rec.kick = make(chan struct{}, 1)
	return f, nil
}

// Mode is the forwarding mode.
func (f *Forwarder) Mode() Mode { return f.cfg.Mode }

// Routes returns the routes in order.
func (f *Forwarder) Routes() []Route {
	out := make([]Route, len(f.workers))
	for i, w := range f.workers {
		out[i] = w.route
	}
	return out
}

// Warnings are the things said once at start (targets off this machine);
// subscribers also get them as Warning events.
func (f *Forwarder) Warnings() []string { return slices.Clone(f.warnings) }

// Subscribe registers fn for events, called on the forwarder's goroutines:
// fn must return quickly (print a line, hand over to a UI bridge).
func (f *Forwarder) Subscribe(fn func(Event)) (cancel func()) { return f.hub.Subscribe(fn) }

// Start opens each route's queue in the store and starts forwarding: in
// ack mode a new session begins (deliveries stored from now on are the
// route's), and whatever earlier runs left owed is sent first, oldest
// first. Call it before the receiver serves, so nothing it stores is missed.
func (f *Forwarder) Start(ctx context.Context) error { return f.StartAfter(ctx, FromNewest, 0) }

// StartAfter is Start for a forwarder that replaces another (prev) while
// the receiver runs: its sessions begin after delivery id after, the
// newest stored before it took the tap, so the deliveries stored while
// the two changed places are owed; and everything owed up to handed
// (prev.Last()) is read from the store, since those deliveries went to
// prev, not to this one.
func (f *Forwarder) StartAfter(ctx context.Context, after, handed int64) error {
	if !f.state.CompareAndSwap(0, 1) {
		return errors.New("forward: started twice")
	}
	top := int64(0)
	for _, w := range f.workers {
		st, err := f.store.OpenRoute(ctx, w.route.name, f.cfg.Mode == ModeAck, after)
		if err != nil {
			f.state.Store(2)
			f.cancel()
			return fmt.Errorf("open forward route %s: %w", w.route.name, err)
		}
		st.Live = max(st.Live, handed)
		// Locked: a forwarder that took the tap before Start relays
		// already (pass-through), and reports its routes.
		w.mu.Lock()
		w.cursor, w.liveFrom, w.owed = st.Cursor, st.Live, st.Owed
		w.backlogAfter = st.Cursor
		// Nothing owed: no backlog to read, so Queued does not count
		// the deliveries below liveFrom as possibly waiting.
		w.backlogDone = st.Owed == 0
		w.status.Waiting = w.owed
		w.mu.Unlock()
		if f.marks != nil {
			w.startedBefore = f.marks.Started(w.route.name)
			w.marked = w.startedBefore
		}
		top = max(top, st.Live)
	}
	f.top.Store(top)
	for _, msg := range f.warnings {
		f.logf("warning: %s", msg)
		f.hub.Publish(Event{Kind: Warning, Message: msg})
	}
	f.wg.Add(2 + len(f.workers))
	go f.dispatch()
	go f.rec.loop()
	for _, w := range f.workers {
		go w.run()
	}
	return nil
}

// Freeze stops moving the routes' cursors. Call it before the receiver's
// tap leaves this forwarder for another (station.SetForward): a delivery
// handed to the other one may carry a lower id than one handed here, and
// must not be counted done by this forwarder's cursor.
func (f *Forwarder) Freeze() { f.frozen.Store(true) }

// stopWait bounds how long Stop waits for requests that began storing
// with this forwarder as the tap to hand their deliveries over.
const stopWait = 5 * time.Second

// Stop ends forwarding: it waits (up to stopWait) for the requests that
// took a ticket to hand their deliveries over, so each is in this run's
// session; attempts under way are abandoned (recorded as stopped; the
// next start sends them again as re-forwards), what was recorded is
// flushed, and each route's session closes at the newest delivery the
// receiver handed over. Call it after the receiver stopped, or after the
// tap went to another forwarder.
func (f *Forwarder) Stop(ctx context.Context) error {
	if f.state.CompareAndSwap(0, 2) {
		f.cancel()
		return nil
	}
	if !f.stopping.CompareAndSwap(false, true) {
		return nil
	}
	// Still started while it waits: the deliveries come in as usual.
	f.tickets.waitIdle(ctx, stopWait)
	f.state.Store(2)
	f.cancel()
	f.bg.Wait()
	f.wg.Wait()
	var errs []error
	if err := f.rec.flush(ctx); err != nil {
		errs = append(errs, err)
	} else if f.marks != nil {
		// Every outcome is recorded: only an attempt cut short by this
		// stop may have reached the app unrecorded.
		for _, w := range f.workers {
			if !w.interrupted {
				w.mark(w.restingMark(max(f.maxSeen.Load(), f.top.Load())))
			}
		}
	}
	if f.cfg.Mode == ModeAck {
		last := f.Last()
		for _, w := range f.workers {
			if err := f.store.CloseRoute(ctx, w.route.name, last); err != nil {
				errs = append(errs, fmt.Errorf("close forward route %s: %w", w.route.name, err))
			}
		}
	}
	f.pool.Close()
	return errors.Join(errs...)
}

// Last is the newest delivery id this forwarder was handed or read as
// owed: after Stop, the one its sessions closed at (what StartAfter's
// handed takes from the forwarder it replaces).
func (f *Forwarder) Last() int64 { return max(f.maxSeen.Load(), f.top.Load()) }

// publishRouteChanges reports routes whose state or queue length changed
// since the last report (called every cursorEvery), so a face can show
// "your app is down; 41 deliveries wait" as the queue grows between
// attempts.
func (f *Forwarder) publishRouteChanges() {
	for _, w := range f.workers {
		st := w.snapshot()
		if st.State == w.reported.State && st.Waiting == w.reported.Waiting {
			continue
		}
		w.reported = st
		f.hub.Publish(Event{Kind: RouteChanged, Route: st})
	}
}

// Status returns every route's state.
func (f *Forwarder) Status() []RouteStatus {
	out := make([]RouteStatus, len(f.workers))
	for i, w := range f.workers {
		out[i] = w.snapshot()
	}
	return out
}

// routesFor returns the routes d goes to, in order.
func (f *Forwarder) routesFor(d *inspector.Delivery) []*worker {
	var types []string
	malformed := false
	if f.needTypes {
		types, malformed = inspectDelivery(d)
	} else {
		malformed = d.Rejected || d.Truncated || d.ReadError != ""
	}
	var out []*worker
	for _, w := range f.workers {
		switch {
		case malformed && (!w.route.CatchAll() || f.cfg.SkipMalformed):
		case malformed || w.route.Matches(types):
			out = append(out, w)
		}
	}
	return out
}

// Relays reports whether the receiver should let Relay answer d
// (inspector.Tap): in pass-through, for a delivery read whole that a route
// takes.
func (f *Forwarder) Relays(d *inspector.Delivery) bool {
	if f.cfg.Mode != ModePassThrough || f.state.Load() == 2 || d.Truncated || d.ReadError != "" {
		return false
	}
	return len(f.routesFor(d)) > 0
}

// Arrived issues the ticket of a request the receiver starts storing
// (inspector.Tap).
func (f *Forwarder) Arrived() uint64 { return f.tickets.issue() }

// intaken is a stored delivery on its way to the routes' queues.
type intaken struct {
	ticket uint64
	before uint64
	d      *inspector.Delivery
}

// Stored takes a delivery the receiver has durably stored, before it is
// answered (inspector.Tap). It only queues it: the ack never waits for
// forwarding. In pass-through it sends the deliveries the receiver
// answers itself (malformed ones) to the catch-all routes in the
// background.
//
// Before Start it keeps the delivery for the routes (a forwarder that
// takes over the tap at run time); after Stop it drops it (what is stored
// and owed is sent by the next run).
func (f *Forwarder) Stored(ticket uint64, d *inspector.Delivery) {
	stopped := f.state.Load() == 2
	if d == nil || stopped || f.cfg.Mode == ModePassThrough {
		f.tickets.finish(ticket)
	}
	if d == nil || stopped {
		return
	}
	if f.cfg.Mode == ModePassThrough {
		if d.Answer == inspector.AnswerPassThrough {
			return
		}
		for _, w := range f.routesFor(d) {
			f.bg.Add(1)
			go func() {
				defer f.bg.Done()
				a, _ := f.attempt(f.ctx, w, d, KindPassThrough, 1, f.sender)
				w.finishOnce(a)
			}()
		}
		return
	}
	for {
		m := f.maxSeen.Load()
		if d.ID <= m || f.maxSeen.CompareAndSwap(m, d.ID) {
			break
		}
	}
	// Every request that began storing before this call may carry a
	// lower id: the routes send d once all of their tickets are finished.
	before := f.tickets.issued()
	f.intakeMu.Lock()
	f.intake = append(f.intake, intaken{ticket: ticket, before: before, d: d})
	f.intakeMu.Unlock()
	select {
	case f.intakeKick <- struct{}{}:
	default:
	}
}

// dispatch hands stored deliveries to the queues of the routes they
// match, off the receiver's goroutines (matching may decode the body),
// then finishes their tickets.
func (f *Forwarder) dispatch() {
	defer f.wg.Done()
	for {
		f.intakeMu.Lock()
		batch := f.intake
		f.intake = nil
		f.intakeMu.Unlock()
		for _, in := range batch {
			for _, w := range f.routesFor(in.d) {
				w.push(in.d, in.before)
			}
			f.tickets.finish(in.ticket)
		}
		if len(batch) > 0 {
			for _, w := range f.workers {
				w.wake()
			}
			continue
		}
		select {
		case <-f.ctx.Done():
			// What is left is stored and owed: the next run sends it.
			f.intakeMu.Lock()
			for _, in := range f.intake {
				f.tickets.finish(in.ticket)
			}
			f.intake = nil
			f.intakeMu.Unlock()
			return
		case <-f.intakeKick:
		}
	}
}

// safeTop is the highest id such that every delivery at or below it that
// the receiver acked has reached the routes' queues: read the highest id
// handed over, then check that every ticket is finished. A delivery's id
// is taken after its ticket was issued, and its ticket finishes once it
// is in the queues, so any acked delivery with a lower id is there by
// then. Under a constant flood the check rarely passes; the cursor then
// lags, which costs a longer scan after a crash, never a lost delivery.
func (f *Forwarder) safeTop() int64 {
	m := f.maxSeen.Load()
	if f.tickets.idle() {
		for {
			t := f.top.Load()
			if m <= t || f.top.CompareAndSwap(t, m) {
				break
			}
		}
	}
	return f.top.Load()
}

// tickets numbers the requests the receiver stores, in the order they
// begin storing, and knows the highest number below which all are
// finished.
type tickets struct {
	mu   sync.Mutex
	next uint64          // last issued
	low  uint64          // every ticket at or below it is finished
	done map[uint64]bool // finished above low
}

func (t *tickets) issue() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	return t.next
}

func (t *tickets) issued() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

func (t *tickets) finish(n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = map[uint64]bool{}
	}
	t.done[n] = true
	for t.done[t.low+1] {
		delete(t.done, t.low+1)
		t.low++
	}
}

// finished reports whether every ticket up to n is finished.
func (t *tickets) finished(n uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.low >= n
}

// outstanding is how many requests are storing or on their way to the
// routes' queues: the receiver's load, as the forwarder sees it.
func (t *tickets) outstanding() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(t.next-t.low) - int64(len(t.done))
}

// idle reports that no ticket is outstanding.
func (t *tickets) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.low == t.next
}

// waitIdle waits until every ticket issued so far is finished, at most
// for d or until ctx ends. Tickets are few and finish within a store's
// fdatasync, so it polls.
func (t *tickets) waitIdle(ctx context.Context, d time.Duration) {
	t.mu.Lock()
	target := t.next
	t.mu.Unlock()
	deadline := time.Now().Add(d)
	for !t.finished(target) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}

// attempt sends d to w's app once and describes the outcome; it neither
// records nor publishes.
func (f *Forwarder) attempt(ctx context.Context, w *worker, d *inspector.Delivery, kind Kind, number int, s *replay.Sender) (*Attempt, *replay.Response) {
	rt := w.route
	a := &Attempt{
		DeliveryID: d.ID, Route: rt.name, Target: rt.TargetName(), Number: number, Kind: kind,
		StartedAt: f.now().UTC(), Resigned: len(f.cfg.ResignSecret) > 0,
	}
	resp, latency, err := s.Send(ctx, rt.Target, request(d, f.cfg.ResignSecret, f.cfg.Headers))
	a.Latency = latency
	a.Outcome, a.Error = classify(resp, err, rt.Host(), s.Timeout)
	a.reason = a.Error
	if err != nil {
		a.Detail = err.Error()
		var xe *replay.ExchangeError
		if errors.As(err, &xe) {
			a.unsent = xe.Stage == replay.StageConnect || xe.Stage == replay.StageTLS
			a.timedOut = xe.TimedOut
		}
	}
	if resp != nil {
		a.Status, a.StatusText, a.ResponseHeaders = resp.Status, resp.StatusText, resp.Headers
		a.ResponseBody, a.ResponseTruncated = resp.Body, resp.Truncated
		if len(a.ResponseBody) > DefaultMaxResponse {
			a.ResponseBody, a.ResponseTruncated = a.ResponseBody[:DefaultMaxResponse], true
		}
	}
	if a.Outcome != Delivered && a.Outcome != Rejected && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		a.Outcome, a.Error = Stopped, "Hookscope stopped before the app answered"
		a.reason = a.Error
	}
	return a, resp
}

// Relay answers d with the app's answer (inspector.Tap): the first
// matching route's, in the order the routes were given; the other
// matching routes get d too, in the background, and are recorded. No
// answer from the app becomes 502 (nothing to reach) or 504 (nothing
// within the budget) for the service, which then sends the message again.
func (f *Forwarder) Relay(w http.ResponseWriter, r *http.Request, d *inspector.Delivery) {
	routes := f.routesFor(d)
	if len(routes) == 0 {
		// Relays said otherwise a moment ago; answer as the receiver would.
		w.Header().Set("X-Hookscope-Delivery", strconv.FormatInt(d.ID, 10))
		w.WriteHeader(http.StatusOK)
		return
	}
	for _, side := range routes[1:] {
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			a, _ := f.attempt(f.ctx, side, d, KindPassThrough, 1, f.sender)
			side.finishOnce(a)
		}()
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	unhook := context.AfterFunc(f.ctx, stop)
	defer unhook()
	a, resp := f.attempt(ctx, routes[0], d, KindPassThrough, 1, f.relay)
	h := w.Header()
	h.Set("X-Hookscope-Delivery", strconv.FormatInt(d.ID, 10))
	if resp != nil && resp.Status > 0 {
		hop := export.ConnectionTokens(resp.Headers)
		for _, x := range resp.Headers {
			if export.IsHopByHop(x.Name) || hop[strings.ToLower(x.Name)] || strings.EqualFold(x.Name, "Content-Length") {
				continue
			}
			h.Add(x.Name, x.Value)
		}
		h.Set("X-Hookscope-Delivery", strconv.FormatInt(d.ID, 10))
		a.Relayed = resp.Status
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	} else {
		status := http.StatusBadGateway
		if a.Outcome == Timeout || a.timedOut {
			status = http.StatusGatewayTimeout
			a.Error += "; the service got 504 and will send the message again"
		} else {
			a.Error += "; the service got 502 and will send the message again"
		}
		a.Relayed = status
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%d %s from hookscope: %s (delivery %d)\n", status, http.StatusText(status), a.Error, d.ID)
	}
	routes[0].finishOnce(a)
}

// ForwardAgain sends a stored delivery once more, now, outside the queue:
// to the named route, or with route "" to every route it matches. Each
// send is recorded (kind "again") and reported; errors are for a delivery
// or route that does not exist.
func (f *Forwarder) ForwardAgain(ctx context.Context, deliveryID int64, route string) ([]*Attempt, error) {
	d, err := f.store.ForwardDelivery(ctx, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("forward delivery %d again: %w", deliveryID, err)
	}
	if d == nil {
		return nil, fmt.Errorf("forward delivery %d again: there is no such delivery", deliveryID)
	}
	var ws []*worker
	if route != "" {
		w, ok := f.byName[route]
		if !ok {
			return nil, fmt.Errorf("forward delivery %d again: no route %q (routes: %s)", deliveryID, route, f.routeNames())
		}
		ws = []*worker{w}
	} else if ws = f.routesFor(d); len(ws) == 0 {
		return nil, fmt.Errorf("forward delivery %d again: no route takes it (routes: %s); name one to send it anyway", deliveryID, f.routeNames())
	}
	var out []*Attempt
	for _, w := range ws {
		a, _ := f.attempt(ctx, w, d, KindAgain, 0, f.sender)
		a.Final = a.Outcome == Delivered
		if err := f.store.SaveForwards(context.WithoutCancel(ctx), []*Attempt{a}, nil); err != nil {
			return out, fmt.Errorf("record forward of delivery %d: %w", deliveryID, err)
		}
		w.observe(a)
		f.hub.Publish(Event{Kind: AttemptDone, Attempt: a, Route: w.snapshot()})
		out = append(out, a)
	}
	return out, nil
}

func (f *Forwarder) routeNames() string {
	names := ""
	for i, w := range f.workers {
		if i > 0 {
			names += ", "
		}
		names += w.route.name
	}
	return names
}

// Attempts returns a delivery's recorded attempts, oldest first.
func (f *Forwarder) Attempts(ctx context.Context, deliveryID int64) ([]*Attempt, error) {
	return f.store.ForwardAttempts(ctx, deliveryID)
}

// The badge states.
const (
	BadgeQueued    = "queued"    // waiting in a route's queue
	BadgeDelivered = "delivered" // the app took it (2xx)
	BadgeFailed    = "failed"    // given up, or a pass-through the app did not take
	BadgeRetrying  = "retrying"  // the latest attempt failed; the queue tries again
)

// Badge is a delivery's forwarding on a list row.
type Badge struct {
	// State is BadgeQueued, BadgeDelivered, BadgeFailed, BadgeRetrying or
	// "" (not forwarded).
	State string
	// Text is what the row shows: "→ 200", "→ 500", "→ refused", "queued".
	Text    string
	Summary Summary
}

// BadgeOf is the badge of a delivery whose latest attempt had this
// outcome, status and finality.
func BadgeOf(o Outcome, status int, final bool) Badge {
	b := Badge{Text: "→ " + string(o)}
	if o == Delivered || o == Rejected {
		b.Text = "→ " + strconv.Itoa(status)
	}
	switch {
	case o == Delivered:
		b.State = BadgeDelivered
	case final:
		b.State = BadgeFailed
	default:
		b.State = BadgeRetrying
	}
	return b
}

// Badge is the badge the delivery shows once this attempt is its latest.
func (a *Attempt) Badge() Badge {
	b := BadgeOf(a.Outcome, a.Status, a.Final)
	b.Summary = Summary{Attempts: a.Number, Status: a.Status, Outcome: a.Outcome, Final: a.Final, Reforward: a.Reforward, At: a.StartedAt}
	return b
}

// Badges returns the badge of each of ids that has one: the store's
// summary (one primary-key lookup per row), or "queued" for deliveries
// that queued reports (a running forwarder's queues; nil when forwarding
// is off).
func Badges(ctx context.Context, store Store, ids []int64, queued func(id int64) bool) (map[int64]Badge, error) {
	sums, err := store.ForwardSummaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]Badge, len(ids))
	for _, id := range ids {
		s, ok := sums[id]
		if !ok {
			if queued != nil && queued(id) {
				out[id] = Badge{State: BadgeQueued, Text: "queued"}
			}
			continue
		}
		b := BadgeOf(s.Outcome, s.Status, s.Final)
		b.Summary = s
		out[id] = b
	}
	return out, nil
}

// Badges returns the badge of each of ids that has one (see Badges):
// the store's summary, or "queued" for deliveries in a route's queue.
func (f *Forwarder) Badges(ctx context.Context, ids []int64) (map[int64]Badge, error) {
	return Badges(ctx, f.store, ids, f.Queued)
}

// Queued reports whether a route's queue holds id.
func (f *Forwarder) Queued(id int64) bool {
	for _, w := range f.workers {
		if w.holds(id) {
			return true
		}
	}
	return false
}

// Floor is the highest id below every delivery a route still owes:
// retention may delete at or below it, never above (math.MaxInt64 - 1
// when the routes owe nothing).
func (f *Forwarder) Floor() int64 {
	l := int64(math.MaxInt64)
	for _, w := range f.workers {
		l = min(l, w.lowest())
	}
	return l - 1
}
