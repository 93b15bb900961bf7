package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errClosed is returned for writes submitted after Close began.
var errClosed = errors.New("store is closed")

// maxBatch bounds one group commit so a flood of writers cannot hold the
// SQLite write lock (and every reader's view of new rows) for long.
const maxBatch = 256

// Bounds on the bulk work (analyses, signature updates) one commit
// carries. A receiver's insert waits for the whole transaction it lands
// in, and for the one being committed when it arrived, so bulk work is
// kept out of the ack path's commits as far as it can be: a commit the
// writer opens for waiting inserts carries no bulk op, and while inserts
// are flowing a bulk op commits alone (one analysis save with its events,
// counters and search entries is a few ms, measured as 4-13 ms commits
// when four rode beside inserts: docs/benchmarks.md finding 3). Analysis
// still progresses under saturation: when both queues are ready the loop
// picks one at random, so about every other commit starts with a bulk op,
// and the inserts waiting then join it. Once no insert has been committed
// for insertsQuietAfter, bulk commits grow to maxBatch: bigger commits
// write each hot page (counters, index tails, the search index's new
// segment) once for more rows.
const (
	maxBulkBesideInserts = 0
	maxBulkAlone         = 1
	insertsQuietAfter    = 50 * time.Millisecond
)

// opClass says whether a caller is waiting to answer a request.
type opClass int

const (
	// urgent ops are the receiver's inserts: a sender waits for the ack.
	// They run without a savepoint of their own (its two statements and
	// the page copies it journals were ~8% of the ack path's CPU), so an
	// urgent run must leave nothing behind when it fails: every statement
	// is atomic by itself, it undoes the earlier ones, and if it cannot it
	// returns errAbortBatch, which rolls the whole batch back.
	urgent opClass = iota
	// bulk ops are everything else: analyses, signature updates, replays.
	bulk
)

// op is one write that must be committed before its caller hears back.
// run executes inside the batch transaction, under its own savepoint, so a
// failing op is rolled back alone and the rest of the batch still commits.
type op struct {
	class opClass
	run   func(ctx context.Context, tx *batchTx) (int64, error)
	done  chan opResult
}

// errAbortBatch from an urgent op means it could not undo its partial
// writes: the batch's transaction is rolled back and every op in it fails
// (their callers do not ack, so the senders try again).
var errAbortBatch = errors.New("could not undo a failed insert; batch rolled back")

type opResult struct {
	id  int64
	err error
}

// writer is the group-commit loop. Every durable write of the hot path
// (InsertDelivery, SaveAnalysis, UpdateSignature) is handed to its single
// goroutine, which runs whatever has queued up in one transaction and one
// fsync, then wakes each caller. There is no timer: while one batch is being
// committed the next one queues, so batches grow exactly as far as the load
// needs and a lone request is committed at once. Inserts overtake bulk
// work: they go first in every batch, and bulk work is bounded per commit.
type writer struct {
	sql    *sql.DB
	stmts  *stmtCache
	ids    idSource
	urgent chan *op
	bulk   chan *op
	ckpt   *checkpointer

	// mu guards closed; senders hold it for reading so close cannot close
	// the channels under them.
	mu     sync.RWMutex
	closed bool
	done   chan struct{}
}

func newWriter(db *DB) *writer {
	w := &writer{
		sql:    db.sql,
		stmts:  db.stmts,
		ids:    db.ids,
		urgent: make(chan *op, 4*maxBatch),
		bulk:   make(chan *op, 4*maxBatch),
		ckpt:   newCheckpointer(db.sql),
		done:   make(chan struct{}),
	}
	go w.loop()
	return w
}

// do submits run and waits until the transaction holding it has committed
// (or failed). Once submitted, it waits even if ctx is cancelled: the write
// is going to happen anyway and the caller must learn its outcome, since a
// receiver that gave up waiting must not ack.
func (w *writer) do(ctx context.Context, class opClass, run func(ctx context.Context, tx *batchTx) (int64, error)) (int64, error) {
	o := &op{class: class, run: run, done: make(chan opResult, 1)}
	ch := w.bulk
	if class == urgent {
		ch = w.urgent
	}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return 0, errClosed
	}
	select {
	case ch <- o:
	case <-ctx.Done():
		w.mu.RUnlock()
		return 0, ctx.Err()
	}
	w.mu.RUnlock()
	r := <-o.done
	return r.id, r.err
}

// close stops accepting writes, commits everything already queued and
// waits for the loop (and its checkpointer) to finish.
func (w *writer) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.urgent)
		close(w.bulk)
	}
	w.mu.Unlock()
	<-w.done
}

func (w *writer) loop() {
	defer close(w.done)
	defer w.ckpt.stop()
	urgentCh, bulkCh := w.urgent, w.bulk
	batch := make([]*op, 0, maxBatch+maxBulkBesideInserts)
	var bulkOps []*op
	var lastInsert time.Time
	for urgentCh != nil || bulkCh != nil {
		batch, bulkOps = batch[:0], bulkOps[:0]
		// Wait for the first op of either class.
		select {
		case o, ok := <-urgentCh:
			if !ok {
				urgentCh = nil
				continue
			}
			batch = append(batch, o)
		case o, ok := <-bulkCh:
			if !ok {
				bulkCh = nil
				continue
			}
			bulkOps = append(bulkOps, o)
		}
		// Every waiting insert, in arrival order (ids follow it).
	inserts:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-urgentCh:
				if !ok {
					urgentCh = nil
					break inserts
				}
				batch = append(batch, o)
			default:
				break inserts
			}
		}
		limit := maxBatch
		switch {
		case len(batch) > 0:
			limit = maxBulkBesideInserts
			lastInsert = time.Now()
		case time.Since(lastInsert) < insertsQuietAfter:
			limit = maxBulkAlone
		}
	bulks:
		for len(bulkOps) < limit {
			select {
			case o, ok := <-bulkCh:
				if !ok {
					bulkCh = nil
					break bulks
				}
				bulkOps = append(bulkOps, o)
			default:
				break bulks
			}
		}
		w.commit(append(batch, bulkOps...))
		w.ckpt.afterCommit(len(w.urgent) == 0)
	}
}

// commit runs one batch in one transaction. If the transaction itself fails
// (not one op: the begin or the commit), every op in it gets the error.
func (w *writer) commit(batch []*op) {
	// The writes must outlive any one caller's context: a cancelled request
	// must not roll back rows that other callers are about to ack.
	ctx := context.Background()
	results := make([]opResult, len(batch))
	err := func() error {
		sqlTx, err := w.sql.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin batch: %w", err)
		}
		tx := newBatchTx(sqlTx, w.stmts)
		tx.ids = w.ids
		for i, o := range batch {
			if o.class == urgent {
				id, err := o.run(ctx, tx)
				if errors.Is(err, errAbortBatch) {
					sqlTx.Rollback()
					return err
				}
				results[i] = opResult{id: id, err: err}
				continue
			}
			results[i] = runSavepoint(ctx, tx, o)
		}
		if err := tx.flushSearch(ctx); err != nil {
			sqlTx.Rollback()
			return fmt.Errorf("index batch for search: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit batch of %d: %w", len(batch), err)
		}
		return nil
	}()
	for i, o := range batch {
		if err != nil {
			results[i] = opResult{err: err}
		}
		o.done <- results[i]
	}
}

func runSavepoint(ctx context.Context, tx *batchTx, o *op) opResult {
	if _, err := tx.exec(ctx, "SAVEPOINT op"); err != nil {
		return opResult{err: fmt.Errorf("savepoint: %w", err)}
	}
	pending := len(tx.search)
	id, err := o.run(ctx, tx)
	if err != nil {
		tx.search = tx.search[:pending]
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO op; RELEASE op"); rerr != nil {
			return opResult{err: errors.Join(err, fmt.Errorf("roll back: %w", rerr))}
		}
		return opResult{err: err}
	}
	if _, err := tx.exec(ctx, "RELEASE op"); err != nil {
		return opResult{err: fmt.Errorf("release savepoint: %w", err)}
	}
	return opResult{id: id}
}

// batchTx is the transaction of one batch with its prepared statements:
// a batch runs the same few statements hundreds of times, and preparing
// them once per batch instead of once per row is measurable.
type batchTx struct {
	*sql.Tx
	// cache holds the store's statements prepared once; stmts their
	// copies bound to this transaction.
	cache *stmtCache
	stmts map[string]*sql.Stmt
	// ids hands out the ids of new deliveries (nil: above the highest).
	ids idSource
	// search holds the full-text entries the batch's ops want written.
	// FTS5 flushes its pending terms to a new segment whenever a statement
	// opens a savepoint, which in a batch is every statement: indexing row
	// by row made one segment per delivery and spent most of the writer's
	// time merging them. Written by one statement at the end, a batch
	// becomes one segment.
	search []searchEntry
}

func newBatchTx(tx *sql.Tx, cache *stmtCache) *batchTx {
	return &batchTx{Tx: tx, cache: cache, stmts: map[string]*sql.Stmt{}}
}

// searchEntry asks for delivery id's full-text entry to be (re)written
// with these summaries; replace says an older entry may exist.
type searchEntry struct {
	ID        int64  `json:"id"`
	Summaries string `json:"s"`
	replace   bool
}

// flushSearch writes the batch's full-text entries: removals of replaced
// entries first, then every entry in one INSERT.
func (tx *batchTx) flushSearch(ctx context.Context) error {
	if len(tx.search) == 0 {
		return nil
	}
	// The last request for an id wins (an id analyzed twice in one batch).
	last := make(map[int64]int, len(tx.search))
	for i, e := range tx.search {
		last[e.ID] = i
	}
	var entries []searchEntry
	var replaced []int64
	for i, e := range tx.search {
		if last[e.ID] != i {
			continue
		}
		entries = append(entries, e)
		if e.replace {
			replaced = append(replaced, e.ID)
		}
	}
	tx.search = tx.search[:0]
	if len(replaced) > 0 {
		ids, err := json.Marshal(replaced)
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM search WHERE rowid IN (SELECT value FROM json_each(?))`, string(ids)); err != nil {
			return err
		}
	}
	list, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO search(rowid, body, summaries)
		SELECT b.delivery_id, CAST(substr(b.body, 1, ?) AS TEXT), j.value ->> 's'
		FROM json_each(?) j CROSS JOIN bodies b ON b.delivery_id = j.value ->> 'id'`, maxIndexedText, string(list))
	return err
}

// exec runs query with args on a statement prepared once per batch.
func (tx *batchTx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := tx.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// prepared returns query bound to the transaction: the store's statement
// prepared once per connection, so a batch parses no SQL.
func (tx *batchTx) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := tx.stmts[query]; ok {
		return st, nil
	}
	parent, err := tx.cache.get(ctx, query)
	if err != nil {
		return nil, err
	}
	st := tx.StmtContext(ctx, parent)
	tx.stmts[query] = st
	return st, nil
}
