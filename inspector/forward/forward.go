// Package forward sends every delivery the receiver stores on to the
// developer's own app, byte-exact (body and header values; net/http
// frames the request): in ack mode from an outbox on the store, one
// worker per route reading the deliveries above its cursor in id order,
// retried until the app takes it, resumed after a restart (kill -9
// included), one process per route at a time (a lease); in pass-through
// mode at once, with the app's answer relayed to the service. Every
// attempt is recorded with its delivery and reported to subscribers (the
// CLI's lines, the window's badges). It never imports Fyne;
// docs/forwarding.md has the design.
package forward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/fault"
	"github.com/hookscope/hookscope/internal/pubsub"
)

// Options are the forwarder's collaborators.
type Options struct {
	// Store keeps the routes' cursors and leases and the attempts;
	// required.
	Store Store
	// Logf receives operational messages (never secrets). Nil discards.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Instance names this Hookscope process: the holder of the routes'
	// leases and the mark each forwarded request carries in
	// inspector.ForwardedHeader (the receiver refuses a request carrying
	// its own). Empty: a random one.
	Instance string
	// Verify judges a delivery's signature with the receiver's secrets:
	// with Config.ResignSecret, only a delivery whose signature verified
	// is re-signed. Nil: none verifies.
	Verify func(d *inspector.Delivery) inspector.SignatureResult
}

// EventKind says what an Event reports.
type EventKind int

// The event kinds.
const (
	// AttemptDone: Attempt holds one finished attempt, recorded; Route
	// the state of its route just after it.
	AttemptDone EventKind = iota
	// RouteChanged: Route went up, down or on standby, or the number of
	// deliveries waiting for it changed (reported at most every 250 ms).
	RouteChanged
	// Warning: Message says something the user should know once (a
	// target off this machine, certificates not checked).
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
	// RouteStandby: another Hookscope process on the same store forwards
	// this route; this one takes over when it stops.
	RouteStandby RouteStateName = "standby"
)

// RouteStatus is a route as the faces show it.
type RouteStatus struct {
	Name   string         `json:"route"`
	Target string         `json:"target"`
	Mode   Mode           `json:"mode"`
	State  RouteStateName `json:"state"`
	// Waiting is how many deliveries wait for the route while its app is
	// down (the one being tried included; 0 otherwise, and in
	// pass-through).
	Waiting int64 `json:"waiting"`
	// Since is when the route entered its state.
	Since time.Time `json:"since,omitzero"`
	// LastError is the last attempt's failure in plain words, without
	// what Hookscope does next ("nothing is listening on localhost:3000
	// (connection refused); start it, or check the port in the URL"); on
	// standby, who forwards instead.
	LastError string    `json:"last_error,omitempty"`
	NextAt    time.Time `json:"next_at,omitzero"`
}

// Lease timing: a holder renews its leases every LeaseRenew; a process
// that stops renewing (killed, frozen) loses a route LeaseTTL after its
// last renewal, and a process on standby looks every LeaseRenew.
const (
	LeaseTTL   = 3 * time.Second
	LeaseRenew = time.Second
)

// Forwarder forwards deliveries. Create it with New, Start it, give it to
// the engine as its Tap (inspector.Engine.SetTap), Stop it last.
type Forwarder struct {
	cfg       Config
	store     Store
	logf      func(string, ...any)
	now       func() time.Time
	instance  string
	holder    string
	verify    func(*inspector.Delivery) inspector.SignatureResult
	client    *http.Client
	needTypes bool

	workers []*worker
	byName  map[string]*worker
	hub     pubsub.Hub[Event]
	// recording reports, once per change of state, attempts that cannot
	// be recorded (nothing is sent meanwhile).
	recording fault.State

	warnings []string

	ctx     context.Context
	cancel  context.CancelFunc
	started time.Time
	wg      sync.WaitGroup
	bg      sync.WaitGroup // pass-through's side sends
	state   atomic.Int32   // 0 new, 1 started, 2 stopped
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
	client, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	f := &Forwarder{
		cfg:      cfg,
		store:    o.Store,
		logf:     o.Logf,
		now:      o.Now,
		instance: o.Instance,
		verify:   o.Verify,
		client:   client,
		byName:   map[string]*worker{},
	}
	if f.logf == nil {
		f.logf = func(string, ...any) {}
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.instance == "" {
		f.instance = NewInstance()
	}
	f.holder = f.instance
	f.recording = fault.State{
		Failing:   "forward: cannot record attempts in the store",
		Meanwhile: "nothing is sent until they can be recorded; the deliveries wait in order",
		Recovered: "forward: recording attempts again",
		Attempts:  "tries failed",
		Logf:      f.logf,
	}
	// The context exists from the start: a forwarder given the tap before
	// Start relays in pass-through already.
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.needTypes = cfg.SkipMalformed
	for _, r := range cfg.Routes {
		if r.Target == nil {
			return nil, fmt.Errorf("forward route %q has no target", r.name)
		}
		if r.name == "" {
			r.name = r.TargetName()
		}
		if r.Glob != "" {
			f.needTypes = true
		}
		if _, dup := f.byName[r.name]; dup {
			return nil, fmt.Errorf("forward route %q is given twice", r.name)
		}
		w := &worker{f: f, route: r, kick: make(chan struct{}, 1)}
		w.status = RouteStatus{Name: r.name, Target: r.TargetName(), Mode: cfg.Mode, State: RouteIdle}
		f.workers = append(f.workers, w)
		f.byName[r.name] = w
		if !r.Loopback() {
			f.warnings = append(f.warnings, fmt.Sprintf("forwarding to %s, which is not on this machine: every delivery's body leaves it", r.TargetName()))
		}
	}
	if cfg.Insecure {
		f.warnings = append(f.warnings, "INSECURE: https targets' certificates are not checked (--forward-insecure): anyone on the way can read and change what is forwarded")
	}
	return f, nil
}

// NewInstance returns a fresh random name for a Hookscope process (its
// forward mark and lease holder).
func NewInstance() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Instance is the name this forwarder's requests carry in
// inspector.ForwardedHeader.
func (f *Forwarder) Instance() string { return f.instance }

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

// Start claims each ack route in the store (the first claim is made
// before Start returns, so a face asking at once sees where the route
// stands) and starts its worker: the route sends everything above its
// cursor, oldest first, whatever process stored it. Give the forwarder
// the engine's tap before the receiver serves, so each new delivery wakes
// its routes at once.
func (f *Forwarder) Start(ctx context.Context) error {
	if !f.state.CompareAndSwap(0, 1) {
		return errors.New("forward: started twice")
	}
	f.started = f.now()
	if f.cfg.Mode == ModeAck {
		for _, w := range f.workers {
			if err := w.claim(ctx); err != nil {
				f.state.Store(2)
				f.cancel()
				return fmt.Errorf("open forward route %s: %w", w.route.name, err)
			}
		}
	}
	for _, msg := range f.warnings {
		f.logf("warning: %s", msg)
		f.hub.Publish(Event{Kind: Warning, Message: msg})
	}
	if f.cfg.Mode != ModeAck {
		return nil
	}
	f.wg.Add(2 + len(f.workers))
	go f.renew()
	go f.watch()
	for _, w := range f.workers {
		go w.run()
	}
	return nil
}

// renew keeps this process's leases alive while it runs, whatever its
// workers are doing (a send may take the whole timeout).
func (f *Forwarder) renew() {
	defer f.wg.Done()
	t := time.NewTicker(LeaseRenew)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
		if err := f.store.RenewLeases(f.ctx, f.holder, LeaseTTL); err != nil && f.ctx.Err() == nil {
			f.recording.Fail(err)
		}
	}
}

// watch counts what waits for each route and reports the routes whose
// state or count changed (every 250 ms), so a face can show "your app
// is down; 41 deliveries wait" as the queue grows between attempts.
func (f *Forwarder) watch() {
	defer f.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
		for _, w := range f.workers {
			w.count(f.ctx)
			st := w.snapshot()
			if st.State == w.reported.State && st.Waiting == w.reported.Waiting && st.LastError == w.reported.LastError {
				continue
			}
			w.reported = st
			f.hub.Publish(Event{Kind: RouteChanged, Route: st})
		}
	}
}

// Stop ends forwarding and gives each route's lease up (another process
// forwarding the same route takes it over at once). Attempts under way
// are abandoned, recorded as stopped, and their deliveries stay marked as
// being sent: the next run sends them again as re-forwards.
func (f *Forwarder) Stop(ctx context.Context) error { return f.StopAndTurnOff(ctx, nil) }

// StopAndTurnOff is Stop that also turns off the routes off reports
// (nil: none): a route turned off and on again later starts with the
// deliveries that arrive then; what waited, and what arrived meanwhile,
// is not sent.
func (f *Forwarder) StopAndTurnOff(ctx context.Context, off func(route string) bool) error {
	prev := f.state.Swap(2)
	f.cancel()
	if prev == 2 {
		return nil
	}
	f.bg.Wait()
	f.wg.Wait()
	var errs []error
	for _, w := range f.workers {
		turnOff := off != nil && off(w.route.name)
		if prev == 1 && f.cfg.Mode == ModeAck || turnOff {
			if err := f.store.ReleaseRoute(context.WithoutCancel(ctx), w.route.name, f.holder, turnOff); err != nil {
				errs = append(errs, fmt.Errorf("release forward route %s: %w", w.route.name, err))
			}
		}
	}
	f.client.CloseIdleConnections()
	return errors.Join(errs...)
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
		case malformed && f.cfg.SkipMalformed:
		case w.route.Where != nil:
			if w.route.Takes(d, f.verify) {
				out = append(out, w)
			}
		case malformed && !w.route.CatchAll():
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

// Stored is told of each delivery the receiver committed, before it is
// answered (inspector.Tap). It never blocks: in ack mode it wakes the
// routes' workers (they read the delivery from the store); in
// pass-through it sends the deliveries the receiver answers itself
// (malformed ones) to the catch-all routes in the background.
func (f *Forwarder) Stored(d *inspector.Delivery) {
	if d == nil || f.state.Load() == 2 {
		return
	}
	if f.cfg.Mode == ModeAck {
		for _, w := range f.workers {
			w.wake()
		}
		return
	}
	if d.Answer == inspector.AnswerPassThrough {
		return
	}
	for _, w := range f.routesFor(d) {
		f.oneOff(w, d)
	}
}

// oneOff sends d to w's app once in the background and records it
// (pass-through's deliveries that the app does not answer for).
func (f *Forwarder) oneOff(w *worker, d *inspector.Delivery) {
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		a, _ := f.attempt(f.ctx, w, d, KindPassThrough, 1, DefaultMaxResponse)
		f.finishOnce(w, a)
	}()
}

// sign decides what happens to d's signature: re-signed when re-signing
// is asked for and d's own signature verified; sent without it, or not at
// all (skip), when it did not, with the reason.
func (f *Forwarder) sign(d *inspector.Delivery) (s signing, skip bool, why string) {
	if len(f.cfg.ResignSecret) == 0 {
		return signing{}, false, ""
	}
	res := inspector.SignatureResult{Status: inspector.SignatureUnverified, Reason: "no webhook secret is configured to verify it with"}
	if f.verify != nil {
		res = f.verify(d)
	}
	if res.Status == inspector.SignatureValid {
		return signing{secret: f.cfg.ResignSecret}, false, ""
	}
	why = fmt.Sprintf("its own signature is %s", res.Status)
	if res.Reason != "" {
		why += " (" + res.Reason + ")"
	}
	if f.cfg.SkipUnverified {
		return signing{}, true, why + ": not forwarded (--forward-skip-unverified)"
	}
	return signing{strip: true}, false, why + ": forwarded without a signature, not re-signed"
}

// attempt sends d to w's app once and describes the outcome, keeping the
// first keep bytes of the answer; it neither records nor publishes.
func (f *Forwarder) attempt(ctx context.Context, w *worker, d *inspector.Delivery, kind Kind, number int, keep int64) (*Attempt, *answer) {
	rt := w.route
	a := &Attempt{
		DeliveryID: d.ID, Route: rt.name, Target: rt.TargetName(), Number: number, Kind: kind,
		StartedAt: f.now().UTC(), Insecure: f.cfg.Insecure && rt.Target.Scheme == "https",
	}
	sign, skip, why := f.sign(d)
	a.NotResigned, a.Resigned = why, sign.secret != nil
	if skip {
		a.Outcome, a.Error, a.reason = Skipped, "not forwarded: "+why, "not forwarded: "+why
		return a, nil
	}
	timeout := f.cfg.Policy.timeout()
	sendCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := f.request(sendCtx, rt, d, sign)
	if err != nil {
		a.Outcome, a.Error, a.reason = Unreachable, fmt.Sprintf("cannot build the request: %v", err), err.Error()
		return a, nil
	}
	start := time.Now()
	ans, ex, err := f.send(req, keep)
	a.Latency = time.Since(start)
	a.Outcome, a.Error = classify(ans, ex, err, rt.Host(), timeout)
	a.reason = a.Error
	if err != nil {
		a.Detail = err.Error()
		a.unsent = !ex.connected
		a.timedOut = errors.Is(err, context.DeadlineExceeded)
	}
	if ans != nil {
		a.Status, a.StatusText, a.ResponseHeaders = ans.status, ans.statusText, headerList(ans.headers)
		a.ResponseBody, a.ResponseLength = ans.body, ans.total
		a.ResponseTruncated = ans.cut
		if int64(len(a.ResponseBody)) > DefaultMaxResponse {
			a.ResponseBody, a.ResponseTruncated = a.ResponseBody[:DefaultMaxResponse], true
		}
	}
	if a.Outcome != Delivered && a.Outcome != Rejected && ctx.Err() != nil {
		a.Outcome, a.Error = Stopped, "Hookscope stopped before the app answered"
		a.reason = a.Error
	}
	return a, ans
}

// Relay answers d with the app's answer (inspector.Tap): the first
// matching route's, in the order the routes were given; the other
// matching routes get d too, in the background, and are recorded. No
// answer from the app (or one cut short) becomes 502 (504: none within
// the budget) for the service, which then sends the message again. An
// answer longer than RelayMaxResponse is read whole and relayed cut
// there, said in CutHeader. d.Status becomes the status the service got.
func (f *Forwarder) Relay(w http.ResponseWriter, r *http.Request, d *inspector.Delivery) {
	id := strconv.FormatInt(d.ID, 10)
	routes := f.routesFor(d)
	if len(routes) == 0 {
		// Relays said otherwise a moment ago; answer as the receiver would.
		w.Header().Set("X-Hookscope-Delivery", id)
		w.WriteHeader(http.StatusOK)
		d.Status = http.StatusOK
		return
	}
	for _, side := range routes[1:] {
		f.oneOff(side, d)
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	unhook := context.AfterFunc(f.ctx, stop)
	defer unhook()
	a, ans := f.attempt(ctx, routes[0], d, KindPassThrough, 1, RelayMaxResponse)
	h := w.Header()
	if a.Outcome == Delivered || a.Outcome == Rejected {
		hop := export.ConnectionTokens(a.ResponseHeaders)
		for _, x := range a.ResponseHeaders {
			if export.IsHopByHop(x.Name) || hop[strings.ToLower(x.Name)] || strings.EqualFold(x.Name, "Content-Length") {
				continue
			}
			h.Add(x.Name, x.Value)
		}
		h.Set("X-Hookscope-Delivery", id)
		if ans.cut {
			a.RelayCut = true
			h.Set(CutHeader, fmt.Sprintf("the app's answer was %d bytes; the first %d are relayed", ans.total, RelayMaxResponse))
		}
		a.Relayed = ans.status
		w.WriteHeader(ans.status)
		w.Write(ans.body)
	} else {
		status := http.StatusBadGateway
		if a.Outcome == Timeout || a.timedOut {
			status = http.StatusGatewayTimeout
		}
		a.Error += fmt.Sprintf("; the service got %d and will send the message again", status)
		a.Relayed = status
		h.Set("X-Hookscope-Delivery", id)
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%d %s from hookscope: %s (delivery %d)\n", status, http.StatusText(status), a.Error, d.ID)
	}
	d.Status = a.Relayed
	// The service has its answer before the attempt is recorded.
	_ = http.NewResponseController(w).Flush()
	f.finishOnce(routes[0], a)
}

// finishOnce records and reports a one-off attempt (pass-through). It is
// final: a switch back to ack mode does not send its delivery again.
func (f *Forwarder) finishOnce(w *worker, a *Attempt) {
	if a.Outcome != Stopped {
		a.Final = true
	}
	if err := f.store.SaveForwards(context.WithoutCancel(f.ctx), []*Attempt{a}, nil); err != nil {
		f.recording.Fail(err)
	} else {
		f.recording.OK()
	}
	w.observe(a)
	f.publish(w, a)
}

// publish reports a recorded attempt. Subscribers get a copy each.
func (f *Forwarder) publish(w *worker, a *Attempt) {
	seen := *a
	f.hub.Publish(Event{Kind: AttemptDone, Attempt: &seen, Route: w.snapshot()})
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
		a, _ := f.attempt(ctx, w, d, KindAgain, 0, DefaultMaxResponse)
		a.Final = a.Outcome == Delivered
		if err := f.store.SaveForwards(context.WithoutCancel(ctx), []*Attempt{a}, nil); err != nil {
			return out, fmt.Errorf("record forward of delivery %d: %w", deliveryID, err)
		}
		w.observe(a)
		f.publish(w, a)
		out = append(out, a)
	}
	return out, nil
}

func (f *Forwarder) routeNames() string {
	names := make([]string, len(f.workers))
	for i, w := range f.workers {
		names[i] = w.route.name
	}
	return strings.Join(names, ", ")
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
// that queued reports (a running forwarder's routes; nil when forwarding
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
// the store's summary, or "queued" for deliveries a route still owes.
func (f *Forwarder) Badges(ctx context.Context, ids []int64) (map[int64]Badge, error) {
	return Badges(ctx, f.store, ids, f.Queued)
}

// Queued reports whether an ack route still owes id (it lies above the
// route's cursor).
func (f *Forwarder) Queued(id int64) bool {
	if f.cfg.Mode != ModeAck || f.state.Load() != 1 {
		return false
	}
	for _, w := range f.workers {
		if id > w.cursorNow() {
			return true
		}
	}
	return false
}
