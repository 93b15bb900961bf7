package inspector

import (
	"context"
	"encoding/json"
	"fmt"
)

// RecordGetter reads one stored record; storage.DB implements it.
type RecordGetter interface {
	Get(ctx context.Context, id int64) (*Record, error)
}

// FirstCopy is the first stored copy of a divergent event and what changed
// from it, path by path.
type FirstCopy struct {
	DeliveryID int64
	Raw        json.RawMessage
	Changes    []JSONChange
}

// DivergentFrom finds the first copy of rec's event i when that event is a
// divergent copy, and lists what changed from it (DiffJSON). It returns
// nil when the event is not divergent, or its first copy is no longer
// stored (pruned). The window's event card and listen's text both show
// it.
func DivergentFrom(ctx context.Context, store RecordGetter, rec *Record, i int) (*FirstCopy, error) {
	if rec.Analysis == nil || i < 0 || i >= len(rec.Analysis.Events) {
		return nil, nil
	}
	ev := rec.Analysis.Events[i]
	if !ev.Divergent || ev.FirstDeliveryID == 0 {
		return nil, nil
	}
	first := rec
	if ev.FirstDeliveryID != rec.Delivery.ID {
		var err error
		if first, err = store.Get(ctx, ev.FirstDeliveryID); err != nil {
			return nil, fmt.Errorf("read the first copy of event %s (delivery %d): %w", ev.UUID, ev.FirstDeliveryID, err)
		}
	}
	if first == nil || first.Analysis == nil {
		return nil, nil
	}
	for j, fe := range first.Analysis.Events {
		if first == rec && j >= i {
			break // a copy earlier in the same message
		}
		if fe.UUID == ev.UUID {
			return &FirstCopy{DeliveryID: ev.FirstDeliveryID, Raw: fe.Raw, Changes: DiffJSON(fe.Raw, ev.Raw)}, nil
		}
	}
	return nil, nil
}
