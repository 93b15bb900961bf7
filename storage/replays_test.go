package storage

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
)

func TestReplaysRoundTripAndCascade(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id, err := db.InsertDelivery(ctx, &inspector.Delivery{Method: "POST", Path: "/", Body: []byte("{}"), BodyLength: 2})
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Date(2026, 3, 2, 9, 0, 0, 5, time.UTC)
	in := []*replay.Result{
		{DeliveryID: id, Sources: []int64{id}, Target: "http://127.0.0.1:1/x", Mode: replay.ModeRaw, SentAt: sent, Error: "connect: refused", Latency: time.Millisecond},
		{DeliveryID: id, Sources: []int64{id}, Target: "http://127.0.0.1:2/y", Mode: replay.ModeSplit, Copy: 2, HookUUID: "h", Events: []string{"e1"},
			BodySize: 2, SentAt: sent.Add(time.Second), Status: 500, StatusText: "Internal Server Error",
			ResponseHeaders: []inspector.Header{{Name: "X-A", Value: "b"}}, ResponseBody: []byte("boom"), ResponseTruncated: true, Latency: 3 * time.Millisecond},
	}
	for _, r := range in {
		if r.ID, err = db.SaveReplay(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Replays(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d replays", len(got))
	}
	for i, r := range got {
		want := in[len(in)-1-i]
		// JSON equality: nil and empty slices are the same result.
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Errorf("replay %d:\n got %+v\nwant %+v", i, r, want)
		}
	}
	if _, err := db.SaveReplay(ctx, &replay.Result{DeliveryID: id + 100, Target: "x", Mode: replay.ModeRaw}); err == nil {
		t.Error("a replay of a missing delivery was stored")
	}
	if err := db.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Replays(ctx, id, 0); len(got) != 0 {
		t.Errorf("%d replays outlived their delivery", len(got))
	}
}
