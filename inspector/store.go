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
	// FirstEventCopy returns the first analyzed copy of an event uuid and
	// how many analyzed copies exist.
	FirstEventCopy(ctx context.Context, uuid string) (first EventCopy, copies int, found bool, err error)
	// FirstHookDelivery returns the first analyzed delivery carrying the
	// hook uuid.
	FirstHookDelivery(ctx context.Context, hookUUID string) (deliveryID int64, found bool, err error)
	// LatestForSubject returns the analyzed event with the latest
	// generated_at for a subject.
	LatestForSubject(ctx context.Context, subject string) (uuid string, generatedAt time.Time, found bool, err error)
	// Unanalyzed returns up to limit stored deliveries with id > afterID
	// that have no analysis yet, oldest first: work a crash left behind.
	Unanalyzed(ctx context.Context, afterID int64, limit int) ([]*Delivery, error)
}
