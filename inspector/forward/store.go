package forward

import (
	"context"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// Store is what forwarding keeps in the store: the per-route queue (a
// cursor and the sessions during which the route took deliveries), every
// attempt, and the per-delivery summary the lists show. storage.DB
// implements it.
//
// The queue is not a row per delivery: the receiver acks before SQLite
// holds the delivery, so a row written then could be lost in a crash after
// the ack. A route is instead responsible for every delivery the receiver
// stored during one of its sessions; what it still owes is every such
// delivery above its cursor without a final attempt. Sessions and final
// attempts are in SQLite; the deliveries are there once the store has
// recovered its inbox, which Open does before anything else.
type Store interface {
	// OpenRoute creates the route's row (its cursor at from, or at the
	// newest stored delivery when from is FromNewest) or finds it. A
	// session left open by a process that died is closed at the newest
	// stored delivery. With session set a new session opens after from
	// (FromNewest: after the newest stored delivery). Live is the later of
	// the two: deliveries above it are this run's, handed over by the
	// receiver; the owed ones at or below it are read from the store.
	OpenRoute(ctx context.Context, route string, session bool, from int64) (RouteState, error)
	// CloseRoute closes the route's open session at last, the newest
	// delivery this run's receiver stored.
	CloseRoute(ctx context.Context, route string, last int64) error
	// PendingForwards returns up to limit deliveries the route still
	// owes with after < id <= upTo, oldest first.
	PendingForwards(ctx context.Context, route string, after, upTo int64, limit int) ([]Owed, error)
	// SaveForwards records attempts and moves route cursors (route ->
	// cursor; a cursor never moves back), in one transaction.
	SaveForwards(ctx context.Context, attempts []*Attempt, cursors map[string]int64) error
	// ForwardAttempts returns a delivery's attempts, oldest first.
	ForwardAttempts(ctx context.Context, deliveryID int64) ([]*Attempt, error)
	// ForwardSummaries returns the summary of each of ids that has
	// attempts (a list page's badges: one primary-key lookup per row).
	ForwardSummaries(ctx context.Context, ids []int64) (map[int64]Summary, error)
	// ForwardDelivery returns a stored delivery (forwarding reads the
	// ones it no longer holds in memory), or nil, nil when it was deleted.
	ForwardDelivery(ctx context.Context, id int64) (*inspector.Delivery, error)
}

// FromNewest as OpenRoute's from (and StartAfter's after) starts a session
// after the newest stored delivery: forwarding turned on.
const FromNewest = -1

// Marks keeps, per route, the highest delivery id whose forward may have
// started. It is written, durably, before a request goes out; after a
// crash every delivery at or below it without a recorded outcome may have
// reached the app already and is sent again marked as a re-forward.
// storage.ForwardMarks implements it with a small file beside the store,
// so the mark costs one fdatasync and never waits behind SQLite's writer.
type Marks interface {
	Started(route string) int64
	MarkStarted(route string, id int64) error
}

// RouteState is a route's queue as the store knows it at start.
type RouteState struct {
	// Cursor: every delivery at or below it is done for the route.
	Cursor int64
	// Live is where this run's session starts: deliveries above it come
	// from the receiver; the ones the route owes at or below it (Owed)
	// come from the store.
	Live int64
	// Owed is how many deliveries at or below Live the route still owes
	// (some may turn out not to match it).
	Owed int64
}

// Owed is one delivery a route still owes, with how many attempts it
// already had, and how many of those were the app's verdict (a non-2xx
// answer or a timeout), which the retry limit counts.
type Owed struct {
	ID       int64
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
