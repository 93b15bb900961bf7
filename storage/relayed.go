package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/relay"
)

// schemaRelayed is migration 11: a delivery that came through a team
// relay keeps the relay's stream (its name and creation time: a relay
// started again on an empty data folder numbers from 1 again) and its
// sequence there. The pair is unique, so a batch the laptop committed but
// could not acknowledge before it was killed is skipped when the relay
// sends it again. Other deliveries have neither (NULL).
const schemaRelayed = `
ALTER TABLE deliveries ADD COLUMN relay_origin TEXT;
ALTER TABLE deliveries ADD COLUMN relay_seq INTEGER;
CREATE UNIQUE INDEX deliveries_relayed ON deliveries(relay_origin, relay_seq) WHERE relay_origin IS NOT NULL;
`

// The store is where a laptop commits what its relay source reads.
var _ relay.Store = (*DB)(nil)

// InsertRelayed commits rs in their order in one transaction with a full
// fsync, each with source "relay" and its (Origin, Seq); one already
// stored is skipped and marked Duplicate. It sets each new delivery's ID
// (and RelaySeq, Source) and returns once they would survive a crash: the
// source acknowledges them to the relay only then (relay.Store). The same
// method backs `hookscope pull --into`.
func (db *DB) InsertRelayed(ctx context.Context, rs []*relay.Relayed) error {
	ps := make([]*pendingInsert, len(rs))
	for i, r := range rs {
		d := r.Delivery
		d.Source, d.RelaySeq = relay.DeliverySource, r.Seq
		p, err := newPendingInsert(d)
		if err != nil {
			return fmt.Errorf("store relayed delivery %d: %w", r.Seq, err)
		}
		ps[i] = p
	}
	ids := make([]int64, len(rs))
	// Once asked for, the commit is finished whoever stops meanwhile.
	ctx = context.WithoutCancel(ctx)
	err := db.write(ctx, func(tx *sql.Tx) error {
		find, err := db.stmts.inTx(ctx, tx, `SELECT id FROM deliveries WHERE relay_origin = ? AND relay_seq = ?`)
		if err != nil {
			return err
		}
		mark, err := db.stmts.inTx(ctx, tx, `UPDATE deliveries SET relay_origin = ?, relay_seq = ? WHERE id = ?`)
		if err != nil {
			return err
		}
		for i, r := range rs {
			var id int64
			switch err := find.QueryRowContext(ctx, r.Origin, r.Seq).Scan(&id); {
			case err == nil:
				ids[i] = -1 // stored before (this batch sent again)
				continue
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			if id, err = insertRow(tx, db.stmts, ps[i], 0); err != nil {
				return err
			}
			if _, err := mark.ExecContext(ctx, r.Origin, r.Seq, id); err != nil {
				return err
			}
			ids[i] = id
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store relayed deliveries: %w", err)
	}
	for i, r := range rs {
		r.Duplicate = ids[i] < 0
		if !r.Duplicate {
			r.Delivery.ID = ids[i]
		}
	}
	return nil
}

// fillRelaySeq sets RelaySeq on the relayed deliveries of recs (the
// column is read apart from deliveryColumns, which also reads stores
// made before it existed: salvage).
func fillRelaySeq(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, recs []*inspector.Record) error {
	byID := map[int64]*inspector.Delivery{}
	var ids []int64
	for _, r := range recs {
		if r.Delivery.Source == relay.DeliverySource {
			byID[r.Delivery.ID] = r.Delivery
			ids = append(ids, r.Delivery.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT id, relay_seq FROM deliveries WHERE id IN (`+placeholders(len(ids))+`) AND relay_seq IS NOT NULL`, argsOf(ids)...)
	if err != nil {
		return fmt.Errorf("read relay sequences: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var seq uint64
		if err := rows.Scan(&id, &seq); err != nil {
			return fmt.Errorf("read relay sequences: %w", err)
		}
		byID[id].RelaySeq = seq
	}
	return rows.Err()
}
