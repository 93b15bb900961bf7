package ui

import (
	"testing"

	"fyne.io/fyne/v2/test"
)

// The OAuth tab must fit a laptop screen beside the other tabs, with a
// whole flow and three call results on screen.
func TestOAuthTabFitsALaptopScreen(t *testing.T) {
	h := newOAuthHarness(t)
	h.login(t)
	v := h.tab.steps
	v.TokenMethod.SetSelected(methodAll)
	test.Tap(v.Call)
	h.tab.Tabs.SelectIndex(1)
	if w := h.win.w.Content().MinSize().Width; w > 1000 {
		t.Fatalf("window content needs %.0f px (profiles %.0f, steps %.0f, history %.0f)", w,
			h.tab.profiles.content.MinSize().Width, v.content.MinSize().Width, h.tab.history.content.MinSize().Width)
	}
}
