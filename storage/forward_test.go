package storage

import (
	"context"
	"math"
	"os"
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

func owedIDs(t *testing.T, db *DB, route string, after, upTo int64) []int64 {
	t.Helper()
	owed, err := db.PendingForwards(context.Background(), route, after, upTo, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, o := range owed {
		ids = append(ids, o.ID)
	}
	return ids
}

// TestForwardQueueSessions: a route owes the receiver's deliveries stored
// during its sessions, above its cursor, without a final attempt; a
// session a crash left open is closed at the next open; deliveries stored
// while the route was off, or imported, are not owed.
func TestForwardQueueSessions(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	insertN(t, db, 3, "")
	st, err := db.OpenRoute(ctx, "r", true, forward.FromNewest)
	if err != nil {
		t.Fatal(err)
	}
	if st.Cursor != 3 || st.Live != 3 || st.Owed != 0 {
		t.Fatalf("new route: %+v", st)
	}
	insertN(t, db, 3, "")       // 4-6, this session's
	insertN(t, db, 1, "import") // 7, not the receiver's
	if got := owedIDs(t, db, "r", 3, 100); !slices.Equal(got, []int64{4, 5, 6}) {
		t.Errorf("owed %v", got)
	}
	// The process dies; the next open closes the session at the newest.
	st, err = db.OpenRoute(ctx, "r", true, forward.FromNewest)
	if err != nil {
		t.Fatal(err)
	}
	if st.Live != 7 || st.Owed != 3 || st.Cursor != 3 {
		t.Errorf("after a crash: %+v", st)
	}
	a := &forward.Attempt{DeliveryID: 5, Route: "r", Kind: forward.KindAck, Outcome: forward.Delivered, Status: 200, Final: true, StartedAt: time.Now()}
	if err := db.SaveForwards(ctx, []*forward.Attempt{a}, map[string]int64{"r": 4}); err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || a.Number != 1 {
		t.Errorf("attempt saved as id %d number %d", a.ID, a.Number)
	}
	if got := owedIDs(t, db, "r", 4, 100); !slices.Equal(got, []int64{6}) {
		t.Errorf("owed after 5 was delivered and the cursor moved to 4: %v", got)
	}
	// A clean stop at 9; 10 arrives while the route is off.
	insertN(t, db, 2, "")
	if err := db.CloseRoute(ctx, "r", 9); err != nil {
		t.Fatal(err)
	}
	insertN(t, db, 1, "")
	st, err = db.OpenRoute(ctx, "r", true, forward.FromNewest)
	if err != nil {
		t.Fatal(err)
	}
	if got := owedIDs(t, db, "r", st.Cursor, st.Live); !slices.Equal(got, []int64{6, 8, 9}) || st.Live != 10 || st.Owed != 3 {
		t.Errorf("after a clean stop: owed %v, state %+v", got, st)
	}
	if w, err := db.ForwardWaiting(ctx); err != nil || w["r"] != 3 {
		t.Errorf("waiting %v %v, want r: 3", w, err)
	}
	// A cursor never moves back.
	if err := db.SaveForwards(ctx, nil, map[string]int64{"r": 2}); err != nil {
		t.Fatal(err)
	}
	if st, _ := db.OpenRoute(ctx, "r", false, forward.FromNewest); st.Cursor != 4 {
		t.Errorf("cursor %d after a move back", st.Cursor)
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

func TestForwardMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	m, err := OpenForwardMarks(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Started("a"); v != 0 {
		t.Errorf("new mark %d", v)
	}
	if err := m.MarkStarted("a", 42); err != nil {
		t.Fatal(err)
	}
	m.MarkStarted("b", 7)
	m.Close()
	m, _ = OpenForwardMarks(path)
	if a, b := m.Started("a"), m.Started("b"); a != 42 || b != 7 {
		t.Errorf("reopened marks %d %d", a, b)
	}
	m.Close()
	// A damaged mark counts everything as possibly started.
	entries, _ := os.ReadDir(path + "-forward")
	for _, e := range entries {
		os.WriteFile(filepath.Join(path+"-forward", e.Name()), []byte("garbage-garbage!"), 0o600)
	}
	m, _ = OpenForwardMarks(path)
	defer m.Close()
	if v := m.Started("a"); v != math.MaxInt64 {
		t.Errorf("damaged mark read as %d", v)
	}
}
