// Package storage keeps everything Hookscope records in one SQLite file:
// deliveries byte-exact, their analysis and events, the dedupe ledger,
// forwarding's cursors, leases and attempts, OAuth profiles, tokens and
// transcripts. The file is the one log: WAL mode, synchronous=FULL, and a
// delivery is acknowledged only once its row is committed. Domain packages
// define the small interfaces they need; DB implements them.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // pure-Go SQLite driver, registered as "sqlite"
)

// AppID is the application id shared with FyneApp.toml; the default store
// lives in the same per-user folder Fyne uses for this app.
const AppID = "io.hookscope.app"

// DefaultPath returns the default store file: <user config dir>/fyne/<app id>/hookscope.db,
// the folder Fyne's preferences use for this app id.
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find user config directory: %w", err)
	}
	return filepath.Join(dir, "fyne", AppID, "hookscope.db"), nil
}

// DB is an open store.
type DB struct {
	path string
	sql  *sql.DB
	// relaxed is a second handle on the file whose commits do not wait
	// for the disk (synchronous=NORMAL): for what is derived from the
	// deliveries or only records progress (analyses, forward attempts,
	// cursors, leases). A process crash loses none of it (the WAL is
	// written before the commit returns), a power cut may lose the last
	// of it: analysis is then done again, and a forward is sent again. It
	// keeps the fsync off every commit but the receiver's.
	relaxed *sql.DB
	// stmts and rstmts are the hot statements of each handle, prepared
	// once (see stmtCache).
	stmts, rstmts *stmtCache
	// wmu lets one of this process's writers at a time ask SQLite for the
	// write lock: waiting on a mutex wakes at once, SQLite's busy handler
	// (which other processes' writers still meet) sleeps in steps of
	// milliseconds.
	wmu fifo
	// inserts and records commit the small writes of each handle in
	// groups (committer).
	inserts, marks committer
	// an is the analysis file with the log attached (analysis.go): every
	// read that needs analysis rows, and analysis's writes, after amu.
	an     *sql.DB
	astmts *stmtCache
	amu    sync.Mutex
	logf   func(string, ...any)
}

// Options tunes how a store is opened.
type Options struct {
	// Logf receives the store's reports (never secrets or bodies): what
	// moving an older version's inbox into the store found. Nil discards.
	Logf func(format string, args ...any)
}

// migration is one versioned schema step. Steps are append-only: a released
// step is never edited, a change is a new step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists every schema step in order. Each step's SQL lives beside
// the code that uses it.
func migrations() []migration {
	return []migration{
		{1, "deliveries", schemaDeliveries},
		{2, "oauth", schemaOAuth},
		{3, "replays", schemaReplays},
		{4, "inbox", schemaInbox},
		{5, "request faults, body digests, shared ids", schemaFaults},
		{7, "forward", schemaForward},
		{8, "forward summary", schemaForwardSummary},
		{9, "oauth-scrub", schemaOAuthScrub},
		{10, "one log: ids from SQLite, forward cursors with leases", schemaOneLog},
		{11, "relayed deliveries: the relay's stream and sequence", schemaRelayed},
		{12, "analysis in its own file", schemaAnalysisFile},
	}
}

// dsn opens path in WAL mode with a full fsync per commit (sync "FULL")
// or none ("NORMAL": see DB.relaxed). busy_timeout comes first: two
// processes opening one new file at once wait for each other's
// journal_mode switch instead of failing. Every write transaction takes
// the write lock when it begins (_txlock=immediate), so a writer never
// has to give up a read snapshot it cannot upgrade.
func dsn(path, sync string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync + ")" +
		"&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-32768)&_txlock=immediate"
}

// Open opens (creating when needed, with 0600 permissions) the store at
// path and brings its schema up to date. Deliveries an older version left
// in its inbox folder beside the store are moved into it first.
func Open(path string) (*DB, error) {
	return OpenWith(path, Options{})
}

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*DB, error) {
	return openTo(path, o, 0)
}

// openTo opens the store with its schema at version upTo (0: the latest);
// tests build an older version's store with it.
func openTo(path string, o Options, upTo int) (*DB, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	// Create the file ourselves so it is 0600 from its first byte; SQLite
	// would create it with the process umask.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	f.Close()
	sqlDB, err := sql.Open("sqlite", dsn(path, "FULL"))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Every new connection pays for the pragmas and for parsing the schema
	// (FTS included); keep a few idle ones for the UI's bursts of reads.
	sqlDB.SetMaxIdleConns(8)
	db := &DB{path: path, sql: sqlDB, logf: o.Logf}
	if db.logf == nil {
		db.logf = func(string, ...any) {}
	}
	if err := db.migrate(context.Background(), upTo); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open store %s: %w", path, db.damaged(err))
	}
	if err := db.check(context.Background()); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// WAL side files inherit the umask; tighten them too.
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(side); err == nil {
			_ = os.Chmod(side, 0o600)
		}
	}
	if db.relaxed, err = sql.Open("sqlite", dsn(path, "NORMAL")); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.relaxed.SetMaxIdleConns(4)
	db.stmts, db.rstmts = newStmtCache(sqlDB), newStmtCache(db.relaxed)
	db.inserts = committer{db: db, h: db.sql}
	db.marks = committer{db: db, h: db.relaxed}
	if upTo == 0 {
		if err := db.openAnalysis(context.Background()); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		if err := db.moveLegacyInbox(context.Background()); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	return db, nil
}

// Path returns the file the store lives in.
func (db *DB) Path() string { return db.path }

// SQL exposes the underlying handle for packages of this module that keep
// their own tables (tests and benchmarks use it too).
func (db *DB) SQL() *sql.DB { return db.sql }

// Close closes the store. Every write already returned is committed.
func (db *DB) Close() error {
	for _, c := range []*stmtCache{db.stmts, db.rstmts, db.astmts} {
		if c != nil {
			c.close()
		}
	}
	for _, h := range []*sql.DB{db.relaxed, db.an} {
		if h != nil {
			h.Close()
		}
	}
	if err := db.sql.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", db.path, err)
	}
	return nil
}

// write runs fn in one write transaction and commits it with a full
// fsync: after this process's other writers (wmu), with SQLite's write
// lock from the start. fn's error rolls everything back.
func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return db.writeOn(ctx, db.sql, fn)
}

// writeRelaxed is write on the relaxed handle: the commit does not wait
// for the disk (see DB.relaxed).
func (db *DB) writeRelaxed(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return db.writeOn(ctx, db.relaxed, fn)
}

func (db *DB) writeOn(ctx context.Context, h *sql.DB, fn func(tx *sql.Tx) error) error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	tx, err := h.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// migrate applies the steps the store has not applied (up to upTo, 0 for
// all) in one write transaction that reads what was applied itself: a
// second process opening the same new file waits for the first one's
// steps, then finds them applied.
func (db *DB) migrate(ctx context.Context, upTo int) error {
	steps := migrations()
	latest := steps[len(steps)-1].version
	if upTo == 0 {
		upTo = latest
	}
	want := 0
	for _, m := range steps {
		if m.version <= upTo {
			want++
		}
	}
	// A store with every step applied needs no write lock (steps are only
	// ever added, so this read cannot be stale the wrong way).
	var v, n int
	if db.sql.QueryRowContext(ctx, `SELECT MAX(version), COUNT(*) FROM schema_migrations`).Scan(&v, &n) == nil && v == upTo && n == want {
		return nil
	}
	return db.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		applied := map[int]bool{}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return fmt.Errorf("read schema version: %w", err)
			}
			if v > latest {
				rows.Close()
				return fmt.Errorf("store schema version %d is newer than this Hookscope understands (%d): upgrade Hookscope", v, latest)
			}
			applied[v] = true
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		for _, m := range steps {
			if applied[m.version] || m.version > upTo {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version,name,applied_at) VALUES(?,?,strftime('%Y-%m-%dT%H:%M:%fZ','now'))`, m.version, m.name); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.version, m.name, err)
			}
		}
		return nil
	})
}
