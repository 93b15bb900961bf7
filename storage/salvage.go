package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hookscope/hookscope/inspector"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDamaged is returned (wrapped) by Open when the store file is damaged
// where every process using it reads or writes first.
var ErrDamaged = errors.New("the store file is damaged")

// openChecks read what a process using the store touches first: the small
// tables it relies on in full (settings and secrets, counters, the schema
// version), and both ends of every big table and index: the newest rows
// (where inserts land and lists start, with their bodies' overflow pages
// and events) and the oldest (where pruning starts). That is a few dozen
// pages whatever the store's size (docs/benchmarks.md, Store at scale:
// OpenCheck), so a damaged file is reported when it is opened, not at the
// first write that fails; damage elsewhere shows when those rows are read,
// and Salvage reads around it.
var openChecks = []string{
	`PRAGMA quick_check(kv)`,
	`PRAGMA quick_check(counters)`,
	`PRAGMA quick_check(schema_migrations)`,
	`SELECT count(*), sum(length(b.headers)), count(substr(b.body, -1)), count(b.digest)
		FROM (SELECT * FROM deliveries ORDER BY id DESC LIMIT 32) d JOIN bodies b ON b.delivery_id = d.id`,
	`SELECT count(*) FROM (SELECT id FROM deliveries ORDER BY id LIMIT 32)`,
	`SELECT count(*) FROM (SELECT delivery_id FROM bodies ORDER BY delivery_id LIMIT 32)`,
	`SELECT count(*) FROM (SELECT id FROM deliveries INDEXED BY deliveries_signature WHERE signature = '' ORDER BY id DESC LIMIT 32)`,
	`SELECT count(*) FROM (SELECT id FROM deliveries INDEXED BY deliveries_signature ORDER BY signature DESC, id DESC LIMIT 32)`,
	`SELECT count(*) FROM (SELECT id FROM deliveries INDEXED BY deliveries_path ORDER BY path DESC, id DESC LIMIT 32)`,
	`SELECT count(*) FROM (SELECT id FROM deliveries INDEXED BY deliveries_received ORDER BY received_at DESC LIMIT 32)`,
	`SELECT count(*) FROM (SELECT id FROM deliveries INDEXED BY deliveries_unanalyzed WHERE analyzed = 0 ORDER BY id DESC LIMIT 32)`,
}

// analysisChecks are openChecks for the analysis file: damage there is
// not reported but repaired (analysis makes the file again).
var analysisChecks = []string{
	`PRAGMA quick_check(analysis_meta)`,
	`PRAGMA quick_check(event_counters)`,
	`SELECT count(*), sum(length(analysis)) FROM (SELECT * FROM analyses ORDER BY delivery_id DESC LIMIT 32)`,
	`SELECT count(*), sum(length(summary)) FROM (SELECT * FROM events ORDER BY delivery_id DESC LIMIT 256)`,
	`SELECT count(*) FROM (SELECT delivery_id FROM analyses ORDER BY delivery_id LIMIT 32)`,
	`SELECT count(*) FROM (SELECT delivery_id FROM events INDEXED BY events_type ORDER BY type DESC, delivery_id DESC LIMIT 32)`,
	`SELECT count(*) FROM (SELECT delivery_id FROM events INDEXED BY events_uuid ORDER BY uuid DESC, delivery_id DESC LIMIT 32)`,
	`SELECT count(*), sum(length(uuid)) FROM (SELECT * FROM subject_latest ORDER BY subject DESC LIMIT 32)`,
}

// check runs openChecks on the log; damage found wraps ErrDamaged.
func (db *DB) check(ctx context.Context) error {
	if err := checkOn(ctx, db.sql, openChecks); err != nil {
		return db.damaged(err)
	}
	return nil
}

// checkOn runs checks on h.
func checkOn(ctx context.Context, h *sql.DB, checks []string) error {
	for _, q := range checks {
		rows, err := h.QueryContext(ctx, q)
		if err == nil {
			err = drainCheck(rows)
		}
		if err != nil {
			what, _, _ := strings.Cut(strings.Join(strings.Fields(q), " "), " FROM (")
			return fmt.Errorf("check (%s): %w", what, err)
		}
	}
	return nil
}

// damaged wraps err in ErrDamaged, with what to do, when it says the file
// is damaged (SQLite's "malformed" or "not a database"); other errors (a
// lock held too long, a missing permission) are returned as they are.
func (db *DB) damaged(err error) error {
	var se *sqlite.Error
	var notOK quickCheckError
	if !errors.As(err, &notOK) && !(errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_CORRUPT || se.Code()&0xff == sqlite3.SQLITE_NOTADB)) {
		return err
	}
	return fmt.Errorf("%w (%v): move it aside, and `hookscope export rescued.ndjson --salvage --db %s` reads every delivery that can still be read", ErrDamaged, err, db.path)
}

// quickCheckError is a problem PRAGMA quick_check reported.
type quickCheckError string

func (e quickCheckError) Error() string { return string(e) }

// drainCheck reads every row; a quick_check row other than "ok" is an error.
func drainCheck(rows *sql.Rows) error {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	for rows.Next() {
		if err := rows.Scan(vals...); err != nil {
			return err
		}
		if len(cols) == 1 && cols[0] == "quick_check" {
			if s, ok := (*vals[0].(*any)).(string); ok && s != "ok" {
				return quickCheckError(s)
			}
		}
	}
	return rows.Err()
}

// SalvageReport says what Salvage read and what it could not.
type SalvageReport struct {
	// Read counts the deliveries passed on.
	Read int `json:"read"`
	// Skipped says what could not be read and why, one line each
	// (neighbouring ids that failed alike are one line).
	Skipped []string `json:"skipped"`
}

// salvageChunk is how many deliveries Salvage reads per query while the
// store reads cleanly.
const salvageChunk = 200

// Salvage reads every readable delivery of the store at path, which may be
// damaged, oldest first, and passes each to fn: around a damaged page it
// reads delivery by delivery, and a delivery whose body or analysis
// cannot be read comes without it (Delivery.Damaged says why). It writes
// nothing. An error from fn stops it and is returned as is.
func Salvage(ctx context.Context, path string, fn func(*inspector.Record) error) (*SalvageReport, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("salvage %s: %w", path, err)
	}
	sqlDB, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("salvage %s: %w", path, err)
	}
	defer sqlDB.Close()
	s := &salvager{ctx: ctx, db: sqlDB, fn: fn, rep: &SalvageReport{}}
	s.columns, s.tables = plainRecordColumns, `deliveries d JOIN bodies b ON b.delivery_id = d.id`
	// One connection, so the analysis file it attaches (when there is one
	// and it reads) is there for every query; without, deliveries come
	// without their analysis.
	sqlDB.SetMaxOpenConns(1)
	if _, err := sqlDB.ExecContext(ctx, `ATTACH DATABASE ? AS an`, "file:"+AnalysisPath(path)+"?mode=ro"); err == nil {
		if sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM an.analyses`).Scan(new(int64)) == nil {
			s.columns, s.tables = recordColumns, recordTables
		}
	}
	err = s.store()
	s.flushSkip()
	if err != nil && !errors.Is(err, errStop) {
		return s.rep, fmt.Errorf("salvage %s: %w", path, err)
	}
	if s.stop != nil {
		return s.rep, s.stop
	}
	return s.rep, nil
}

// errStop marks an error returned by fn.
var errStop = errors.New("stopped by the caller")

type salvager struct {
	ctx context.Context
	db  *sql.DB
	// columns and tables read a record: scanRecord's columns, with the
	// analysis when the analysis file reads.
	columns, tables string
	fn              func(*inspector.Record) error
	rep             *SalvageReport
	stop            error
	// skip is the run of ids being skipped for the same reason.
	skipFrom, skipTo int64
	skipWhy          string
}

func (s *salvager) emit(r *inspector.Record) error {
	s.flushSkip()
	s.rep.Read++
	if err := s.fn(r); err != nil {
		s.stop = err
		return errStop
	}
	return nil
}

// skip records that id could not be read, merged with a run of
// neighbours skipped for the same reason.
func (s *salvager) skip(id int64, why string) {
	if s.skipWhy == why && s.skipTo == id-1 {
		s.skipTo = id
		return
	}
	s.flushSkip()
	s.skipFrom, s.skipTo, s.skipWhy = id, id, why
}

func (s *salvager) flushSkip() {
	switch {
	case s.skipWhy == "":
		return
	case s.skipFrom == s.skipTo:
		s.rep.Skipped = append(s.rep.Skipped, fmt.Sprintf("delivery %d: %s", s.skipFrom, s.skipWhy))
	default:
		s.rep.Skipped = append(s.rep.Skipped, fmt.Sprintf("deliveries %d-%d: %s", s.skipFrom, s.skipTo, s.skipWhy))
	}
	s.skipWhy = ""
}

// store reads the store's deliveries: in chunks while that works, around
// damage one id at a time, up to the highest id anything records.
func (s *salvager) store() error {
	hi := s.highestID()
	var after int64
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		recs, err := s.chunk(after)
		if err == nil {
			if len(recs) == 0 {
				return nil
			}
			for _, r := range recs {
				if err := s.emit(r); err != nil {
					return err
				}
				after = r.Delivery.ID
			}
			continue
		}
		if after >= hi {
			s.flushSkip()
			s.rep.Skipped = append(s.rep.Skipped, fmt.Sprintf("deliveries after %d: %v", after, err))
			return nil
		}
		// A damaged page after `after`: one id at a time, a chunk's
		// worth, then chunks again.
		end := min(after+salvageChunk, hi)
		for id := after + 1; id <= end; id++ {
			if err := s.one(id); err != nil {
				return err
			}
		}
		after = end
	}
}

// highestID is the highest delivery id the store records, wherever it can
// still be read.
func (s *salvager) highestID() int64 {
	var hi int64
	for _, q := range []string{
		`SELECT coalesce(max(id), 0) FROM deliveries`,
		`SELECT coalesce(max(id), 0) FROM deliveries INDEXED BY deliveries_received`,
		`SELECT coalesce(max(delivery_id), 0) FROM bodies`,
		`SELECT n FROM counters WHERE name = 'last_id'`,
	} {
		var n int64
		if s.db.QueryRowContext(s.ctx, q).Scan(&n) == nil {
			hi = max(hi, n)
		}
	}
	return hi
}

// chunk reads up to salvageChunk whole records after id.
func (s *salvager) chunk(after int64) ([]*inspector.Record, error) {
	rows, err := s.db.QueryContext(s.ctx, `SELECT `+s.columns+` FROM `+s.tables+`
		WHERE d.id > ? ORDER BY d.id LIMIT ?`, after, salvageChunk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []*inspector.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	fillGeneratedAt(s.ctx, s.db, recs) // best effort: the events table may be damaged too
	// A delivery row whose body row is missing is not in the join: read
	// those one by one.
	var out []*inspector.Record
	next := after + 1
	for _, r := range recs {
		for id := next; id < r.Delivery.ID; id++ {
			if err := s.deliveryOnly(id); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
		next = r.Delivery.ID + 1
	}
	return out, nil
}

// one reads delivery id alone: whole if it can, else as much of it as
// can be read.
func (s *salvager) one(id int64) error {
	rows, err := s.db.QueryContext(s.ctx, `SELECT `+s.columns+` FROM `+s.tables+` WHERE d.id = ?`, id)
	if err == nil {
		var r *inspector.Record
		if rows.Next() {
			r, err = scanRecord(rows)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err == nil && r != nil {
			fillGeneratedAt(s.ctx, s.db, []*inspector.Record{r})
			return s.emit(r)
		}
	}
	return s.deliveryOnly(id)
}

// deliveryOnly reads the delivery row of id without its body (or its
// analysis), for a delivery whose body row cannot be read.
func (s *salvager) deliveryOnly(id int64) error {
	d := &inspector.Delivery{Body: []byte{}}
	dest, done := deliveryDest(d)
	err := s.db.QueryRowContext(s.ctx, `SELECT `+deliveryColumns+` FROM deliveries d WHERE d.id = ?`, id).Scan(dest...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil // no such id: deleted, or never stored
	case err != nil:
		s.skip(id, err.Error())
		return nil
	}
	done()
	var headers string
	var body []byte
	berr := s.db.QueryRowContext(s.ctx, `SELECT headers, body FROM bodies WHERE delivery_id = ?`, id).Scan(&headers, &body)
	if berr == nil {
		d.Headers, berr = decodeHeaders(headers)
		d.Body = body
	}
	switch {
	case errors.Is(berr, sql.ErrNoRows):
		d.Damaged = "the store holds no body and headers for this delivery"
	case berr != nil:
		d.Damaged = "the body and headers could not be read: " + berr.Error()
	default:
		d.Damaged = "the delivery's analysis could not be read"
	}
	if err := s.emit(&inspector.Record{Delivery: d}); err != nil {
		return err
	}
	s.rep.Skipped = append(s.rep.Skipped, fmt.Sprintf("delivery %d (passed on without them): %s", id, d.Damaged))
	return nil
}
