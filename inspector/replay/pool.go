package replay

import (
	"bufio"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultIdleFor is how long a Pool keeps an idle connection. It is below
// the 5 s keep-alive timeout of Node's HTTP server, the shortest common
// one, so a connection is rarely reused just as the app closes it.
const DefaultIdleFor = 4 * time.Second

// DefaultMaxIdle is how many idle connections a Pool keeps per target.
const DefaultMaxIdle = 4

// Pool keeps idle keep-alive connections per target for a Sender. The
// zero value is ready to use; Close closes what it holds. It is safe for
// concurrent use.
type Pool struct {
	// MaxIdle bounds the idle connections kept per target; zero means
	// DefaultMaxIdle.
	MaxIdle int
	// IdleFor is how long an idle connection is kept; zero means
	// DefaultIdleFor.
	IdleFor time.Duration

	mu     sync.Mutex
	idle   map[string][]*poolConn
	closed bool
}

// poolConn is a connection with its buffered reader (which may hold the
// start of the next answer, so it stays with the connection), a count of
// bytes read in the current exchange, and, while idle, a watcher that
// notices the app closing it.
type poolConn struct {
	net.Conn
	br    *bufio.Reader
	read  int64
	since time.Time
	watch chan error
}

func (c *poolConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read += int64(n)
	return n, err
}

// put keeps c for the next exchange to key, or closes it.
func (p *Pool) put(key string, c *poolConn) {
	max := p.MaxIdle
	if max <= 0 {
		max = DefaultMaxIdle
	}
	c.since = time.Now()
	// An idle connection should receive nothing; a read that returns
	// (EOF, a reset, stray bytes) means it is dead. get stops the watch
	// with a past deadline.
	c.watch = make(chan error, 1)
	go func() {
		_, err := c.br.Peek(1)
		c.watch <- err
	}()
	p.mu.Lock()
	if p.closed || len(p.idle[key]) >= max {
		p.mu.Unlock()
		c.Close()
		return
	}
	if p.idle == nil {
		p.idle = map[string][]*poolConn{}
	}
	p.idle[key] = append(p.idle[key], c)
	p.mu.Unlock()
}

// get returns a live idle connection to key, newest first, or nil.
func (p *Pool) get(key string) *poolConn {
	idleFor := p.IdleFor
	if idleFor <= 0 {
		idleFor = DefaultIdleFor
	}
	for {
		p.mu.Lock()
		cs := p.idle[key]
		if len(cs) == 0 {
			p.mu.Unlock()
			return nil
		}
		c := cs[len(cs)-1]
		p.idle[key] = cs[:len(cs)-1]
		p.mu.Unlock()
		c.SetReadDeadline(time.Unix(1, 0))
		err := <-c.watch
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(c.since) > idleFor {
			c.Close()
			continue
		}
		c.SetReadDeadline(time.Time{})
		return c
	}
}

// Close closes every idle connection; connections in use are closed when
// their exchange ends.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.Close()
		}
	}
}
