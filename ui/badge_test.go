package ui

import (
	"testing"

	"github.com/hookscope/hookscope/storage"
)

// TestBadgeWords: the dedupe badge counts duplicate events in words, with
// the one meaning the CLI and docs give "duplicate" (a later copy of an
// event received before), never "×N"; problem counts are in words too.
func TestBadgeWords(t *testing.T) {
	for _, tc := range []struct {
		s    storage.Summary
		want string
	}{
		{storage.Summary{Analyzed: true, EventCount: 1}, "new"},
		{storage.Summary{Analyzed: true, EventCount: 3, Duplicates: 1}, "1 duplicate"},
		{storage.Summary{Analyzed: true, EventCount: 3, Duplicates: 2}, "2 duplicates"},
		{storage.Summary{Analyzed: true, EventCount: 2, Duplicates: 2, Divergent: true}, "divergent"},
	} {
		if got, _, _ := dedupeLook(tc.s); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
	if got, _, _ := problemsLook(1); got != "1 problem" {
		t.Errorf("problemsLook(1) = %q", got)
	}
	if got, _, _ := problemsLook(3); got != "3 problems" {
		t.Errorf("problemsLook(3) = %q", got)
	}
}
