package storage

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchSeesAnotherHandle: a write through a second handle on the same
// file (as another process would write) is reported; no write, no report.
func TestWatchSeesAnotherHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- a.Watch(ctx, 10*time.Millisecond, func() { changed <- struct{}{} }) }()

	select {
	case <-changed:
		t.Fatal("reported a change before any write")
	case <-time.After(100 * time.Millisecond):
	}
	for i, h := range []*DB{b, a} {
		if _, err := h.SQL().Exec(`INSERT OR REPLACE INTO kv(key, value) VALUES ('watch_test', ?)`, i); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("write %d through handle %d not reported", i, i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
