package inspector

import (
	"context"
	"time"
)

// EventCopy is what the ledger knows of the first stored copy of an event.
type EventCopy struct {
	DeliveryID int64
	Hash       string
	ReceivedAt time.Time
}

// EventCopies is the first stored copy of an event and how many copies
// are stored.
type EventCopies struct {
	First  EventCopy
	Copies int
}

// SubjectEvent is the stored event with the latest generated_at about a
// subject (events whose generated_at did not parse do not count).
type SubjectEvent struct {
	UUID        string
	GeneratedAt time.Time
}

// Ledger is what the store knows of some keys; a key it has never seen
// is absent from its map.
type Ledger struct {
	// Hooks maps a hook uuid to the first analyzed delivery carrying it.
	Hooks map[string]int64
	// Events maps an event uuid to its analyzed copies.
	Events map[string]EventCopies
	// Subjects maps a subject to its latest analyzed event.
	Subjects map[string]SubjectEvent
}

// Store is what the receiver and the analysis engine need from persistence.
// storage.DB implements it; tests may use an in-memory fake.
type Store interface {
	// InsertDelivery durably stores d and returns its id. The receiver
	// answers only after it returns nil, so it must not return before the
	// row would survive a crash of the process.
	InsertDelivery(ctx context.Context, d *Delivery) (int64, error)
	// SaveAnalysis stores (or replaces) the analysis of one delivery,
	// including one row per event for the ledger and filters.
	SaveAnalysis(ctx context.Context, a *Analysis) error
	// Ledger returns what the analyzed deliveries say of these hook
	// uuids, event uuids and subjects, all read at one moment.
	Ledger(ctx context.Context, hooks, uuids, subjects []string) (Ledger, error)
	// Unanalyzed returns up to limit stored deliveries with id > afterID
	// that have no analysis yet, oldest first: work a crash left behind.
	Unanalyzed(ctx context.Context, afterID int64, limit int) ([]*Delivery, error)
}
