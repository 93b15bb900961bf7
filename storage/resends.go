package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookscope/hookscope/inspector/resends"
)

// The store gives the observatory its timelines.
var _ resends.Source = (*DB)(nil)

// EachArrival calls fn with each analyzed delivery that carried one of
// hooks (every hook uuid when nil), grouped by hook uuid, oldest first
// within one (resends.Source). A pass-through delivery comes with the
// status the app's answer gave the service, from its forward attempt.
func (db *DB) EachArrival(ctx context.Context, hooks []string, fn func(resends.Arrival) error) error {
	q := &query{}
	q.add(`SELECT d.hook_uuid, d.id, d.received_at, d.status, d.answer,
		CASE WHEN d.answer = 'pass-through' THEN (SELECT json_extract(a.detail, '$.relayed') FROM forward_attempts a
			WHERE a.delivery_id = d.id AND a.kind = 'pass-through' ORDER BY a.id LIMIT 1) END
		FROM deliveries d INDEXED BY deliveries_hook WHERE d.hook_uuid IS NOT NULL`)
	if hooks != nil {
		if len(hooks) == 0 {
			return nil
		}
		q.add(` AND d.hook_uuid IN (`+placeholders(len(hooks))+`)`, argsOf(hooks)...)
	}
	q.add(` ORDER BY d.hook_uuid, d.id`)
	rows, err := db.sql.QueryContext(ctx, q.b.String(), q.args...)
	if err != nil {
		return fmt.Errorf("read attempts per message: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a resends.Arrival
		var at int64
		var relayed sql.NullInt64
		if err := rows.Scan(&a.HookUUID, &a.DeliveryID, &at, &a.Status, &a.Answer, &relayed); err != nil {
			return fmt.Errorf("read attempts per message: %w", err)
		}
		a.ReceivedAt, a.Relayed = fromNanos(at), int(relayed.Int64)
		if err := fn(a); err != nil {
			return err
		}
	}
	return rows.Err()
}
