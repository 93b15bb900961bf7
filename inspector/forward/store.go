package forward

import (
	"context"
	"errors"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// Store is what forwarding keeps in the store: one row per route with its
// cursor (every receiver delivery above it is owed) and its lease (one
// process forwards a route at a time), every attempt, and the per-delivery
// summary the lists show. storage.DB implements it.
type Store interface {
	// ClaimRoute takes the route's lease for holder until now+ttl when it
	// is free, expired or holder's already (renewing it), creating the
	// route's row with its cursor at the newest delivery when there is
	// none. A route turned off before since (ReleaseRoute with off) starts
	// after the newest delivery again, so what arrived while it was off
	// is not owed. Held in the result says whether holder has the lease.
	ClaimRoute(ctx context.Context, route, holder string, since time.Time, ttl time.Duration) (RouteState, error)
	// ReleaseRoute gives holder's lease up, so another process takes the
	// route over at once; off also marks the route turned off (when no
	// other process holds it).
	ReleaseRoute(ctx context.Context, route, holder string, off bool) error
	// RenewLeases extends every lease holder has to now+ttl.
	RenewLeases(ctx context.Context, holder string, ttl time.Duration) error
	// PendingForwards returns the receiver deliveries with an id above
	// after that have no final attempt on route (a pass-through relay, a
	// Forward again that was delivered), oldest first, at most limit of
	// them and (past the first) bodies of at most maxBytes in all, each
	// with the attempts it had on route.
	PendingForwards(ctx context.Context, route string, after int64, limit int, maxBytes int64) ([]Pending, error)
	// PendingCount counts what PendingForwards would return, all pages.
	PendingCount(ctx context.Context, route string, after int64) (int64, error)
	// RecordForward, in one transaction that renews holder's lease and
	// fails with ErrLeaseLost when holder does not hold it, records
	// attempts, moves the route's cursor up to cursor (never down) and
	// sets the sending mark: the last delivery of the run being sent (0:
	// none). A worker that finds the mark set sends the deliveries above
	// the cursor up to it again as re-forwards: they may have reached the
	// app.
	RecordForward(ctx context.Context, route, holder string, attempts []*Attempt, cursor, sending int64, ttl time.Duration) error
	// SaveForwards records attempts made outside a route's queue
	// (pass-through, Forward again) and moves cursors up (route ->
	// cursor; nil moves none), in one transaction. A pass-through
	// attempt's Relayed status becomes its delivery's status: what the
	// service got.
	SaveForwards(ctx context.Context, attempts []*Attempt, cursors map[string]int64) error
	// ForwardAttempts returns a delivery's attempts, oldest first.
	ForwardAttempts(ctx context.Context, deliveryID int64) ([]*Attempt, error)
	// ForwardSummaries returns the summary of each of ids that has
	// attempts (a list page's badges: one primary-key lookup per row).
	ForwardSummaries(ctx context.Context, ids []int64) (map[int64]Summary, error)
	// ForwardDelivery returns a stored delivery, or nil, nil when there
	// is no such delivery.
	ForwardDelivery(ctx context.Context, id int64) (*inspector.Delivery, error)
}

// ErrLeaseLost is returned (wrapped) by Store.RecordForward when another
// process holds the route's lease now: this one stops sending.
var ErrLeaseLost = errors.New("another Hookscope process forwards this route now")

// RouteState is a route's row as ClaimRoute found it.
type RouteState struct {
	// Cursor: every delivery at or below it is done for the route.
	Cursor int64
	// Sending is the sending mark the last holder left when it stopped
	// recording (0: none): the deliveries above Cursor up to it may have
	// reached the app.
	Sending int64
	// Held says whether the claimer holds the lease; Holder names the
	// process that does.
	Held   bool
	Holder string
}

// Pending is one delivery a route owes, with how many attempts it already
// had on the route, and how many of those were the app's verdict (a
// non-2xx answer, a timeout, a dropped connection), which the retry limit
// counts.
type Pending struct {
	Delivery *inspector.Delivery
	Attempts int
	Verdicts int
}

// Summary is a delivery's forwarding in one line, for a list's badge.
type Summary struct {
	Attempts int
	// Status and Outcome are the latest attempt's.
	Status  int
	Outcome Outcome
	// Final reports that the latest attempt ended the queue's work on
	// the delivery (delivered or given up).
	Final     bool
	Reforward bool
	At        time.Time
}
