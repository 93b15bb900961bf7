package station

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/pubsub"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/tunnel"
)

// A station takes part in a team relay (docs/relay.md) in one of two
// ways. As the relay (Config.Relay): its receiver, the same as listen's,
// appends each delivery to the relay's JetStream stream instead of a
// store and answers after JetStream's acknowledgement, and the same port
// serves laptops NATS over WebSocket under relay.NATSPath. As a laptop
// (SetRelay): a relay.Source reads the relay's stream into this station's
// store, and each delivery is then analysed, shown and forwarded exactly
// as one the receiver took itself.

// ErrRelayPassThrough is SetRelay's and SetForward's error for
// pass-through forwarding beside a relay.
var ErrRelayPassThrough = errors.New("pass-through forwarding answers the service with your app's answer while the service waits, and a delivery through the relay was answered by the relay long before it arrives here: forward in ack mode with a relay")

// ErrRelayStation is the error of what a relay station does not do: it
// keeps its deliveries in its stream, for the laptops, and has no store.
var ErrRelayStation = errors.New("a relay keeps its deliveries in its stream for the laptops: it has no store, answers 200 once the stream has a delivery, does not forward and does not read another relay")

// relayParts is a station's relay state: the relay it runs (Config.Relay)
// or the link to the relay it reads (SetRelay).
type relayParts struct {
	srv *relay.Server // the relay this station is, nil otherwise

	mu    sync.Mutex
	link  *relayLink
	state relay.State
	hub   pubsub.Hub[relay.State]
}

// relayLink is a running relay.Source.
type relayLink struct {
	conn   relay.ConnString
	cancel context.CancelFunc
	done   chan struct{}
}

// newRelayStation is New for a station that is the team's relay: the
// relay's NATS side started from cfg.Relay and an engine whose receiver
// commits to it; no store.
func newRelayStation(cfg Config) (*Station, error) {
	if cfg.Forward != nil || cfg.Keep != 0 || len(cfg.Answer) > 0 {
		// Answer rules too: the relay answers 200 once the stream has the
		// delivery (a laptop provokes re-sends by receiving directly).
		return nil, fmt.Errorf("station: %w", ErrRelayStation)
	}
	ans, err := newAnswers(nil)
	if err != nil {
		return nil, err
	}
	logf := cfg.Engine.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ro := *cfg.Relay
	if ro.Logf == nil {
		ro.Logf = logf
	}
	srv, err := relay.Start(context.Background(), ro)
	if err != nil {
		return nil, err
	}
	s := &Station{cfg: cfg, serverO: cfg.Server, logf: logf, pruneKick: make(chan struct{}, 1), instance: forward.NewInstance(), answers: ans}
	s.rl.srv = srv
	engOpts := cfg.Engine
	engOpts.Instance = s.instance
	engOpts.Sink = relaySink{srv.Sink(), logf}
	// A body the stream cannot carry whole is answered 413 by the
	// receiver, as one over the cap is.
	engOpts.MaxBody = min(cmp.Or(engOpts.MaxBody, inspector.DefaultMaxBody), srv.MaxBody())
	s.eng = inspector.NewEngine(nil, engOpts)
	s.handler = withNATS(srv.NATSHandler(), s.eng.Handler())
	if cfg.Wrap != nil {
		s.handler = cfg.Wrap(s.handler)
	}
	// The tunnel's URL is the one laptops connect to (under /nats), and
	// what invite and status read.
	s.tunHub.Subscribe(func(e tunnel.Event) {
		if e.Status.State == tunnel.Ready && e.Status.PublicURL != "" {
			if err := srv.SetPublicURL(e.Status.PublicURL); err != nil {
				logf("relay: %v", err)
			}
		}
	})
	return s, nil
}

// relaySink is the relay's sink as the receiver's: a delivery over the
// NATS server's message limit is stored cut and answered 413 (Record set
// its status), which is said once in the log.
type relaySink struct {
	k    *relay.Sink
	logf func(string, ...any)
}

func (r relaySink) Record(ctx context.Context, d *inspector.Delivery) error {
	err := r.k.Record(ctx, d)
	if tl := (*relay.TooLargeError)(nil); errors.As(err, &tl) {
		r.logf("%v", err)
		return nil
	}
	return err
}

// withNATS serves GET relay.NATSPath (the laptops' WebSocket upgrade)
// with nats and everything else with the receiver: a POST to /nats is a
// delivery like any other.
func withNATS(nats, receiver http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == relay.NATSPath {
			nats.ServeHTTP(w, r)
			return
		}
		receiver.ServeHTTP(w, r)
	})
}

// RelayServer is the relay this station is (Config.Relay), nil for any
// other station: its laptop address, public URL and NATS client address.
func (s *Station) RelayServer() *relay.Server { return s.rl.srv }

// SetRelay makes this station a laptop of the team relay conn leads to
// (nil disconnects): a relay.Source with the credential's own durable
// consumer reads what the relay holds for it, in the relay's order
// (first what it missed, then live), commits each batch to this
// station's store before acknowledging it, and each delivery is then
// analysed, shown and forwarded as one the receiver took (ack-mode
// routes). A link already running is stopped first (what it read and did
// not commit comes again to the next). ctx bounds only that stop: the
// link runs until SetRelay(ctx, nil) or Close, reconnecting with backoff
// while the relay is unreachable, and stops for good when the relay
// refuses the credential or sends what this Hookscope cannot read (its
// state is then relay.Stopped, with the reason). Its states go to
// SubscribeRelay's subscribers. Pass-through forwarding is refused
// (ErrRelayPassThrough), and so is a station that is a relay itself.
// It does no network work itself, but waits for the running link's
// commit under way: call it off the UI goroutine.
func (s *Station) SetRelay(ctx context.Context, conn *relay.ConnString) error {
	if s.rl.srv != nil {
		return ErrRelayStation
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if conn != nil {
		if f := s.Forwarder(); f != nil && f.Mode() == forward.ModePassThrough {
			return ErrRelayPassThrough
		}
	}
	var l *relayLink
	var src *relay.Source
	if conn != nil {
		l = &relayLink{conn: *conn, done: make(chan struct{})}
		var err error
		src, err = relay.NewSource(relay.SourceOptions{Conn: *conn, Store: relayStore{s}, Logf: s.logf,
			OnState: func(st relay.State) { s.relayChanged(l, st) }})
		if err != nil {
			return err
		}
	}
	s.stopRelayLink(ctx)
	if src == nil {
		s.rl.mu.Lock()
		s.rl.state = relay.State{}
		s.rl.mu.Unlock()
		s.rl.hub.Publish(relay.State{})
		return nil
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	s.rl.mu.Lock()
	s.rl.link = l
	s.rl.mu.Unlock()
	s.relayChanged(l, src.State())
	go func() {
		defer close(l.done)
		if err := src.Run(runCtx); err != nil {
			s.logf("relay: %v", err)
		}
	}()
	return nil
}

// stopRelayLink stops the running link and waits for it (or for ctx).
func (s *Station) stopRelayLink(ctx context.Context) {
	s.rl.mu.Lock()
	l := s.rl.link
	s.rl.link = nil
	s.rl.mu.Unlock()
	if l == nil {
		return
	}
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
	}
}

// relayChanged records and publishes a state of link; one from a link
// stopped meanwhile is dropped.
func (s *Station) relayChanged(l *relayLink, st relay.State) {
	s.rl.mu.Lock()
	if s.rl.link != l {
		s.rl.mu.Unlock()
		return
	}
	s.rl.state = st
	s.rl.mu.Unlock()
	s.rl.hub.Publish(st)
}

// SubscribeRelay reports the relay link's states (SetRelay): every change
// of phase and of catch-up progress, on the link's goroutine (fn must not
// block: a face that redraws throttles itself), and a zero State (Phase
// "") when the link is turned off. State.String() is the header line:
// "relay: live", "relay: catching up 1,240 of 5,002", "relay unreachable
// since 14:02 (your deliveries are kept there)". A face subscribes once,
// whatever SetRelay does later.
func (s *Station) SubscribeRelay(fn func(relay.State)) (cancel func()) {
	return s.rl.hub.Subscribe(fn)
}

// RelayState is the relay link's current state, and whether a link is
// set (SetRelay); for a face that starts after the link.
func (s *Station) RelayState() (relay.State, bool) {
	s.rl.mu.Lock()
	defer s.rl.mu.Unlock()
	return s.rl.state, s.rl.link != nil
}

// checkRelayForward refuses a forwarding the station's relay role
// excludes: any on the relay itself, pass-through beside a relay link.
func (s *Station) checkRelayForward(cfg *forward.Config) error {
	switch {
	case cfg == nil:
		return nil
	case s.rl.srv != nil:
		return ErrRelayStation
	}
	s.rl.mu.Lock()
	linked := s.rl.link != nil
	s.rl.mu.Unlock()
	if linked && cfg.Mode == forward.ModePassThrough {
		return ErrRelayPassThrough
	}
	return nil
}

// closeRelay stops the relay link (before the store closes) or the relay
// itself (after the receiver finished its requests).
func (s *Station) closeRelay(ctx context.Context) error {
	s.stopRelayLink(ctx)
	if s.rl.srv != nil {
		return s.rl.srv.Close()
	}
	return nil
}

// relayStore commits what the link reads to the station's store, then
// hands the new deliveries to the engine (analysis, and forwarding's
// wake-up) as the receiver does with its own.
type relayStore struct{ s *Station }

func (r relayStore) InsertRelayed(ctx context.Context, rs []*relay.Relayed) error {
	if err := r.s.db.InsertRelayed(ctx, rs); err != nil {
		return err
	}
	ds := make([]*inspector.Delivery, 0, len(rs))
	for _, x := range rs {
		if !x.Duplicate {
			ds = append(ds, x.Delivery)
		}
	}
	r.s.eng.Committed(ds...)
	return nil
}
