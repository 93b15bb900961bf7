package cmdutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hookscope/hookscope/storage"
)

// OpenStore opens the store at path, or the default store when path is
// empty, creating it when it does not exist: for the commands that write
// (listen, import, the OAuth steps that start a flow).
func OpenStore(path string) (*storage.DB, error) {
	return OpenStoreWith(path, storage.Options{})
}

// OpenStoreWith is OpenStore with options (where the store's reports go).
func OpenStoreWith(path string, o storage.Options) (*storage.DB, error) {
	p, err := StorePath(path)
	if err != nil {
		return nil, err
	}
	return storage.OpenWith(p, o)
}

// StorePath is the store file a command uses: path as given to --db (a
// leading ~/ is the home folder, for --db=~/x.db that no shell expands),
// or the default store when path is empty.
func StorePath(path string) (string, error) {
	if path == "" {
		return storage.DefaultPath()
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("--db %s: %w", path, err)
		}
		return filepath.Join(home, rest), nil
	}
	return path, nil
}

// NoStoreError is a command that reads the store finding no store file:
// it created none, and says where it looked and what to check.
type NoStoreError struct {
	// Path is where the command looked.
	Path string
	// Given reports whether Path came from --db (else it is the default).
	Given bool
	// Default is the default store's path.
	Default string
	// WindowDB is HOOKSCOPE_DB, the window's store, when it is set.
	WindowDB string
}

// Error names the path and what to check.
func (e *NoStoreError) Error() string {
	msg := "no store at " + e.Path
	if e.Given {
		msg += ": check the path given to --db"
		if e.Default != "" && e.Default != e.Path {
			msg += " (without --db, the default store " + e.Default + " is used)"
		}
	} else {
		msg += " (the default store): nothing has been received or saved there yet; give --db FILE to read another store"
	}
	if e.WindowDB != "" && e.WindowDB != e.Path {
		msg += fmt.Sprintf("; HOOKSCOPE_DB names the window's store %s: give --db %s to read it", e.WindowDB, e.WindowDB)
	}
	return msg
}

// OpenExistingStore opens the store at path (the default store when
// empty) for a command that reads it (export, replay, reverify, oauth
// profiles and history…): when there is no store file it creates nothing
// (no file, folder, -wal or -shm) and returns a *NoStoreError, so a
// mistyped --db is said as such rather than answered from an empty store.
func OpenExistingStore(env *Env, path string) (*storage.DB, error) {
	p, err := ExistingStorePath(env, path)
	if err != nil {
		return nil, err
	}
	return storage.Open(p)
}

// ExistingStorePath is the store file a reading command uses (see
// StorePath), or a *NoStoreError when there is none; a folder there is an
// error too.
func ExistingStorePath(env *Env, path string) (string, error) {
	p, err := StorePath(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		def, _ := storage.DefaultPath()
		e := &NoStoreError{Path: p, Given: path != "", Default: def}
		if env != nil && env.Getenv != nil {
			e.WindowDB = env.Getenv("HOOKSCOPE_DB")
		}
		return "", e
	case err != nil:
		return "", fmt.Errorf("open store %s: %w", p, err)
	case fi.IsDir():
		return "", fmt.Errorf("open store %s: it is a folder; --db names the store file (for example %s)", p, filepath.Join(p, "hookscope.db"))
	}
	return p, nil
}

// SyncWriter serialises whole writes from several goroutines.
type SyncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSyncWriter wraps w.
func NewSyncWriter(w io.Writer) *SyncWriter { return &SyncWriter{w: w} }

// Write writes p under the lock.
func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Print writes text under the lock.
func (s *SyncWriter) Print(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, text)
}

// PrintJSON writes v as one JSON line under the lock.
func (s *SyncWriter) PrintJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Write(append(b, '\n'))
}
