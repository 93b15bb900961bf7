package storage

import (
	"bytes"
	"cmp"
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

// InsertDelivery stores d and returns its id once the row is committed
// with a full fsync: the receiver acks only after it returns. Concurrent
// calls share one transaction and one fsync (committer). d is not
// modified.
func (db *DB) InsertDelivery(ctx context.Context, d *inspector.Delivery) (int64, error) {
	p, err := newPendingInsert(d)
	if err != nil {
		return 0, fmt.Errorf("store delivery: %w", err)
	}
	var id int64
	if err := db.inserts.do(func(tx *sql.Tx) (err error) {
		id, err = insertRow(tx, db.stmts, p, 0)
		return err
	}); err != nil {
		return 0, fmt.Errorf("store delivery: %w", err)
	}
	return id, nil
}

// pendingInsert is one delivery on its way into the store, encoded
// outside the write lock.
type pendingInsert struct {
	d       *inspector.Delivery
	headers string
	digest  [32]byte
}

func newPendingInsert(d *inspector.Delivery) (*pendingInsert, error) {
	headers, err := encodeHeaders(d.Headers)
	if err != nil {
		return nil, err
	}
	body := d.Body
	if body == nil {
		body = []byte{}
	}
	return &pendingInsert{d: d, headers: headers, digest: sha256.Sum256(body)}, nil
}

// insertRow writes one delivery inside tx (on cache's handle): the id
// after the store's last one (the last_id counter, raised by a trigger),
// or id when it is > 0 (a record moved from an older version's inbox
// keeps its id).
func insertRow(tx *sql.Tx, cache *stmtCache, p *pendingInsert, id int64) (int64, error) {
	ctx := context.Background()
	d := p.d
	received := d.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	body := d.Body
	if body == nil {
		body = []byte{}
	}
	explicit := sql.NullInt64{Int64: id, Valid: id > 0}
	row, err := cache.inTx(ctx, tx, `INSERT INTO deliveries(id, received_at, method, path, query, headers_reconstructed,
		body_length, remote_addr, status, rejected, truncated, source, read_error, answer) VALUES (
		coalesce(?, (SELECT n + 1 FROM counters WHERE name = 'last_id')),
		?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id`)
	if err != nil {
		return 0, err
	}
	if err := row.QueryRowContext(ctx, explicit, nanos(received), d.Method, d.Path, d.Query, boolInt(d.HeadersReconstructed),
		d.BodyLength, d.RemoteAddr, d.Status, boolInt(d.Rejected), boolInt(d.Truncated), cmp.Or(d.Source, "receiver"),
		d.ReadError, d.Answer).Scan(&id); err != nil {
		return 0, err
	}
	bodies, err := cache.inTx(ctx, tx, `INSERT INTO bodies(delivery_id, headers, body, digest) VALUES (?,?,?,?)`)
	if err != nil {
		return 0, err
	}
	if _, err := bodies.ExecContext(ctx, id, p.headers, body, p.digest[:]); err != nil {
		return 0, err
	}
	return id, nil
}

// SaveAnalysis stores the analysis of a delivery, replacing an earlier one
// (its event rows and search entry included) in the same transaction.
func (db *DB) SaveAnalysis(ctx context.Context, a *inspector.Analysis) error {
	if err := db.SaveAnalyses(ctx, []*inspector.Analysis{a}); err != nil {
		return fmt.Errorf("store analysis of delivery %d: %w", a.DeliveryID, err)
	}
	return nil
}

// SaveAnalyses stores several analyses: all, or none when one fails (a
// missing delivery wraps ErrNotFound). Their rows go to the analysis file
// in one transaction (the search entries by one statement at the end, so
// the batch makes one FTS segment), then the log marks the deliveries
// analyzed with their verdict columns: that commit does not wait for the
// disk (an analysis a power cut loses is made again at the next start).
func (db *DB) SaveAnalyses(ctx context.Context, as []*inspector.Analysis) error {
	// The last analysis of a delivery in the batch wins, as if each were
	// saved in turn.
	last := make(map[int64]int, len(as))
	for i, a := range as {
		last[a.DeliveryID] = i
	}
	ops := make([]analysisRow, 0, len(last))
	for i, a := range as {
		if last[a.DeliveryID] != i {
			continue
		}
		op, err := newAnalysisRow(a)
		if err != nil {
			return fmt.Errorf("encode analysis of delivery %d: %w", a.DeliveryID, err)
		}
		ops = append(ops, op)
	}
	ctx = context.WithoutCancel(ctx)
	var file string
	if err := db.writeAnalysis(ctx, func(tx *sql.Tx) error {
		var err error
		file, err = saveAnalysisRows(ctx, tx, db.astmts, ops)
		return err
	}); err != nil {
		return err
	}
	var marked map[int64]bool
	if err := db.writeRelaxed(ctx, func(tx *sql.Tx) error {
		var err error
		marked, err = markAnalyzed(ctx, tx, db.rstmts, ops, file)
		return err
	}); err != nil {
		return err
	}
	// Rows of deliveries the log did not mark go: deleted since, or the
	// analysis file was made again by another process (they are analyzed
	// again into it).
	var unmarked []int64
	for _, op := range ops {
		if !marked[op.id] {
			unmarked = append(unmarked, op.id)
		}
	}
	if len(unmarked) == 0 {
		return nil
	}
	return db.writeAnalysis(ctx, func(tx *sql.Tx) error {
		return dropAnalyses(ctx, tx, db.astmts, unmarked)
	})
}

// analysisRow is one analysis encoded for its rows, before the write
// lock is taken: the deliveries columns (cols, in the order of the
// UPDATE's VALUES, the id first), the event rows and the search text.
type analysisRow struct {
	id        int64
	cols      []any
	blob      []byte
	events    [][]any
	summaries string
}

func newAnalysisRow(a *inspector.Analysis) (analysisRow, error) {
	blob, err := json.Marshal(a)
	if err != nil {
		return analysisRow{}, err
	}
	var decodeErr sql.NullString
	if a.Error != nil {
		decodeErr = sql.NullString{String: a.Error.Reason, Valid: true}
	}
	var firstType, firstSummary string
	outOfOrder := false
	texts := make([]string, 0, 2*len(a.Events)+1)
	events := make([][]any, 0, len(a.Events))
	for i, e := range a.Events {
		if i == 0 {
			firstType, firstSummary = e.Type, e.Summary
		}
		outOfOrder = outOfOrder || e.OutOfOrder
		texts = append(texts, e.Type, e.Summary)
		var gen sql.NullInt64
		if !e.GeneratedAt.IsZero() {
			gen = sql.NullInt64{Int64: nanos(e.GeneratedAt), Valid: true}
		}
		events = append(events, []any{a.DeliveryID, e.Index, e.UUID, e.Type, e.AccountID, gen, e.GeneratedRaw, e.Subject, e.Hash,
			boolInt(e.Duplicate), boolInt(e.Divergent), boolInt(e.OutOfOrder), len(e.Problems), e.Summary})
	}
	if a.Error != nil {
		texts = append(texts, a.Error.Reason)
	}
	return analysisRow{
		id: a.DeliveryID,
		cols: []any{a.DeliveryID, string(a.Signature.Status), a.Signature.SecretIndex, nullString(a.HookUUID), boolInt(a.Resend), decodeErr,
			len(a.Events), firstType, firstSummary, a.Duplicates(), boolInt(a.Divergent()), boolInt(outOfOrder), a.ProblemCount()},
		blob:      blob,
		events:    events,
		summaries: strings.Join(texts, "\n"),
	}, nil
}

// saveAnalysisRows writes ops (one per delivery) in tx on the analysis
// file: the analysis JSON, the event rows and the search entries,
// replacing an earlier analysis's, and returns the file's id. Rows go in
// multi-row statements (inGroups): one statement per row cost analysis
// more than the rows themselves.
func saveAnalysisRows(ctx context.Context, tx *sql.Tx, stmts *stmtCache, ops []analysisRow) (string, error) {
	var file string
	if err := tx.QueryRowContext(ctx, `SELECT value FROM analysis_meta WHERE key = 'id'`).Scan(&file); err != nil {
		return "", fmt.Errorf("read the analysis file's id: %w", err)
	}
	ids := make([]int64, len(ops))
	for i, op := range ops {
		ids[i] = op.id
	}
	found := make(map[int64]bool, len(ops))
	var again []int64
	err := queryGroups(ctx, tx, stmts, ids, func(n int) string {
		return `SELECT d.id, a.delivery_id IS NOT NULL FROM deliveries d LEFT JOIN analyses a ON a.delivery_id = d.id
			WHERE d.id IN (` + placeholders(n) + `)`
	}, func(rows *sql.Rows) error {
		var id int64
		var saved bool
		err := rows.Scan(&id, &saved)
		found[id] = true
		if saved {
			again = append(again, id)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		if !found[id] {
			return "", fmt.Errorf("delivery %d: %w", id, ErrNotFound)
		}
	}
	if err := dropAnalyses(ctx, tx, stmts, again); err != nil {
		return "", err
	}
	blobs := make([][]any, len(ops))
	var events [][]any
	search := make([]searchEntry, len(ops))
	for i, r := range ops {
		blobs[i] = []any{r.id, r.blob}
		events = append(events, r.events...)
		search[i] = searchEntry{ID: r.id, Summaries: r.summaries}
	}
	if err := execGroups(ctx, tx, stmts, blobs, func(n int) string {
		return `INSERT INTO analyses(delivery_id, analysis) VALUES ` + rowPlaceholders(n, 2)
	}, flatten); err != nil {
		return "", err
	}
	if err := execGroups(ctx, tx, stmts, events, func(n int) string {
		return `INSERT INTO events(delivery_id, idx, uuid, type, account_id, generated_at,
			generated_raw, subject, hash, duplicate, divergent, out_of_order, problem_count, summary) VALUES ` + rowPlaceholders(n, 14)
	}, flatten); err != nil {
		return "", err
	}
	return file, writeSearch(ctx, tx, search)
}

// markAnalyzed writes the verdict columns of ops' deliveries in tx on the
// log and marks them analyzed, if the log's analyzed flags still refer to
// the analysis file (file) their rows were saved in; it returns the ids
// it marked.
func markAnalyzed(ctx context.Context, tx *sql.Tx, stmts *stmtCache, ops []analysisRow, file string) (map[int64]bool, error) {
	marked := make(map[int64]bool, len(ops))
	cols := make([][]any, len(ops))
	for i, r := range ops {
		cols[i] = append(r.cols, file)
	}
	err := inGroups(cols, func(group [][]any) error {
		st, err := stmts.inTx(ctx, tx, `UPDATE deliveries SET analyzed = 1, signature = v.column2, secret_index = v.column3,
			hook_uuid = v.column4, resend = v.column5, decode_error = v.column6, event_count = v.column7, first_type = v.column8,
			first_summary = v.column9, duplicates = v.column10, divergent = v.column11, out_of_order = v.column12,
			problem_count = v.column13
			FROM (VALUES `+rowPlaceholders(len(group), 14)+`) AS v WHERE deliveries.id = v.column1
			AND v.column14 = (SELECT value FROM kv WHERE key = 'analysis_file') RETURNING deliveries.id`)
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx, flatten(group)...)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		for _, id := range ids {
			marked[id] = true
		}
		return err
	})
	return marked, err
}

// maxGroup bounds the rows of one multi-row statement (14 columns x 64
// rows stays far below SQLite's limit on bound values).
const maxGroup = 64

// inGroups calls run on consecutive groups of rows: maxGroup at a time,
// then the rest in powers of two, so a statement is prepared for at most
// seven row counts.
func inGroups[T any](rows []T, run func(group []T) error) error {
	for len(rows) > 0 {
		n := maxGroup
		for n > len(rows) {
			n /= 2
		}
		if err := run(rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// queryGroups runs the query q builds for a group of keys (its "?"s),
// on keys a group at a time (inGroups), in tx, and scans each row.
func queryGroups[T any](ctx context.Context, tx *sql.Tx, stmts *stmtCache, keys []T, q func(n int) string, scan func(*sql.Rows) error) error {
	return inGroups(keys, func(g []T) error {
		st, err := stmts.inTx(ctx, tx, q(len(g)))
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx, argsOf(g)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// execGroups runs the statement q builds for a group of rows (its "?"s),
// on rows a group at a time (inGroups), in tx, with args(group).
func execGroups[T any](ctx context.Context, tx *sql.Tx, stmts *stmtCache, rows []T, q func(n int) string, args func([]T) []any) error {
	return inGroups(rows, func(g []T) error {
		st, err := stmts.inTx(ctx, tx, q(len(g)))
		if err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, args(g)...)
		return err
	})
}

// rowPlaceholders returns n rows of width "?"s: "(?,?),(?,?)".
func rowPlaceholders(n, width int) string {
	row := "(" + strings.Repeat("?,", width-1) + "?)"
	return strings.Repeat(row+",", n-1) + row
}

// flatten returns rows' values one after the other.
func flatten(rows [][]any) []any {
	var out []any
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// searchEntry is one delivery's full-text entry: its body (read from
// bodies by the INSERT) and these summaries.
type searchEntry struct {
	ID        int64  `json:"id"`
	Summaries string `json:"s"`
}

// writeSearch writes full-text entries, one per delivery (an earlier
// entry of each is already deleted), in one INSERT: one FTS segment.
func writeSearch(ctx context.Context, tx *sql.Tx, es []searchEntry) error {
	if len(es) == 0 {
		return nil
	}
	list, err := json.Marshal(es)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO search(rowid, body, summaries)
		SELECT b.delivery_id, CAST(substr(b.body, 1, ?) AS TEXT), j.value ->> 's'
		FROM json_each(?) j CROSS JOIN bodies b ON b.delivery_id = j.value ->> 'id'`, maxIndexedText, string(list))
	return err
}

// UpdateSignature replaces the signature verdict of a stored delivery (after
// the configured secrets changed), in its columns and in its analysis JSON.
// A delivery not analyzed yet gets the columns only; its analysis will
// compute its own verdict.
func (db *DB) UpdateSignature(ctx context.Context, id int64, r inspector.SignatureResult) error {
	err := db.writeAnalysis(ctx, func(tx *sql.Tx) error {
		var blob []byte
		err := tx.QueryRowContext(ctx, `SELECT analysis FROM analyses WHERE delivery_id = ?`, id).Scan(&blob)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // not analyzed yet
		}
		if err != nil {
			return err
		}
		var a inspector.Analysis
		if err := json.Unmarshal(blob, &a); err != nil {
			return fmt.Errorf("decode stored analysis: %w", err)
		}
		a.Signature = r
		if blob, err = json.Marshal(&a); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE analyses SET analysis = ? WHERE delivery_id = ?`, blob, id)
		return err
	})
	if err == nil {
		err = db.write(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE deliveries SET signature = ?, secret_index = ? WHERE id = ?`,
				string(r.Status), r.SecretIndex, id)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return cmp.Or(err, ErrNotFound)
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("update signature of delivery %d: %w", id, err)
	}
	return nil
}

// Ledger returns what the analyzed deliveries say of these hook uuids,
// event uuids and subjects (inspector.Store), read in one transaction so
// the answers are of one moment. Keys go in multi-row statements
// (inGroups): one query per key was a fifth of analysis's CPU.
func (db *DB) Ledger(ctx context.Context, hooks, uuids, subjects []string) (inspector.Ledger, error) {
	snap, err := db.PinLedger(ctx)
	if err != nil {
		return inspector.Ledger{}, err
	}
	defer snap.Close()
	return snap.Ledger(ctx, hooks, uuids, subjects)
}

// PinLedger returns the ledger as it is now (inspector.LedgerSnapshot):
// one read transaction on both files, its snapshots taken at once.
func (db *DB) PinLedger(ctx context.Context) (inspector.LedgerSnapshot, error) {
	tx, err := db.an.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	// A read transaction's snapshot of a file is taken at its first read.
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM analysis_meta), (SELECT count(*) FROM kv)`).Scan(new(int), new(int)); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	return &ledgerSnapshot{db: db, tx: tx}, nil
}

// ledgerSnapshot is a pinned read of the ledger.
type ledgerSnapshot struct {
	db *DB
	tx *sql.Tx
}

// Close ends the read transaction.
func (s *ledgerSnapshot) Close() { s.tx.Rollback() }

// Ledger answers as Store.Ledger does, from the snapshot.
func (s *ledgerSnapshot) Ledger(ctx context.Context, hooks, uuids, subjects []string) (inspector.Ledger, error) {
	l := inspector.Ledger{Hooks: map[string]int64{}, Events: map[string]inspector.EventCopies{}, Subjects: map[string]inspector.SubjectEvent{}}
	db, tx := s.db, s.tx
	query := func(keys []string, q func(n int) string, scan func(*sql.Rows) error) error {
		return queryGroups(ctx, tx, db.astmts, keys, q, scan)
	}
	err := query(nonEmpty(hooks), func(n int) string {
		return `SELECT hook_uuid, min(id) FROM deliveries WHERE hook_uuid IN (` + placeholders(n) + `) GROUP BY hook_uuid`
	}, func(rows *sql.Rows) error {
		var hook string
		var id int64
		err := rows.Scan(&hook, &id)
		l.Hooks[hook] = id
		return err
	})
	if err != nil {
		return l, fmt.Errorf("look up hooks: %w", err)
	}
	// The first copy is the lowest (delivery, index): min() of the pair
	// packed in one integer (an index is below MaxEventsAnalyzed < 2^20),
	// and SQLite takes the bare hash from the row min() chose.
	err = query(nonEmpty(uuids), func(n int) string {
		return `SELECT g.uuid, g.k >> 20, g.hash, g.n, d.received_at FROM (
			SELECT uuid, min((delivery_id << 20) | idx) AS k, hash, count(*) AS n FROM events
			WHERE uuid IN (` + placeholders(n) + `) GROUP BY uuid) g
			JOIN deliveries d ON d.id = g.k >> 20`
	}, func(rows *sql.Rows) error {
		var uuid string
		var c inspector.EventCopies
		var received int64
		err := rows.Scan(&uuid, &c.First.DeliveryID, &c.First.Hash, &c.Copies, &received)
		c.First.ReceivedAt = fromNanos(received)
		l.Events[uuid] = c
		return err
	})
	if err != nil {
		return l, fmt.Errorf("look up events: %w", err)
	}
	// Events whose generated_at did not parse do not count for order.
	err = query(nonEmpty(subjects), func(n int) string {
		return `SELECT subject, uuid, generated_at FROM subject_latest WHERE subject IN (` + placeholders(n) + `)`
	}, func(rows *sql.Rows) error {
		var subject string
		var e inspector.SubjectEvent
		var gen int64
		err := rows.Scan(&subject, &e.UUID, &gen)
		e.GeneratedAt = fromNanos(gen)
		l.Subjects[subject] = e
		return err
	})
	if err != nil {
		return l, fmt.Errorf("look up subjects: %w", err)
	}
	return l, nil
}

// nonEmpty returns keys without the empty ones (which no row carries).
func nonEmpty(keys []string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "" })
}

// Unanalyzed returns up to limit deliveries with id > afterID that have no
// analysis yet, oldest first.
func (db *DB) Unanalyzed(ctx context.Context, afterID int64, limit int) ([]*inspector.Delivery, error) {
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

// argsOf returns vs as a statement's arguments.
func argsOf[T any](vs []T) []any {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
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

// recordColumns are the columns scanRecord reads, from recordTables:
// deliveries d joined with bodies b and (on the analysis handle) analyses a.
// A delivery shows its analysis once the log marks it analyzed, with the
// verdict columns (hook, signature) other reads take from the log: the
// rows are saved just before that mark.
// plainRecordColumns read a record without its analysis, from deliveries
// d joined with bodies b on any handle.
const (
	recordColumns      = deliveryColumns + `, a.analysis, b.headers, b.body, b.digest`
	recordTables       = `deliveries d JOIN bodies b ON b.delivery_id = d.id LEFT JOIN analyses a ON a.delivery_id = d.id AND d.analyzed = 1`
	plainRecordColumns = deliveryColumns + `, NULL, b.headers, b.body, b.digest`
)

// scanRecord reads one row of recordColumns (then extra's columns) into a
// record: the body checked against its digest, the analysis decoded with
// each event's raw JSON restored from the body.
func scanRecord(rows *sql.Rows, extra ...any) (*inspector.Record, error) {
	d := &inspector.Delivery{}
	var analysis, digest []byte
	var headers string
	dest, done := deliveryDest(d)
	if err := rows.Scan(append(append(dest, &analysis, &headers, &d.Body, &digest), extra...)...); err != nil {
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
	in := placeholders(len(ids))
	rows, err := db.an.QueryContext(ctx, `SELECT `+recordColumns+` FROM `+recordTables+` WHERE d.id IN (`+in+`) ORDER BY d.id`, argsOf(ids)...)
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
	if err := fillRelaySeq(ctx, db.an, recs); err != nil {
		return nil, err
	}
	return recs, fillGeneratedAt(ctx, db.an, recs)
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
		WHERE delivery_id IN (`+placeholders(len(ids))+`) AND generated_at IS NOT NULL`, argsOf(ids)...)
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

// deleteIDs removes deliveries and their bodies inside tx, and records
// them in analysis_gone for sweepGone, which removes their analysis rows
// once tx is committed.
func deleteIDs(ctx context.Context, tx *sql.Tx, ids []int64) (int64, error) {
	in := placeholders(len(ids))
	args := argsOf(ids)
	if _, err := tx.ExecContext(ctx, `DELETE FROM bodies WHERE delivery_id IN (`+in+`)`, args...); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO analysis_gone(delivery_id)
		SELECT id FROM deliveries WHERE id IN (`+in+`)`, args...); err != nil {
		return 0, err
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
		if err := db.write(ctx, func(tx *sql.Tx) error {
			_, err := deleteIDs(ctx, tx, ids[:n])
			return err
		}); err != nil {
			return fmt.Errorf("delete deliveries: %w", err)
		}
		ids = ids[n:]
	}
	return db.sweepGone(ctx)
}

// Prune deletes the oldest deliveries beyond the newest keep and returns how
// many it deleted, never one a forward route being forwarded still owes
// (above the cursor of a route whose lease a live process holds; a
// stopped `listen` does not hold back another process's retention).
// keep <= 0 means no cap and deletes nothing. The bound is read in one
// statement with the routes' cursors: rows arriving meanwhile only get
// higher ids, and cursors only move up, so it can never reach into what a
// route owes.
func (db *DB) Prune(ctx context.Context, keep int64) (int64, error) {
	if keep <= 0 {
		return 0, nil
	}
	var bound sql.NullInt64
	err := db.sql.QueryRowContext(ctx, `SELECT min(
		(SELECT id FROM deliveries ORDER BY id DESC LIMIT 1 OFFSET ?),
		coalesce((SELECT min(cursor) FROM forward_routes WHERE holder <> '' AND lease_until > ?), 9223372036854775807))`, keep, nanos(time.Now())).Scan(&bound)
	if err != nil {
		return 0, fmt.Errorf("prune to %d deliveries: %w", keep, err)
	}
	if !bound.Valid {
		return 0, nil // fewer than keep
	}
	var total int64
	for {
		var n int64
		err := db.write(ctx, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, `SELECT id FROM deliveries WHERE id <= ? ORDER BY id LIMIT ?`, bound.Int64, deleteChunk)
			if err != nil {
				return err
			}
			ids, err := scanIDs(rows)
			if err != nil || len(ids) == 0 {
				return err
			}
			n, err = deleteIDs(ctx, tx, ids)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("prune to %d deliveries: %w", keep, err)
		}
		if n == 0 {
			return total, db.sweepGone(ctx)
		}
	}
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
