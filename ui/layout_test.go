package ui

import (
	"strings"
	"testing"

	"github.com/hookscope/hookscope/inspector"
)

// A long unbroken line (a thumbnail URL, a minified body) must scroll or
// wrap inside the pane, not make the window wider than a laptop screen.
func TestLongValuesDoNotWidenTheWindow(t *testing.T) {
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.created", strings.Repeat("long-summary-without-spaces", 20), inspector.SignatureValid, func(r *inspector.Record) {
			r.Delivery.Body = append(r.Delivery.Body, []byte(strings.Repeat("x", 5000))...)
		})
	})
	h.win.deliveries.List.Select(0)
	for _, tab := range []int{0, 1, 2, 3, 4} {
		h.win.deliveries.Detail.Tabs.SelectIndex(tab)
		if w := h.win.w.Content().MinSize().Width; w > 1000 {
			t.Fatalf("detail tab %d: window content needs %.0f px", tab, w)
		}
	}
}
