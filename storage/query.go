package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/hookscope/hookscope/inspector"
)

// Filter selects deliveries for List, Count and Each. Every set field must
// match (AND); within a slice any value matches (OR). The zero Filter
// selects everything.
type Filter struct {
	// Types matches deliveries with at least one event of one of these types.
	Types []string
	// Signatures matches these verdicts; unanalyzed deliveries have none.
	Signatures []inspector.SignatureStatus
	// DuplicatesOnly matches deliveries with a duplicate or divergent event.
	DuplicatesOnly bool
	// DivergentOnly matches deliveries with a divergent event.
	DivergentOnly bool
	// ProblemsOnly matches deliveries with contract problems or a decode error.
	ProblemsOnly bool
	// Path matches the request path exactly.
	Path string
	// Text matches analyzed deliveries whose body or event summaries
	// contain every word of Text (case-insensitive, words as phrases; see
	// docs/storage.md), and unanalyzed ones whose body contains Text as is.
	Text string
	// Since matches deliveries received at or after Since.
	Since time.Time
	// IDs matches these delivery ids.
	IDs []int64
	// BeforeID keeps only ids below it (keyset paging); 0 means no bound.
	BeforeID int64
}

// Summary is one list row: everything the list shows, without the body.
type Summary struct {
	ID         int64
	ReceivedAt time.Time
	Method     string
	Path       string
	Status     int
	Rejected   bool
	Truncated  bool
	// ReadError says why reading the request stopped early ("" if it
	// did not); Answer is the answer mode when it was not a plain answer
	// ("hang", "close").
	ReadError    string
	Answer       string
	BodyLength   int64
	Analyzed     bool
	Signature    inspector.SignatureStatus
	HookUUID     string
	Resend       bool
	DecodeError  string
	EventCount   int
	FirstType    string
	FirstSummary string
	// Duplicates counts the delivery's duplicate events.
	Duplicates int
	Divergent  bool
	OutOfOrder bool
	// Problems counts delivery and event contract problems.
	Problems int
	// Source is where the delivery came from ("receiver", "relay",
	// "import"); RelaySeq its relay stream sequence (0: not relayed).
	Source   string
	RelaySeq uint64
}

// Stats are store-wide totals, kept by triggers so reading them is O(1).
type Stats struct {
	Deliveries int64
	// Events counts analyzed events, duplicates included.
	Events int64
	// InvalidSignatures counts deliveries whose verdict is invalid.
	InvalidSignatures int64
	// Duplicates counts duplicate events (copies after the first).
	Duplicates int64
	// Divergent counts divergent duplicate events.
	Divergent int64
}

// EventRef is one delivery that carried a given event uuid.
type EventRef struct {
	DeliveryID int64
	Index      int
	ReceivedAt time.Time
	Hash       string
	Duplicate  bool
	Divergent  bool
}

// defaultLimit is the page size when List is given none.
const defaultLimit = 100

// order says how an id query walks: newest first, oldest first, or in no
// particular order (for counting).
type order int

const (
	newestFirst order = iota
	oldestFirst
	unordered
)

// driver is the filter whose index a query walks; every other filter is
// checked on the rows it yields. The choice is a fixed ranking by how
// selective each filter usually is, so the walk is short when any rare
// filter is set, and no filter ever forces a scan of the whole table.
type driver int

const (
	driveAll driver = iota
	driveIDs
	driveText
	driveDivergent
	driveProblems
	driveDuplicates
	driveTypes
	driveSignatures
	drivePath
	driveSince
)

func chooseDriver(f Filter, match string) driver {
	switch {
	case len(f.IDs) > 0:
		return driveIDs
	case strings.TrimSpace(f.Text) != "" && match != "":
		return driveText
	case f.DivergentOnly:
		return driveDivergent
	case f.ProblemsOnly:
		return driveProblems
	case f.DuplicatesOnly:
		return driveDuplicates
	case len(f.Types) > 0:
		return driveTypes
	case len(f.Signatures) > 0:
		return driveSignatures
	case f.Path != "":
		return drivePath
	case !f.Since.IsZero():
		return driveSince
	}
	return driveAll
}

// ftsQuery turns free text into an FTS5 query: every whitespace-separated
// word becomes a quoted phrase (so punctuation such as "media.updated" or
// "abc-123" matches adjacent tokens instead of being FTS syntax), all
// required. Words without a letter or digit carry no token and are dropped;
// "" means nothing indexable remained.
func ftsQuery(text string) string {
	var parts []string
	for _, w := range strings.Fields(text) {
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		parts = append(parts, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	return strings.Join(parts, " ")
}

// query is SQL text with its arguments, built together so they cannot
// drift apart.
type query struct {
	b    strings.Builder
	args []any
}

func (q *query) add(sql string, args ...any) {
	q.b.WriteString(sql)
	q.args = append(q.args, args...)
}

// residual appends " AND <cond>" for every filter except the driver's,
// applied to deliveries aliased d.
func residual(q *query, f Filter, drv driver, match string) {
	if len(f.IDs) > 0 && drv != driveIDs {
		q.add(" AND d.id IN ("+placeholders(len(f.IDs))+")", argsOf(f.IDs)...)
	}
	if text := strings.TrimSpace(f.Text); text != "" && drv != driveText {
		if match != "" {
			q.add(` AND (EXISTS (SELECT 1 FROM search WHERE search MATCH ? AND search.rowid = d.id)
				OR (d.analyzed = 0 AND instr((SELECT body FROM bodies WHERE delivery_id = d.id), CAST(? AS BLOB)) > 0))`, match, text)
		} else {
			q.add(` AND instr((SELECT body FROM bodies WHERE delivery_id = d.id), CAST(? AS BLOB)) > 0`, text)
		}
	}
	if f.DivergentOnly && drv != driveDivergent {
		q.add(" AND d.divergent = 1")
	}
	if f.ProblemsOnly && drv != driveProblems {
		q.add(" AND (d.problem_count > 0 OR d.decode_error IS NOT NULL)")
	}
	if f.DuplicatesOnly && drv != driveDuplicates {
		q.add(" AND (d.duplicates > 0 OR d.divergent = 1)")
	}
	if len(f.Types) > 0 && drv != driveTypes {
		q.add(" AND EXISTS (SELECT 1 FROM events e WHERE e.delivery_id = d.id AND e.type IN ("+placeholders(len(f.Types))+"))", argsOf(f.Types)...)
	}
	if len(f.Signatures) > 0 && drv != driveSignatures {
		sigs := make([]any, len(f.Signatures))
		for i, s := range f.Signatures {
			sigs[i] = string(s)
		}
		q.add(" AND d.signature IN ("+placeholders(len(sigs))+")", sigs...)
	}
	if f.Path != "" && drv != drivePath {
		q.add(" AND d.path = ?", f.Path)
	}
	if !f.Since.IsZero() && drv != driveSince {
		q.add(" AND d.received_at >= ?", nanos(f.Since))
	}
}

// idQuery builds a query yielding the ids matching f (column "id"), with
// ids strictly between after and f.BeforeID (0 = unbounded), walked in ord,
// at most limit of them (limit < 0: all).
//
// A filter with several values (Types, Signatures) becomes one branch per
// value, each walking its own index backwards with its own LIMIT, merged by
// UNION: SQLite would otherwise read every index entry of an IN list and
// sort them, which at a million rows is the whole index.
func idQuery(f Filter, ord order, after int64, limit int) *query {
	return idQueryDriven(f, chooseDriver(f, textMatch(f)), ord, after, limit)
}

func textMatch(f Filter) string {
	if strings.TrimSpace(f.Text) == "" {
		return ""
	}
	return ftsQuery(f.Text)
}

// idQueryDriven is idQuery with the driving filter chosen by the caller;
// drv must be one of f's set filters (or driveAll).
func idQueryDriven(f Filter, drv driver, ord order, after int64, limit int) *query {
	match := textMatch(f)
	dir := " DESC"
	if ord == oldestFirst {
		dir = " ASC"
	}
	// tail closes one branch: the id bounds on col, the other filters, then
	// order and limit.
	tail := func(q *query, col string) {
		if f.BeforeID > 0 {
			q.add(" AND "+col+" < ?", f.BeforeID)
		}
		if after > 0 {
			q.add(" AND "+col+" > ?", after)
		}
		residual(q, f, drv, match)
		if ord != unordered {
			q.add(" ORDER BY " + col + dir)
		}
		if limit >= 0 && ord != unordered {
			q.add(" LIMIT ?", limit)
		}
	}
	var branches []*query
	branch := func(from, where string, col string, args ...any) {
		q := &query{}
		q.add("SELECT "+col+" AS id FROM "+from+" WHERE "+where, args...)
		tail(q, col)
		branches = append(branches, q)
	}
	switch drv {
	case driveIDs:
		branch("deliveries d", "d.id IN ("+placeholders(len(f.IDs))+")", "d.id", argsOf(f.IDs)...)
	case driveText:
		if hasResidual(f, drv) {
			branch("search CROSS JOIN deliveries d ON d.id = search.rowid", "search MATCH ?", "search.rowid", match)
		} else {
			// Every indexed row is a stored delivery: no join needed.
			branch("search", "search MATCH ?", "search.rowid", match)
		}
		// Deliveries not analyzed yet are not in the index; there are few of
		// them (the engine's backlog), so a plain byte search covers them.
		branch("deliveries d INDEXED BY deliveries_unanalyzed CROSS JOIN bodies b ON b.delivery_id = d.id",
			"d.analyzed = 0 AND instr(b.body, CAST(? AS BLOB)) > 0", "d.id", strings.TrimSpace(f.Text))
	case driveDivergent:
		branch("deliveries d INDEXED BY deliveries_divergent", "d.divergent = 1", "d.id")
	case driveProblems:
		branch("deliveries d INDEXED BY deliveries_problems", "(d.problem_count > 0 OR d.decode_error IS NOT NULL)", "d.id")
	case driveDuplicates:
		branch("deliveries d INDEXED BY deliveries_duplicates", "(d.duplicates > 0 OR d.divergent = 1)", "d.id")
	case driveTypes:
		if ord == unordered {
			// Counting needs no order, so one IN walk with DISTINCT beats a
			// UNION that would sort each branch for its merge.
			q := &query{}
			types := argsOf(dedupe(f.Types))
			if hasResidual(f, drv) {
				q.add("SELECT DISTINCT e.delivery_id AS id FROM events e INDEXED BY events_type CROSS JOIN deliveries d ON d.id = e.delivery_id WHERE e.type IN ("+placeholders(len(types))+")", types...)
			} else {
				q.add("SELECT DISTINCT e.delivery_id AS id FROM events e INDEXED BY events_type WHERE e.type IN ("+placeholders(len(types))+")", types...)
			}
			tail(q, "e.delivery_id")
			branches = append(branches, q)
			break
		}
		for _, t := range dedupe(f.Types) {
			// DISTINCT: a batched delivery may carry several events of one type.
			q := &query{}
			if hasResidual(f, drv) {
				q.add("SELECT DISTINCT e.delivery_id AS id FROM events e INDEXED BY events_type CROSS JOIN deliveries d ON d.id = e.delivery_id WHERE e.type = ?", t)
			} else {
				q.add("SELECT DISTINCT e.delivery_id AS id FROM events e INDEXED BY events_type WHERE e.type = ?", t)
			}
			tail(q, "e.delivery_id")
			branches = append(branches, q)
		}
	case driveSignatures:
		for _, s := range dedupeSig(f.Signatures) {
			branch("deliveries d INDEXED BY deliveries_signature", "d.signature = ?", "d.id", string(s))
		}
	case drivePath:
		branch("deliveries d INDEXED BY deliveries_path", "d.path = ?", "d.id", f.Path)
	case driveSince:
		branch("deliveries d INDEXED BY deliveries_received", "d.received_at >= ?", "d.id", nanos(f.Since))
	default:
		// Also the walk for a Text with no indexable word (say "{"): its
		// byte search is then a residual over every body, the one filter
		// that can scan the whole store.
		branch("deliveries d", "1", "d.id")
	}
	if len(branches) == 1 {
		return branches[0]
	}
	// Branches of the other multi-branch drivers are disjoint (one
	// signature each; indexed vs unanalyzed text), so counting can skip the
	// dedupe that UNION pays for.
	union := " UNION "
	if ord == unordered {
		union = " UNION ALL "
	}
	q := &query{}
	for i, b := range branches {
		if i > 0 {
			q.add(union)
		}
		q.add("SELECT id FROM ("+b.b.String()+")", b.args...)
	}
	if ord != unordered {
		q.add(" ORDER BY 1" + dir)
		if limit >= 0 {
			q.add(" LIMIT ?", limit)
		}
	}
	return q
}

// hasResidual reports whether any filter other than the driver's is set,
// so the Types walk can skip joining deliveries when nothing needs it.
func hasResidual(f Filter, drv driver) bool {
	q := &query{}
	residual(q, f, drv, ftsQuery(f.Text))
	return q.b.Len() > 0
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func dedupeSig(ss []inspector.SignatureStatus) []inspector.SignatureStatus {
	seen := map[inspector.SignatureStatus]bool{}
	var out []inspector.SignatureStatus
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

const summaryColumns = `id, received_at, method, path, status, rejected, truncated, read_error, answer, body_length,
	analyzed, signature, hook_uuid, resend, decode_error, event_count, first_type, first_summary, duplicates,
	divergent, out_of_order, problem_count, source, coalesce(relay_seq, 0)`

func scanSummary(rows *sql.Rows) (Summary, error) {
	var s Summary
	var received int64
	var sig string
	var hook, decodeErr sql.NullString
	err := rows.Scan(&s.ID, &received, &s.Method, &s.Path, &s.Status, &s.Rejected, &s.Truncated, &s.ReadError, &s.Answer, &s.BodyLength,
		&s.Analyzed, &sig, &hook, &s.Resend, &decodeErr, &s.EventCount, &s.FirstType, &s.FirstSummary,
		&s.Duplicates, &s.Divergent, &s.OutOfOrder, &s.Problems, &s.Source, &s.RelaySeq)
	s.ReceivedAt = fromNanos(received)
	s.Signature = inspector.SignatureStatus(sig)
	s.HookUUID, s.DecodeError = hook.String, decodeErr.String
	return s, err
}

// List returns up to limit deliveries matching f, newest first (limit <= 0
// means 100). Page on with f.BeforeID = the last row's ID.
func (db *DB) List(ctx context.Context, f Filter, limit int) ([]Summary, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	ids := idQuery(f, newestFirst, 0, limit)
	rows, err := db.an.QueryContext(ctx, `SELECT `+summaryColumns+` FROM deliveries WHERE id IN (`+ids.b.String()+`) ORDER BY id DESC`, ids.args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	out := make([]Summary, 0, limit)
	for rows.Next() {
		s, err := scanSummary(rows)
		if err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// Count returns how many deliveries match f. The unfiltered count comes
// from the counters; a filtered one counts the driving index.
func (db *DB) Count(ctx context.Context, f Filter) (int64, error) {
	var n int64
	if isZero(f) {
		if err := db.an.QueryRowContext(ctx, `SELECT n FROM counters WHERE name = 'deliveries'`).Scan(&n); err != nil {
			return 0, fmt.Errorf("count deliveries: %w", err)
		}
		return n, nil
	}
	drv, err := db.countDriver(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("count deliveries: %w", err)
	}
	ids := idQueryDriven(f, drv, unordered, 0, -1)
	if err := db.an.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+ids.b.String()+`)`, ids.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count deliveries: %w", err)
	}
	return n, nil
}

// probeWindow is how many of the newest ids a driver probe looks at.
const probeWindow = 20000

// countDriver picks the driving filter for a count. A count reads every
// row its driver yields, so when several indexed filters are set the
// fixed ranking can be far off (invalid signatures are rare, valid ones
// are nearly all): each candidate is counted over the newest probeWindow
// ids and the most selective drives. A list page stops after one page and
// keeps the fixed ranking.
func (db *DB) countDriver(ctx context.Context, f Filter) (driver, error) {
	drv := chooseDriver(f, textMatch(f))
	if drv == driveIDs || drv == driveText {
		return drv, nil
	}
	var candidates []struct {
		drv  driver
		only Filter
	}
	add := func(set bool, d driver, only Filter) {
		if set {
			candidates = append(candidates, struct {
				drv  driver
				only Filter
			}{d, only})
		}
	}
	add(f.DivergentOnly, driveDivergent, Filter{DivergentOnly: true})
	add(f.ProblemsOnly, driveProblems, Filter{ProblemsOnly: true})
	add(f.DuplicatesOnly, driveDuplicates, Filter{DuplicatesOnly: true})
	add(len(f.Types) > 0, driveTypes, Filter{Types: f.Types})
	add(len(f.Signatures) > 0, driveSignatures, Filter{Signatures: f.Signatures})
	add(f.Path != "", drivePath, Filter{Path: f.Path})
	add(!f.Since.IsZero(), driveSince, Filter{Since: f.Since})
	if len(candidates) < 2 {
		return drv, nil
	}
	// Probe the newest probeWindow ids: every index ends in the id, so a
	// window is a short range walk, and unlike a capped count it still
	// tells two common filters apart.
	top := f.BeforeID - 1
	if f.BeforeID <= 0 {
		if err := db.an.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM deliveries`).Scan(&top); err != nil {
			return 0, err
		}
	}
	after := max(0, top-probeWindow)
	best := int64(-1)
	for _, c := range candidates {
		c.only.BeforeID = f.BeforeID
		q := idQueryDriven(c.only, c.drv, unordered, after, -1)
		var n int64
		if err := db.an.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+q.b.String()+`)`, q.args...).Scan(&n); err != nil {
			return 0, err
		}
		if best < 0 || n < best {
			best, drv = n, c.drv
		}
	}
	return drv, nil
}

func isZero(f Filter) bool {
	return len(f.Types) == 0 && len(f.Signatures) == 0 && !f.DuplicatesOnly && !f.DivergentOnly &&
		!f.ProblemsOnly && f.Path == "" && f.Text == "" && f.Since.IsZero() && len(f.IDs) == 0 && f.BeforeID == 0
}

// Stats returns the store-wide totals.
func (db *DB) Stats(ctx context.Context) (Stats, error) {
	rows, err := db.an.QueryContext(ctx, `SELECT name, n FROM counters UNION ALL SELECT name, n FROM event_counters`)
	if err != nil {
		return Stats{}, fmt.Errorf("read stats: %w", err)
	}
	defer rows.Close()
	var s Stats
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return Stats{}, fmt.Errorf("read stats: %w", err)
		}
		switch name {
		case "deliveries":
			s.Deliveries = n
		case "events":
			s.Events = n
		case "invalid":
			s.InvalidSignatures = n
		case "duplicates":
			s.Duplicates = n
		case "divergent":
			s.Divergent = n
		}
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("read stats: %w", err)
	}
	return s, nil
}

// EventCopies returns every analyzed delivery that carried the event uuid,
// oldest first.
func (db *DB) EventCopies(ctx context.Context, uuid string) ([]EventRef, error) {
	rows, err := db.an.QueryContext(ctx, `SELECT e.delivery_id, e.idx, d.received_at, e.hash, e.duplicate, e.divergent
		FROM events e JOIN deliveries d ON d.id = e.delivery_id WHERE e.uuid = ? ORDER BY e.delivery_id, e.idx`, uuid)
	if err != nil {
		return nil, fmt.Errorf("list copies of event %q: %w", uuid, err)
	}
	defer rows.Close()
	var out []EventRef
	for rows.Next() {
		var r EventRef
		var received int64
		if err := rows.Scan(&r.DeliveryID, &r.Index, &received, &r.Hash, &r.Duplicate, &r.Divergent); err != nil {
			return nil, fmt.Errorf("list copies of event %q: %w", uuid, err)
		}
		r.ReceivedAt = fromNanos(received)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list copies of event %q: %w", uuid, err)
	}
	return out, nil
}

// eachBatch is how many records Each loads per round trip.
const eachBatch = 200

// Each calls fn with every record matching f, oldest first, loading them in
// small batches so memory stays flat and no read transaction is held while
// fn runs (fn may write, as re-verification does). An error from fn stops
// the walk and is returned as is.
func (db *DB) Each(ctx context.Context, f Filter, fn func(*inspector.Record) error) error {
	var after int64
	for {
		ids := idQuery(f, oldestFirst, after, eachBatch)
		rows, err := db.an.QueryContext(ctx, ids.b.String(), ids.args...)
		if err != nil {
			return fmt.Errorf("walk deliveries: %w", err)
		}
		batch, err := scanIDs(rows)
		if err != nil {
			return fmt.Errorf("walk deliveries: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		recs, err := db.records(ctx, batch)
		if err != nil {
			return fmt.Errorf("walk deliveries: %w", err)
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		after = batch[len(batch)-1]
		if len(batch) < eachBatch {
			return nil
		}
	}
}
