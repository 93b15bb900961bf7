package storage

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
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
//   - forward_sessions: the id ranges during which the route took the
//     receiver's deliveries (from_id exclusive, to_id inclusive, NULL while
//     open). What a route owes is every receiver delivery inside one of its
//     sessions, above its cursor, without a final attempt: no row is
//     written per delivery on the ack path, which acks before SQLite has
//     the delivery (docs/forwarding.md).
//   - forward_attempts: every attempt, gone with its delivery. The index
//     leads with delivery_id for the cascade and the owed query.
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

// owedWhere selects the receiver deliveries route ?1 owes in (?2, ?3].
const owedWhere = `FROM deliveries d
	WHERE d.id > ?2 AND d.id <= ?3 AND d.source = 'receiver'
	AND EXISTS (SELECT 1 FROM forward_sessions s WHERE s.route = ?1 AND d.id > s.from_id AND (s.to_id IS NULL OR d.id <= s.to_id))
	AND NOT EXISTS (SELECT 1 FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = ?1 AND a.final = 1)`

// OpenRoute finds or creates a route's queue (forward.Store).
func (db *DB) OpenRoute(ctx context.Context, route string, session bool, from int64) (forward.RouteState, error) {
	var st forward.RouteState
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var newest int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM deliveries`).Scan(&newest); err != nil {
			return err
		}
		if from < 0 {
			from = newest
		}
		now := nanos(time.Now())
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO forward_routes(route, cursor, created_at) VALUES (?,?,?)`, route, from, now); err != nil {
			return err
		}
		// A session still open was left by a process that died: it took
		// everything stored up to now.
		if _, err := tx.ExecContext(ctx, `UPDATE forward_sessions SET to_id = max(from_id, ?) WHERE route = ? AND to_id IS NULL`, newest, route); err != nil {
			return err
		}
		st.Live = max(from, newest)
		if session {
			if _, err := tx.ExecContext(ctx, `INSERT INTO forward_sessions(route, from_id) VALUES (?,?)
				ON CONFLICT(route, from_id) DO UPDATE SET to_id = NULL`, route, from); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, `SELECT cursor FROM forward_routes WHERE route = ?`, route).Scan(&st.Cursor); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM forward_sessions WHERE route = ? AND to_id IS NOT NULL AND to_id <= ?`, route, st.Cursor); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) `+owedWhere, route, st.Cursor, st.Live).Scan(&st.Owed)
	})
	if err != nil {
		return st, fmt.Errorf("open forward route: %w", err)
	}
	return st, nil
}

// CloseRoute closes the route's open session at last (forward.Store).
func (db *DB) CloseRoute(ctx context.Context, route string, last int64) error {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE forward_sessions SET to_id = max(from_id, ?) WHERE route = ? AND to_id IS NULL`, last, route)
		return err
	})
	if err != nil {
		return fmt.Errorf("close forward route: %w", err)
	}
	return nil
}

// PendingForwards returns what a route still owes in (after, upTo],
// oldest first, with the attempts each had (forward.Store).
func (db *DB) PendingForwards(ctx context.Context, route string, after, upTo int64, limit int) ([]forward.Owed, error) {
	if err := db.moved(upTo); err != nil {
		return nil, fmt.Errorf("read forward queue: %w", err)
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT d.id,
		(SELECT count(*) FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = ?1),
		(SELECT count(*) FROM forward_attempts a WHERE a.delivery_id = d.id AND a.route = ?1 AND a.outcome IN ('rejected', 'timeout', 'dropped'))
		`+owedWhere+` ORDER BY d.id LIMIT ?4`, route, after, upTo, limit)
	if err != nil {
		return nil, fmt.Errorf("read forward queue: %w", err)
	}
	defer rows.Close()
	var out []forward.Owed
	for rows.Next() {
		var o forward.Owed
		if err := rows.Scan(&o.ID, &o.Attempts, &o.Verdicts); err != nil {
			return nil, fmt.Errorf("read forward queue: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read forward queue: %w", err)
	}
	return out, nil
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
}

// SaveForwards records attempts and moves cursors in one transaction
// (forward.Store). An attempt whose delivery was deleted meanwhile is
// dropped; one with Number 0 is numbered after the delivery's others on
// its route. Cursors only move forward, taking closed sessions below them
// along.
func (db *DB) SaveForwards(ctx context.Context, attempts []*forward.Attempt, cursors map[string]int64) error {
	if len(attempts) > 0 {
		// The attempt rows refer to their deliveries, which may still be
		// in the inbox.
		maxID := slices.MaxFunc(attempts, func(a, b *forward.Attempt) int { return cmp.Compare(a.DeliveryID, b.DeliveryID) }).DeliveryID
		if err := db.moved(maxID); err != nil {
			return fmt.Errorf("record forward attempts: %w", err)
		}
	}
	details := make([]string, len(attempts))
	for i, a := range attempts {
		dt := attemptDetail{Target: a.Target, StatusText: a.StatusText, ResponseHeaders: a.ResponseHeaders,
			ResponseTruncated: a.ResponseTruncated, Detail: a.Detail, GaveUp: a.GaveUp, Resigned: a.Resigned, Relayed: a.Relayed}
		if !a.NextAt.IsZero() {
			dt.NextAt = nanos(a.NextAt)
		}
		b, err := json.Marshal(dt)
		if err != nil {
			return fmt.Errorf("record forward attempts: %w", err)
		}
		details[i] = string(b)
	}
	_, err := db.w.do(ctx, bulk, func(ctx context.Context, tx *batchTx) (int64, error) {
		for i, a := range attempts {
			body := a.ResponseBody
			if body == nil {
				body = []byte{}
			}
			number := sql.NullInt64{Int64: int64(a.Number), Valid: a.Number > 0}
			st, err := tx.prepared(ctx, `INSERT INTO forward_attempts(delivery_id, route, number, kind, started_at, status,
				latency_ns, outcome, final, reforward, error, detail, response_body)
				SELECT ?1, ?2, coalesce(?3, (SELECT coalesce(max(number), 0) + 1 FROM forward_attempts WHERE delivery_id = ?1 AND route = ?2)),
				?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE EXISTS (SELECT 1 FROM deliveries WHERE id = ?1)
				RETURNING id, number`)
			if err != nil {
				return 0, err
			}
			err = st.QueryRowContext(ctx, a.DeliveryID, a.Route, number, string(a.Kind), nanos(a.StartedAt), a.Status, int64(a.Latency),
				string(a.Outcome), boolInt(a.Final), boolInt(a.Reforward), a.Error, details[i], body).Scan(&a.ID, &a.Number)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return 0, err
			}
		}
		for route, c := range cursors {
			if _, err := tx.exec(ctx, `UPDATE forward_routes SET cursor = max(cursor, ?) WHERE route = ?`, c, route); err != nil {
				return 0, err
			}
			if _, err := tx.exec(ctx, `DELETE FROM forward_sessions WHERE route = ? AND to_id IS NOT NULL AND to_id <= ?`, route, c); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if err != nil {
		return fmt.Errorf("record forward attempts: %w", err)
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
		FROM forward_summary WHERE delivery_id IN (`+placeholders(len(ids))+`)`, int64Args(ids)...)
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

// ForwardWaiting returns, per route in the store, how many deliveries it
// still owes (a face shows it even while forwarding is off).
func (db *DB) ForwardWaiting(ctx context.Context) (map[string]int64, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT route, cursor FROM forward_routes`)
	if err != nil {
		return nil, fmt.Errorf("count forward queues: %w", err)
	}
	cursors := map[string]int64{}
	for rows.Next() {
		var r string
		var c int64
		if err := rows.Scan(&r, &c); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count forward queues: %w", err)
		}
		cursors[r] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count forward queues: %w", err)
	}
	out := make(map[string]int64, len(cursors))
	for r, c := range cursors {
		var n int64
		if err := db.sql.QueryRowContext(ctx, `SELECT count(*) `+owedWhere, r, c, int64(math.MaxInt64)).Scan(&n); err != nil {
			return nil, fmt.Errorf("count forward queue %s: %w", r, err)
		}
		out[r] = n
	}
	return out, nil
}

// NewestDeliveryID is the highest delivery id in the store (0 when it is
// empty): where a forwarding session that replaces another one begins
// (forward.Forwarder.StartAfter).
func (db *DB) NewestDeliveryID(ctx context.Context) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM deliveries`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the newest delivery id: %w", err)
	}
	return n, nil
}

// CountAfter counts the deliveries with an id above id: retention keeps at
// least that many, so nothing a forward route still owes is pruned.
func (db *DB) CountAfter(ctx context.Context, id int64) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE id > ?`, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("count deliveries after %d: %w", id, err)
	}
	return n, nil
}

// ForwardMarks keeps forwarding's started marks (forward.Marks) in a
// folder beside the store, one tiny file per route: a mark is written
// before every first send of a delivery, so it must cost one write, not a
// SQLite commit behind the writer.
type ForwardMarks struct {
	dir string

	mu    sync.Mutex
	files map[string]*markFile
}

type markFile struct {
	mu sync.Mutex
	f  *os.File
	v  int64
}

// markLen is a mark record: the id, its CRC-32, padding. One 16-byte
// write at offset 0 never straddles a sector, so it is not torn.
const markLen = 16

// OpenForwardMarks opens (creating) the marks folder of the store at
// storePath: <storePath>-forward.
func OpenForwardMarks(storePath string) (*ForwardMarks, error) {
	dir := storePath + "-forward"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open forward marks: %w", err)
	}
	return &ForwardMarks{dir: dir, files: map[string]*markFile{}}, nil
}

func (m *ForwardMarks) file(route string) (*markFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mf, ok := m.files[route]; ok {
		return mf, nil
	}
	sum := sha256.Sum256([]byte(route))
	path := filepath.Join(m.dir, hex.EncodeToString(sum[:16]))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	mf := &markFile{f: f}
	buf := make([]byte, markLen)
	n, _ := f.ReadAt(buf, 0)
	switch {
	case n == markLen && crc32.ChecksumIEEE(buf[:8]) == binary.LittleEndian.Uint32(buf[8:12]):
		mf.v = int64(binary.LittleEndian.Uint64(buf[:8]))
	case n == 0:
		// New: allocate the block now, so every later mark overwrites it.
		_, _ = f.WriteAt(markRecord(0), 0)
	default:
		// Unreadable: count everything as possibly started.
		mf.v = math.MaxInt64
	}
	m.files[route] = mf
	return mf, nil
}

func markRecord(id int64) []byte {
	b := make([]byte, markLen)
	binary.LittleEndian.PutUint64(b[:8], uint64(id))
	binary.LittleEndian.PutUint32(b[8:12], crc32.ChecksumIEEE(b[:8]))
	return b
}

// Started returns the route's mark (forward.Marks); a mark that cannot be
// read counts every delivery as possibly started.
func (m *ForwardMarks) Started(route string) int64 {
	mf, err := m.file(route)
	if err != nil {
		return math.MaxInt64
	}
	mf.mu.Lock()
	defer mf.mu.Unlock()
	return mf.v
}

// MarkStarted sets the route's mark (forward.Marks) with one write and no
// sync: the page cache outlives a killed process, so a kill -9 keeps the
// mark; a power cut may lose it, and with it only the re-forward flag of
// the deliveries under way. A sync per send competed with the inbox's own
// on every ack batch (docs/benchmarks.md, finding 12).
func (m *ForwardMarks) MarkStarted(route string, id int64) error {
	mf, err := m.file(route)
	if err != nil {
		return fmt.Errorf("forward mark: %w", err)
	}
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if _, err := mf.f.WriteAt(markRecord(id), 0); err != nil {
		return fmt.Errorf("forward mark: %w", err)
	}
	mf.v = id
	return nil
}

// Close closes the mark files.
func (m *ForwardMarks) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, mf := range m.files {
		errs = append(errs, mf.f.Close())
	}
	m.files = map[string]*markFile{}
	return errors.Join(errs...)
}
