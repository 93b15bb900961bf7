package storage

import (
	"context"
	"fmt"
	"time"
)

// WatchEvery is how often Watch looks for changes: a face shows what any
// process wrote to the store well within a second.
const WatchEvery = 200 * time.Millisecond

// Watch calls changed, from its own goroutine, each time the store has
// been written since the previous look, by this process or any other
// (SQLite's data_version: it moves when another connection commits). It
// looks every `every` (WatchEvery when zero), so bursts of writes
// coalesce into one call per look. It returns when ctx ends, or with an
// error when the store cannot be read.
func (db *DB) Watch(ctx context.Context, every time.Duration, changed func()) error {
	if every <= 0 {
		every = WatchEvery
	}
	// data_version is per connection: it stays on one connection held for
	// the watch, so a commit by any other connection (of any process) is
	// seen as a new value.
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("watch store %s: %w", db.path, err)
	}
	defer conn.Close()
	read := func() (int64, error) {
		var v int64
		err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
		return v, err
	}
	last, err := read()
	if err != nil {
		return fmt.Errorf("watch store %s: %w", db.path, err)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		v, err := read()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch store %s: %w", db.path, err)
		}
		if v != last {
			last = v
			changed()
		}
	}
}
