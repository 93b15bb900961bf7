package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/human"
)

// Relayed is one delivery read from a relay's stream, for the laptop's
// store.
type Relayed struct {
	// Delivery is the receipt as the relay's receiver took it (headers in
	// wire order, body byte-exact, the relay's receive time and answer),
	// with Source "relay". The store sets its ID.
	Delivery *inspector.Delivery
	// Origin identifies the stream (its name and creation time): a relay
	// started again on an empty data folder numbers from 1 again, so a
	// sequence alone does not identify a message.
	Origin string
	// Seq is the stream sequence.
	Seq uint64
	// Duplicate is set by the store when (Origin, Seq) was already stored.
	Duplicate bool
}

// Store is what a laptop commits relayed deliveries to (storage
// implements it).
type Store interface {
	// InsertRelayed commits ds, in their order, in one transaction, each
	// with source "relay" and its (Origin, Seq); one already stored is
	// skipped and marked Duplicate. It returns only once they would
	// survive a crash, having set each new Delivery.ID: the message is
	// acknowledged to the relay after that, never before.
	InsertRelayed(ctx context.Context, ds []*Relayed) error
}

// Phase is where a Source stands.
type Phase string

// The phases of a Source.
const (
	Connecting  Phase = "connecting"
	CatchingUp  Phase = "catching up"
	Live        Phase = "live"
	Unreachable Phase = "unreachable"
	// StoreFailing means this laptop's store refused a commit (a full
	// disk): the Source retries; the deliveries wait at the relay.
	StoreFailing Phase = "store failing"
	// Stopped means trying again cannot help: the relay refused the
	// credential (revoked, replaced, or not this consumer's), or sent a
	// delivery this Hookscope cannot read (a newer relay). Err says which.
	Stopped Phase = "stopped"
)

// State is a Source's state for the faces.
type State struct {
	Phase Phase
	// Done and Total are the catch-up's progress: Done of Total stored
	// since the connection (Total grows as deliveries keep arriving).
	Done, Total uint64
	// Since is when the relay became unreachable (Unreachable), or when
	// the phase began.
	Since time.Time
	// Err says why it is unreachable or refused.
	Err error
	// Stored counts the deliveries committed since the Source started;
	// Expired those the relay no longer held when this laptop came for
	// them (past the relay's --max-age or --max-bytes).
	Stored, Expired uint64
}

// String is the state in the words of a header line: "relay: live",
// "relay: catching up 1,240 of 5,002", "relay unreachable since 14:02
// (your deliveries are kept there)".
func (s State) String() string {
	switch s.Phase {
	case CatchingUp:
		return fmt.Sprintf("relay: catching up %s of %s", human.Count(s.Done), human.Count(s.Total))
	case Live:
		return "relay: live"
	case Unreachable:
		return fmt.Sprintf("relay unreachable since %s (your deliveries are kept there)", s.Since.Local().Format("15:04"))
	case StoreFailing:
		return fmt.Sprintf("relay: cannot store deliveries here since %s (%v); they wait at the relay", s.Since.Local().Format("15:04"), s.Err)
	case Stopped:
		return fmt.Sprintf("relay stopped: %v", s.Err)
	}
	return "relay: connecting"
}

// SourceOptions configure a Source.
type SourceOptions struct {
	// Conn is the laptop's connection string.
	Conn ConnString
	// Store commits what arrives.
	Store Store
	// OnState, when set, is called (on the Source's goroutine) at every
	// change of state and of progress; it must not block. A face that
	// redraws throttles itself.
	OnState func(State)
	// Logf receives operational messages (never the credential).
	Logf func(format string, args ...any)
	// MaxBatch and MaxBatchBytes bound one commit: what has arrived is
	// committed together, up to this many deliveries or bytes (defaults
	// 500 and 16 MiB).
	MaxBatch      int
	MaxBatchBytes int
}

// Source is a laptop's link to a relay: its own durable consumer, read in
// the relay's order, each batch committed to the Store before it is
// acknowledged.
type Source struct {
	o    SourceOptions
	kp   nkeys.KeyPair
	logf func(string, ...any)

	mu    sync.Mutex
	state State
}

// NewSource checks o and returns a Source; Run starts it.
func NewSource(o SourceOptions) (*Source, error) {
	if o.Store == nil {
		return nil, errors.New("relay source: no store")
	}
	kp, err := nkeys.FromSeed([]byte(o.Conn.Seed))
	if err != nil {
		return nil, errors.New("relay source: the connection string's credential is damaged")
	}
	o.MaxBatch = cmp.Or(o.MaxBatch, 500)
	o.MaxBatchBytes = cmp.Or(o.MaxBatchBytes, 16<<20)
	s := &Source{o: o, kp: kp, logf: o.Logf, state: State{Phase: Connecting, Since: time.Now()}}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	return s, nil
}

// State returns the current state.
func (s *Source) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *Source) update(fn func(*State)) {
	s.mu.Lock()
	fn(&s.state)
	st := s.state
	s.mu.Unlock()
	if s.o.OnState != nil {
		s.o.OnState(st)
	}
}

// Run reads the relay until ctx ends (then it returns nil), reconnecting
// with backoff while the relay is unreachable. It returns a *RefusedError
// when the relay refuses the credential, and an *UnreadableError for a
// delivery it cannot read: trying again cannot help.
func (s *Source) Run(ctx context.Context) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 500*time.Millisecond, 30*time.Second
	for {
		progressed, err := s.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var refused *RefusedError
		var unreadable *UnreadableError
		if errors.As(err, &refused) || errors.As(err, &unreadable) {
			s.update(func(st *State) { st.Phase, st.Err, st.Since = Stopped, err, time.Now() })
			return err
		}
		if progressed {
			b.Reset()
		}
		s.logf("relay: %v", err)
		phase := Unreachable
		var se *storeError
		if errors.As(err, &se) {
			phase = StoreFailing
		}
		s.update(func(st *State) {
			if st.Phase != phase {
				st.Phase, st.Since = phase, time.Now()
			}
			st.Err = err
		})
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(b.NextBackOff()):
		}
	}
}

// RefusedError says the relay refused this laptop's credential.
type RefusedError struct {
	// Name is the credential's name; Reason the relay's refusal in words.
	Name, Reason string
}

// Error says what was refused and what to do.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("the relay refused %s's credential: %s", e.Name, e.Reason)
}

// UnreadableError says the relay sent a delivery this Hookscope cannot
// read. The Source stops there rather than skip it (and every delivery
// after it waits at the relay).
type UnreadableError struct {
	Seq uint64
	Err error
}

// Error says which delivery and what to do.
func (e *UnreadableError) Error() string {
	return fmt.Sprintf("cannot read delivery %d from the relay (%v): update Hookscope; it and the ones after it wait at the relay", e.Seq, e.Err)
}

// Unwrap exposes the decoding error.
func (e *UnreadableError) Unwrap() error { return e.Err }

// storeError is the laptop's store refusing a commit.
type storeError struct{ err error }

func (e *storeError) Error() string { return "store relayed deliveries: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// errGap ends a session when a message is missing between two that
// arrived while the relay still holds it: the next session resumes from
// the last acknowledged one.
var errGap = errors.New("a delivery went missing on the way; resuming from the last one stored")

// link is one connection to the relay with the permission violations it
// reported (NATS reports them asynchronously; the request then times out).
type link struct {
	nc *nats.Conn
	js jetstream.JetStream
	// ctx ends when the server reports a permission violation, so the
	// request it was for fails at once rather than at its timeout.
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	denied string
}

// dial connects with c's credential (no reconnects of its own: the
// caller's loop reconnects, resetting the consumer).
func dial(ctx context.Context, c ConnString, kp nkeys.KeyPair, client string) (*link, error) {
	l := &link{}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	auth := nkeyOption(kp)
	if c.JWT != "" {
		auth = nats.UserJWTAndSeed(c.JWT, c.Seed)
	}
	nc, err := nats.Connect(c.URL,
		auth,
		nats.CustomInboxPrefix(inboxPrefix(c.Name)),
		nats.Name("hookscope "+client+" "+c.Name),
		nats.NoReconnect(),
		nats.Timeout(10*time.Second),
		// A tunnel can drop a WebSocket silently; pings find out in
		// about 20 s rather than NATS's default 4 minutes.
		nats.PingInterval(10*time.Second), nats.MaxPingsOutstanding(2),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				l.mu.Lock()
				l.denied = err.Error()
				l.mu.Unlock()
				l.cancel(err)
			}
		}),
	)
	if err != nil {
		l.cancel(nil)
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, &RefusedError{Name: c.Name, Reason: "it is not (or no longer) valid there: it was revoked or replaced; ask the relay's owner for a new one (`hookscope relay invite " + c.Name + " --replace`)"}
		}
		return nil, fmt.Errorf("cannot reach the relay at %s: %w", redactURL(c.URL), err)
	}
	l.nc = nc
	l.js, err = jetstream.New(nc)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("relay at %s: %w", redactURL(c.URL), err)
	}
	return l, nil
}

// explain turns an API failure into a RefusedError when the server
// reported a permission violation for it.
func (l *link) explain(name, what string, err error) error {
	l.mu.Lock()
	denied := l.denied
	l.mu.Unlock()
	if denied != "" || errors.Is(err, nats.ErrPermissionViolation) {
		return &RefusedError{Name: name, Reason: fmt.Sprintf("it may not %s (%s)", what, strings.TrimPrefix(cmp.Or(denied, err.Error()), "nats: "))}
	}
	if errors.Is(err, nats.ErrConnectionClosed) && errors.Is(l.nc.LastError(), nats.ErrAuthorization) {
		return &RefusedError{Name: name, Reason: "it was revoked or replaced while connected; ask the relay's owner for a new one"}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (l *link) close() {
	l.nc.Close()
	l.cancel(nil)
}

// origin identifies a stream instance (see Relayed.Origin).
func origin(info *jetstream.StreamInfo) string {
	return fmt.Sprintf("%s@%d", info.Config.Name, info.Created.UnixNano())
}

// session is one connection: find or create the consumer, rewind it to
// its acknowledged position (what was in flight comes again, first), then
// commit and acknowledge batch by batch until something fails.
// progressed reports whether anything was stored.
func (s *Source) session(ctx context.Context) (progressed bool, err error) {
	c := s.o.Conn
	l, err := dial(ctx, c, s.kp, "laptop")
	if err != nil {
		return false, err
	}
	defer l.close()
	ctx = l.ctx
	stream, err := l.js.Stream(ctx, c.Stream)
	if err != nil {
		return false, l.explain(c.Name, "read stream "+c.Stream, err)
	}
	from := origin(stream.CachedInfo())
	cons, err := stream.Consumer(ctx, c.Name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		cons, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       c.Name,
			Description:   "Hookscope laptop " + c.Name,
			DeliverPolicy: jetstream.DeliverByStartTimePolicy,
			OptStartTime:  &c.Since,
			AckPolicy:     jetstream.AckAllPolicy,
			AckWait:       time.Minute,
			MaxAckPending: 10000,
		})
		if err != nil {
			return false, l.explain(c.Name, "create its consumer "+c.Name, err)
		}
	case err != nil:
		return false, l.explain(c.Name, "read its consumer "+c.Name, err)
	default:
		// What was delivered but not acknowledged (a laptop killed
		// mid-batch, a connection lost) comes again first, in order.
		if _, err := stream.ResetConsumer(ctx, c.Name); err != nil {
			return false, l.explain(c.Name, "rewind its consumer "+c.Name, err)
		}
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return false, l.explain(c.Name, "read its consumer "+c.Name, err)
	}
	if info.NumWaiting > 0 {
		s.logf("relay: another laptop is reading with %s's credential: each gets part of the deliveries (invite one credential per laptop)", c.Name)
	}
	next := info.AckFloor.Stream + 1
	var done uint64
	s.update(func(st *State) {
		st.Err = nil
		if info.NumPending == 0 {
			st.Phase, st.Since = Live, time.Now()
		} else {
			st.Phase, st.Done, st.Total, st.Since = CatchingUp, 0, info.NumPending, time.Now()
		}
	})

	it, err := cons.Messages(jetstream.PullMaxBytes(2*MaxPayload), jetstream.PullHeartbeat(5*time.Second),
		jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		return false, l.explain(c.Name, "read its consumer "+c.Name, err)
	}
	defer it.Stop()
	msgs := make(chan jetstream.Msg, s.o.MaxBatch)
	failed := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			m, err := it.Next()
			if err != nil {
				failed <- err
				return
			}
			msgs <- m
		}
	}()

	batch := make([]*Relayed, 0, s.o.MaxBatch)
	for {
		var first jetstream.Msg
		select {
		case <-ctx.Done():
			return progressed, l.explain(c.Name, "read its consumer", context.Cause(ctx))
		case m, ok := <-msgs:
			if !ok {
				return progressed, l.explain(c.Name, "read its consumer", <-failed)
			}
			first = m
		}
		// Commit together what has already arrived.
		ms := []jetstream.Msg{first}
		size := len(first.Data())
	gather:
		for len(ms) < s.o.MaxBatch && size < s.o.MaxBatchBytes {
			select {
			case m, ok := <-msgs:
				if !ok {
					break gather
				}
				ms = append(ms, m)
				size += len(m.Data())
			default:
				break gather
			}
		}
		batch = batch[:0]
		var last jetstream.Msg
		var pending uint64
		for _, m := range ms {
			md, err := m.Metadata()
			if err != nil {
				return progressed, fmt.Errorf("a message from the relay without its metadata: %w", err)
			}
			seq := md.Sequence.Stream
			if seq < next {
				continue // delivered again; already in this session's commits
			}
			if seq > next {
				lost, err := s.expired(ctx, stream, next, seq)
				if err != nil {
					return progressed, err
				}
				s.update(func(st *State) { st.Expired += lost })
				s.logf("relay: %d deliveries (sequences %d-%d) had left the relay (its --max-age or --max-bytes) before this laptop came for them", lost, next, seq-1)
			}
			d, _, err := decodeEnvelope(m.Data())
			if err != nil {
				return progressed, &UnreadableError{Seq: seq, Err: err}
			}
			batch = append(batch, &Relayed{Delivery: d, Origin: from, Seq: seq})
			next, last, pending = seq+1, m, md.NumPending
		}
		if len(batch) == 0 {
			continue
		}
		if err := s.o.Store.InsertRelayed(ctx, batch); err != nil {
			return progressed, &storeError{err}
		}
		// AckAll: acknowledging the last acknowledges the batch.
		if err := last.Ack(); err != nil {
			return true, fmt.Errorf("acknowledge to the relay: %w", err)
		}
		progressed = true
		done += uint64(len(batch))
		s.update(func(st *State) {
			st.Stored += uint64(len(batch))
			if pending == 0 {
				if st.Phase != Live {
					st.Phase, st.Since = Live, time.Now()
				}
				return
			}
			st.Phase, st.Done, st.Total = CatchingUp, done, done+pending
		})
	}
}

// expired returns how many sequences from next up to seq the relay no
// longer holds (they aged out before this laptop came for them); when it
// still holds some, they went missing on the way: errGap.
func (s *Source) expired(ctx context.Context, stream jetstream.Stream, next, seq uint64) (uint64, error) {
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read stream: %w", err)
	}
	if info.State.FirstSeq < seq {
		return 0, errGap
	}
	return seq - next, nil
}
