package inspector

import (
	"errors"
	"testing"
)

// A chunk is an eighth of the work waiting, within [minChunk, maxChunk],
// and one delivery while the store fails.
func TestChunkSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing bool
		waiting int
		want    int
	}{
		{"backlog", false, 5000, maxChunk},
		{"some waiting", false, 400, 50},
		{"little waiting", false, 10, minChunk},
		{"store failing", true, 5000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(newMemStore(), Options{})
			if tc.failing {
				e.saving.Fail(errors.New("disk full"))
			}
			if got := e.chunkSize(tc.waiting); got != tc.want {
				t.Errorf("chunkSize(%d) = %d, want %d", tc.waiting, got, tc.want)
			}
		})
	}
}
