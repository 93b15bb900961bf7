package ui

import (
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector"
)

func TestGridTextFoldsLongLinesWithoutSplittingCharacters(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 5, "abcde\nfghij"},
		{"abcdefghijk\nxy", 5, "abcde\nfghij\nk\nxy"},
		{"ééé", 3, "é\né\né"}, // 2-byte runes: a cut never lands inside one
		{"", 4, ""},
	}
	for _, tc := range tests {
		if got := gridText(tc.in, tc.width); got != tc.want {
			t.Errorf("gridText(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestRawTabShowsNotesAndHexForBinary(t *testing.T) {
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.ready", "x", inspector.SignatureValid, func(r *inspector.Record) {
			r.Delivery.Body = []byte{0xff, 0xfe, 'a', 'b'}
			r.Delivery.Truncated = true
			r.Delivery.BodyLength = 99 << 20
		})
	})
	d := h.win.deliveries.Detail
	h.win.deliveries.List.Select(0)
	d.Tabs.SelectIndex(2)
	if !strings.Contains(d.RawNote.Text, "Truncated") || !strings.Contains(d.RawNote.Text, "not valid UTF-8") {
		t.Fatalf("raw note = %q", d.RawNote.Text)
	}
	if got := d.RawGrid.Text(); !strings.Contains(got, "ff fe 61 62") {
		t.Fatalf("raw grid = %q, want a hex dump", got)
	}
}

func TestCurlCommandQuotesBodyAndSkipsHopHeaders(t *testing.T) {
	del := &inspector.Delivery{Method: "POST", Path: "/webhooks", Query: "a=1",
		Headers: []inspector.Header{{Name: "Host", Value: "x"}, {Name: "Content-Length", Value: "9"}, {Name: "X-Service-Signature", Value: "ab"}},
		Body:    []byte(`{"n":"it's"}`)}
	got := curlCommand(del, "http://127.0.0.1:8787")
	want := "curl -X POST 'http://127.0.0.1:8787/webhooks?a=1' \\\n  -H 'X-Service-Signature: ab' \\\n  --data-binary '{\"n\":\"it'\\''s\"}'"
	if got != want {
		t.Fatalf("curl =\n%s\nwant\n%s", got, want)
	}
}
