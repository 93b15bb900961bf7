// Package station is Hookscope's receiver assembled once for both faces:
// the store, the inspector engine and its analysis, the HTTP server,
// retention, forwarding and the cloudflared tunnel. The
// window and `hookscope listen` each open one Station and differ only in
// how they show what it reports. It never imports Fyne.
package station

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/pubsub"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

// PruneEvery is retention's one rule: while deliveries arrive, the store
// is cut back to the newest Keep deliveries at most this often (and once
// at start), never deleting one a forward route still owes
// (storage.DB.Prune).
const PruneEvery = time.Second

// Config is what a Station runs.
type Config struct {
	// DBPath is the store file; empty means storage.DefaultPath().
	DBPath string
	// Addr is where the receiver listens; empty starts it later (Listen).
	Addr string
	// Listener, when set, is a socket already bound for the receiver
	// (instead of Addr): `listen` binds before it opens the store, so a
	// taken port creates no store.
	Listener net.Listener
	// Engine configures the inspector engine (secrets, body cap, log).
	// Its Logf is the station's log too; its Answer is the station's
	// (Answer below).
	Engine inspector.Options
	// Answer is the receiver's answer rules (SetAnswerRules); none
	// answers 200 to every delivery.
	Answer []string
	// Keep is the retention cap in deliveries; 0 keeps everything.
	Keep int64
	// Forward, when set, forwards every delivery (see inspector/forward).
	Forward *forward.Config
	// Wrap, when set, puts handlers in front of the receiver (the window
	// answers its OAuth callback on the same port).
	Wrap func(http.Handler) http.Handler
	// Server overrides the receiver's timeouts (tests).
	Server inspector.ServerOptions
	// Relay, when set, makes the station a team relay: its receiver
	// appends every delivery to the relay's stream, started from these
	// options, instead of a store (no store is opened; Forward and Keep
	// are refused), and its port serves laptops under relay.NATSPath
	// (station/relay.go).
	Relay *relay.Options
}

// Station is a running receiver assembly.
type Station struct {
	cfg     Config
	started atomic.Bool
	db      *storage.DB
	eng     *inspector.Engine
	// instance names this process: its forward mark and lease holder.
	instance string
	handler  http.Handler
	serverO  inspector.ServerOptions
	logf     func(string, ...any)
	keep     atomic.Int64
	// answers holds the answer rules and their attempt counter.
	answers *answers

	mu       sync.Mutex
	srv      *inspector.Server
	srvErr   error
	fwd      *forward.Forwarder
	fwdUnsub func()
	tun      *tunnel.Supervisor
	tunCfg   tunnel.Config
	tunUnsub func()
	// tunMu serialises StartTunnel and StopTunnel: two starts at once (a
	// double click) must not both run a cloudflared, and a stop must not
	// miss one being started.
	tunMu sync.Mutex

	// setMu serialises SetForward: one forwarder replaces another at a
	// time.
	setMu sync.Mutex
	// fwdHub and tunHub outlive the forwarders and supervisors: a face
	// subscribes once.
	fwdHub pubsub.Hub[forward.Event]
	tunHub pubsub.Hub[tunnel.Event]

	// rl is the relay this station is, or the link to the one it reads.
	rl relayParts

	stopRun   context.CancelFunc
	runDone   chan error
	pruneKick chan struct{}
	bg        sync.WaitGroup
	closed    atomic.Bool
}

// Open is New, then Start: the store opened, and everything running.
func Open(ctx context.Context, cfg Config) (*Station, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	return s, nil
}

// New opens the store and builds the engine. Nothing runs until Start, so
// a face subscribes first (Engine().Subscribe, SubscribeForward,
// SubscribeTunnel) and sees the first delivery and the first attempt: a
// restart analyses what a crash left and forwards what was owed at once.
func New(cfg Config) (*Station, error) {
	if cfg.Relay != nil {
		return newRelayStation(cfg)
	}
	path := cfg.DBPath
	if path == "" {
		p, err := storage.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	logf := cfg.Engine.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ans, err := newAnswers(cfg.Answer)
	if err != nil {
		return nil, err
	}
	db, err := storage.OpenWith(path, storage.Options{Logf: logf})
	if err != nil {
		return nil, err
	}
	s := &Station{db: db, cfg: cfg, serverO: cfg.Server, logf: logf, pruneKick: make(chan struct{}, 1), instance: forward.NewInstance(), answers: ans}
	s.keep.Store(cfg.Keep)
	engOpts := cfg.Engine
	engOpts.Instance = s.instance
	engOpts.Answer = ans.rules
	s.eng = inspector.NewEngine(db, engOpts)
	s.handler = s.eng.Handler()
	if cfg.Wrap != nil {
		s.handler = cfg.Wrap(s.handler)
	}
	return s, nil
}

// Start starts forwarding (when configured: before the receiver, so
// nothing is missed), analysis, retention and, when the configuration
// has an address or a listener, the receiver. A forwarding that cannot
// start is an error, and so is a receiver that cannot bind.
func (s *Station) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("station: started twice")
	}
	s.seedAttempts(ctx)
	if s.cfg.Forward != nil {
		if err := s.SetForward(ctx, s.cfg.Forward); err != nil {
			return err
		}
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopRun, s.runDone = stop, make(chan error, 1)
	go func() { s.runDone <- s.eng.Run(runCtx) }()
	s.eng.Subscribe(func(*inspector.Record) {
		select {
		case s.pruneKick <- struct{}{}:
		default:
		}
	})
	s.bg.Add(1)
	go s.retention(runCtx)
	switch {
	case s.cfg.Listener != nil:
		s.serve(s.cfg.Listener)
	case s.cfg.Addr != "":
		return s.Listen(s.cfg.Addr)
	}
	return nil
}

// Store is the open store (the faces list, show and export from it);
// nil for a relay (Config.Relay).
func (s *Station) Store() *storage.DB { return s.db }

// Engine is the inspector engine (secrets, subscriptions).
func (s *Station) Engine() *inspector.Engine { return s.eng }

// Forwarder is the running forwarder, nil when forwarding is off.
func (s *Station) Forwarder() *forward.Forwarder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fwd
}

// Listen binds addr and serves the receiver there, then closes the
// previous socket: a bad address leaves the receiver where it was. A
// running tunnel follows the receiver to its new address.
func (s *Station) Listen(addr string) error {
	ln, err := inspector.Listen(addr)
	if err != nil {
		s.mu.Lock()
		if s.srv == nil {
			s.srvErr = err
		}
		s.mu.Unlock()
		return err
	}
	s.serve(ln)
	return nil
}

// serve serves the receiver on ln, then closes the previous socket; a
// running tunnel follows.
func (s *Station) serve(ln net.Listener) {
	next := inspector.ServeListener(ln, s.handler, s.serverO)
	s.mu.Lock()
	old, tun := s.srv, s.tun
	s.srv, s.srvErr = next, nil
	s.mu.Unlock()
	if old != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = old.Shutdown(ctx)
	}
	if tun != nil {
		s.tunMu.Lock()
		defer s.tunMu.Unlock()
		s.mu.Lock()
		running, cfg := s.tun != nil, s.tunCfg
		s.mu.Unlock()
		// A tunnel stopped meanwhile stays stopped.
		if running {
			if _, err := s.startTunnel(context.Background(), cfg); err != nil {
				s.logf("tunnel: %v", err)
			}
		}
	}
}

// Addr is the bound host:port, "" while not listening.
func (s *Station) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return ""
	}
	return s.srv.Addr()
}

// Err says why the receiver is not listening (nil when it is).
func (s *Station) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil && s.srvErr == nil {
		return errors.New("not started")
	}
	return s.srvErr
}

// LocalURL is the URL cloudflared (or anything on this machine) reaches
// a receiver bound to addr at: a wildcard bind is reached on loopback.
func LocalURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// StartTunnel starts a cloudflared supervisor in front of the receiver
// (cfg.LocalURL is set to it), replacing a running one. No usable
// cloudflared is reported by the supervisor's NotInstalled event and as
// the error (the supervisor is returned too, for its log); the receiver
// keeps working locally. Its events go to SubscribeTunnel's subscribers
// from the first. Starts and stops run one at a time: whatever the
// callers, at most one cloudflared runs.
func (s *Station) StartTunnel(ctx context.Context, cfg tunnel.Config) (*tunnel.Supervisor, error) {
	s.tunMu.Lock()
	defer s.tunMu.Unlock()
	return s.startTunnel(ctx, cfg)
}

// startTunnel is StartTunnel with tunMu held.
func (s *Station) startTunnel(ctx context.Context, cfg tunnel.Config) (*tunnel.Supervisor, error) {
	addr := s.Addr()
	if addr == "" {
		return nil, errors.New("start tunnel: the receiver is not listening")
	}
	s.stopTunnel()
	cfg.LocalURL = LocalURL(addr)
	sup := tunnel.New(cfg)
	unsub := sup.Subscribe(s.tunHub.Publish)
	if err := sup.Start(ctx); err != nil {
		unsub()
		return sup, err
	}
	s.mu.Lock()
	s.tun, s.tunCfg, s.tunUnsub = sup, cfg, unsub
	s.mu.Unlock()
	return sup, nil
}

// SubscribeTunnel reports the events of every tunnel the station runs,
// on the supervisor's event goroutine: a face subscribes once, before or
// after tunnels start and stop.
func (s *Station) SubscribeTunnel(fn func(tunnel.Event)) (cancel func()) {
	return s.tunHub.Subscribe(fn)
}

// Tunnel is the running tunnel supervisor, nil when there is none.
func (s *Station) Tunnel() *tunnel.Supervisor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tun
}

// StopTunnel stops cloudflared and returns when it is gone (waiting for a
// start under way to finish first).
func (s *Station) StopTunnel() {
	s.tunMu.Lock()
	defer s.tunMu.Unlock()
	s.stopTunnel()
}

// stopTunnel is StopTunnel with tunMu held.
func (s *Station) stopTunnel() {
	s.mu.Lock()
	tun, unsub := s.tun, s.tunUnsub
	s.tun, s.tunUnsub = nil, nil
	s.mu.Unlock()
	if tun != nil {
		tun.Stop()
		unsub()
	}
}

// SetForward replaces the forwarding configuration (nil turns it off)
// while the receiver runs. The running forwarder stops (what it was
// sending is recorded as stopped, and sent again as a re-forward) and
// the new one starts from each route's cursor in the store: nothing
// stored meanwhile is missed. A route the new configuration drops is
// turned off: turned on again later, it starts with the deliveries that
// arrive then. A route that leads back to this receiver (its address,
// localhost on its port, the tunnel's hostname) is refused. Its events go
// to SubscribeForward's subscribers.
func (s *Station) SetForward(ctx context.Context, cfg *forward.Config) error {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if err := s.checkRelayForward(cfg); err != nil {
		return err
	}
	var next *forward.Forwarder
	if cfg != nil {
		if err := s.checkRoutes(cfg.Routes); err != nil {
			return err
		}
		f, err := forward.New(*cfg, forward.Options{Store: s.db, Logf: s.logf, Instance: s.instance, Verify: s.eng.VerifySignature})
		if err != nil {
			return err
		}
		next = f
	}
	keep := map[string]bool{}
	if cfg != nil {
		for _, r := range cfg.Routes {
			keep[r.Name()] = true
		}
	}
	if err := s.stopForward(ctx, func(route string) bool { return !keep[route] }); err != nil {
		s.logf("forward: %v", err)
	}
	if next == nil {
		return nil
	}
	unsub := next.Subscribe(s.fwdHub.Publish)
	if err := next.Start(ctx); err != nil {
		unsub()
		return err
	}
	s.mu.Lock()
	s.fwd, s.fwdUnsub = next, unsub
	s.mu.Unlock()
	s.eng.SetTap(next)
	return nil
}

// stopForward stops the running forwarder, turning off the routes off
// reports.
func (s *Station) stopForward(ctx context.Context, off func(route string) bool) error {
	s.mu.Lock()
	old, unsub := s.fwd, s.fwdUnsub
	s.fwd, s.fwdUnsub = nil, nil
	s.mu.Unlock()
	if old == nil {
		return nil
	}
	s.eng.SetTap(nil)
	err := old.StopAndTurnOff(ctx, off)
	unsub()
	return err
}

// ErrRouteToSelf is SetForward's error for a route that leads back to
// this receiver.
var ErrRouteToSelf = errors.New("it leads back to this receiver, which would forward every delivery to itself without end: give your app's URL (another port)")

// checkRoutes refuses routes that lead back to the receiver.
func (s *Station) checkRoutes(routes []forward.Route) error {
	addr := s.Addr()
	var public []string
	s.mu.Lock()
	if s.tun != nil {
		public = append(public, s.tunCfg.Hostname)
		if u, err := url.Parse(s.tun.State().PublicURL); err == nil {
			public = append(public, u.Hostname())
		}
	}
	s.mu.Unlock()
	for _, r := range routes {
		self := addr != "" && r.PointsAt(addr, "")
		for _, h := range public {
			self = self || (h != "" && r.PointsAt("", h))
		}
		if self {
			return fmt.Errorf("forward route %s: %w", r.Name(), ErrRouteToSelf)
		}
	}
	return nil
}

// SubscribeForward reports the events of every forwarder the station runs
// (attempts, route changes, warnings), on the forwarder's goroutines: a
// face subscribes once, whatever SetForward does later.
func (s *Station) SubscribeForward(fn func(forward.Event)) (cancel func()) {
	return s.fwdHub.Subscribe(fn)
}

// ForwardStatus is every route's state, nil when forwarding is off.
func (s *Station) ForwardStatus() []forward.RouteStatus {
	if f := s.Forwarder(); f != nil {
		return f.Status()
	}
	return nil
}

// Badges returns the forward badge of each of ids that has one: the
// store's summary of its attempts, or "queued" while a route holds it.
// It works with forwarding off too (earlier attempts).
func (s *Station) Badges(ctx context.Context, ids []int64) (map[int64]forward.Badge, error) {
	var queued func(int64) bool
	if f := s.Forwarder(); f != nil {
		queued = f.Queued
	}
	return forward.Badges(ctx, s.db, ids, queued)
}

// ForwardAttempts returns a delivery's attempts, oldest first, with
// forwarding on or off.
func (s *Station) ForwardAttempts(ctx context.Context, id int64) ([]*forward.Attempt, error) {
	return s.db.ForwardAttempts(ctx, id)
}

// ErrForwardingOff is ForwardAgain's error while forwarding is off.
var ErrForwardingOff = errors.New("forwarding is off: turn it on to forward a delivery again")

// ForwardAgain sends a stored delivery once more, now, to the named route
// or (route "") every route it matches (forward.Forwarder.ForwardAgain).
func (s *Station) ForwardAgain(ctx context.Context, id int64, route string) ([]*forward.Attempt, error) {
	f := s.Forwarder()
	if f == nil {
		return nil, ErrForwardingOff
	}
	return f.ForwardAgain(ctx, id, route)
}

// ForwardRoutes returns the running forwarder's routes, nil when off.
func (s *Station) ForwardRoutes() []forward.Route {
	if f := s.Forwarder(); f != nil {
		return f.Routes()
	}
	return nil
}

// SetKeep changes the retention cap (0 keeps everything) and applies it.
func (s *Station) SetKeep(n int64) {
	s.keep.Store(max(n, 0))
	select {
	case s.pruneKick <- struct{}{}:
	default:
	}
}

// retention applies the one rule (PruneEvery) until ctx ends.
func (s *Station) retention(ctx context.Context) {
	defer s.bg.Done()
	var last time.Time
	for {
		if keep := s.keep.Load(); keep > 0 {
			if wait := PruneEvery - time.Since(last); wait > 0 && !last.IsZero() {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			last = time.Now()
			if err := s.prune(ctx, keep); err != nil && ctx.Err() == nil {
				s.logf("retention: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.pruneKick:
		}
	}
}

// prune keeps the newest keep deliveries, and every one a forward route
// still owes.
func (s *Station) prune(ctx context.Context, keep int64) error {
	if s.db == nil {
		return nil // a relay: its stream keeps its own limits
	}
	_, err := s.db.Prune(ctx, keep)
	return err
}

// Close stops everything in order: the tunnel, the receiver (in-flight
// requests finish, each stored before its answer), forwarding (the routes
// stay on: what they owe is sent by the next start), analysis (what it did
// not reach is analyzed by the next start), then the store.
func (s *Station) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	s.StopTunnel()
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if srv == nil && s.cfg.Listener != nil {
		s.cfg.Listener.Close() // given, never served
	}
	if err := s.closeRelay(ctx); err != nil {
		errs = append(errs, err)
	}
	s.setMu.Lock()
	if err := s.stopForward(ctx, nil); err != nil {
		errs = append(errs, err)
	}
	s.setMu.Unlock()
	if s.stopRun != nil {
		s.stopRun()
		if err := <-s.runDone; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("analysis: %w", err))
		}
	}
	s.bg.Wait()
	if s.db == nil {
		return errors.Join(errs...)
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
