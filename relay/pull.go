package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// PullOptions say what Pull reads.
type PullOptions struct {
	// Conn is the connection string.
	Conn ConnString
	// Since and FromSeq choose where to start (at most one; neither: the
	// oldest delivery the relay holds).
	Since   time.Time
	FromSeq uint64
	// Durable reads through the credential's own durable consumer and
	// acknowledges what it read (moving that laptop's position), instead
	// of a throwaway consumer that leaves no trace.
	Durable bool
	// Each receives the deliveries in the relay's order; an error stops
	// the pull (with Durable, nothing after the last acknowledged batch is
	// acknowledged).
	Each func(*Relayed) error
}

// PullSummary says what Pull read.
type PullSummary struct {
	// Deliveries is how many were read; FirstSeq and LastSeq their range.
	Deliveries        int
	FirstSeq, LastSeq uint64
}

// UnreachableError says the relay could not be reached or read; the
// pull command exits 1 for it.
type UnreachableError struct{ Err error }

// Error is the reason.
func (e *UnreachableError) Error() string { return e.Err.Error() }

// Unwrap exposes the reason.
func (e *UnreachableError) Unwrap() error { return e.Err }

// pullBatch is how many deliveries one fetch asks for.
const pullBatch = 500

// Pull reads the deliveries the relay holds from the chosen start up to
// the newest one when it starts (what arrives later is left for the next
// pull), through an ephemeral consumer of the credential unless
// o.Durable. A relay that cannot be reached is an *UnreachableError; a
// refused credential a *RefusedError.
func Pull(ctx context.Context, o PullOptions) (PullSummary, error) {
	var sum PullSummary
	c := o.Conn
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return sum, errors.New("the connection string's credential is damaged")
	}
	l, err := dial(ctx, c, kp, "pull")
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return sum, err
		}
		return sum, &UnreachableError{err}
	}
	defer l.close()
	ctx = l.ctx
	stream, err := l.js.Stream(ctx, c.Stream)
	if err != nil {
		return sum, unreachable(l.explain(c.Name, "read stream "+c.Stream, err))
	}
	from := origin(stream.CachedInfo())
	cfg := jetstream.ConsumerConfig{
		Name:              pullConsumer(c.Name),
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 30 * time.Second,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
	}
	switch {
	case o.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.FromSeq
	case !o.Since.IsZero():
		since := o.Since.UTC()
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	var cons jetstream.Consumer
	if o.Durable {
		if o.FromSeq > 0 || !o.Since.IsZero() {
			return sum, errors.New("a durable pull reads from where the credential's consumer stands: it takes no start (--since, --from-seq)")
		}
		cons, err = stream.Consumer(ctx, c.Name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
				Durable: c.Name, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &c.Since,
				AckPolicy: jetstream.AckAllPolicy, AckWait: time.Minute, MaxAckPending: 10000,
			})
		} else if err == nil {
			_, err = stream.ResetConsumer(ctx, c.Name)
		}
	} else {
		cons, err = stream.CreateConsumer(ctx, cfg)
		// The previous pull's consumer of the same name may still be
		// going away on the server (its files being removed): a create
		// in that moment fails once, and works a moment later.
		for try := 0; err != nil && try < 10 && isServerError(err); try++ {
			time.Sleep(100 * time.Millisecond)
			cons, err = stream.CreateConsumer(ctx, cfg)
		}
		if errors.Is(err, jetstream.ErrConsumerExists) {
			return sum, fmt.Errorf("another pull with %s's credential is running, or one stopped less than 30 s ago: try again shortly (one pull at a time per credential)", c.Name)
		}
		if err == nil {
			defer stream.DeleteConsumer(context.WithoutCancel(ctx), cfg.Name)
		}
	}
	if err != nil {
		return sum, unreachable(l.explain(c.Name, "create its consumer", err))
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return sum, unreachable(l.explain(c.Name, "read its consumer", err))
	}
	want := info.NumPending + uint64(info.NumAckPending)
	for got := uint64(0); got < want; {
		batch, err := cons.Fetch(int(min(want-got, pullBatch)), jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			return sum, unreachable(l.explain(c.Name, "read its consumer", err))
		}
		var last jetstream.Msg
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return sum, fmt.Errorf("a message from the relay without its metadata: %w", err)
			}
			d, _, err := decodeEnvelope(m.Data())
			if err != nil {
				return sum, fmt.Errorf("delivery %d from the relay: %w", md.Sequence.Stream, err)
			}
			if sum.Deliveries == 0 {
				sum.FirstSeq = md.Sequence.Stream
			}
			sum.Deliveries++
			sum.LastSeq = md.Sequence.Stream
			if err := o.Each(&Relayed{Delivery: d, Origin: from, Seq: md.Sequence.Stream}); err != nil {
				return sum, err
			}
			last = m
			if md.NumPending == 0 {
				want = got + uint64(n) // the rest aged out meanwhile
			}
		}
		if err := batch.Error(); err != nil {
			return sum, unreachable(l.explain(c.Name, "read its consumer", err))
		}
		if n == 0 {
			break // the rest aged out of the relay meanwhile
		}
		got += uint64(n)
		if o.Durable && last != nil {
			if err := last.Ack(); err != nil {
				return sum, &UnreachableError{fmt.Errorf("acknowledge to the relay: %w", err)}
			}
		}
	}
	if o.Durable {
		// Acks are sent without waiting; make sure they left.
		if err := l.nc.Flush(); err != nil {
			return sum, &UnreachableError{fmt.Errorf("acknowledge to the relay: %w", err)}
		}
	}
	return sum, nil
}

// unreachable wraps err as an UnreachableError unless it is a refusal.
func unreachable(err error) error {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return err
	}
	return &UnreachableError{err}
}

// isServerError reports a JetStream API error the server answered with
// code 500 (a transient failure on its side).
func isServerError(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 500
}
