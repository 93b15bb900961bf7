package storage

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// WAL checkpoints, in frames (one page, 4 KiB, each).
const (
	// ckptInterval spaces the background checkpoints.
	ckptInterval = 200 * time.Millisecond
	// ckptRestartFrames is the WAL length from which the writer finishes a
	// checkpoint itself so the log can start over (SQLite's automatic
	// checkpoint starts at 1,000).
	ckptRestartFrames = 1000
	// ckptHardFrames bounds the WAL (64 MiB): past it the writer copies
	// the whole log itself however busy the receiver is, as SQLite's
	// automatic checkpoint would have done long before.
	ckptHardFrames = 16384
)

// checkpointer copies the WAL back into the database file off the
// writer's path. SQLite's automatic checkpoint runs inside the COMMIT that
// crosses 1,000 frames, on the writer goroutine: every insert queued
// behind it waited for a 4 MB copy and the database file's fsync, a
// stall of tens of milliseconds several times a second under load
// (7.5% of the ingest CPU profile, all of it on the ack path). The store's
// connections run with wal_autocheckpoint=0 instead; this goroutine runs
// PASSIVE checkpoints, which never block the writer, and the writer only
// finishes one when the receiver is idle (copying the few frames committed
// meanwhile, so the log can restart) or when the log passed
// ckptHardFrames. Durability is unchanged: a commit is durable once its
// WAL frames are fsynced, whoever copies them later.
type checkpointer struct {
	db   *sql.DB
	kick chan struct{}
	quit chan struct{}
	done chan struct{}

	// frames is the WAL length seen by the last checkpoint.
	frames atomic.Int64
	// finish asks the writer to complete a checkpoint when idle.
	finish atomic.Bool
}

func newCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-c.kick:
		}
		c.run()
		t.Reset(ckptInterval)
		select {
		case <-c.quit:
			return
		case <-t.C:
		}
	}
}

// run makes one PASSIVE checkpoint and records what it saw.
func (c *checkpointer) run() {
	var busy, frames, copied int64
	err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil || frames < 0 {
		// The store is closing, or not in WAL mode; SQLite's own
		// checkpoint on close covers the rest.
		return
	}
	c.frames.Store(frames)
	if frames >= ckptRestartFrames {
		c.finish.Store(true)
	}
}

// afterCommit is called by the writer after each commit, on its goroutine.
// idle says no insert is waiting.
func (c *checkpointer) afterCommit(idle bool) {
	select {
	case c.kick <- struct{}{}:
	default:
	}
	if (idle && c.finish.Load()) || c.frames.Load() >= ckptHardFrames {
		c.finish.Store(false)
		c.run()
		c.finish.Store(false)
	}
}

// stop ends the background goroutine.
func (c *checkpointer) stop() {
	close(c.quit)
	<-c.done
}
