package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage/inbox"
)

// ErrNotFound is returned (wrapped) when a delivery id does not exist.
var ErrNotFound = errors.New("not found")

// maxIndexedText bounds how much of one body goes into the full-text
// index: webhook bodies are a few KB, and indexing a 10 MiB oddity in full
// would stall the writer for every other caller.
const maxIndexedText = 1 << 20

// The store implements the contract the receiver and engine are written against.
var _ inspector.Store = (*DB)(nil)

// storedHeader is one header as kept in bodies.headers. Header bytes that
// are not UTF-8 (obs-text) would be replaced by encoding/json, so such a
// name or value is also kept base64-encoded and that copy wins on reading:
// the wire bytes come back exactly.
type storedHeader struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	NameB64  string `json:"name_b64,omitempty"`
	ValueB64 string `json:"value_b64,omitempty"`
}

func encodeHeaders(hs []inspector.Header) (string, error) {
	out := make([]storedHeader, len(hs))
	for i, h := range hs {
		out[i] = storedHeader{Name: h.Name, Value: h.Value}
		if !utf8.ValidString(h.Name) {
			out[i].NameB64 = base64.StdEncoding.EncodeToString([]byte(h.Name))
		}
		if !utf8.ValidString(h.Value) {
			out[i].ValueB64 = base64.StdEncoding.EncodeToString([]byte(h.Value))
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode headers: %w", err)
	}
	return string(b), nil
}

func decodeHeaders(s string) ([]inspector.Header, error) {
	var in []storedHeader
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("decode headers: %w", err)
	}
	out := make([]inspector.Header, len(in))
	for i, h := range in {
		out[i] = inspector.Header{Name: h.Name, Value: h.Value}
		if h.NameB64 != "" {
			if b, err := base64.StdEncoding.DecodeString(h.NameB64); err == nil {
				out[i].Name = string(b)
			}
		}
		if h.ValueB64 != "" {
			if b, err := base64.StdEncoding.DecodeString(h.ValueB64); err == nil {
				out[i].Value = string(b)
			}
		}
	}
	return out, nil
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// InsertDelivery stores d durably and returns its id. It returns only after
// the delivery is on disk: in the inbox when this process owns one
// (package inbox), else in a SQLite transaction committed with a full
// fsync; concurrent calls share one write and one fsync (group commit).
// d is not modified.
func (db *DB) InsertDelivery(ctx context.Context, d *inspector.Delivery) (int64, error) {
	if db.inbox != nil {
		id, err := db.inbox.Append(func(dst []byte) []byte { return appendDelivery(dst, d) })
		if errors.Is(err, inbox.ErrClosed) {
			return 0, fmt.Errorf("store delivery: %w", errClosed)
		}
		if err != nil {
			return 0, fmt.Errorf("store delivery: %w", err)
		}
		return id, nil
	}
	run, err := insertOp(d, 0)
	if err != nil {
		return 0, fmt.Errorf("store delivery: %w", err)
	}
	id, err := db.w.do(ctx, urgent, run)
	if err != nil {
		return 0, fmt.Errorf("store delivery: %w", err)
	}
	return id, nil
}

// insertOp prepares everything outside the writer goroutine (header
// encoding, the body's digest) and returns the SQL part that runs inside a
// batch. It runs without a savepoint, so it undoes its own first row if
// the second fails. id > 0 is the delivery's id (kept from the inbox); 0
// takes the next id of the shared counter as the row is written, or where
// there is none the id above the highest stored one.
func insertOp(d *inspector.Delivery, id int64) (func(ctx context.Context, tx *batchTx) (int64, error), error) {
	headers, err := encodeHeaders(d.Headers)
	if err != nil {
		return nil, err
	}
	received := d.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	source := d.Source
	if source == "" {
		source = "receiver"
	}
	body := d.Body
	if body == nil {
		body = []byte{}
	}
	digest := sha256.Sum256(body)
	return func(ctx context.Context, tx *batchTx) (int64, error) {
		var explicit sql.NullInt64
		switch {
		case id > 0:
			explicit = sql.NullInt64{Int64: id, Valid: true}
		case tx.ids != nil:
			explicit = sql.NullInt64{Int64: tx.ids.next(), Valid: true}
		}
		res, err := tx.exec(ctx, `INSERT INTO deliveries(id, received_at, method, path, query, headers_reconstructed,
			body_length, remote_addr, status, rejected, truncated, source, read_error, answer) VALUES (
			coalesce(?, coalesce((SELECT max(id) FROM deliveries), 0) + 1),
			?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			explicit, nanos(received), d.Method, d.Path, d.Query, boolInt(d.HeadersReconstructed),
			d.BodyLength, d.RemoteAddr, d.Status, boolInt(d.Rejected), boolInt(d.Truncated), source, d.ReadError, d.Answer)
		if err != nil {
			return 0, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return 0, err
		}
		if _, err := tx.exec(ctx, `INSERT INTO bodies(delivery_id, headers, body, digest) VALUES (?,?,?,?)`, id, headers, body, digest[:]); err != nil {
			// Inserts run without a savepoint (see urgent): undo the row.
			if _, derr := tx.exec(ctx, `DELETE FROM deliveries WHERE id = ?`, id); derr != nil {
				return 0, fmt.Errorf("%w: %w (undo: %w)", errAbortBatch, err, derr)
			}
			return 0, err
		}
		return id, nil
	}, nil
}

// inboxSink is the store as the inbox's mover sees it.
type inboxSink struct{ db *DB }

// Moved returns the highest delivery id moved from an inbox.
func (s inboxSink) Moved(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.sql.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = 'inbox_moved'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read inbox watermark: %w", err)
	}
	return n, nil
}

// Move inserts deliveries from the inbox, ids kept, in one transaction
// that also advances the moved watermark to the last id. Records it cannot
// decode are left out and returned; for recovered records it also leaves
// out ids the store already has.
func (s inboxSink) Move(ctx context.Context, recs []inbox.Record, recovered bool) ([]int64, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	var rejected []int64
	var ids []int64
	runs := make([]func(ctx context.Context, tx *batchTx) (int64, error), 0, len(recs))
	for _, r := range recs {
		d, err := decodeDelivery(r.ID, r.Payload)
		if err == nil {
			var run func(ctx context.Context, tx *batchTx) (int64, error)
			if run, err = insertOp(d, r.ID); err == nil {
				runs = append(runs, run)
				ids = append(ids, r.ID)
				continue
			}
		}
		rejected = append(rejected, r.ID)
	}
	last := recs[len(recs)-1].ID
	_, err := s.db.w.do(ctx, bulk, func(ctx context.Context, tx *batchTx) (int64, error) {
		for i, run := range runs {
			if recovered {
				var n int
				st, err := tx.prepared(ctx, `SELECT count(*) FROM deliveries WHERE id = ?`)
				if err != nil {
					return 0, err
				}
				if err := st.QueryRowContext(ctx, ids[i]).Scan(&n); err != nil {
					return 0, err
				}
				if n > 0 {
					continue
				}
			}
			if _, err := run(ctx, tx); err != nil {
				return 0, fmt.Errorf("delivery %d: %w", ids[i], err)
			}
		}
		_, err := tx.exec(ctx, `UPDATE kv SET value = max(value, ?) WHERE key = 'inbox_moved'`, last)
		return 0, err
	})
	if err != nil {
		return nil, fmt.Errorf("move deliveries %d-%d from the inbox: %w", recs[0].ID, last, err)
	}
	return rejected, nil
}

// moved waits until delivery id is in SQLite when this process's inbox
// handed it out and has not moved it yet.
func (db *DB) moved(id int64) error {
	if db.inbox == nil {
		return nil
	}
	return db.inbox.WaitMoved(id)
}

// SaveAnalysis stores the analysis of a delivery, replacing an earlier one
// (its event rows and search entry included) in the same transaction. It
// goes through the group-commit writer so analyses and inserts share fsyncs.
func (db *DB) SaveAnalysis(ctx context.Context, a *inspector.Analysis) error {
	if err := db.moved(a.DeliveryID); err != nil {
		return fmt.Errorf("store analysis of delivery %d: %w", a.DeliveryID, err)
	}
	run, err := analysisOp(a)
	if err != nil {
		return fmt.Errorf("store analysis of delivery %d: %w", a.DeliveryID, err)
	}
	if _, err := db.w.do(ctx, bulk, run); err != nil {
		return fmt.Errorf("store analysis of delivery %d: %w", a.DeliveryID, err)
	}
	return nil
}

// analysisOp encodes a outside the writer goroutine and returns the SQL part.
func analysisOp(a *inspector.Analysis) (func(ctx context.Context, tx *batchTx) (int64, error), error) {
	blob, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var decodeErr sql.NullString
	if a.Error != nil {
		decodeErr = sql.NullString{String: a.Error.Reason, Valid: true}
	}
	var firstType, firstSummary string
	var outOfOrder bool
	texts := make([]string, 0, 2*len(a.Events)+1)
	for i, e := range a.Events {
		if i == 0 {
			firstType, firstSummary = e.Type, e.Summary
		}
		outOfOrder = outOfOrder || e.OutOfOrder
		texts = append(texts, e.Type, e.Summary)
	}
	if a.Error != nil {
		texts = append(texts, a.Error.Reason)
	}
	summaries := strings.Join(texts, "\n")
	duplicates, divergent, problems := a.Duplicates(), a.Divergent(), a.ProblemCount()
	events := a.Events
	id := a.DeliveryID
	return func(ctx context.Context, tx *batchTx) (int64, error) {
		var analyzed bool
		st, err := tx.prepared(ctx, `SELECT analyzed FROM deliveries WHERE id = ?`)
		if err != nil {
			return 0, err
		}
		if err := st.QueryRowContext(ctx, id).Scan(&analyzed); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return 0, ErrNotFound
			}
			return 0, err
		}
		res, err := tx.exec(ctx, `UPDATE deliveries SET analyzed = 1, signature = ?, secret_index = ?, hook_uuid = ?,
			resend = ?, decode_error = ?, event_count = ?, first_type = ?, first_summary = ?, duplicates = ?,
			divergent = ?, out_of_order = ?, problem_count = ?, analysis = ? WHERE id = ?`,
			string(a.Signature.Status), a.Signature.SecretIndex, nullString(a.HookUUID), boolInt(a.Resend), decodeErr,
			len(events), firstType, firstSummary, duplicates, boolInt(divergent), boolInt(outOfOrder),
			problems, blob, id)
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 0 {
			return 0, ErrNotFound
		}
		if analyzed {
			if _, err := tx.exec(ctx, `DELETE FROM events WHERE delivery_id = ?`, id); err != nil {
				return 0, err
			}
		}
		for _, e := range events {
			var gen sql.NullInt64
			if !e.GeneratedAt.IsZero() {
				gen = sql.NullInt64{Int64: nanos(e.GeneratedAt), Valid: true}
			}
			if _, err := tx.exec(ctx, `INSERT INTO events(delivery_id, idx, uuid, type, account_id, generated_at,
				generated_raw, subject, hash, duplicate, divergent, out_of_order, problem_count, summary)
				VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
				id, e.Index, e.UUID, e.Type, e.AccountID, gen, e.GeneratedRaw, e.Subject, e.Hash,
				boolInt(e.Duplicate), boolInt(e.Divergent), boolInt(e.OutOfOrder), len(e.Problems), e.Summary); err != nil {
				return 0, fmt.Errorf("event %d: %w", e.Index, err)
			}
		}
		tx.search = append(tx.search, searchEntry{ID: id, Summaries: summaries, replace: analyzed})
		return 0, nil
	}, nil
}

// UpdateSignature replaces the signature verdict of a stored delivery (after
// the configured secrets changed), in its columns and in its analysis JSON.
// A delivery not analyzed yet gets the columns only; its analysis will
// compute its own verdict.
func (db *DB) UpdateSignature(ctx context.Context, id int64, r inspector.SignatureResult) error {
	if err := db.moved(id); err != nil {
		return fmt.Errorf("update signature of delivery %d: %w", id, err)
	}
	_, err := db.w.do(ctx, bulk, func(ctx context.Context, tx *batchTx) (int64, error) {
		var blob []byte
		if err := tx.QueryRowContext(ctx, `SELECT analysis FROM deliveries WHERE id = ?`, id).Scan(&blob); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return 0, ErrNotFound
			}
			return 0, err
		}
		if blob != nil {
			var a inspector.Analysis
			if err := json.Unmarshal(blob, &a); err != nil {
				return 0, fmt.Errorf("decode stored analysis: %w", err)
			}
			a.Signature = r
			var err error
			if blob, err = json.Marshal(&a); err != nil {
				return 0, err
			}
		}
		_, err := tx.exec(ctx, `UPDATE deliveries SET signature = ?, secret_index = ?, analysis = ? WHERE id = ?`,
			string(r.Status), r.SecretIndex, blob, id)
		return 0, err
	})
	if err != nil {
		return fmt.Errorf("update signature of delivery %d: %w", id, err)
	}
	return nil
}

// FirstEventCopy returns the first analyzed copy of an event uuid (lowest
// delivery id, then lowest index) and how many analyzed copies exist.
func (db *DB) FirstEventCopy(ctx context.Context, uuid string) (inspector.EventCopy, int, bool, error) {
	var c inspector.EventCopy
	var received int64
	var copies int
	// One statement for both answers: the count rides on the first row.
	err := db.stmts.queryRow(ctx, `SELECT e.delivery_id, e.hash, d.received_at,
		(SELECT COUNT(*) FROM events WHERE uuid = ?1)
		FROM events e JOIN deliveries d ON d.id = e.delivery_id
		WHERE e.uuid = ?1 ORDER BY e.delivery_id, e.idx LIMIT 1`, uuid).Scan(&c.DeliveryID, &c.Hash, &received, &copies)
	if errors.Is(err, sql.ErrNoRows) {
		return inspector.EventCopy{}, 0, false, nil
	}
	if err != nil {
		return inspector.EventCopy{}, 0, false, fmt.Errorf("look up event %q: %w", uuid, err)
	}
	c.ReceivedAt = fromNanos(received)
	return c, copies, true, nil
}

// FirstHookDelivery returns the first analyzed delivery carrying hookUUID.
func (db *DB) FirstHookDelivery(ctx context.Context, hookUUID string) (int64, bool, error) {
	if hookUUID == "" {
		return 0, false, nil
	}
	var id int64
	err := db.stmts.queryRow(ctx, `SELECT id FROM deliveries WHERE hook_uuid = ? ORDER BY id LIMIT 1`, hookUUID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("look up hook %q: %w", hookUUID, err)
	}
	return id, true, nil
}

// LatestForSubject returns the analyzed event with the latest generated_at
// for a subject; events whose generated_at did not parse are ignored.
func (db *DB) LatestForSubject(ctx context.Context, subject string) (string, time.Time, bool, error) {
	if subject == "" {
		return "", time.Time{}, false, nil
	}
	var uuid string
	var gen int64
	err := db.stmts.queryRow(ctx, `SELECT uuid, generated_at FROM events
		WHERE subject = ? AND subject <> '' AND generated_at IS NOT NULL
		ORDER BY generated_at DESC LIMIT 1`, subject).Scan(&uuid, &gen)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, false, nil
	}
	if err != nil {
		return "", time.Time{}, false, fmt.Errorf("look up subject %q: %w", subject, err)
	}
	return uuid, fromNanos(gen), true, nil
}

// Unanalyzed returns up to limit deliveries with id > afterID that have no
// analysis yet, oldest first.
func (db *DB) Unanalyzed(ctx context.Context, afterID int64, limit int) ([]*inspector.Delivery, error) {
	if err := db.moved(afterID + int64(limit)); err != nil {
		return nil, fmt.Errorf("list unanalyzed deliveries: %w", err)
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT id FROM deliveries WHERE analyzed = 0 AND id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list unanalyzed deliveries: %w", err)
	}
	ids, err := scanIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("list unanalyzed deliveries: %w", err)
	}
	recs, err := db.records(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list unanalyzed deliveries: %w", err)
	}
	out := make([]*inspector.Delivery, len(recs))
	for i, r := range recs {
		out[i] = r.Delivery
	}
	return out, nil
}

// Get returns one delivery with its analysis (nil when not analyzed yet).
// A missing id gives an error wrapping ErrNotFound.
func (db *DB) Get(ctx context.Context, id int64) (*inspector.Record, error) {
	recs, err := db.records(ctx, []int64{id})
	if err != nil {
		return nil, fmt.Errorf("get delivery %d: %w", id, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("get delivery %d: %w", id, ErrNotFound)
	}
	return recs[0], nil
}

func scanIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func placeholders(n int) string {
	if n == 0 {
		return "NULL"
	}
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// deliveryColumns are the columns of deliveries d that make a Delivery
// (all but its headers and body); deliveryDest scans them.
const deliveryColumns = `d.id, d.received_at, d.method, d.path, d.query, d.headers_reconstructed,
	d.body_length, d.remote_addr, d.status, d.rejected, d.truncated, d.source, d.read_error, d.answer`

// deliveryDest returns the scan destinations of deliveryColumns for d and
// a func that completes d once the row is scanned.
func deliveryDest(d *inspector.Delivery) ([]any, func()) {
	var received int64
	var reconstructed, rejected, truncated bool
	dest := []any{&d.ID, &received, &d.Method, &d.Path, &d.Query, &reconstructed, &d.BodyLength,
		&d.RemoteAddr, &d.Status, &rejected, &truncated, &d.Source, &d.ReadError, &d.Answer}
	return dest, func() {
		d.ReceivedAt = fromNanos(received)
		d.HeadersReconstructed, d.Rejected, d.Truncated = reconstructed, rejected, truncated
	}
}

// recordColumns are the columns scanRecord reads, from deliveries d
// joined with bodies b.
const recordColumns = deliveryColumns + `, d.analysis, b.headers, b.body, b.digest`

// scanRecord reads one row of recordColumns into a record: the body
// checked against its digest, the analysis decoded with each event's raw
// JSON restored from the body.
func scanRecord(rows *sql.Rows) (*inspector.Record, error) {
	d := &inspector.Delivery{}
	var analysis, digest []byte
	var headers string
	dest, done := deliveryDest(d)
	if err := rows.Scan(append(dest, &analysis, &headers, &d.Body, &digest)...); err != nil {
		return nil, err
	}
	done()
	if d.Body == nil {
		d.Body = []byte{}
	}
	d.Damaged = checkDigest(d.Body, digest)
	var err error
	if d.Headers, err = decodeHeaders(headers); err != nil {
		return nil, fmt.Errorf("delivery %d: %w", d.ID, err)
	}
	rec := &inspector.Record{Delivery: d}
	if analysis != nil {
		a := &inspector.Analysis{}
		if err := json.Unmarshal(analysis, a); err != nil {
			return nil, fmt.Errorf("delivery %d: decode analysis: %w", d.ID, err)
		}
		fillRaw(a, d.Body)
		rec.Analysis = a
	}
	return rec, nil
}

// records loads full records for ids, in ascending id order; missing ids are
// skipped.
func (db *DB) records(ctx context.Context, ids []int64) ([]*inspector.Record, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if err := db.moved(slices.Max(ids)); err != nil {
		return nil, err
	}
	in := placeholders(len(ids))
	rows, err := db.sql.QueryContext(ctx, `SELECT `+recordColumns+`
		FROM deliveries d JOIN bodies b ON b.delivery_id = d.id WHERE d.id IN (`+in+`) ORDER BY d.id`, int64Args(ids)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []*inspector.Record
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return recs, fillGeneratedAt(ctx, db.sql, recs)
}

// fillGeneratedAt sets each event's GeneratedAt, which is not part of the
// analysis JSON (the raw string is): the parsed instant lives in the
// events table.
func fillGeneratedAt(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, recs []*inspector.Record) error {
	byID := map[int64]*inspector.Record{}
	var ids []int64
	for _, r := range recs {
		if r.Analysis != nil {
			byID[r.Delivery.ID] = r
			ids = append(ids, r.Delivery.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	erows, err := q.QueryContext(ctx, `SELECT delivery_id, idx, generated_at FROM events
		WHERE delivery_id IN (`+placeholders(len(ids))+`) AND generated_at IS NOT NULL`, int64Args(ids)...)
	if err != nil {
		return err
	}
	defer erows.Close()
	for erows.Next() {
		var id, gen int64
		var idx int
		if err := erows.Scan(&id, &idx, &gen); err != nil {
			return err
		}
		if r := byID[id]; r != nil {
			for i := range r.Analysis.Events {
				if r.Analysis.Events[i].Index == idx {
					r.Analysis.Events[i].GeneratedAt = fromNanos(gen)
				}
			}
		}
	}
	return erows.Err()
}

// checkDigest compares a body read back with the digest it was stored
// with and says what is wrong, or "" (also for bodies stored before
// digests were kept).
func checkDigest(body, digest []byte) string {
	if digest == nil {
		return ""
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], digest) {
		return fmt.Sprintf("the stored body (%d bytes) no longer matches the SHA-256 digest it was stored with: it was changed or damaged on disk", len(body))
	}
	return ""
}

// fillRaw restores each event's raw JSON from the body: it is not stored a
// second time, since the body is kept byte-exact anyway.
func fillRaw(a *inspector.Analysis, body []byte) {
	if len(a.Events) == 0 {
		return
	}
	var msg struct {
		Events []json.RawMessage `json:"events"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return
	}
	for i := range a.Events {
		if idx := a.Events[i].Index; idx >= 0 && idx < len(msg.Events) {
			a.Events[i].Raw = msg.Events[idx]
		}
	}
}

// deleteIDs removes deliveries and everything hanging off them inside tx.
func deleteIDs(ctx context.Context, tx *sql.Tx, ids []int64) (int64, error) {
	in := placeholders(len(ids))
	args := int64Args(ids)
	for _, q := range []string{
		`DELETE FROM events WHERE delivery_id IN (` + in + `)`,
		`DELETE FROM search WHERE rowid IN (` + in + `)`,
		`DELETE FROM bodies WHERE delivery_id IN (` + in + `)`,
	} {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE id IN (`+in+`)`, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// deleteChunk bounds one delete transaction so a big delete or prune never
// holds the write lock long enough to delay the receiver's commits.
const deleteChunk = 500

// Delete removes deliveries with their events and search entries. Ids that
// do not exist are ignored.
func (db *DB) Delete(ctx context.Context, ids ...int64) error {
	for len(ids) > 0 {
		n := min(len(ids), deleteChunk)
		if err := db.tx(ctx, func(tx *sql.Tx) error {
			_, err := deleteIDs(ctx, tx, ids[:n])
			return err
		}); err != nil {
			return fmt.Errorf("delete deliveries: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}

// Prune deletes the oldest deliveries beyond the newest keep and returns how
// many it deleted. keep <= 0 means no cap and deletes nothing.
func (db *DB) Prune(ctx context.Context, keep int64) (int64, error) {
	if keep <= 0 {
		return 0, nil
	}
	var cutoff int64
	err := db.sql.QueryRowContext(ctx, `SELECT id FROM deliveries ORDER BY id DESC LIMIT 1 OFFSET ?`, keep).Scan(&cutoff)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("prune to %d deliveries: %w", keep, err)
	}
	var total int64
	for {
		rows, err := db.sql.QueryContext(ctx, `SELECT id FROM deliveries WHERE id <= ? ORDER BY id LIMIT ?`, cutoff, deleteChunk)
		if err != nil {
			return total, fmt.Errorf("prune to %d deliveries: %w", keep, err)
		}
		ids, err := scanIDs(rows)
		if err != nil {
			return total, fmt.Errorf("prune to %d deliveries: %w", keep, err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		if err := db.tx(ctx, func(tx *sql.Tx) error {
			n, err := deleteIDs(ctx, tx, ids)
			total += n
			return err
		}); err != nil {
			return total, fmt.Errorf("prune to %d deliveries: %w", keep, err)
		}
	}
}

// tx runs fn in its own transaction, for rare writes that need not share
// the writer's batches.
func (db *DB) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Value returns a setting stored with SetValue and whether it exists.
func (db *DB) Value(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := db.sql.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read setting %q: %w", key, err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// SetValue stores a setting (or a secret: the file is 0600 and values are
// never logged), replacing any earlier value.
func (db *DB) SetValue(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	if _, err := db.sql.ExecContext(ctx, `INSERT INTO kv(key, value) VALUES (?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value); err != nil {
		return fmt.Errorf("write setting %q: %w", key, err)
	}
	return nil
}
