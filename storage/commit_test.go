package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// Writes that queue while the group commit's leader waits for the write
// lock go into the leader's transaction, not the next one: taken before
// the lock, they waited for a second commit.
func TestGroupCommitTakesWritesThatCameWhileItWaited(t *testing.T) {
	db := openTemp(t)
	db.wmu.Lock() // another writer holds the lock
	var mu sync.Mutex
	txs := map[*sql.Tx]int{}
	write := func(tx *sql.Tx) error {
		mu.Lock()
		txs[tx]++
		mu.Unlock()
		_, err := tx.Exec(`UPDATE counters SET n = n WHERE name = 'deliveries'`)
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := db.inserts.do(write); err != nil {
			t.Error(err)
		}
	})
	// The leader is waiting for the lock once the queue is busy.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		db.inserts.mu.Lock()
		busy := db.inserts.busy
		db.inserts.mu.Unlock()
		if busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first write never started its commit")
		}
	}
	const followers = 5
	for range followers {
		wg.Go(func() {
			if err := db.inserts.do(write); err != nil {
				t.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		db.inserts.mu.Lock()
		n := len(db.inserts.queue)
		db.inserts.mu.Unlock()
		if n == followers+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", n, followers+1)
		}
	}
	db.wmu.Unlock()
	wg.Wait()
	if len(txs) != 1 {
		t.Fatalf("%d writes went into %d transactions, want 1: %v", followers+1, len(txs), txs)
	}
}

// A transaction that cannot begin fails the leader's whole batch, and
// every write of it returns (none is left waiting).
func TestGroupCommitBatchFailsWhenItCannotBegin(t *testing.T) {
	db := openTemp(t)
	db.Close()
	err := db.inserts.do(func(*sql.Tx) error { return nil })
	if err == nil {
		t.Fatal("a write on a closed store succeeded")
	}
	if db.inserts.busy || len(db.inserts.queue) != 0 {
		t.Fatalf("queue left busy=%v with %d writes", db.inserts.busy, len(db.inserts.queue))
	}
}

// SaveAnalyses writes many events in multi-row statements (more than one
// statement's worth here), keeps the last analysis of a delivery given
// twice, replaces an earlier analysis's events, and saves nothing when a
// delivery is missing.
func TestSaveAnalysesInGroups(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	var ids []int64
	for i := range 3 {
		id, err := db.InsertDelivery(ctx, delivery(i, `{"hook":{"uuid":"h"},"events":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	analysis := func(id int64, n int, tag string) *inspector.Analysis {
		a := &inspector.Analysis{DeliveryID: id, HookUUID: fmt.Sprintf("hook-%d", id), Signature: inspector.SignatureResult{Status: inspector.SignatureValid}}
		for i := range n {
			a.Events = append(a.Events, inspector.EventAnalysis{Index: i, UUID: fmt.Sprintf("%s-%d-%d", tag, id, i), Type: "media.created",
				Subject: fmt.Sprintf("media:%d", i), GeneratedAt: t0.Add(time.Duration(i) * time.Second), Hash: tag, Summary: tag})
		}
		return a
	}
	// 70 + 50 + 1 events: groups of 64, 32, 16, 8 and 1 rows.
	batch := []*inspector.Analysis{analysis(ids[0], 70, "a"), analysis(ids[1], 10, "old"), analysis(ids[2], 1, "a"), analysis(ids[1], 50, "a")}
	if err := db.SaveAnalyses(ctx, batch); err != nil {
		t.Fatal(err)
	}
	events := func(id int64) (n int, tags map[string]bool) {
		rec, err := db.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		tags = map[string]bool{}
		var rows int
		if err := db.an.QueryRow(`SELECT count(*) FROM events WHERE delivery_id = ?`, id).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		for _, e := range rec.Analysis.Events {
			tags[e.Hash] = true
		}
		if rows != len(rec.Analysis.Events) {
			t.Fatalf("delivery %d: %d event rows, analysis has %d", id, rows, len(rec.Analysis.Events))
		}
		return rows, tags
	}
	for i, want := range []int{70, 50, 1} {
		if n, tags := events(ids[i]); n != want || !tags["a"] || tags["old"] {
			t.Errorf("delivery %d: %d events %v, want %d of the last analysis", ids[i], n, tags, want)
		}
	}
	if s, _ := db.Stats(ctx); s.Events != 121 {
		t.Errorf("Stats.Events = %d, want 121", s.Events)
	}
	l, err := db.Ledger(ctx, []string{"hook-" + fmt.Sprint(ids[1])}, []string{fmt.Sprintf("a-%d-69", ids[0])}, []string{"media:69"})
	if err != nil || l.Hooks["hook-"+fmt.Sprint(ids[1])] != ids[1] || l.Events[fmt.Sprintf("a-%d-69", ids[0])].Copies != 1 || l.Subjects["media:69"].GeneratedAt.IsZero() {
		t.Fatalf("Ledger after the save = %+v, %v", l, err)
	}

	// Re-analysis replaces the events (and the search entry).
	if err := db.SaveAnalyses(ctx, []*inspector.Analysis{analysis(ids[0], 2, "b"), analysis(ids[2], 3, "b")}); err != nil {
		t.Fatal(err)
	}
	if n, tags := events(ids[0]); n != 2 || !tags["b"] || tags["a"] {
		t.Errorf("re-analyzed delivery: %d events %v", n, tags)
	}
	if s, _ := db.Stats(ctx); s.Events != 55 {
		t.Errorf("Stats.Events after re-analysis = %d, want 55", s.Events)
	}
	// The search entries are replaced too: each delivery is found by its
	// latest analysis's summaries only.
	for text, want := range map[string][]int64{"b": {ids[2], ids[0]}, "a": {ids[1]}, "old": nil} {
		got, err := db.List(ctx, Filter{Text: text}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []int64
		for _, s := range got {
			gotIDs = append(gotIDs, s.ID)
		}
		if !slices.Equal(gotIDs, want) {
			t.Errorf("search %q found %v, want %v", text, gotIDs, want)
		}
	}

	// A missing delivery fails the batch and saves nothing of it.
	err = db.SaveAnalyses(ctx, []*inspector.Analysis{analysis(ids[1], 4, "c"), analysis(9999, 1, "c")})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("SaveAnalyses with a missing delivery: %v, want ErrNotFound", err)
	}
	if n, tags := events(ids[1]); n != 50 || tags["c"] {
		t.Errorf("a failed batch changed delivery %d: %d events %v", ids[1], n, tags)
	}
}
