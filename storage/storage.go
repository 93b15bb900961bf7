// Package storage keeps everything Hookscope records in one SQLite file:
// deliveries byte-exact, their analysis and events, the dedupe ledger, OAuth
// profiles, tokens and transcripts. Domain packages define the small
// interfaces they need; DB implements them.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hookscope/hookscope/storage/inbox"

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
	// stmts are the hot statements, prepared once (see stmtCache).
	stmts *stmtCache
	w     *writer
	// inbox is the ack path's journal when this process owns one.
	inbox *inbox.Inbox
	// ids hands out delivery ids shared with every process on the store
	// (nil where files cannot be mapped; see ids.go).
	ids  idSource
	logf func(string, ...any)
}

// Options tunes how a store is opened.
type Options struct {
	// Inbox makes InsertDelivery durable through an append-only inbox
	// next to the store (<path>-inbox, package storage/inbox) instead of
	// a SQLite transaction: a receiver's acks then wait for one
	// fdatasync, not for SQLite. Only one process uses an inbox at a
	// time; another one opening the store with Inbox inserts into SQLite
	// directly.
	Inbox bool
	// Logf receives the store's reports (never secrets or bodies): what
	// recovering an inbox skipped as damaged, and the inbox mover's
	// faults, once when they start and once when they end. Nil discards.
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
	}
}

// Open opens (creating when needed, with 0600 permissions) the store at
// path and brings its schema up to date. Deliveries left in the inbox of a
// process that died are moved into the store first.
func Open(path string) (*DB, error) {
	return OpenWith(path, Options{})
}

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*DB, error) {
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
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-32768)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
	sqlDB, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Every new connection pays for the pragmas and for parsing the schema
	// (FTS included); keep a few idle ones for the UI's bursts of reads.
	sqlDB.SetMaxIdleConns(8)
	db := &DB{path: path, sql: sqlDB}
	if err := db.migrate(context.Background()); err != nil {
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
	db.logf = o.Logf
	if db.logf == nil {
		db.logf = func(string, ...any) {}
	}
	ids, err := openIDs(path + "-ids")
	switch {
	case errors.Is(err, errors.ErrUnsupported):
	case err != nil:
		sqlDB.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	default:
		db.ids = ids
	}
	db.stmts = newStmtCache(sqlDB)
	db.w = newWriter(db)
	if err := db.openInbox(o.Inbox); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, nil
}

// openInbox opens the inbox (own: for this process's inserts), or moves
// what a killed process left in it; then raises the id counter above
// every id stored or moved.
func (db *DB) openInbox(own bool) error {
	dir, sink := db.path+"-inbox", inboxSink{db}
	if own && db.ids != nil {
		ib, err := inbox.Open(dir, sink, inbox.Options{NextID: db.ids.next, Logf: db.logf})
		switch {
		case errors.Is(err, inbox.ErrLocked), errors.Is(err, errors.ErrUnsupported):
			// Another process receives into this store through its
			// inbox, or this platform has no lock: insert into SQLite
			// directly.
		case err != nil:
			return err
		default:
			db.inbox = ib
		}
	} else if err := inbox.Recover(dir, sink, db.logf); err != nil {
		return fmt.Errorf("recover inbox %s: %w", dir, err)
	}
	if db.ids == nil {
		return nil
	}
	var floor int64
	if err := db.sql.QueryRowContext(context.Background(), `SELECT max(coalesce((SELECT max(id) FROM deliveries), 0),
		coalesce((SELECT value FROM kv WHERE key = 'inbox_moved'), 0))`).Scan(&floor); err != nil {
		return fmt.Errorf("read the highest delivery id: %w", err)
	}
	db.ids.raise(floor)
	return nil
}

// Path returns the file the store lives in.
func (db *DB) Path() string { return db.path }

// SQL exposes the underlying handle for packages of this module that keep
// their own tables (tests and benchmarks use it too).
func (db *DB) SQL() *sql.DB { return db.sql }

// Close flushes pending writes and closes the store.
func (db *DB) Close() error {
	var inboxErr error
	if db.inbox != nil {
		inboxErr = db.inbox.Close()
	}
	if db.w != nil {
		db.w.close()
	}
	if db.ids != nil {
		db.ids.close()
	}
	if db.stmts != nil {
		db.stmts.close()
	}
	if err := db.sql.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", db.path, err)
	}
	if inboxErr != nil {
		return fmt.Errorf("close store %s: %w", db.path, inboxErr)
	}
	return nil
}

func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.sql.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	var current int
	if err := db.sql.QueryRowContext(ctx, `SELECT COALESCE(MAX(version),0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	steps := migrations()
	if latest := steps[len(steps)-1].version; current > latest {
		return fmt.Errorf("store schema version %d is newer than this Hookscope understands (%d): upgrade Hookscope", current, latest)
	}
	for _, m := range steps {
		if m.version <= current {
			continue
		}
		tx, err := db.sql.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %d %s: %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d %s: %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version,name,applied_at) VALUES(?,?,strftime('%Y-%m-%dT%H:%M:%fZ','now'))`, m.version, m.name); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d %s: %w", m.version, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d %s: %w", m.version, m.name, err)
		}
	}
	return nil
}
