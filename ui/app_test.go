package ui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// TestTrimMemoryRepaintsFirst guards the fix for memory that never came
// back: Fyne frees expired text textures only while painting, so every
// trim must ask for a repaint first, and keep doing so while the window
// is idle, and stop when the window closes.
func TestTrimMemoryRepaintsFirst(t *testing.T) {
	done := make(chan struct{})
	repaints := make(chan struct{}, 16)
	stopped := make(chan struct{})
	go func() {
		trimMemory(done, func() { repaints <- struct{}{} }, time.Millisecond, 5*time.Millisecond)
		close(stopped)
	}()
	for i := range 3 {
		select {
		case <-repaints:
		case <-time.After(5 * time.Second):
			t.Fatalf("repaint %d never asked for", i+1)
		}
	}
	close(done)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("trimMemory kept running after the window closed")
	}
}

// TestSendTestDeliveriesCountsNon2xxAsFailures: a receiver that answers
// 500 (an answer mode, or a broken app) did not take the test deliveries,
// and the window must say so, as hookscope send does.
func TestSendTestDeliveriesCountsNon2xxAsFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	n, err := SendTestDeliveries(context.Background(), srv.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "answers were not 2xx") || n < 3 {
		t.Fatalf("sent %d, err %v", n, err)
	}
}

// TestSendTestDeliveriesDivergentCopyDiffersInOneField: the test set's
// divergent copy is the first event with its media renamed, so its card
// shows one clear change.
func TestSendTestDeliveriesDivergentCopyDiffersInOneField(t *testing.T) {
	var bodies [][]byte
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer srv.Close()
	n, err := SendTestDeliveries(context.Background(), srv.URL, nil)
	if err != nil || n != len(bodies) || n < 3 {
		t.Fatalf("sent %d (%v), server saw %d", n, err, len(bodies))
	}
	event := func(b []byte) json.RawMessage {
		var m struct{ Events []json.RawMessage }
		if err := json.Unmarshal(b, &m); err != nil || len(m.Events) == 0 {
			t.Fatalf("not a message: %s", b)
		}
		return m.Events[0]
	}
	first, divergent := event(bodies[0]), event(bodies[len(bodies)-2])
	changes := inspector.DiffJSON(first, divergent)
	if len(changes) != 1 || changes[0].Path != "payload.media.name" || !strings.HasSuffix(changes[0].New, ` (edited)"`) {
		t.Fatalf("divergent copy changes: %v", changes)
	}
}
