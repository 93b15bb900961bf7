package storage

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
)

func insertN(t *testing.T, db *DB, n int, source string) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		id, err := db.InsertDelivery(context.Background(), &inspector.Delivery{Method: "POST", Path: "/", Body: []byte("{}"), BodyLength: 2, Source: source})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func pendingIDs(t *testing.T, db *DB, route string, after int64) []int64 {
	t.Helper()
	page, err := db.PendingForwards(context.Background(), route, after, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range page {
		ids = append(ids, p.Delivery.ID)
	}
	return ids
}

// TestForwardRouteCursorAndLease: a new route starts after the newest
// delivery and owes the receiver's deliveries above its cursor (not the
// imported ones); one process holds its lease at a time, another takes it
// over once it is released or expired; the cursor and the sending mark
// move only with the lease, the cursor never back.
func TestForwardRouteCursorAndLease(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	insertN(t, db, 3, "")
	since := time.Now()
	a, err := db.ClaimRoute(ctx, "r", "A", since, time.Minute)
	if err != nil || !a.Held || a.Cursor != 3 || a.Sending != 0 {
		t.Fatalf("first claim: %+v %v", a, err)
	}
	insertN(t, db, 3, "")       // 4-6
	insertN(t, db, 1, "import") // 7, not the receiver's
	insertN(t, db, 1, "")       // 8
	if got := pendingIDs(t, db, "r", 3); !slices.Equal(got, []int64{4, 5, 6, 8}) {
		t.Errorf("pending %v", got)
	}
	if n, _ := db.PendingCount(ctx, "r", 3); n != 4 {
		t.Errorf("pending count %d", n)
	}
	b, err := db.ClaimRoute(ctx, "r", "B", since, time.Minute)
	if err != nil || b.Held || b.Holder != "A" {
		t.Fatalf("second process's claim while A holds: %+v %v", b, err)
	}
	if err := db.RecordForward(ctx, "r", "B", nil, 6, 0, time.Minute); !errors.Is(err, forward.ErrLeaseLost) {
		t.Fatalf("B recorded without the lease: %v", err)
	}
	// A sends 4: its mark, then the attempt with the cursor.
	if err := db.RecordForward(ctx, "r", "A", nil, 0, 4, time.Minute); err != nil {
		t.Fatal(err)
	}
	at := &forward.Attempt{DeliveryID: 4, Route: "r", Kind: forward.KindAck, Outcome: forward.Delivered, Status: 200, Final: true, StartedAt: time.Now()}
	if err := db.RecordForward(ctx, "r", "A", []*forward.Attempt{at}, 4, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if at.ID == 0 || at.Number != 1 {
		t.Errorf("attempt saved as id %d number %d", at.ID, at.Number)
	}
	// A dies while sending 5; B waits for the lease to expire.
	if err := db.RenewLeases(ctx, "A", -time.Second); err != nil {
		t.Fatal(err)
	}
	b, err = db.ClaimRoute(ctx, "r", "B", since, time.Minute)
	if err != nil || !b.Held || b.Cursor != 4 || b.Sending != 5 {
		t.Fatalf("takeover after A's lease expired: %+v %v", b, err)
	}
	if err := db.RecordForward(ctx, "r", "A", nil, 9, 0, time.Minute); !errors.Is(err, forward.ErrLeaseLost) {
		t.Errorf("A recorded after B took over: %v", err)
	}
	// A cursor never moves back; a release lets A in at once.
	if err := db.RecordForward(ctx, "r", "B", nil, 2, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseRoute(ctx, "r", "B", false); err != nil {
		t.Fatal(err)
	}
	a, err = db.ClaimRoute(ctx, "r", "A", since, time.Minute)
	if err != nil || !a.Held || a.Cursor != 4 || a.Sending != 0 {
		t.Errorf("claim after B released: %+v %v", a, err)
	}
	if w, err := db.ForwardWaiting(ctx); err != nil || w["r"] != 3 {
		t.Errorf("waiting %v %v, want r: 3", w, err)
	}
}

// TestForwardRouteTurnedOff: a route turned off and on again starts after
// the newest delivery (what arrived while it was off is not owed, nor is
// what waited); a route a process had on all along stays where it was
// when another process turns it off.
func TestForwardRouteTurnedOff(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	insertN(t, db, 2, "")
	aSince := time.Now()
	if _, err := db.ClaimRoute(ctx, "r", "A", aSince, time.Minute); err != nil {
		t.Fatal(err)
	}
	insertN(t, db, 2, "") // 3, 4 owed
	bSince := time.Now()
	if err := db.ReleaseRoute(ctx, "r", "A", true); err != nil {
		t.Fatal(err)
	}
	if w, _ := db.ForwardWaiting(ctx); len(w) != 0 {
		t.Errorf("a route turned off still waits: %v", w)
	}
	insertN(t, db, 1, "") // 5, while off
	// B had the route on since before A turned it off: it keeps it.
	b, err := db.ClaimRoute(ctx, "r", "B", bSince, time.Minute)
	if err != nil || !b.Held || b.Cursor != 2 {
		t.Fatalf("claim by a process that had the route on: %+v %v", b, err)
	}
	if err := db.ReleaseRoute(ctx, "r", "B", true); err != nil {
		t.Fatal(err)
	}
	insertN(t, db, 1, "") // 6, while off
	a, err := db.ClaimRoute(ctx, "r", "A", time.Now(), time.Minute)
	if err != nil || !a.Held || a.Cursor != 6 {
		t.Fatalf("turned on again: %+v %v", a, err)
	}
	if got := pendingIDs(t, db, "r", a.Cursor); len(got) != 0 {
		t.Errorf("owed after turned on again: %v", got)
	}
	// Ids are never handed out twice, even after the newest are deleted:
	// a cursor may point past them.
	if err := db.Delete(ctx, 5, 6); err != nil {
		t.Fatal(err)
	}
	if ids := insertN(t, db, 1, ""); ids[0] != 7 {
		t.Errorf("new delivery after the newest were deleted got id %d, want 7", ids[0])
	}
}

// TestForwardAttemptsSummaryAndCascade: the summary follows the latest
// attempt; deleting the delivery takes its attempts and summary along; an
// attempt for a delivery already deleted is dropped.
func TestForwardAttemptsSummaryAndCascade(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := insertN(t, db, 2, "")
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	in := []*forward.Attempt{
		{DeliveryID: ids[0], Route: "r", Target: "http://x/", Number: 1, Kind: forward.KindAck, StartedAt: at, Outcome: forward.Unreachable,
			Error: "nothing is listening", Detail: "connect: refused", NextAt: at.Add(time.Second), Reforward: true},
		{DeliveryID: ids[0], Route: "r", Target: "http://x/", Number: 2, Kind: forward.KindAck, StartedAt: at.Add(time.Second), Outcome: forward.Rejected,
			Status: 500, StatusText: "Internal Server Error", ResponseHeaders: []inspector.Header{{Name: "X-A", Value: "b"}},
			ResponseBody: []byte("boom"), ResponseTruncated: true, Latency: 3 * time.Millisecond, Final: true, GaveUp: true, Resigned: true, Relayed: 500},
	}
	if err := db.SaveForwards(ctx, in, nil); err != nil {
		t.Fatal(err)
	}
	out, err := db.ForwardAttempts(ctx, ids[0])
	if err != nil || len(out) != 2 {
		t.Fatalf("%v %d", err, len(out))
	}
	b := out[1]
	if b.Status != 500 || b.StatusText != "Internal Server Error" || string(b.ResponseBody) != "boom" || !b.ResponseTruncated || !b.GaveUp ||
		!b.Final || !b.Resigned || b.Relayed != 500 || b.Latency != 3*time.Millisecond || len(b.ResponseHeaders) != 1 || !b.StartedAt.Equal(at.Add(time.Second)) {
		t.Errorf("round trip: %+v", b)
	}
	if !out[0].NextAt.Equal(at.Add(time.Second)) || !out[0].Reforward || out[0].Detail != "connect: refused" {
		t.Errorf("first attempt: %+v", out[0])
	}
	sums, err := db.ForwardSummaries(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := sums[ids[0]]
	if !ok || s.Attempts != 2 || s.Status != 500 || s.Outcome != forward.Rejected || !s.Final || !s.Reforward {
		t.Errorf("summary %+v", s)
	}
	if _, ok := sums[ids[1]]; ok {
		t.Error("a delivery never forwarded has a summary")
	}
	if err := db.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if out, _ := db.ForwardAttempts(ctx, ids[0]); len(out) != 0 {
		t.Errorf("%d attempts left after the delivery was deleted", len(out))
	}
	if sums, _ := db.ForwardSummaries(ctx, ids); len(sums) != 0 {
		t.Errorf("summary left after the delivery was deleted: %v", sums)
	}
	gone := &forward.Attempt{DeliveryID: ids[0], Route: "r", Kind: forward.KindAck, StartedAt: at, Outcome: forward.Delivered}
	if err := db.SaveForwards(ctx, []*forward.Attempt{gone}, nil); err != nil || gone.ID != 0 {
		t.Errorf("attempt for a deleted delivery: %v, id %d", err, gone.ID)
	}
	if d, err := db.ForwardDelivery(ctx, ids[0]); d != nil || err != nil {
		t.Errorf("deleted delivery: %v %v", d, err)
	}
}
