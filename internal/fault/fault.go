// Package fault reports a failing operation as two changes of state: one
// line when it starts failing and one when it works again, with how many
// attempts failed in between, instead of one line per failed attempt (a
// full disk under a flood of requests wrote 24,573 lines in 12 s).
package fault

import (
	"sync"
	"sync/atomic"
	"time"
)

// State is the state of one operation. Set the strings and Logf before
// first use; the zero counters mean "working".
type State struct {
	// Failing starts the line written when the operation starts to fail:
	// "cannot store deliveries".
	Failing string
	// Meanwhile says what happens until it works again: "answering 503".
	Meanwhile string
	// Recovered starts the line written when it works again: "storing
	// deliveries again".
	Recovered string
	// Attempts names what failed in between: "requests answered 503".
	Attempts string
	// Logf receives the two lines; nil discards them.
	Logf func(format string, args ...any)

	failing atomic.Bool
	mu      sync.Mutex
	since   time.Time
	n       int64
}

// Fail records one failed attempt; the first after a success is reported.
func (s *State) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n > 1 {
		return
	}
	s.failing.Store(true)
	s.since = time.Now()
	line := s.Failing + " since " + s.since.Format("15:04:05") + ": " + err.Error()
	if s.Meanwhile != "" {
		line += "; " + s.Meanwhile
	}
	s.logf("%s", line)
}

// OK records a success; the first after failures is reported. Cheap when
// nothing failed (an atomic load), so hot paths call it every time.
func (s *State) OK() {
	if !s.failing.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return
	}
	took := time.Since(s.since)
	if took < time.Second {
		took = took.Round(time.Millisecond)
	} else {
		took = took.Round(time.Second)
	}
	s.logf("%s after %s: %d %s since %s", s.Recovered, took, s.n, s.Attempts, s.since.Format("15:04:05"))
	s.n = 0
	s.failing.Store(false)
}

// IsFailing reports whether the last attempt failed.
func (s *State) IsFailing() bool { return s.failing.Load() }

func (s *State) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
