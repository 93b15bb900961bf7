package storage

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// analyzedStore opens a store at path with n deliveries, each analyzed
// with one event, and returns their ids.
func analyzedStore(t *testing.T, path string, n int, logf func(string, ...any)) (*DB, []int64) {
	t.Helper()
	db, err := OpenWith(path, Options{Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var ids []int64
	var as []*inspector.Analysis
	for i := range n {
		id := insert(t, db, delivery(i, fmt.Sprintf(`{"n":%d}`, i)))
		ids = append(ids, id)
		as = append(as, analysis(id, inspector.SignatureValid, fmt.Sprintf("hook-%d", i), event{uuid: fmt.Sprintf("ev-%d", i), typ: "media.created"}))
	}
	if err := db.SaveAnalyses(context.Background(), as); err != nil {
		t.Fatal(err)
	}
	return db, ids
}

// analysisRows counts the rows the analysis file holds for id.
func analysisRows(t *testing.T, db *DB, id int64) (n int) {
	t.Helper()
	err := db.an.QueryRow(`SELECT (SELECT count(*) FROM analyses WHERE delivery_id = ?1) + (SELECT count(*) FROM events WHERE delivery_id = ?1)
		+ (SELECT count(*) FROM search WHERE rowid = ?1)`, id).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An ack is committed while analysis holds its file's write lock: the
// receiver's commits never wait for analysis's.
func TestAcksDoNotWaitForAnalysis(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	tx, err := db.an.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(takeAnalysisLock); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.InsertDelivery(ctx, delivery(1, `{}`))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an insert waited for analysis's write lock")
	}
}

// A missing, foreign or damaged analysis file is made again: every
// delivery is unanalyzed, and nothing of the old file shows.
func TestAnalysisFileMadeAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(t *testing.T, path string)
		report string
	}{
		{"removed", func(t *testing.T, path string) { os.Remove(path) }, ""},
		{"damaged", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is damaged"},
		{"another store's", func(t *testing.T, path string) {
			other, _ := analyzedStore(t, filepath.Join(t.TempDir(), "other.db"), 5, nil)
			other.Close()
			b, err := os.ReadFile(AnalysisPath(other.Path()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "belonged to another store or an older version"},
		{"an older layout's", func(t *testing.T, path string) {
			// Layout 1 had no layout row and an index over every event's subject.
			old, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			if _, err := old.Exec(`DELETE FROM analysis_meta WHERE key = 'layout';
				CREATE INDEX events_subject ON events(subject, generated_at) WHERE subject <> '' AND generated_at IS NOT NULL`); err != nil {
				t.Fatal(err)
			}
		}, "belonged to another store or an older version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			db, ids := analyzedStore(t, path, 3, nil)
			db.Close()
			tc.spoil(t, AnalysisPath(path))
			var mu sync.Mutex
			var logged []string
			db, err := OpenWith(path, Options{Logf: func(f string, args ...any) {
				mu.Lock()
				logged = append(logged, fmt.Sprintf(f, args...))
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			un, err := db.Unanalyzed(ctx, 0, 10)
			if err != nil || len(un) != len(ids) {
				t.Fatalf("unanalyzed after reopening = %d, %v; want all %d", len(un), err, len(ids))
			}
			rec, err := db.Get(ctx, ids[0])
			if err != nil || rec.Analysis != nil {
				t.Fatalf("Get = %+v, %v: want the delivery without an analysis", rec, err)
			}
			if s, _ := db.Stats(ctx); s.Events != 0 {
				t.Errorf("Stats.Events = %d, want 0", s.Events)
			}
			var oldIndex int
			if err := db.an.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_schema WHERE name = 'events_subject'`).Scan(&oldIndex); err != nil || oldIndex != 0 {
				t.Errorf("layout 1's subject index left: %d, %v", oldIndex, err)
			}
			if tc.report != "" && !strings.Contains(strings.Join(logged, "\n"), tc.report) {
				t.Errorf("reported %q, want %q", logged, tc.report)
			}
			// Analysis saves again, and a reopen keeps it.
			save(t, db, analysis(ids[0], inspector.SignatureValid, "h", event{uuid: "again", typ: "media.ready"}))
			db.Close()
			db, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if rec, err := db.Get(ctx, ids[0]); err != nil || rec.Analysis == nil || rec.Analysis.Events[0].UUID != "again" {
				t.Fatalf("after a reopen: %+v, %v", rec, err)
			}
		})
	}
}

// A store of the version that kept analysis in the log is opened: the
// log loses its event and search tables and every delivery is analyzed
// again into the analysis file.
func TestMigrationMovesAnalysisOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := openTo(path, Options{}, 11)
	if err != nil {
		t.Fatal(err)
	}
	id := insert(t, db, delivery(1, `{"events":[]}`))
	if _, err := db.SQL().Exec(`UPDATE deliveries SET analyzed = 1, analysis = '{"delivery_id":1}' WHERE id = ?1;
		INSERT INTO events(delivery_id, idx, uuid, type) VALUES (?1, 0, 'u', 'media.created');
		INSERT INTO search(rowid, body, summaries) VALUES (?1, 'kitten', 'kitten')`, id); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN ('events', 'search')`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the log keeps %d of events and search (%v)", tables, err)
	}
	ctx := context.Background()
	if un, err := db.Unanalyzed(ctx, 0, 10); err != nil || len(un) != 1 {
		t.Fatalf("unanalyzed = %d, %v; want the delivery", len(un), err)
	}
	save(t, db, analysis(id, inspector.SignatureValid, "h", event{uuid: "u", typ: "media.created"}))
	if got := listIDs(t, db, Filter{Text: "summary"}, 0); len(got) != 1 || got[0] != id {
		t.Errorf("search after the migration = %v", got)
	}
}

// Deleting deliveries removes their analysis rows; records a crash left
// in analysis_gone are swept when the store is opened.
func TestDeleteRemovesAnalysisRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, ids := analyzedStore(t, path, 3, nil)
	if analysisRows(t, db, ids[0]) != 3 {
		t.Fatalf("delivery %d has %d analysis rows, want 3", ids[0], analysisRows(t, db, ids[0]))
	}
	if err := db.Delete(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if n := analysisRows(t, db, ids[0]); n != 0 {
		t.Errorf("deleted delivery keeps %d analysis rows", n)
	}
	// A crash after the log's delete, before the sweep.
	if _, err := db.SQL().Exec(`INSERT INTO analysis_gone(delivery_id) VALUES (?1); DELETE FROM bodies WHERE delivery_id = ?1; DELETE FROM deliveries WHERE id = ?1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := analysisRows(t, db, ids[1]); n != 0 {
		t.Errorf("after reopening, the delivery deleted before a crash keeps %d analysis rows", n)
	}
	if n := analysisRows(t, db, ids[2]); n != 3 {
		t.Errorf("the delivery kept has %d analysis rows, want 3", n)
	}
	var gone int
	db.SQL().QueryRow(`SELECT count(*) FROM analysis_gone`).Scan(&gone)
	if gone != 0 {
		t.Errorf("analysis_gone keeps %d records", gone)
	}
}

// An analysis saved in a file the log no longer refers to (another
// process made it again meanwhile) marks nothing and leaves no rows.
func TestSaveIntoAResetFileMarksNothing(t *testing.T) {
	db := openTemp(t)
	id := insert(t, db, delivery(1, `{}`))
	if _, err := db.SQL().Exec(`UPDATE kv SET value = 'another' WHERE key = 'analysis_file'`); err != nil {
		t.Fatal(err)
	}
	save(t, db, analysis(id, inspector.SignatureValid, "h", event{uuid: "u", typ: "media.created"}))
	if un, err := db.Unanalyzed(context.Background(), 0, 10); err != nil || len(un) != 1 {
		t.Fatalf("unanalyzed = %d, %v; want the delivery still unanalyzed", len(un), err)
	}
	if n := analysisRows(t, db, id); n != 0 {
		t.Errorf("%d analysis rows left", n)
	}
}
