package rules

import (
	"context"
	"errors"
	"time"
)

// Query is what a Source is asked for: the deliveries a narrowing allows,
// loaded as far as an expression needs.
type Query struct {
	Narrowing
	Needs Needs
	// NewestFirst walks from the newest delivery down (a list page);
	// otherwise oldest first (export, replay, tail).
	NewestFirst bool
}

// Source streams stored deliveries (the store implements it). It calls fn
// with each delivery the narrowing allows, in the query's order, loading
// at least what Needs says (a delivery it has not analyzed yet comes with
// its body, so its events can be decoded); fn's error stops the walk and
// is returned as is. It may return deliveries that do not satisfy the
// narrowing, never leave out one that does.
type Source interface {
	EachNarrowed(ctx context.Context, q Query, fn func(*Input) error) error
}

// FindOptions are a search's knobs.
type FindOptions struct {
	// Now is `now` for the whole search (one instant, so a long walk does
	// not move its own window); zero means the time Find starts.
	Now time.Time
	// NewestFirst walks newest first; Limit stops after that many
	// matches (0: no limit).
	NewestFirst bool
	Limit       int
	// BeforeID and AfterID bound the ids walked, exclusive (0: unbounded):
	// paging, and a tail's "after the last one printed".
	BeforeID, AfterID int64
}

// FindStats says how a search went.
type FindStats struct {
	// Read is how many deliveries the store returned (after narrowing);
	// Matched how many the expression accepted.
	Read, Matched int
	// Failed counts deliveries the expression failed on (a missing key, a
	// wrong type): they do not match. FirstFailure is the first such
	// failure, for a face to show ("3 deliveries could not be checked:
	// no such key: visitor").
	Failed       int
	FirstFailure error
}

// errEnough stops a walk that has its Limit.
var errEnough = errors.New("enough matches")

// Find calls fn with every stored delivery e matches, in the order asked,
// the store having narrowed the walk first (see Narrowing). e must be a
// Stored expression; a nil e matches everything. fn's error stops the
// search and is returned.
func Find(ctx context.Context, src Source, e *Expr, o FindOptions, fn func(*Input) error) (FindStats, error) {
	var st FindStats
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	q := Query{NewestFirst: o.NewestFirst}
	if e != nil {
		if e.view != Stored {
			return st, errors.New("find: the expression was compiled for answer rules, not for stored deliveries")
		}
		q.Narrowing, q.Needs = e.Narrowing(o.Now), e.needs
	}
	if q.None {
		return st, nil
	}
	if o.AfterID > 0 {
		q.MinID = max(q.MinID, o.AfterID+1)
	}
	if o.BeforeID > 0 && (q.MaxID == 0 || o.BeforeID-1 < q.MaxID) {
		q.MaxID = o.BeforeID - 1
		if q.MaxID < 1 {
			return st, nil
		}
	}
	err := src.EachNarrowed(ctx, q, func(in *Input) error {
		st.Read++
		if e != nil {
			in.Now = o.Now
			ok, err := e.Eval(*in)
			if err != nil {
				st.Failed++
				if st.FirstFailure == nil {
					st.FirstFailure = err
				}
				return nil
			}
			if !ok {
				return nil
			}
		}
		st.Matched++
		if err := fn(in); err != nil {
			return err
		}
		if o.Limit > 0 && st.Matched >= o.Limit {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return st, err
}
