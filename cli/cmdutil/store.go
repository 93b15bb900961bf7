package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hookscope/hookscope/storage"
)

// OpenStore opens the store at path, or the default store when path is
// empty.
func OpenStore(path string) (*storage.DB, error) {
	return OpenStoreWith(path, storage.Options{})
}

// OpenStoreWith is OpenStore with options (where the store's reports go).
func OpenStoreWith(path string, o storage.Options) (*storage.DB, error) {
	if path == "" {
		p, err := storage.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return storage.OpenWith(path, o)
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
