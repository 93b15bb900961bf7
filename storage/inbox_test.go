package storage

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage/inbox"
)

func openInboxDB(t *testing.T, path string) *DB {
	t.Helper()
	db, err := OpenWith(path, Options{Inbox: true})
	if err != nil {
		t.Fatal(err)
	}
	if db.inbox == nil {
		t.Fatal("store opened without its inbox")
	}
	return db
}

// oddDelivery exercises every field the inbox record carries.
func oddDelivery(i int) *inspector.Delivery {
	d := delivery(i, fmt.Sprintf(`{"n":%d}`, i))
	switch i % 4 {
	case 0:
		d.Headers = append(d.Headers, inspector.Header{Name: "X-Obs", Value: "caf\xe9"})
		d.Query = "a=1&b=%20"
	case 1:
		d.Body, d.BodyLength = nil, 0
		d.Method, d.Rejected, d.Status = "GET", true, 405
	case 2:
		d.Truncated, d.BodyLength, d.Status = true, 99999, 413
		d.HeadersReconstructed = true
	case 3:
		d.ReadError, d.Answer, d.Status, d.Source = "unexpected EOF", "close", 0, "import"
	}
	return d
}

func TestInboxRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openInboxDB(t, filepath.Join(t.TempDir(), "h.db"))
	defer db.Close()
	const n = 200
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, err := db.InsertDelivery(ctx, oddDelivery(i))
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, id := range ids {
		if id <= 0 || seen[id] {
			t.Fatalf("insert %d got id %d (seen before: %v)", i, id, seen[id])
		}
		seen[id] = true
		rec, err := db.Get(ctx, id) // waits for the mover
		if err != nil {
			t.Fatal(err)
		}
		got, want := rec.Delivery, oddDelivery(i)
		want.ID = id
		if want.Body == nil {
			want.Body = []byte{}
		}
		if want.Source == "" {
			want.Source = "receiver"
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d:\n got %+v\nwant %+v", id, got, want)
		}
	}
	// The analysis of a delivery can be saved the moment it is acked.
	id, err := db.InsertDelivery(ctx, delivery(0, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveAnalysis(ctx, analysis(id, inspector.SignatureValid, "h1")); err != nil {
		t.Fatal(err)
	}
}

func TestInboxIDsContinueWithoutGap(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	db := openInboxDB(t, path)
	for i := range 3 {
		if id, err := db.InsertDelivery(ctx, delivery(i, "b")); err != nil || id != int64(i+1) {
			t.Fatalf("insert %d: id %d, %v", i, id, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	direct, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	// Ids continue from the shared counter: no gap after a clean stop.
	if id, err := direct.InsertDelivery(ctx, delivery(4, "b")); err != nil || id != 4 {
		t.Fatalf("direct insert after the inbox: id %d, %v; want 4", id, err)
	}
}

// Two handles on one store: one owns the inbox, the other inserts directly,
// and their ids never collide (both take them from the shared counter).
func TestInboxAndDirectInsertsShareIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	a := openInboxDB(t, path)
	b, err := OpenWith(path, Options{Inbox: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.inbox != nil {
		t.Fatal("a second handle got the inbox its first handle owns")
	}
	var mu sync.Mutex
	ids := map[int64]string{}
	var wg sync.WaitGroup
	for i := range 100 {
		db, name := a, "a"
		if i%2 == 1 {
			db, name = b, "b"
		}
		wg.Go(func() {
			body := fmt.Sprintf("%s-%d", name, i)
			id, err := db.InsertDelivery(ctx, delivery(i, body))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if prev, dup := ids[id]; dup {
				t.Errorf("id %d given to %s and %s", id, prev, body)
			}
			ids[id] = body
		})
	}
	wg.Wait()
	if err := errors.Join(a.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, body := range ids {
		rec, err := db.Get(ctx, id)
		if err != nil || string(rec.Delivery.Body) != body {
			t.Fatalf("delivery %d: %v, body %q want %q", id, err, rec.Delivery.Body, body)
		}
	}
}

// goldenSegment is a segment file as the Hookscope of 2026-11-24 wrote it
// (before the inbox was a package of its own): one record, delivery 42,
// with every field set. An inbox an older version left behind must still
// be recovered after an upgrade.
const goldenSegment = "4853494e424f5831887766554433221143b30eda0000000000000000000000006d00000038bd326288776655443322112a0000000000000015cd256fa7fc7a1890010000140704504f5354092f776562686f6f6b7303613d310b3132372e302e302e313a350872656365697665720e756e657870656374656420454f4605636c6f73650204486f7374016805582d4f627304636166e97b226e223a317d"

func TestRecoversAnOlderVersionsInbox(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	seg, err := hex.DecodeString(goldenSegment)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(path+"-inbox", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+"-inbox", "seg-000001"), append(seg, make([]byte, 4096)...), 0o600); err != nil {
		t.Fatal(err)
	}
	db = openInboxDB(t, path)
	defer db.Close()
	rec, err := db.Get(ctx, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := &inspector.Delivery{ID: 42, ReceivedAt: time.Unix(0, 1764000000123456789).UTC(), Method: "POST", Path: "/webhooks", Query: "a=1",
		Headers: []inspector.Header{{Name: "Host", Value: "h"}, {Name: "X-Obs", Value: "caf\xe9"}}, Body: []byte(`{"n":1}`), BodyLength: 7,
		RemoteAddr: "127.0.0.1:5", Status: 400, HeadersReconstructed: true, Truncated: true, ReadError: "unexpected EOF", Answer: "close", Source: "receiver"}
	if !reflect.DeepEqual(rec.Delivery, want) {
		t.Fatalf("recovered\n %+v\nwant\n %+v", rec.Delivery, want)
	}
	// New ids continue above the recovered one.
	if id, err := db.InsertDelivery(ctx, delivery(1, "new")); err != nil || id != 43 {
		t.Fatalf("insert after recovery: id %d, %v; want 43", id, err)
	}
}

// A delivery deleted after it was moved does not come back when an old
// copy of the inbox is found later (the moved watermark).
func TestInboxRecoveryKeepsDeletedDeleted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	db := openInboxDB(t, path)
	var last int64
	for i := range 3 {
		id, err := db.InsertDelivery(ctx, delivery(i, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	if err := db.inbox.WaitMoved(last); err != nil {
		t.Fatal(err)
	}
	// What a kill at this moment would leave on disk.
	var seg string
	var copyBefore []byte
	files, _ := filepath.Glob(filepath.Join(path+"-inbox", "seg-*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Count(b, []byte("/webhooks")) == 3 {
			seg, copyBefore = f, b
		}
	}
	if seg == "" {
		t.Fatalf("no segment among %v holds the 3 records", files)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(ctx, 2); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.WriteFile(seg, copyBefore, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, err := db.Count(ctx, Filter{}); err != nil || n != 2 {
		t.Fatalf("%d deliveries after recovery (%v), want 2: a deleted one came back", n, err)
	}
}

// Enough deliveries to fill several segments, and one bigger than a
// segment: all stored byte-exact, and the inbox keeps only its spares.
func TestInboxRotatesSegments(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~40 MB")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	db := openInboxDB(t, path)
	body := bytes.Repeat([]byte("x"), 4000)
	const n = 6000 // ~24 MB: two segments
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	ids := make([]int64, n)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d := delivery(i, "")
			d.Body = append(fmt.Appendf(nil, "%06d", i), body...)
			id, err := db.InsertDelivery(ctx, d)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	big := delivery(0, "")
	big.Body = bytes.Repeat([]byte("b"), inbox.SegSize+1000)
	bigID, err := db.InsertDelivery(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	rec, err := db.Get(ctx, bigID)
	if err != nil || !bytes.Equal(rec.Delivery.Body, big.Body) {
		t.Fatalf("oversized delivery: %v", err)
	}
	if got, err := db.Count(ctx, Filter{}); err != nil || got != n+1 {
		t.Fatalf("%d deliveries (%v), want %d", got, err, n+1)
	}
	// Batches written concurrently: every id is its own delivery's.
	seen := map[int64]int{}
	for i, id := range ids {
		if j, dup := seen[id]; dup {
			t.Fatalf("deliveries %d and %d were both given id %d", j, i, id)
		}
		seen[id] = i
		if i%97 != 0 {
			continue
		}
		rec, err := db.Get(ctx, id)
		if err != nil || !bytes.HasPrefix(rec.Delivery.Body, fmt.Appendf(nil, "%06d", i)) || len(rec.Delivery.Body) != 6+len(body) {
			t.Fatalf("delivery %d (id %d) not stored byte-exact: %v", i, id, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(path+"-inbox", "seg-*"))
	if len(files) > 3 {
		t.Errorf("%d segment files left after a clean close, want at most 3 (two spares and the last in use)", len(files))
	}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > inbox.SegSize {
			t.Errorf("the oversized segment %s was kept", f)
		}
	}
}

func TestInboxClosedRefusesInserts(t *testing.T) {
	db := openInboxDB(t, filepath.Join(t.TempDir(), "h.db"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertDelivery(context.Background(), delivery(0, "late")); !errors.Is(err, errClosed) {
		t.Fatalf("insert after close: %v, want errClosed", err)
	}
}

func FuzzInboxRecord(f *testing.F) {
	f.Add([]byte(`{"n":1}`), "POST", "/webhooks", "X-Obs", "caf\xe9", int64(7), uint8(5))
	f.Add([]byte{}, "", "", "", "", int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, method, path, name, value string, id int64, flags uint8) {
		d := &inspector.Delivery{ID: id, ReceivedAt: time.Unix(0, id).UTC(), Method: method, Path: path,
			Headers: []inspector.Header{{Name: name, Value: value}}, Body: body, BodyLength: int64(len(body)),
			Status: int(flags), Rejected: flags&1 != 0, Truncated: flags&2 != 0, HeadersReconstructed: flags&4 != 0,
			ReadError: value, Answer: name, Source: method}
		if d.Body == nil {
			d.Body = []byte{}
		}
		got, err := decodeDelivery(id, appendDelivery(nil, d))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, d)
		}
		// Arbitrary bytes: an error or a delivery, never a panic.
		decodeDelivery(id, body)
	})
}
