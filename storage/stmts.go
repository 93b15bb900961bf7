package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// errClosed is returned for statements asked for after Close.
var errClosed = errors.New("store is closed")

// stmtCache holds statements prepared once for the life of the store.
// modernc's driver parses SQL text on every QueryRowContext/ExecContext:
// for the ledger's lookups and the writers' statements, sqlite3Prepare was
// a quarter of analysis CPU. A *sql.Stmt on the pool is prepared
// lazily on each connection it runs on and reused there, and
// Tx.StmtContext reuses the copy already prepared on the transaction's
// connection, so every statement is parsed once per connection.
type stmtCache struct {
	db *sql.DB

	mu     sync.Mutex
	m      map[string]*sql.Stmt
	closed bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
}

// get returns query prepared on the pool.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	// Preparing under the lock is fine: it happens once per statement.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	c.m[query] = st
	return st, nil
}

// inTx returns query prepared for tx, a transaction on the cache's handle:
// the copy already prepared on tx's connection when there is one.
func (c *stmtCache) inTx(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// close closes every cached statement; later gets fail.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}
