package inspector

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

type recordMap map[int64]*Record

func (m recordMap) Get(_ context.Context, id int64) (*Record, error) {
	if r := m[id]; r != nil {
		return r, nil
	}
	return nil, errors.New("not found")
}

// TestDivergentFrom: a divergent copy's first copy is found in another
// delivery or earlier in the same message, and what changed is listed; a
// copy that is not divergent, or whose first copy was pruned, has none.
func TestDivergentFrom(t *testing.T) {
	first := json.RawMessage(`{"uuid":"e1","payload":{"media":{"name":"A"}}}`)
	later := json.RawMessage(`{"uuid":"e1","payload":{"media":{"name":"B"}}}`)
	mk := func(id int64, evs ...EventAnalysis) *Record {
		return &Record{Delivery: &Delivery{ID: id}, Analysis: &Analysis{DeliveryID: id, Events: evs}}
	}
	store := recordMap{1: mk(1, EventAnalysis{UUID: "e1", Raw: first})}
	div := EventAnalysis{UUID: "e1", Raw: later, Duplicate: true, Divergent: true, FirstDeliveryID: 1}
	fc, err := DivergentFrom(context.Background(), store, mk(2, div), 0)
	if err != nil || fc == nil || fc.DeliveryID != 1 || len(fc.Changes) != 1 || fc.Changes[0].String() != `payload.media.name: "A" → "B"` {
		t.Fatalf("another delivery: %+v, %v", fc, err)
	}
	same := div
	same.FirstDeliveryID = 3
	fc, err = DivergentFrom(context.Background(), store, mk(3, EventAnalysis{UUID: "e1", Raw: first}, same), 1)
	if err != nil || fc == nil || len(fc.Changes) != 1 {
		t.Fatalf("same message: %+v, %v", fc, err)
	}
	if fc, err := DivergentFrom(context.Background(), store, mk(4, EventAnalysis{UUID: "e1", Raw: later, Duplicate: true, FirstDeliveryID: 1}), 0); fc != nil || err != nil {
		t.Fatalf("not divergent: %+v, %v", fc, err)
	}
	pruned := div
	pruned.FirstDeliveryID = 9
	if fc, err := DivergentFrom(context.Background(), store, mk(5, pruned), 0); fc != nil || err == nil {
		t.Fatalf("pruned first copy: %+v, %v", fc, err)
	}
}
