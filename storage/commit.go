package storage

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// maxBatch bounds the writes one commit carries, so the write lock is
// never held long by a flood.
const maxBatch = 256

// committer is a group commit for small writes on one handle: the
// receiver's inserts on the durable one (their commit waits for the disk,
// and the ack for the commit), forwarding's records on the relaxed one (a
// mark before each send, an attempt after it: they need not wait for an
// insert's fsync). Writes that arrive while a commit is under way queue,
// and the first of them commits the queue in the next transaction: one
// commit (one fsync) for all. There is no timer: a lone write is
// committed at once, and batches grow only as far as the load makes them.
// Big writes (analyses, deletes) commit alone.
type committer struct {
	db    *DB
	h     *sql.DB
	mu    sync.Mutex
	queue []*op
	busy  bool
}

// op is one small write.
type op struct {
	run func(tx *sql.Tx) error
	err error
	// lead is closed to make this op commit the queue; done once another
	// committed it.
	lead, done chan struct{}
}

// do runs fn in the next group commit and returns once it is committed
// (fn's error, or the commit's). fn may run twice: when the batch's
// commit fails, each of its writes is tried alone, so one that cannot be
// stored costs only itself.
func (c *committer) do(fn func(tx *sql.Tx) error) error {
	o := &op{run: fn, lead: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, o)
	if c.busy {
		c.mu.Unlock()
		select {
		case <-o.done:
			return o.err
		case <-o.lead:
		}
		c.mu.Lock()
	}
	// o leads: it is the queue's first (it was handed the lead) or the
	// queue was idle.
	c.busy = true
	c.mu.Unlock()
	c.commit()
	c.mu.Lock()
	if len(c.queue) > 0 {
		close(c.queue[0].lead)
	} else {
		c.busy = false
	}
	c.mu.Unlock()
	return o.err
}

// take removes the next batch from the queue (the leader is its first).
func (c *committer) take() []*op {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.queue), maxBatch)
	batch := slices.Clone(c.queue[:n])
	c.queue = c.queue[n:]
	return batch
}

// commit runs the queue's next batch in one transaction. The batch is
// taken once the write lock is held, so writes that came while the leader
// waited for it share this commit instead of waiting for the next one.
func (c *committer) commit() {
	ctx := context.Background()
	var batch []*op
	err := c.db.writeOn(ctx, c.h, func(tx *sql.Tx) error {
		batch = c.take()
		for _, o := range batch {
			if err := o.run(tx); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case batch == nil:
		// The transaction could not begin: the leader's batch fails whole.
		batch = c.take()
		for _, o := range batch {
			o.err = err
		}
	case err != nil && len(batch) > 1:
		for _, o := range batch {
			o.err = c.db.writeOn(ctx, c.h, o.run)
		}
	case err != nil:
		batch[0].err = err
	}
	for _, o := range batch {
		close(o.done)
	}
}

// fifo is a lock that is handed to its waiters in the order they came:
// sync.Mutex lets a goroutine that arrives as it is released take it
// first, so a writer waiting behind a stream of inserts (a forward route's
// mark before each send) waited for several commits instead of one.
type fifo struct {
	mu      sync.Mutex
	held    bool
	waiting []chan struct{}
}

func (l *fifo) Lock() {
	l.mu.Lock()
	if !l.held {
		l.held = true
		l.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	l.waiting = append(l.waiting, ch)
	l.mu.Unlock()
	<-ch // handed over: held stays true
}

func (l *fifo) Unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiting) == 0 {
		l.held = false
		return
	}
	next := l.waiting[0]
	l.waiting = l.waiting[1:]
	close(next)
}
