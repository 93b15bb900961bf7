package relay

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookscope/hookscope/inspector"
)

// Sink appends each receipt to the relay's stream. The relay's receiver
// records a delivery with it where a local receiver commits to SQLite, and
// answers only after Record returns nil.
type Sink struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	stream  string
	subject string
}

// PublishTimeout bounds how long Record keeps trying (a cluster electing a
// leader, a reconnect to an existing deployment) before it gives up and
// the receiver answers 503, so the service retries: shorter than the
// service's 10 s timeout.
const PublishTimeout = 8 * time.Second

// attemptTimeout bounds one publish: a lost ack is re-published (under
// the same receipt id, so the stream keeps one copy) without waiting for
// the whole PublishTimeout.
const attemptTimeout = 2 * time.Second

// Record appends d to the stream under a new receipt id and returns once
// JetStream has acknowledged it (stored, on disk, on a majority of the
// replicas). It sets d.ID to the stream sequence. Only a re-publish of this
// receipt is dropped as a duplicate: two receipts of the same hook are two
// messages.
//
// A delivery whose envelope is over the NATS server's message limit is
// stored with its body cut to fit, marked truncated and answered 413, and
// Record returns a *TooLargeError saying so after it is stored.
func (k *Sink) Record(ctx context.Context, d *inspector.Delivery) error {
	receipt := rand.Text()
	env := encodeEnvelope(d, receipt)
	var tooLarge *TooLargeError
	// The NATS headers (message id, expected stream) count too.
	if limit := k.nc.MaxPayload() - natsHeaderRoom; int64(len(env)) > limit {
		over := int64(len(env)) - limit
		if over > int64(len(d.Body)) {
			return fmt.Errorf("relay: the delivery's header block alone (%d bytes) is over the NATS server's %d-byte message limit: not stored", int64(len(env))-int64(len(d.Body)), limit)
		}
		tooLarge = &TooLargeError{Limit: k.nc.MaxPayload(), Size: int64(len(env))}
		cut := *d
		cut.Body = d.Body[:int64(len(d.Body))-over]
		cut.Truncated = true
		cut.BodyLength = max(d.BodyLength, int64(len(d.Body)))
		cut.Status, cut.Answer = http.StatusRequestEntityTooLarge, ""
		env = encodeEnvelope(&cut, receipt)
		// What the row says is what the sender gets: 413, nothing else.
		d.Body, d.Truncated, d.BodyLength, d.Status, d.Answer = cut.Body, true, cut.BodyLength, cut.Status, ""
	}
	ctx, cancel := context.WithTimeout(ctx, PublishTimeout)
	defer cancel()
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 50*time.Millisecond, time.Second
	for {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		ack, err := k.js.Publish(actx, k.subject, env, jetstream.WithMsgID(receipt), jetstream.WithExpectStream(k.stream))
		acancel()
		if err == nil {
			d.ID = int64(ack.Sequence)
			if tooLarge != nil {
				return tooLarge
			}
			return nil
		}
		if permanent(err) {
			return fmt.Errorf("relay: store the delivery in stream %s: %w", k.stream, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("relay: store the delivery in stream %s: no acknowledgement within %s: %w", k.stream, PublishTimeout, err)
		case <-time.After(b.NextBackOff()):
		}
	}
}

// permanent reports a publish error that trying again cannot cure.
func permanent(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrBadSubject) || strings.Contains(strings.ToLower(err.Error()), "permissions violation")
}

// natsHeaderRoom is what the publish's NATS headers take of the message
// limit.
const natsHeaderRoom = 256

// TooLargeError says a delivery was stored with its body cut to the NATS
// server's message limit (and answered 413, as a body over the
// receiver's cap is).
type TooLargeError struct {
	// Limit is the server's message limit; Size the envelope's size.
	Limit, Size int64
}

// Error says what happened and what to change.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("relay: the delivery (%d bytes with its headers) is over the NATS server's %d-byte message limit: stored with its body cut, answered 413 (raise max_payload on the NATS server to %d)", e.Size, e.Limit, MaxPayload)
}
