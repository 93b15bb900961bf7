package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector"
)

// damagedStore writes n deliveries with distinct paths and bodies, closes
// the store (its WAL folded into the file) and returns its path.
func damagedStore(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		d := delivery(i, fmt.Sprintf(`{"body":"marker-%04d"}`+strings.Repeat(" ", 1500), i))
		d.Path = fmt.Sprintf("/path-%04d", i)
		id := insert(t, db, d)
		if i%2 == 0 {
			save(t, db, analysis(id, inspector.SignatureValid, fmt.Sprint("hook-", i)))
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatalf("the WAL was not folded into the store on close")
	}
	return path
}

// damagePage overwrites the header of the table page holding marker (a
// page that is not a B-tree page any more: SQLite calls it malformed).
func damagePage(t *testing.T, path, marker string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := -1
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(marker))
		if i < 0 {
			break
		}
		at := off + i
		if p := at / 4096 * 4096; b[p] == 0x0d { // a table's leaf page
			page = p
			break
		}
		off = at + 1
	}
	if page < 0 {
		t.Fatalf("%q not found in a table page of the store file", marker)
	}
	copy(b[page:], bytes.Repeat([]byte{0xee}, 12))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Damage where a listener writes first (the newest rows) is reported when
// the store is opened, with what to do, not at the first write that fails.
func TestDamagedStoreReportedAtOpen(t *testing.T) {
	path := damagedStore(t, 300)
	damagePage(t, path, "/path-0300")
	db, err := Open(path)
	if err == nil {
		db.Close()
		t.Fatal("a store with its newest rows damaged opened without a word")
	}
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "hookscope export rescued.ndjson --salvage") {
		t.Fatalf("open: %v", err)
	}
}

// Salvage reads every delivery it can around a damaged page and says what
// it skipped; deliveries whose body row is damaged come without it,
// flagged.
func TestSalvageReadsAroundDamage(t *testing.T) {
	path := damagedStore(t, 300)
	damagePage(t, path, "/path-0150")  // delivery rows
	damagePage(t, path, "marker-0060") // a body row
	got := map[int64]*inspector.Record{}
	rep, err := Salvage(context.Background(), path, func(r *inspector.Record) error {
		got[r.Delivery.ID] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) == 0 {
		t.Fatalf("nothing reported skipped: %+v", rep)
	}
	if rep.Read != len(got) || len(got) < 250 || len(got) >= 300 {
		t.Fatalf("read %d (%d passed on) of 300 with one damaged page of rows; skipped %q", rep.Read, len(got), rep.Skipped)
	}
	for id := int64(1); id <= 300; id++ {
		r, ok := got[id]
		if !ok {
			continue
		}
		if r.Delivery.Path != fmt.Sprintf("/path-%04d", id) {
			t.Fatalf("delivery %d: path %q", id, r.Delivery.Path)
		}
		if r.Delivery.Damaged == "" && !bytes.Contains(r.Delivery.Body, []byte(fmt.Sprintf("marker-%04d", id))) {
			t.Fatalf("delivery %d: body %q, not flagged", id, r.Delivery.Body)
		}
	}
	if r := got[60]; r == nil || r.Delivery.Damaged == "" {
		t.Errorf("delivery 60 (damaged body): %+v", r)
	}
	if r := got[300]; r == nil || r.Delivery.Damaged != "" {
		t.Errorf("delivery 300: %+v", r)
	}
	if r := got[2]; r == nil || r.Analysis == nil || r.Analysis.HookUUID != "hook-2" {
		t.Errorf("delivery 2's analysis: %+v", r)
	}
	t.Logf("read %d, skipped %q", rep.Read, rep.Skipped)
}
