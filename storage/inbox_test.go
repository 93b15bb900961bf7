package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
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
		// The store keeps neither the read error nor the answer mode.
		want.ReadError, want.Answer = "", ""
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
	// A clean stop gives the unused ids of the reserved block back.
	if id, err := direct.InsertDelivery(ctx, delivery(4, "b")); err != nil || id != 4 {
		t.Fatalf("direct insert after the inbox: id %d, %v; want 4", id, err)
	}
}

// Two handles on one store: one owns the inbox, the other inserts directly,
// and their ids never collide (the inbox's reserved block is respected).
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

// writeSegment writes a segment file by hand: records of gen, then extra
// bytes (a torn or stale tail).
func writeSegment(t *testing.T, path string, gen uint64, ds []*inspector.Delivery, tail []byte) {
	t.Helper()
	b := segHeader(gen)
	for _, d := range ds {
		b = append(b, encodedRecord(gen, d)...)
	}
	b = append(b, tail...)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, make([]byte, 4096)...), 0o600); err != nil {
		t.Fatal(err)
	}
}

func encodedRecord(gen uint64, d *inspector.Delivery) []byte {
	r := appendRecord(nil, d.ID, d)
	stampRecord(r, gen)
	return r
}

func TestInboxRecoveryStopsAtTornAndStaleRecords(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path) // the schema, as a killed process left it
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	withID := func(id int64, body string) *inspector.Delivery {
		d := delivery(int(id), body)
		d.ID = id
		return d
	}
	torn := encodedRecord(7, withID(4, "torn"))
	torn[len(torn)-1] ^= 0xff // the checksum no longer matches
	stale := encodedRecord(6, withID(5, "an earlier use of the file"))
	writeSegment(t, path+"-inbox/seg-000001", 7, []*inspector.Delivery{withID(1, "one"), withID(2, "two"), withID(3, "three")}, torn)
	writeSegment(t, path+"-inbox/seg-000002", 9, []*inspector.Delivery{withID(6, "six")}, stale)
	// An unused spare: zero header.
	if err := os.WriteFile(path+"-inbox/seg-000003", make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got []string
	if err := db.Each(ctx, Filter{}, func(r *inspector.Record) error {
		got = append(got, fmt.Sprintf("%d:%s", r.Delivery.ID, r.Delivery.Body))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1:one", "2:two", "3:three", "6:six"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("recovered %v, want %v", got, want)
	}
	// New ids continue above the recovered ones.
	if id, err := db.InsertDelivery(ctx, delivery(7, "new")); err != nil || id != 7 {
		t.Fatalf("insert after recovery: id %d, %v; want 7", id, err)
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
	if err := db.inbox.waitMoved(last); err != nil {
		t.Fatal(err)
	}
	// What a kill at this moment would leave on disk.
	seg := filepath.Join(path+"-inbox", "seg-000001")
	copyBefore, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := readSegment(bytes.NewReader(copyBefore), int64(len(copyBefore))); len(got) != 3 {
		t.Fatalf("the live segment holds %d records, want 3", len(got))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
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
	big.Body = bytes.Repeat([]byte("b"), inboxSegSize+1000)
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
	if len(files) > inboxKeepSpares+1 {
		t.Errorf("%d segment files left after a clean close, want at most %d", len(files), inboxKeepSpares+1)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > inboxSegSize {
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
		rec := appendRecord(nil, id, d)[recHeaderLen:]
		got, err := decodeDelivery(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, d)
		}
		// Arbitrary bytes: an error or a delivery, never a panic; and a
		// segment of them yields only records that decode or fail cleanly.
		decodeDelivery(body)
		for _, r := range mustReadSegment(t, append(segHeader(3), body...)) {
			decodeDelivery(r)
		}
	})
}

func mustReadSegment(t *testing.T, b []byte) [][]byte {
	recs, err := readSegment(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
