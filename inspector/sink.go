package inspector

import (
	"context"
	"fmt"
)

// Sink is where the receiver commits a delivery before it answers, in
// place of the Store's InsertDelivery: a team relay appends each receipt
// to its JetStream stream instead of a local store (station runs it so;
// see Options.Sink). The receiver is the same: the same body cap, raw
// header capture, answer modes and signature checks.
type Sink interface {
	// Record stores d durably and sets d.ID, returning only once d would
	// survive a crash of the process: the receiver answers after it
	// returns nil, and 503 (the sender tries again) for an error. It may
	// store d cut to a limit of its own; it then sets d.Truncated and
	// d.Status (413), and the receiver answers that status.
	Record(ctx context.Context, d *Delivery) error
}

// record is commit through the Sink; a failure is reported once until
// the sink works again.
func (e *Engine) record(ctx context.Context, d *Delivery) (int64, error) {
	if err := e.sink.Record(ctx, d); err != nil {
		e.storing.Fail(err)
		return 0, fmt.Errorf("store delivery: %w", err)
	}
	e.storing.OK()
	return d.ID, nil
}

// runSink is Run for an engine with a Sink: each delivery is judged
// alone (signature, decoding, contract checks: Analyze) in arrival
// order, and its record goes to the subscribers. There is no ledger (it
// needs a store of the deliveries before it: each laptop keeps its own)
// and nothing is saved. A delivery whose body the queue let go under
// load is reported unanalyzed: there is no store to read it back from.
func (e *Engine) runSink(ctx context.Context) error {
	for {
		batch := e.q.take()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-e.q.kick:
				continue
			}
		}
		for _, d := range batch {
			r := &Record{Delivery: d}
			if d.Body != nil || d.BodyLength == 0 {
				r.Analysis = e.analyzeSafely(ctx, d)
			}
			e.notify(r)
		}
	}
}

// Committed tells the engine of deliveries committed to its store by
// another path than its receiver (a team relay's source stores them in
// batches): each is analysed as the receiver's are, and the tap
// (forwarding) is told of it, in the order given. It never blocks.
func (e *Engine) Committed(ds ...*Delivery) {
	e.mu.RLock()
	tap := e.tap
	e.mu.RUnlock()
	for _, d := range ds {
		if tap != nil {
			tap.Stored(d)
		}
		e.q.push(d)
	}
}
