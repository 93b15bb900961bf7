// Package station is Hookscope's receiver assembled once for both faces:
// the store (with its inbox), the inspector engine and its analysis, the
// HTTP server, retention, forwarding and the cloudflared tunnel. The
// window and `hookscope listen` each open one Station and differ only in
// how they show what it reports. It never imports Fyne.
package station

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

// PruneEvery is retention's one rule: while deliveries arrive, the store
// is cut back to the newest Keep deliveries at most this often (and once
// at start), never deleting one a forward route still owes.
const PruneEvery = time.Second

// Config is what a Station runs.
type Config struct {
	// DBPath is the store file; empty means storage.DefaultPath().
	DBPath string
	// Addr is where the receiver listens; empty starts it later (Listen).
	Addr string
	// Engine configures the inspector engine (secrets, body cap, answer
	// mode, log). Its Logf is the station's log too.
	Engine inspector.Options
	// Keep is the retention cap in deliveries; 0 keeps everything.
	Keep int64
	// Forward, when set, forwards every delivery (see inspector/forward).
	Forward *forward.Config
	// Wrap, when set, puts handlers in front of the receiver (the window
	// answers its OAuth callback on the same port).
	Wrap func(http.Handler) http.Handler
	// Server overrides the receiver's timeouts (tests).
	Server inspector.ServerOptions
}

// Station is a running receiver assembly.
type Station struct {
	db      *storage.DB
	marks   *storage.ForwardMarks
	eng     *inspector.Engine
	handler http.Handler
	serverO inspector.ServerOptions
	logf    func(string, ...any)
	keep    atomic.Int64

	mu     sync.Mutex
	srv    *inspector.Server
	srvErr error
	fwd    *forward.Forwarder
	tun    *tunnel.Supervisor
	tunCfg tunnel.Config

	stopRun   context.CancelFunc
	runDone   chan error
	pruneKick chan struct{}
	bg        sync.WaitGroup
	closed    atomic.Bool
}

// Open opens the store, starts analysis, forwarding (when configured)
// and, when cfg.Addr is set, the receiver. A store or forwarding that
// cannot start is an error; a receiver that cannot bind is too.
func Open(ctx context.Context, cfg Config) (*Station, error) {
	path := cfg.DBPath
	if path == "" {
		p, err := storage.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	// The receiver acks through the store's inbox: docs/storage.md.
	logf := cfg.Engine.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	db, err := storage.OpenWith(path, storage.Options{Inbox: true, Logf: logf})
	if err != nil {
		return nil, err
	}
	s := &Station{db: db, serverO: cfg.Server, logf: logf, pruneKick: make(chan struct{}, 1)}
	s.keep.Store(cfg.Keep)
	s.eng = inspector.NewEngine(db, cfg.Engine)
	// Requests Go's server refuses before any handler runs are recorded too.
	s.serverO.Engine = s.eng
	s.handler = s.eng.Handler()
	if cfg.Wrap != nil {
		s.handler = cfg.Wrap(s.handler)
	}
	if cfg.Forward != nil {
		if err := s.SetForward(ctx, cfg.Forward); err != nil {
			db.Close()
			return nil, err
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
	if cfg.Addr != "" {
		if err := s.Listen(cfg.Addr); err != nil {
			s.Close(context.Background())
			return nil, err
		}
	}
	return s, nil
}

// Store is the open store (the faces list, show and export from it).
func (s *Station) Store() *storage.DB { return s.db }

// Engine is the inspector engine (secrets, answer mode, subscriptions).
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
		s.mu.Lock()
		cfg := s.tunCfg
		s.mu.Unlock()
		if _, err := s.StartTunnel(context.Background(), cfg); err != nil {
			s.logf("tunnel: %v", err)
		}
	}
	return nil
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
// (cfg.LocalURL is set to it), replacing a running one. A missing
// cloudflared is reported by the supervisor's NotInstalled event and as
// the error; the receiver keeps working locally.
func (s *Station) StartTunnel(ctx context.Context, cfg tunnel.Config) (*tunnel.Supervisor, error) {
	addr := s.Addr()
	if addr == "" {
		return nil, errors.New("start tunnel: the receiver is not listening")
	}
	s.StopTunnel()
	cfg.LocalURL = LocalURL(addr)
	sup := tunnel.New(cfg)
	if err := sup.Start(ctx); err != nil {
		return sup, fmt.Errorf("start tunnel: %w", err)
	}
	s.mu.Lock()
	s.tun, s.tunCfg = sup, cfg
	s.mu.Unlock()
	return sup, nil
}

// Tunnel is the running tunnel supervisor, nil when there is none.
func (s *Station) Tunnel() *tunnel.Supervisor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tun
}

// StopTunnel stops cloudflared and returns when it is gone.
func (s *Station) StopTunnel() {
	s.mu.Lock()
	tun := s.tun
	s.tun = nil
	s.mu.Unlock()
	if tun != nil {
		tun.Stop()
	}
}

// SetForward replaces the forwarding configuration (nil turns it off):
// the running forwarder stops (its sessions close), the new one opens its
// routes and takes deliveries from the next one the receiver stores.
// Deliveries stored while the switch happens are not forwarded.
func (s *Station) SetForward(ctx context.Context, cfg *forward.Config) error {
	var next *forward.Forwarder
	if cfg != nil {
		if s.marks == nil {
			m, err := storage.OpenForwardMarks(s.db.Path())
			if err != nil {
				return err
			}
			s.marks = m
		}
		f, err := forward.New(*cfg, forward.Options{Store: s.db, Marks: s.marks, Logf: s.logf})
		if err != nil {
			return err
		}
		next = f
	}
	s.mu.Lock()
	old := s.fwd
	s.fwd = nil
	s.mu.Unlock()
	s.eng.SetTap(nil)
	if old != nil {
		if err := old.Stop(ctx); err != nil {
			s.logf("forward: %v", err)
		}
	}
	if next == nil {
		return nil
	}
	if err := next.Start(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.fwd = next
	s.mu.Unlock()
	s.eng.SetTap(next)
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

// prune keeps the newest keep deliveries, and every one above the
// forwarder's floor.
func (s *Station) prune(ctx context.Context, keep int64) error {
	if f := s.Forwarder(); f != nil {
		n, err := s.db.CountAfter(ctx, f.Floor())
		if err != nil {
			return err
		}
		keep = max(keep, n)
	}
	_, err := s.db.Prune(ctx, keep)
	return err
}

// Close stops everything in order: the tunnel, the receiver (in-flight
// requests finish, each stored before its answer), forwarding (its
// sessions close at the last delivery received), analysis (it drains what
// is queued), then the store.
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
	if err := s.SetForward(ctx, nil); err != nil {
		errs = append(errs, err)
	}
	s.stopRun()
	if err := <-s.runDone; err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("analysis: %w", err))
	}
	s.bg.Wait()
	if s.marks != nil {
		if err := s.marks.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
