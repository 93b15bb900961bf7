package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"

	"modernc.org/sqlite"
)

// The analysis file (<store>-analysis) holds what analysis derives from
// the log: the analysis JSON of each delivery, its event rows with the
// ledger's indexes, and the full-text index. It has a write lock and a
// WAL of its own, so the receiver's commits never wait for analysis's
// (which write several times the pages of an ack) nor flush its pages
// with their fsync.
//
// Invariants:
//   - It can always be rebuilt from the log: the log's analyzed flag
//     says which deliveries have analysis rows, and only for the analysis
//     file whose id the log records (kv analysis_file). A missing,
//     foreign or damaged file, or one of another layout
//     (analysisLayout), gets a new id, so the log sets every delivery
//     unanalyzed and analysis makes the rows again.
//   - Rows are written before the log marks their deliveries analyzed
//     (SaveAnalyses), with a full fsync, so a crash or a power cut leaves
//     rows without the mark (made again), never the mark without rows.
//   - The log records each deleted delivery in analysis_gone in the same
//     transaction; sweepGone removes their rows here, then the records.
//
// Its connections attach the log as "log" and see both files' tables by
// their plain names (no name is in both), so every read that joins
// deliveries with their analysis runs on db.an. Writes to the log never
// use db.an: a BEGIN IMMEDIATE on it would lock both files.
const schemaAnalysis = `
CREATE TABLE IF NOT EXISTS analysis_meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS analyses (
	delivery_id INTEGER PRIMARY KEY,
	analysis    BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
	delivery_id   INTEGER NOT NULL,
	idx           INTEGER NOT NULL,
	uuid          TEXT    NOT NULL,
	type          TEXT    NOT NULL,
	account_id    TEXT    NOT NULL DEFAULT '',
	generated_at  INTEGER,
	generated_raw TEXT    NOT NULL DEFAULT '',
	subject       TEXT    NOT NULL DEFAULT '',
	hash          TEXT    NOT NULL DEFAULT '',
	duplicate     INTEGER NOT NULL DEFAULT 0,
	divergent     INTEGER NOT NULL DEFAULT 0,
	out_of_order  INTEGER NOT NULL DEFAULT 0,
	problem_count INTEGER NOT NULL DEFAULT 0,
	summary       TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (delivery_id, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_uuid    ON events(uuid, delivery_id);
CREATE INDEX IF NOT EXISTS events_type    ON events(type, delivery_id);
DROP INDEX IF EXISTS main.events_subject;
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(body, summaries, content='', contentless_delete=1);
CREATE TABLE IF NOT EXISTS event_counters (
	name TEXT PRIMARY KEY,
	n    INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO event_counters(name, n) VALUES ('events', 0), ('duplicates', 0), ('divergent', 0);
CREATE TRIGGER IF NOT EXISTS events_count_insert AFTER INSERT ON events BEGIN
	UPDATE event_counters SET n = n + 1 WHERE name = 'events';
	UPDATE event_counters SET n = n + 1 WHERE name = 'duplicates' AND new.duplicate <> 0;
	UPDATE event_counters SET n = n + 1 WHERE name = 'divergent' AND new.divergent <> 0;
END;
CREATE TRIGGER IF NOT EXISTS events_count_delete AFTER DELETE ON events BEGIN
	UPDATE event_counters SET n = n - 1 WHERE name = 'events';
	UPDATE event_counters SET n = n - 1 WHERE name = 'duplicates' AND old.duplicate <> 0;
	UPDATE event_counters SET n = n - 1 WHERE name = 'divergent' AND old.divergent <> 0;
END;
CREATE TABLE IF NOT EXISTS subject_latest (
	subject      TEXT    PRIMARY KEY,
	generated_at INTEGER NOT NULL,
	delivery_id  INTEGER NOT NULL,
	idx          INTEGER NOT NULL,
	uuid         TEXT    NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS subject_latest_insert AFTER INSERT ON events
WHEN new.subject <> '' AND new.generated_at IS NOT NULL BEGIN
	INSERT INTO subject_latest VALUES (new.subject, new.generated_at, new.delivery_id, new.idx, new.uuid)
	ON CONFLICT(subject) DO UPDATE SET generated_at = excluded.generated_at,
		delivery_id = excluded.delivery_id, idx = excluded.idx, uuid = excluded.uuid
	WHERE excluded.generated_at > generated_at
		OR (excluded.generated_at = generated_at AND (excluded.delivery_id, excluded.idx) < (delivery_id, idx));
END;
CREATE TRIGGER IF NOT EXISTS subject_latest_delete AFTER DELETE ON events
WHEN old.subject <> '' BEGIN
	DELETE FROM subject_latest WHERE subject = old.subject AND delivery_id = old.delivery_id AND idx = old.idx;
END;
`

// analysisLayout names the analysis file's tables as schemaAnalysis
// makes them; a file of another layout is made again (reconcileAnalysis).
// Layout 2 keeps the ledger's latest event per subject in subject_latest,
// kept by triggers on events: one row per subject, where an index over
// every event's subject made each saved event write a random page. The
// first stored of equal times is the latest, as in the inspector's
// pending ledger. Deleting the latest event forgets its subject: an
// older event about it still stored no longer counts for order, which
// only matters after a user deletes a delivery in the middle.
const analysisLayout = "2"

// analysisTables are the analysis file's tables of rows (their delivery
// id column), emptied when the file is reset.
var analysisTables = []string{"analyses WHERE delivery_id", "events WHERE delivery_id", "search WHERE rowid"}

// AnalysisPath is the analysis file beside the store at path.
func AnalysisPath(path string) string { return path + "-analysis" }

// attachConnector opens connections on the analysis file that attach the
// log as "log" (database/sql has no per-connection setup of its own).
type attachConnector struct {
	driver *sqlite.Driver
	dsn    string
}

func (c attachConnector) Connect(context.Context) (sqldriver.Conn, error) {
	return c.driver.Open(c.dsn)
}
func (c attachConnector) Driver() sqldriver.Driver { return c.driver }

// openAnalysis opens (creating when needed) the analysis file, reconciles
// it with the log, and removes the rows of deliveries deleted meanwhile.
func (db *DB) openAnalysis(ctx context.Context) error {
	path := AnalysisPath(db.path)
	h, err := db.openCheckedAnalysis(ctx, path)
	if err != nil {
		if !errors.Is(db.damaged(err), ErrDamaged) {
			return fmt.Errorf("open analysis file %s: %w", path, err)
		}
		// Damaged: it is rebuilt from the log.
		db.logf("the analysis file %s is damaged (%v): it is made again from the store", path, err)
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove damaged analysis file: %w", err)
			}
		}
		if h, err = db.openCheckedAnalysis(ctx, path); err != nil {
			return fmt.Errorf("open analysis file %s: %w", path, err)
		}
	}
	db.an, db.astmts = h, newStmtCache(h)
	return db.sweepGone(ctx)
}

// openCheckedAnalysis opens the analysis file at path, checks it for
// damage and reconciles it with the log.
func (db *DB) openCheckedAnalysis(ctx context.Context, path string) (*sql.DB, error) {
	h, err := db.openAnalysisHandle(path)
	if err != nil {
		return nil, err
	}
	if err = checkOn(ctx, h, analysisChecks); err == nil {
		err = db.reconcileAnalysis(ctx, h)
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// openAnalysisHandle opens the handle (0600 from the first byte, like the
// store) and makes sure the schema exists.
func (db *DB) openAnalysisHandle(path string) (*sql.DB, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	d := &sqlite.Driver{}
	log := "file:" + strings.ReplaceAll(db.path, "?", "%3f")
	d.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		_, err := c.ExecContext(context.Background(), `ATTACH DATABASE ? AS log`, []sqldriver.NamedValue{{Ordinal: 1, Value: log}})
		return err
	})
	// Deferred transactions: a write takes the lock of the file it writes
	// (analysis writes only this one), a read takes none. SQLite's
	// autocheckpoint runs every 8,000 WAL pages rather than 1,000: the
	// random index pages several chunks touch are copied back once.
	h := sql.OpenDB(attachConnector{driver: d, dsn: strings.Replace(dsn(path, "FULL"), "_txlock=immediate", "_txlock=deferred&_pragma=wal_autocheckpoint(8000)", 1)})
	h.SetMaxIdleConns(8)
	if _, err := h.Exec(schemaAnalysis); err != nil {
		h.Close()
		return nil, err
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(side); err == nil {
			_ = os.Chmod(side, 0o600)
		}
	}
	return h, nil
}

// reconcileAnalysis makes the log's analyzed flags refer to this analysis
// file: a new, foreign or reset file is emptied, given a new id, and every
// delivery is set unanalyzed, while the file's write lock is held (so a
// second process opening the store waits, then finds it done).
func (db *DB) reconcileAnalysis(ctx context.Context, h *sql.DB) error {
	// ids reads the file's id and the one the log refers to.
	var mine, logs string
	ids := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) error {
		return q.QueryRowContext(ctx, `SELECT coalesce((SELECT value FROM analysis_meta WHERE key = 'id'
				AND (SELECT value FROM analysis_meta WHERE key = 'layout') = ?), ''),
			coalesce((SELECT value FROM log.kv WHERE key = 'analysis_file'), '')`, analysisLayout).Scan(&mine, &logs)
	}
	if err := ids(h); err != nil || (mine != "" && mine == logs) {
		return err
	}
	conn, err := h.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	// The first write takes the analysis file's lock; read again under it.
	if _, err := conn.ExecContext(ctx, takeAnalysisLock); err != nil {
		return err
	}
	if err := ids(conn); err != nil || (mine != "" && mine == logs) {
		return err
	}
	for _, table := range analysisTables {
		if _, err := conn.ExecContext(ctx, `DELETE FROM `+strings.Fields(table)[0]); err != nil {
			return err
		}
	}
	id := rand.Text()
	if _, err := conn.ExecContext(ctx, `INSERT OR REPLACE INTO analysis_meta(key, value) VALUES ('id', ?), ('layout', ?)`, id, analysisLayout); err != nil {
		return err
	}
	// The log forgets what was analyzed before the file's rows are gone
	// for good: a crash after this commit and before the file's leaves
	// both as they were but the log unanalyzed and without an id that
	// matches, so the next open does this again.
	if err := db.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET analyzed = 0 WHERE analyzed = 1`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM analysis_gone`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO kv(key, value) VALUES ('analysis_file', ?)`, id)
		return err
	}); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return err
	}
	if mine != "" || logs != "" {
		db.logf("analysis is made again for every stored delivery (the analysis file %s belonged to another store or an older version)", AnalysisPath(db.path))
	}
	return nil
}

// writeAnalysis runs fn in one write transaction on the analysis file,
// after this process's other analysis writers (amu). The transaction
// starts with a write, which takes the file's write lock (waiting for
// another process's), so what fn reads cannot go stale before it writes.
func (db *DB) writeAnalysis(ctx context.Context, fn func(tx *sql.Tx) error) error {
	db.amu.Lock()
	defer db.amu.Unlock()
	tx, err := db.an.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, takeAnalysisLock); err == nil {
		err = fn(tx)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// dropAnalyses removes the analysis rows of ids inside tx.
func dropAnalyses(ctx context.Context, tx *sql.Tx, stmts *stmtCache, ids []int64) error {
	for _, table := range analysisTables {
		if err := execGroups(ctx, tx, stmts, ids, func(n int) string {
			return `DELETE FROM ` + table + ` IN (` + placeholders(n) + `)`
		}, argsOf[int64]); err != nil {
			return err
		}
	}
	return nil
}

// sweepGone removes the analysis rows of deliveries the log deleted
// (analysis_gone), then those records, a chunk at a time.
func (db *DB) sweepGone(ctx context.Context) error {
	for {
		rows, err := db.an.QueryContext(ctx, `SELECT delivery_id FROM log.analysis_gone ORDER BY delivery_id LIMIT ?`, deleteChunk)
		if err != nil {
			return fmt.Errorf("remove the analysis of deleted deliveries: %w", err)
		}
		ids, err := scanIDs(rows)
		if err != nil || len(ids) == 0 {
			if err != nil {
				err = fmt.Errorf("remove the analysis of deleted deliveries: %w", err)
			}
			return err
		}
		if err := db.writeAnalysis(ctx, func(tx *sql.Tx) error {
			return dropAnalyses(ctx, tx, db.astmts, ids)
		}); err != nil {
			return fmt.Errorf("remove the analysis of deleted deliveries: %w", err)
		}
		if err := db.write(ctx, func(tx *sql.Tx) error {
			return execGroups(ctx, tx, db.stmts, ids, func(n int) string {
				return `DELETE FROM analysis_gone WHERE delivery_id IN (` + placeholders(n) + `)`
			}, argsOf[int64])
		}); err != nil {
			return fmt.Errorf("remove the analysis of deleted deliveries: %w", err)
		}
	}
}

// takeAnalysisLock is a write that changes nothing: as a deferred
// transaction's first statement, it takes the analysis file's write lock.
const takeAnalysisLock = `DELETE FROM analysis_meta WHERE key = 'lock'`
