package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
)

// The store implements forwarding's contract.
var _ forward.Store = (*DB)(nil)

// schemaForward is migration 7: forwarding's queue and attempts.
//
//   - forward_routes: one row per route (keyed by its name, credentials
//     redacted) with its cursor: every delivery at or below it is done.
//     (Migration 10 adds the lease and the sending mark.)
//   - forward_sessions: the id ranges during which the route took the
//     receiver's deliveries (dropped by migration 10).
//   - forward_attempts: every attempt, gone with its delivery. The index
//     leads with delivery_id for the cascade and the counts per route.
const schemaForward = `
CREATE TABLE forward_routes (
	route      TEXT PRIMARY KEY,
	cursor     INTEGER NOT NULL,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE forward_sessions (
	route   TEXT    NOT NULL,
	from_id INTEGER NOT NULL,
	to_id   INTEGER,
	PRIMARY KEY (route, from_id)
) WITHOUT ROWID;
CREATE TABLE forward_attempts (
	id            INTEGER PRIMARY KEY,
	delivery_id   INTEGER NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
	route         TEXT    NOT NULL,
	number        INTEGER NOT NULL,
	kind          TEXT    NOT NULL,
	started_at    INTEGER NOT NULL,
	status        INTEGER NOT NULL DEFAULT 0,
	latency_ns    INTEGER NOT NULL DEFAULT 0,
	outcome       TEXT    NOT NULL,
	final         INTEGER NOT NULL DEFAULT 0,
	reforward     INTEGER NOT NULL DEFAULT 0,
	error         TEXT    NOT NULL DEFAULT '',
	detail        TEXT    NOT NULL,
	response_body BLOB    NOT NULL
);
CREATE INDEX forward_attempts_delivery ON forward_attempts(delivery_id, route, final);
`

// schemaForwardSummary is migration 8: one row per forwarded delivery
// with its latest attempt, kept by a trigger in the attempt's transaction,
// so a list page's badges are one primary-key lookup per row at any size.
const schemaForwardSummary = `
CREATE TABLE forward_summary (
	delivery_id INTEGER PRIMARY KEY REFERENCES deliveries(id) ON DELETE CASCADE,
	attempts    INTEGER NOT NULL,
	status      INTEGER NOT NULL,
	outcome     TEXT    NOT NULL,
	final       INTEGER NOT NULL,
	reforward   INTEGER NOT NULL,
	at          INTEGER NOT NULL
);
CREATE TRIGGER forward_summary_attempt AFTER INSERT ON forward_attempts BEGIN
	INSERT INTO forward_summary(delivery_id, attempts, status, outcome, final, reforward, at)
	VALUES (new.delivery_id, 1, new.status, new.outcome, new.final, new.reforward, new.started_at)
	ON CONFLICT(delivery_id) DO UPDATE SET attempts = attempts + 1, status = excluded.status,
		outcome = excluded.outcome, final = excluded.final, reforward = max(reforward, excluded.reforward),
		at = excluded.at;
END;
`

// ClaimRoute takes or renews a route's lease (forward.Store).
func (db *DB) ClaimRoute(ctx context.Context, route, holder string, since time.Time, ttl time.Duration) (forward.RouteState, error) {
	var st forward.RouteState
	now := time.Now()
	err := db.marks.do(func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO forward_routes(route, cursor, created_at)
			VALUES (?, (SELECT n FROM counters WHERE name = 'last_id'), ?)`, route, nanos(now)); err != nil {
			return err
		}
		// Free, expired or ours: take it. A route turned off before this
		// forwarder started starts again after the newest delivery; one
		// turned off since (by another process, while this one had it on)
		// is on all the same.
		if _, err := tx.ExecContext(ctx, `UPDATE forward_routes SET holder = ?1, lease_until = ?2,
			cursor = CASE WHEN off_at > 0 AND off_at < ?4 THEN max(cursor, (SELECT n FROM counters WHERE name = 'last_id')) ELSE cursor END,
			sending = CASE WHEN off_at > 0 AND off_at < ?4 THEN 0 ELSE sending END,
			off_at = 0
			WHERE route = ?3 AND (holder = ?1 OR holder = '' OR lease_until < ?5)`,
			holder, nanos(now.Add(ttl)), route, nanos(since), nanos(now)); err != nil {
			return err
		}
		var h string
		if err := tx.QueryRowContext(ctx, `SELECT cursor, sending, holder FROM forward_routes WHERE route = ?`, route).Scan(&st.Cursor, &st.Sending, &h); err != nil {
			return err
		}
		st.Held, st.Holder = h == holder, h
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("claim forward route: %w", err)
	}
	return st, nil
}

// ReleaseRoute gives a lease up, and turns the route off (forward.Store).
func (db *DB) ReleaseRoute(ctx context.Context, route, holder string, off bool) error {
	now := time.Now()
	err := db.marks.do(func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE forward_routes SET holder = '', lease_until = 0 WHERE route = ? AND holder = ?`, route, holder); err != nil {
			return err
		}
		if !off {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE forward_routes SET off_at = ? WHERE route = ? AND (holder = '' OR lease_until < ?)`, nanos(now), route, nanos(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("release forward route: %w", err)
	}
	return nil
}

// RenewLeases extends every lease holder has (forward.Store).
func (db *DB) RenewLeases(ctx context.Context, holder string, ttl time.Duration) error {
	err := db.marks.do(func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE forward_routes SET lease_until = ? WHERE holder = ?`, nanos(time.Now().Add(ttl)), holder)
		return err
	})
	if err != nil {
		return fmt.Errorf("renew forward leases: %w", err)
	}
	return nil
}

// PendingForwards returns the receiver deliveries above after that route
// has not finished with (pass-through relays and Forward again are
// final), oldest first, with their attempts on route (forward.Store).
func (db *DB) PendingForwards(ctx context.Context, route string, after int64, limit int, maxBytes int64) ([]forward.Pending, error) {
	// Read at every wake of a route's worker: a cached statement, not
	// parsed each time.
	st, err := db.stmts.get(ctx, pendingQuery)
	if err != nil {
		return nil, fmt.Errorf("read forward queue: %w", err)
	}
	rows, err := st.QueryContext(ctx, route, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read forward queue: %w", err)
	}
	defer rows.Close()
	var out []forward.Pending
	var held int64
	for rows.Next() {
		var p forward.Pending
		rec, err := scanRecord(rows, &p.Attempts, &p.Verdicts)
		if err != nil {
			return nil, fmt.Errorf("read forward queue: %w", err)
		}
		p.Delivery = rec.Delivery
		held += int64(len(p.Delivery.Body))
		if len(out) > 0 && held > maxBytes {
			break
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read forward queue: %w", err)
	}
	return out, nil
}

// pendingQuery reads a route's queue: ?1 route, ?2 after, ?3 limit. The
// deliveries come without their analysis: forwarding sends what came.
const pendingQuery = `SELECT ` + plainRecordColumns + `,
	(SELECT count(*) FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = ?1),
	(SELECT count(*) FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = ?1 AND a.outcome IN ('rejected', 'timeout', 'dropped'))
	FROM deliveries d JOIN bodies b ON b.delivery_id = d.id
	WHERE ` + owedWhere + ` ORDER BY d.id LIMIT ?3`

// owedWhere selects the received deliveries (directly or through a relay)
// route ?1 owes above ?2.
const owedWhere = `d.id > ?2 AND d.source IN ('receiver', 'relay')
	AND NOT EXISTS (SELECT 1 FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = ?1 AND a.final = 1)`

// PendingCount counts what PendingForwards would return (forward.Store).
func (db *DB) PendingCount(ctx context.Context, route string, after int64) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, `SELECT count(*) FROM deliveries d WHERE `+owedWhere, route, after).Scan(&n); err != nil {
		return 0, fmt.Errorf("count forward queue: %w", err)
	}
	return n, nil
}

// attemptDetail holds the attempt fields nobody filters on, as JSON.
type attemptDetail struct {
	Target            string             `json:"target"`
	StatusText        string             `json:"status_text,omitempty"`
	ResponseHeaders   []inspector.Header `json:"response_headers,omitempty"`
	ResponseTruncated bool               `json:"response_truncated,omitempty"`
	Detail            string             `json:"detail,omitempty"`
	GaveUp            bool               `json:"gave_up,omitempty"`
	NextAt            int64              `json:"next_at,omitempty"`
	Resigned          bool               `json:"resigned,omitempty"`
	Relayed           int                `json:"relayed,omitempty"`
	NotResigned       string             `json:"not_resigned,omitempty"`
	Insecure          bool               `json:"insecure,omitempty"`
	RelayCut          bool               `json:"relay_cut,omitempty"`
	ResponseLength    int64              `json:"response_length,omitempty"`
}

// RecordForward records a route's attempts, cursor and sending mark in
// one transaction, if holder holds its lease (forward.Store).
func (db *DB) RecordForward(ctx context.Context, route, holder string, attempts []*forward.Attempt, cursor, sending int64, ttl time.Duration) error {
	details, err := attemptDetails(attempts)
	if err != nil {
		return fmt.Errorf("record forward attempts: %w", err)
	}
	// Once asked for, a record is written whoever stops meanwhile.
	ctx = context.WithoutCancel(ctx)
	err = db.marks.do(func(tx *sql.Tx) error {
		st, err := db.rstmts.inTx(ctx, tx, `UPDATE forward_routes SET lease_until = ?, cursor = max(cursor, ?), sending = ?
			WHERE route = ? AND holder = ?`)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, nanos(time.Now().Add(ttl)), cursor, sending, route, holder)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return forward.ErrLeaseLost
		}
		return insertAttempts(ctx, tx, db.rstmts, attempts, details)
	})
	if err != nil {
		return fmt.Errorf("record forward attempts: %w", err)
	}
	return nil
}

// SaveForwards records attempts and moves cursors up in one transaction
// (forward.Store). An attempt whose delivery was deleted meanwhile is
// dropped; one with Number 0 is numbered after the delivery's others on
// its route. A pass-through attempt's relayed status becomes its
// delivery's.
func (db *DB) SaveForwards(ctx context.Context, attempts []*forward.Attempt, cursors map[string]int64) error {
	details, err := attemptDetails(attempts)
	if err != nil {
		return fmt.Errorf("record forward attempts: %w", err)
	}
	ctx = context.WithoutCancel(ctx)
	err = db.marks.do(func(tx *sql.Tx) error {
		if err := insertAttempts(ctx, tx, db.rstmts, attempts, details); err != nil {
			return err
		}
		for _, a := range attempts {
			if a.Relayed == 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = ? WHERE id = ? AND answer = ?`, a.Relayed, a.DeliveryID, inspector.AnswerPassThrough); err != nil {
				return err
			}
		}
		for route, c := range cursors {
			if _, err := tx.ExecContext(ctx, `UPDATE forward_routes SET cursor = max(cursor, ?) WHERE route = ?`, c, route); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record forward attempts: %w", err)
	}
	return nil
}

// attemptDetails encodes each attempt's seldom-read fields.
func attemptDetails(attempts []*forward.Attempt) ([]string, error) {
	details := make([]string, len(attempts))
	for i, a := range attempts {
		dt := attemptDetail{Target: a.Target, StatusText: a.StatusText, ResponseHeaders: a.ResponseHeaders,
			ResponseTruncated: a.ResponseTruncated, Detail: a.Detail, GaveUp: a.GaveUp, Resigned: a.Resigned, Relayed: a.Relayed,
			NotResigned: a.NotResigned, Insecure: a.Insecure, RelayCut: a.RelayCut, ResponseLength: a.ResponseLength}
		if !a.NextAt.IsZero() {
			dt.NextAt = nanos(a.NextAt)
		}
		b, err := json.Marshal(dt)
		if err != nil {
			return nil, err
		}
		details[i] = string(b)
	}
	return details, nil
}

// insertAttempts writes attempts in tx (on cache's handle), setting each
// one's ID and Number.
func insertAttempts(ctx context.Context, tx *sql.Tx, cache *stmtCache, attempts []*forward.Attempt, details []string) error {
	if len(attempts) == 0 {
		return nil
	}
	st, err := cache.inTx(ctx, tx, `INSERT INTO forward_attempts(delivery_id, route, number, kind, started_at, status,
		latency_ns, outcome, final, reforward, error, detail, response_body)
		SELECT ?1, ?2, coalesce(?3, (SELECT coalesce(max(number), 0) + 1 FROM forward_attempts WHERE delivery_id = ?1 AND route = ?2)),
		?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE EXISTS (SELECT 1 FROM deliveries WHERE id = ?1)
		RETURNING id, number`)
	if err != nil {
		return err
	}
	for i, a := range attempts {
		body := a.ResponseBody
		if body == nil {
			body = []byte{}
		}
		number := sql.NullInt64{Int64: int64(a.Number), Valid: a.Number > 0}
		err := st.QueryRowContext(ctx, a.DeliveryID, a.Route, number, string(a.Kind), nanos(a.StartedAt), a.Status, int64(a.Latency),
			string(a.Outcome), boolInt(a.Final), boolInt(a.Reforward), a.Error, details[i], body).Scan(&a.ID, &a.Number)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	return nil
}

// ForwardAttempts returns a delivery's attempts, oldest first (forward.Store).
func (db *DB) ForwardAttempts(ctx context.Context, deliveryID int64) ([]*forward.Attempt, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id, route, number, kind, started_at, status, latency_ns, outcome,
		final, reforward, error, detail, response_body FROM forward_attempts WHERE delivery_id = ? ORDER BY id`, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("list forward attempts of delivery %d: %w", deliveryID, err)
	}
	defer rows.Close()
	var out []*forward.Attempt
	for rows.Next() {
		a := &forward.Attempt{DeliveryID: deliveryID}
		var kind, outcome, detail string
		var started, latency int64
		if err := rows.Scan(&a.ID, &a.Route, &a.Number, &kind, &started, &a.Status, &latency, &outcome,
			&a.Final, &a.Reforward, &a.Error, &detail, &a.ResponseBody); err != nil {
			return nil, fmt.Errorf("list forward attempts of delivery %d: %w", deliveryID, err)
		}
		var dt attemptDetail
		if err := json.Unmarshal([]byte(detail), &dt); err != nil {
			return nil, fmt.Errorf("forward attempt %d: detail: %w", a.ID, err)
		}
		a.Kind, a.Outcome, a.StartedAt, a.Latency = forward.Kind(kind), forward.Outcome(outcome), fromNanos(started), time.Duration(latency)
		a.Target, a.StatusText, a.ResponseHeaders, a.ResponseTruncated = dt.Target, dt.StatusText, dt.ResponseHeaders, dt.ResponseTruncated
		a.Detail, a.GaveUp, a.Resigned, a.Relayed = dt.Detail, dt.GaveUp, dt.Resigned, dt.Relayed
		a.NotResigned, a.Insecure, a.RelayCut, a.ResponseLength = dt.NotResigned, dt.Insecure, dt.RelayCut, dt.ResponseLength
		if dt.NextAt != 0 {
			a.NextAt = fromNanos(dt.NextAt)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list forward attempts of delivery %d: %w", deliveryID, err)
	}
	return out, nil
}

// ForwardSummaries returns the summary of each of ids that was forwarded
// (forward.Store).
func (db *DB) ForwardSummaries(ctx context.Context, ids []int64) (map[int64]forward.Summary, error) {
	out := map[int64]forward.Summary{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT delivery_id, attempts, status, outcome, final, reforward, at
		FROM forward_summary WHERE delivery_id IN (`+placeholders(len(ids))+`)`, argsOf(ids)...)
	if err != nil {
		return nil, fmt.Errorf("read forward summaries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, at int64
		var s forward.Summary
		var outcome string
		if err := rows.Scan(&id, &s.Attempts, &s.Status, &outcome, &s.Final, &s.Reforward, &at); err != nil {
			return nil, fmt.Errorf("read forward summaries: %w", err)
		}
		s.Outcome, s.At = forward.Outcome(outcome), fromNanos(at)
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read forward summaries: %w", err)
	}
	return out, nil
}

// ForwardDelivery returns a stored delivery, or nil, nil when there is no
// such delivery (forward.Store).
func (db *DB) ForwardDelivery(ctx context.Context, id int64) (*inspector.Delivery, error) {
	rec, err := db.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rec.Delivery, nil
}

// ForwardWaiting returns, per route in the store that is not turned off,
// how many receiver deliveries it still owes (what a stopped `listen`
// sends on its next run).
func (db *DB) ForwardWaiting(ctx context.Context) (map[string]int64, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT r.route, (SELECT count(*) FROM deliveries d WHERE d.id > r.cursor AND d.source IN ('receiver', 'relay')
			AND NOT EXISTS (SELECT 1 FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = r.route AND a.final = 1))
		FROM forward_routes r WHERE r.off_at = 0`)
	if err != nil {
		return nil, fmt.Errorf("count forward queues: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var r string
		var n int64
		if err := rows.Scan(&r, &n); err != nil {
			return nil, fmt.Errorf("count forward queues: %w", err)
		}
		out[r] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count forward queues: %w", err)
	}
	return out, nil
}

// NewestDeliveryID is the highest delivery id in the store (0 when it is
// empty).
func (db *DB) NewestDeliveryID(ctx context.Context) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM deliveries`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the newest delivery id: %w", err)
	}
	return n, nil
}
