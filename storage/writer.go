package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// errClosed is returned for writes submitted after Close began.
var errClosed = errors.New("store is closed")

// maxBatch bounds one group commit so a flood of writers cannot hold the
// SQLite write lock (and every reader's view of new rows) for long.
const maxBatch = 256

// op is one write that must be committed before its caller hears back.
// run executes inside the batch transaction, under its own savepoint, so a
// failing op is rolled back alone and the rest of the batch still commits.
type op struct {
	run  func(ctx context.Context, tx *batchTx) (int64, error)
	done chan opResult
}

type opResult struct {
	id  int64
	err error
}

// writer is the group-commit loop. Every durable write of the hot path
// (InsertDelivery, SaveAnalysis, UpdateSignature) is handed to its single
// goroutine, which runs whatever has queued up in one transaction and one
// fsync, then wakes each caller. There is no timer: while one batch is being
// committed the next one queues, so batches grow exactly as far as the load
// needs and a lone request is committed at once.
type writer struct {
	sql *sql.DB
	ops chan *op

	// mu guards closed; senders hold it for reading so close cannot close
	// ops under them.
	mu     sync.RWMutex
	closed bool
	done   chan struct{}
}

func newWriter(db *DB) *writer {
	w := &writer{
		sql:  db.sql,
		ops:  make(chan *op, 4*maxBatch),
		done: make(chan struct{}),
	}
	go w.loop()
	return w
}

// do submits run and waits until the transaction holding it has committed
// (or failed). Once submitted, it waits even if ctx is cancelled: the write
// is going to happen anyway and the caller must learn its outcome, since a
// receiver that gave up waiting must not ack.
func (w *writer) do(ctx context.Context, run func(ctx context.Context, tx *batchTx) (int64, error)) (int64, error) {
	o := &op{run: run, done: make(chan opResult, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return 0, errClosed
	}
	select {
	case w.ops <- o:
	case <-ctx.Done():
		w.mu.RUnlock()
		return 0, ctx.Err()
	}
	w.mu.RUnlock()
	r := <-o.done
	return r.id, r.err
}

// close stops accepting writes, commits everything already queued and
// waits for the loop to finish.
func (w *writer) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ops)
	}
	w.mu.Unlock()
	<-w.done
}

func (w *writer) loop() {
	defer close(w.done)
	batch := make([]*op, 0, maxBatch)
	for first := range w.ops {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-w.ops:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		w.commit(batch)
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
		tx := &batchTx{Tx: sqlTx, stmts: map[string]*sql.Stmt{}}
		for i, o := range batch {
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
	if _, err := tx.ExecContext(ctx, "SAVEPOINT op"); err != nil {
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
	if _, err := tx.ExecContext(ctx, "RELEASE op"); err != nil {
		return opResult{err: fmt.Errorf("release savepoint: %w", err)}
	}
	return opResult{id: id}
}

// batchTx is the transaction of one batch with its prepared statements:
// a batch runs the same few statements hundreds of times, and preparing
// them once per batch instead of once per row is measurable.
type batchTx struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
	// search holds the full-text entries the batch's ops want written.
	// FTS5 flushes its pending terms to a new segment whenever a statement
	// opens a savepoint, which in a batch is every statement: indexing row
	// by row made one segment per delivery and spent most of the writer's
	// time merging them. Written by one statement at the end, a batch
	// becomes one segment.
	search []searchEntry
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
	// The last request for an id wins (an id analysed twice in one batch).
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
		if _, err := tx.ExecContext(ctx, `DELETE FROM search WHERE rowid IN (SELECT value FROM json_each(?))`, string(ids)); err != nil {
			return err
		}
	}
	list, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO search(rowid, body, summaries)
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

// prepared returns query prepared on the transaction, once per batch.
func (tx *batchTx) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := tx.stmts[query]; ok {
		return st, nil
	}
	st, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	tx.stmts[query] = st
	return st, nil
}
