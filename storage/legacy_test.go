//go:build unix

package storage

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// oddDelivery exercises every field the older version's inbox record
// carried; testdata/legacy-inbox/seg-000001 was written by that version
// from oddDelivery(0..5) as deliveries 101-106.
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

// goldenSegment is an inbox file of the version before the segment
// rewrite, holding delivery 42.
const goldenSegment = "4853494e424f5831887766554433221143b30eda0000000000000000000000006d00000038bd326288776655443322112a0000000000000015cd256fa7fc7a1890010000140704504f5354092f776562686f6f6b7303613d310b3132372e302e302e313a350872656365697665720e756e657870656374656420454f4605636c6f73650204486f7374016805582d4f627304636166e97b226e223a317d"

// oldStore builds a store as the version with the inbox left it: schema
// 9, deliveries 1-3 in SQLite, the inbox's moved watermark, an inbox
// folder with the given files, the id counter and the forward marks.
func oldStore(t *testing.T, watermark int64, segs map[string][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := openTo(path, Options{}, 9)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		insert(t, db, delivery(i, fmt.Sprintf(`{"sqlite":%d}`, i)))
	}
	if _, err := db.SQL().ExecContext(ctx, `UPDATE kv SET value = ? WHERE key = 'inbox_moved'`, watermark); err != nil {
		t.Fatal(err)
	}
	// Route r's session owes 2 and 3, and 2 was delivered; q owes nothing.
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO forward_routes(route, cursor, created_at) VALUES ('r', 1, 0), ('q', 1, 0);
		INSERT INTO forward_sessions(route, from_id, to_id) VALUES ('r', 1, NULL);
		INSERT INTO forward_attempts(delivery_id, route, number, kind, started_at, outcome, final, detail, response_body)
		VALUES (2, 'r', 1, 'ack', 0, 'delivered', 1, '{}', x'')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	dir := path + "-inbox"
	if err := os.MkdirAll(filepath.Join(path+"-forward"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range segs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600)
	os.WriteFile(path+"-ids", make([]byte, 8), 0o600)
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A store written by the version with the inbox is upgraded on open: the
// inbox's deliveries above its watermark move into SQLite once, with
// their ids, byte-exact; the inbox, the id counter and the forward marks
// go; ids go on above them; forward cursors sit below what was owed.
func TestMovesAnOlderVersionsInbox(t *testing.T) {
	ctx := context.Background()
	golden, err := hex.DecodeString(goldenSegment)
	if err != nil {
		t.Fatal(err)
	}
	path := oldStore(t, 100, map[string][]byte{
		"seg-000001": readFile(t, "testdata/legacy-inbox/seg-000001"),
		"seg-000002": golden, // delivery 42: moved already (below the watermark)
	})
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		rec, err := db.Get(ctx, int64(101+i))
		if err != nil {
			t.Fatal(err)
		}
		want := oddDelivery(i)
		want.ID = int64(101 + i)
		want.Source = cmp.Or(want.Source, "receiver")
		if want.Body == nil {
			want.Body = []byte{}
		}
		if !reflect.DeepEqual(rec.Delivery, want) {
			t.Errorf("delivery %d moved as\n %+v\nwant\n %+v", want.ID, rec.Delivery, want)
		}
	}
	if _, err := db.Get(ctx, 42); err == nil {
		t.Error("delivery 42, below the watermark, was moved again")
	}
	for _, gone := range []string{path + "-inbox", path + "-ids", path + "-forward"} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", filepath.Base(gone), err)
		}
	}
	if id := insert(t, db, delivery(9, "new")); id != 107 {
		t.Errorf("first new delivery got id %d, want 107", id)
	}
	var rCursor, qCursor int64
	if err := db.SQL().QueryRowContext(ctx, `SELECT (SELECT cursor FROM forward_routes WHERE route = 'r'), (SELECT cursor FROM forward_routes WHERE route = 'q')`).Scan(&rCursor, &qCursor); err != nil {
		t.Fatal(err)
	}
	if rCursor != 2 || qCursor != 3 {
		t.Errorf("cursors r %d (owed 3 first: want 2), q %d (owed nothing: want the newest, 3)", rCursor, qCursor)
	}
	n, _ := db.Count(ctx, Filter{})
	db.Close()
	// Once: opening again moves nothing.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if again, _ := db.Count(ctx, Filter{}); again != n {
		t.Errorf("%d deliveries after a second open, %d after the first", again, n)
	}
}

// The older version's own golden file: everything its records carried
// comes back (a watermark of 0: nothing was moved yet).
func TestMovesAnOlderVersionsGoldenRecord(t *testing.T) {
	golden, err := hex.DecodeString(goldenSegment)
	if err != nil {
		t.Fatal(err)
	}
	path := oldStore(t, 0, map[string][]byte{"seg-000001": append(golden, make([]byte, 4096)...)})
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := db.Get(context.Background(), 42)
	if err != nil {
		t.Fatal(err)
	}
	want := &inspector.Delivery{ID: 42, ReceivedAt: time.Unix(0, 1764000000123456789).UTC(), Method: "POST", Path: "/webhooks", Query: "a=1",
		Headers: []inspector.Header{{Name: "Host", Value: "h"}, {Name: "X-Obs", Value: "caf\xe9"}}, Body: []byte(`{"n":1}`), BodyLength: 7,
		RemoteAddr: "127.0.0.1:5", Status: 400, HeadersReconstructed: true, Truncated: true, ReadError: "unexpected EOF", Answer: "close", Source: "receiver"}
	if !reflect.DeepEqual(rec.Delivery, want) {
		t.Fatalf("moved\n %+v\nwant\n %+v", rec.Delivery, want)
	}
}

// An inbox with damage in it (a valid record after bytes that are not
// one) is kept aside and said, never deleted; an inbox an older Hookscope
// still holds (its lock) is left alone.
func TestOlderInboxDamagedOrInUse(t *testing.T) {
	seg := readFile(t, "testdata/legacy-inbox/seg-000001")
	seg[32+20] ^= 0xff // the first record's payload
	path := oldStore(t, 100, map[string][]byte{"seg-000001": seg})
	var said []string
	db, err := OpenWith(path, Options{Logf: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(path + "-inbox.unreadable"); err != nil {
		t.Errorf("the damaged inbox was not kept aside: %v (said %q)", err, said)
	}
	if len(said) < 2 {
		t.Errorf("said %q", said)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(102); id <= 106; id++ {
		if _, err := db.Get(context.Background(), id); err != nil {
			t.Errorf("delivery %d, after the damaged record, was not moved: %v", id, err)
		}
	}
	db.Close()

	path = oldStore(t, 100, map[string][]byte{"seg-000001": readFile(t, "testdata/legacy-inbox/seg-000001")})
	lock, err := os.Open(filepath.Join(path+"-inbox", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Skip("no flock here")
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(filepath.Join(path+"-inbox", "seg-000001")); err != nil {
		t.Errorf("an inbox in use was touched: %v", err)
	}
	if _, err := db.Get(context.Background(), 101); err == nil {
		t.Error("deliveries of an inbox in use were moved")
	}
}
