package storage

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/relay"
)

// relayed is delivery i as a relay's source hands it over: stream
// sequence seq of origin, headers in wire order with bytes that are not
// UTF-8, the relay's receive time.
func relayed(origin string, seq uint64) *relay.Relayed {
	body := fmt.Appendf(nil, `{"hook":{"uuid":"h%d"},"events":[]}`, seq)
	body = append(body, 0xff)
	return &relay.Relayed{Origin: origin, Seq: seq, Delivery: &inspector.Delivery{
		ReceivedAt: t0.Add(time.Duration(seq) * time.Millisecond), Method: "POST", Path: "/webhooks",
		Headers: []inspector.Header{{Name: "x-b", Value: "caf\xe9"}, {Name: "X-A", Value: "1"}, {Name: "x-b", Value: "2"}},
		Body:    body, BodyLength: int64(len(body)), RemoteAddr: "203.0.113.9:4000", Status: 200, Source: relay.DeliverySource,
	}}
}

// TestInsertRelayed: a batch is stored in its order, byte-exact, with
// source "relay" and its sequence; a batch sent again (the laptop was
// killed between its commit and its acknowledgement) is skipped and
// marked duplicate, also when it overlaps new ones; a relay started again
// on an empty data folder (another origin) numbers from 1 again and is
// stored.
func TestInsertRelayed(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	insert(t, db, delivery(0, "{}")) // a direct delivery first: ids are shared
	steps := []struct {
		name  string
		batch []*relay.Relayed
		dups  []bool
	}{
		{"first batch", []*relay.Relayed{relayed("R@1", 1), relayed("R@1", 2), relayed("R@1", 3)}, []bool{false, false, false}},
		{"sent again, with new ones", []*relay.Relayed{relayed("R@1", 2), relayed("R@1", 3), relayed("R@1", 4)}, []bool{true, true, false}},
		{"twice in one batch", []*relay.Relayed{relayed("R@1", 5), relayed("R@1", 5)}, []bool{false, true}},
		{"a new relay numbers from 1", []*relay.Relayed{relayed("R@2", 1)}, []bool{false}},
	}
	var ids []int64
	for _, st := range steps {
		if err := db.InsertRelayed(ctx, st.batch); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i, r := range st.batch {
			if r.Duplicate != st.dups[i] {
				t.Errorf("%s: %s/%d duplicate = %v, want %v", st.name, r.Origin, r.Seq, r.Duplicate, st.dups[i])
			}
			if !r.Duplicate {
				ids = append(ids, r.Delivery.ID)
			}
		}
	}
	if want := []int64{2, 3, 4, 5, 6, 7}; !slices.Equal(ids, want) {
		t.Fatalf("new ids %v, want %v", ids, want)
	}
	wantSeq := []uint64{1, 2, 3, 4, 5, 1}
	for i, id := range ids {
		rec, err := db.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		d := rec.Delivery
		want := relayed("", wantSeq[i]).Delivery
		if d.Source != relay.DeliverySource || d.RelaySeq != wantSeq[i] || !bytes.Equal(d.Body, want.Body) ||
			!slices.Equal(d.Headers, want.Headers) || !d.ReceivedAt.Equal(want.ReceivedAt) || d.RemoteAddr != want.RemoteAddr {
			t.Errorf("delivery %d: got %+v, want relay sequence %d as sent: %+v", id, d, wantSeq[i], want)
		}
	}
	direct, err := db.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if direct.Delivery.Source != "receiver" || direct.Delivery.RelaySeq != 0 {
		t.Errorf("the direct delivery reads as %q, sequence %d", direct.Delivery.Source, direct.Delivery.RelaySeq)
	}
}

// TestForwardOwesRelayed: an ack route owes a relayed delivery as it owes
// one the receiver took (not an imported one), and says so in the
// waiting count a stopped listen prints.
func TestForwardOwesRelayed(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	if _, err := db.ClaimRoute(ctx, "r", "A", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	insertN(t, db, 1, "")       // 1
	insertN(t, db, 1, "import") // 2
	if err := db.InsertRelayed(ctx, []*relay.Relayed{relayed("R@1", 1), relayed("R@1", 2)}); err != nil {
		t.Fatal(err)
	}
	if got, want := pendingIDs(t, db, "r", 0), []int64{1, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("route owes %v, want %v", got, want)
	}
	waiting, err := db.ForwardWaiting(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if waiting["r"] != 3 {
		t.Errorf("waiting %d, want 3", waiting["r"])
	}
}
