package ui

import (
	"testing"
	"time"
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
