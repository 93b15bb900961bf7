package ui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
)

func TestClipText(t *testing.T) {
	tests := []struct {
		in       string
		lines, n int
		want     string
		wantClip bool
	}{
		{"short", 4, 400, "short", false},
		{"a\nb\nc\nd", 4, 400, "a\nb\nc\nd", false},
		{"a\nb\nc\nd\ne", 4, 400, "a\nb\nc\nd", true},
		{"a\r\nb\r\nc", 2, 400, "a\r\nb", true},
		{strings.Repeat("x", 10), 4, 4, "xxxx", true},
		{"ééé", 4, 3, "é", true}, // never half a character
		{"", 4, 400, "", false},
	}
	for _, tc := range tests {
		got, clip := clipText(tc.in, tc.lines, tc.n)
		if got != tc.want || clip != tc.wantClip {
			t.Errorf("clipText(%q, %d, %d) = %q, %v; want %q, %v", tc.in, tc.lines, tc.n, got, clip, tc.want, tc.wantClip)
		}
	}
}

// longValueSeed stores a media.translation_created whose transcript has
// many lines and a media.updated with one long string in
// previous_attributes, as the service sends them.
func longValueSeed(transcript, description string) func(*fakeStore) {
	return func(s *fakeStore) {
		for _, ev := range []map[string]any{
			{"type": "media.translation_created", "payload": map[string]any{
				"media": map[string]any{"id": "m1", "name": "Talk"}, "project": map[string]any{"id": "p1", "name": "P"},
				"transcript": map[string]any{"hashed_id": "t1", "iso639_2_language_code": "fra", "language_code": "fr",
					"language_name": "French", "language_native_name": "Français", "transcript_text": transcript}}},
			{"type": "media.updated", "payload": map[string]any{
				"media": map[string]any{"id": "m2", "name": "Talk 2"}, "project": map[string]any{"id": "p1", "name": "P"},
				"previous_attributes": map[string]any{"description": description}}},
		} {
			typ := ev["type"].(string)
			s.add(typ, typ, inspector.SignatureValid, func(r *inspector.Record) {
				ev["uuid"] = r.Analysis.Events[0].UUID
				ev["generated_at"] = "2026-11-22T03:00:00Z"
				ev["metadata"] = map[string]any{"account_id": "acc1"}
				raw, _ := json.Marshal(ev)
				r.Analysis.Events[0].Raw = raw
				r.Delivery.Body = []byte(fmt.Sprintf(`{"hook":{"uuid":"h"},"events":[%s]}`, raw))
				r.Delivery.BodyLength = int64(len(r.Delivery.Body))
			})
		}
	}
}

// TestLongValuesAreCutOnCardsAndShownWholeInTheViewer: a card shows the
// start of a long value, never all of it (laying out a wrapped label of
// 300 KB froze the window for a minute), and Show all opens the whole
// value in the line viewer.
func TestLongValuesAreCutOnCardsAndShownWholeInTheViewer(t *testing.T) {
	var lines []string
	for i := range 600 {
		lines = append(lines, fmt.Sprintf("line %d of the transcript, with some words in it", i+1))
	}
	transcript := strings.Join(lines, "\n")
	description := strings.Repeat("lorem ipsum ", 2000)
	h := newHarness(t, longValueSeed(transcript, description))
	v := h.win.deliveries
	for row, want := range map[int]string{1: transcript, 0: description} {
		v.List.Select(row)
		var longest int
		for _, s := range labelTexts(v.Detail.EventsBox) {
			longest = max(longest, len(s))
		}
		if longest > cardValueBytes+10 {
			t.Errorf("row %d: a card label holds %d bytes; want at most ~%d", row, longest, cardValueBytes)
		}
		var all *widget.Button
		walk(v.Detail.EventsBox, func(o fyne.CanvasObject) {
			if b, ok := o.(*widget.Button); ok && strings.HasPrefix(b.Text, "Show all") {
				all = b
			}
		})
		if all == nil {
			t.Fatalf("row %d: no Show all button on the card", row)
		}
		wantWords := sizeWords(want)
		if !strings.Contains(all.Text, wantWords) {
			t.Errorf("row %d: button %q does not say %q", row, all.Text, wantWords)
		}
		test.Tap(all)
		if got := strings.TrimSuffix(allRows(v.Detail.ValueView), "\n"); strings.ReplaceAll(got, "\n", "") != strings.ReplaceAll(want, "\n", "") {
			t.Errorf("row %d: the viewer holds %d bytes, want the whole value (%d)", row, len(got), len(want))
		}
		v.Detail.valueDialog.Hide()
	}
}
