package ui

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/forward"
)

// rowOf is the row object that shows delivery id.
func rowOf(t *testing.T, v *deliveriesView, id int64) *rowView {
	t.Helper()
	for _, r := range v.rowViews {
		if r.shown == id {
			return r
		}
	}
	t.Fatalf("no row shows #%d", id)
	return nil
}

// click taps the row of id with mods held.
func click(t *testing.T, v *deliveriesView, id int64, mods fyne.KeyModifier) {
	t.Helper()
	v.mods = func() fyne.KeyModifier { return mods }
	test.Tap(rowOf(t, v, id))
	v.mods = func() fyne.KeyModifier { return 0 }
}

// selected lists the loaded rows drawn selected, by id.
func selected(v *deliveriesView) []int64 {
	var out []int64
	for _, r := range v.model.rows {
		if v.isSelected(r.ID) {
			out = append(out, r.ID)
		}
	}
	return out
}

func drawnSelected(v *deliveriesView) []int64 {
	var out []int64
	for _, r := range v.rowViews {
		if r.shown != 0 && r.selected.Visible() {
			out = append(out, r.shown)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// TestClickCtrlClickShiftClick: a click shows one delivery; Ctrl-click
// adds and removes (keeping the one shown), Shift-click selects the range
// from the last clicked row; the rows draw the selection, the bar counts
// it, Escape and a plain click clear it; the detail pane keeps working.
func TestClickCtrlClickShiftClick(t *testing.T) {
	h := newHarness(t, manyDeliveries(8))
	v := h.win.deliveries
	expect := func(what string, ids []int64, bar string) {
		t.Helper()
		if got := selected(v); !slices.Equal(got, ids) {
			t.Fatalf("%s: selected %v, want %v", what, got, ids)
		}
		if got := drawnSelected(v); !slices.Equal(got, ids) {
			t.Fatalf("%s: rows drawn selected %v, want %v", what, got, ids)
		}
		barShown := v.Bulk.content.Objects[0] == fyne.CanvasObject(v.Bulk.selected)
		if bar == "" && barShown || bar != "" && (!barShown || v.Bulk.Count.Text != bar) {
			t.Fatalf("%s: bar shown %v %q, want %q", what, barShown, v.Bulk.Count.Text, bar)
		}
	}
	click(t, v, 7, 0)
	expect("click", []int64{7}, "")
	if !strings.Contains(v.Detail.Title.Text, "#7 ") {
		t.Fatalf("detail %q", v.Detail.Title.Text)
	}
	click(t, v, 5, fyne.KeyModifierControl)
	expect("ctrl-click", []int64{7, 5}, "2 selected")
	if !strings.Contains(v.Detail.Title.Text, "#5 ") {
		t.Fatalf("detail %q after ctrl-click", v.Detail.Title.Text)
	}
	click(t, v, 3, fyne.KeyModifierSuper) // Cmd on macOS
	expect("cmd-click", []int64{7, 5, 3}, "3 selected")
	click(t, v, 7, fyne.KeyModifierControl)
	expect("ctrl-click again", []int64{5, 3}, "2 selected")
	click(t, v, 3, fyne.KeyModifierControl)
	click(t, v, 6, fyne.KeyModifierShift) // from 3, the last clicked
	expect("shift-click", []int64{6, 5, 4, 3}, "4 selected")
	v.typedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	expect("escape", []int64{6}, "")
	click(t, v, 2, fyne.KeyModifierControl)
	click(t, v, 1, 0)
	expect("plain click", []int64{1}, "")
}

// TestCtrlASelectsByTheFilterBeyondLoadedPages: Ctrl+A selects every
// delivery the filter matches, not the rows in memory (the list loaded
// one page of 300); the count says so, and a delivery arriving later is
// not in it. A Ctrl-click takes one out.
func TestCtrlASelectsByTheFilterBeyondLoadedPages(t *testing.T) {
	h := newHarness(t, manyDeliveries(650))
	v := h.win.deliveries
	if len(v.model.rows) != pageSize {
		t.Fatalf("%d rows loaded, want a page", len(v.model.rows))
	}
	h.win.w.Canvas().(fyne.Shortcutable).TypedShortcut(&fyne.ShortcutSelectAll{})
	if v.Bulk.Count.Text != "650 selected" {
		t.Fatalf("bar %q", v.Bulk.Count.Text)
	}
	click(t, v, 649, fyne.KeyModifierControl)
	if v.Bulk.Count.Text != "649 selected" || v.isSelected(649) {
		t.Fatalf("after ctrl-click: %q", v.Bulk.Count.Text)
	}
	h.arrive(2) // 651 and 652 arrive: not selected
	if v.isSelected(651) || !v.isSelected(650) {
		t.Fatal("a delivery that arrived after Ctrl+A is selected, or one before is not")
	}
	ids, err := v.selectionSpec().resolve(context.Background(), h.store, 0)
	if err != nil || len(ids) != 649 || ids[0] != 650 || ids[len(ids)-1] != 1 || slices.Contains(ids, 649) {
		t.Fatalf("resolved %d ids (%v…), %v", len(ids), ids[:min(3, len(ids))], err)
	}
	// Delete asks first, saying how many and what cannot be undone.
	h.win.skipConfirm = false
	test.Tap(v.Bulk.Delete)
	ov := h.win.w.Canvas().Overlays().Top()
	if ov == nil {
		t.Fatal("no confirmation")
	}
	text := labelsIn(ov)
	if !strings.Contains(text, "Delete 649 deliveries from the store?") || !strings.Contains(text, "cannot be undone") {
		t.Fatalf("confirmation says %q", text)
	}
	confirm := buttonIn(t, ov, "Delete 649 deliveries")
	test.Tap(confirm)
	if n := len(h.store.recs); n != 3 {
		t.Fatalf("%d deliveries left, want 649 (the one taken out) and the two that arrived after", n)
	}
	if !v.sel.empty() || v.CountLabel.Text != "3 deliveries" || !slices.Equal(rowIDs(v), []int64{652, 651, 649}) {
		t.Fatalf("after delete: selection %v, count %q, rows %v", v.sel, v.CountLabel.Text, rowIDs(v))
	}
}

// labelsIn joins the text of every label under o.
func labelsIn(o fyne.CanvasObject) string {
	var b strings.Builder
	walkAll(o, func(c fyne.CanvasObject) {
		if l, ok := c.(*widget.Label); ok {
			b.WriteString(l.Text + "\n")
		}
	})
	return b.String()
}

func buttonIn(t *testing.T, o fyne.CanvasObject, text string) *widget.Button {
	t.Helper()
	var found *widget.Button
	walkAll(o, func(c fyne.CanvasObject) {
		if b, ok := c.(*widget.Button); ok && b.Text == text {
			found = b
		}
	})
	if found == nil {
		t.Fatalf("no button %q", text)
	}
	return found
}

// walkAll visits o and everything inside it, widgets' rendered objects
// too (a dialog's labels).
func walkAll(o fyne.CanvasObject, fn func(fyne.CanvasObject)) {
	fn(o)
	switch c := o.(type) {
	case *fyne.Container:
		for _, x := range c.Objects {
			walkAll(x, fn)
		}
	case fyne.Widget:
		for _, x := range test.WidgetRenderer(c).Objects() {
			walkAll(x, fn)
		}
	}
}

// fakeForwarding forwards "again" by recording the ids; #3 fails.
type fakeForwarding struct {
	mu    sync.Mutex
	again []int64
}

func (f *fakeForwarding) SetForward(context.Context, *forward.Config) error { return nil }
func (f *fakeForwarding) SubscribeForward(func(forward.Event)) func()       { return func() {} }
func (f *fakeForwarding) ForwardStatus() []forward.RouteStatus              { return nil }
func (f *fakeForwarding) Badges(context.Context, []int64) (map[int64]forward.Badge, error) {
	return nil, nil
}
func (f *fakeForwarding) ForwardAttempts(context.Context, int64) ([]*forward.Attempt, error) {
	return nil, nil
}
func (f *fakeForwarding) ForwardRoutes() []forward.Route {
	return []forward.Route{{}}
}
func (f *fakeForwarding) ForwardAgain(_ context.Context, id int64, _ string) ([]*forward.Attempt, error) {
	f.mu.Lock()
	f.again = append(f.again, id)
	f.mu.Unlock()
	out := forward.Delivered
	if id == 3 {
		out = forward.Rejected
	}
	return []*forward.Attempt{{DeliveryID: id, Outcome: out}}, nil
}

// TestForwardAgainTheSelection: every selected delivery goes to the app
// again, and the bar says how it went.
func TestForwardAgainTheSelection(t *testing.T) {
	h := newHarness(t, manyDeliveries(6))
	fw := &fakeForwarding{}
	h.win.svc.Forward = fw
	v := h.win.deliveries
	v.Bulk = newBulkBar(v) // with the Forward again button
	click(t, v, 5, 0)
	click(t, v, 2, fyne.KeyModifierShift)
	test.Tap(v.Bulk.ForwardAgain)
	slices.Sort(fw.again)
	if !slices.Equal(fw.again, []int64{2, 3, 4, 5}) {
		t.Fatalf("forwarded again %v", fw.again)
	}
	if want := "Forwarded 4 deliveries again: 3 taken by the app (2xx), 1 not."; v.Bulk.Progress.Text != want {
		t.Fatalf("bar says %q, want %q", v.Bulk.Progress.Text, want)
	}
}

// TestReplayAndExportTakeTheSelection: with a multi-selection, Replay…
// and Export… take it (not the filter), and load exactly it.
func TestReplayAndExportTakeTheSelection(t *testing.T) {
	h := newReplayHarness(t, 5)
	v := h.win.deliveries
	click(t, v, 4, 0)
	click(t, v, 2, fyne.KeyModifierControl)
	ex := h.win.openExport()
	if ex.Pick.Explain.Text != "The 2 deliveries selected in the list." || ex.Pick.Limit.Text != "2" || ex.Pick.IncludeSelected.Visible() {
		t.Fatalf("export takes %q (limit %s)", ex.Pick.Explain.Text, ex.Pick.Limit.Text)
	}
	spec, limit, extra, err := ex.Pick.pick()
	rs, _ := h.win.replayDeps()
	recs, err2 := loadSelection(context.Background(), h.db, rs, spec, limit, extra)
	if err != nil || err2 != nil || len(recs) != 2 || recs[0].Delivery.ID != 2 || recs[1].Delivery.ID != 4 {
		t.Fatalf("loaded %d records (%v %v)", len(recs), err, err2)
	}
	h.win.w.Canvas().Overlays().Top().Hide()
	ch := h.win.openChaos()
	if ch.Pick.Explain.Text != "The 2 deliveries selected in the list." {
		t.Fatalf("replay takes %q", ch.Pick.Explain.Text)
	}
}

// TestKeysMoveAndExtend: j/k and the arrows move one delivery, Shift
// extends the selection, Home goes to the newest; the "N new" indicator
// keeps counting with a multi-selection.
func TestKeysMoveAndExtend(t *testing.T) {
	h := newHarness(t, manyDeliveries(60))
	v := h.win.deliveries
	click(t, v, 60, 0)
	v.typedRune('j')
	v.typedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
	if v.selectedID != 58 {
		t.Fatalf("j and ↓ moved to #%d", v.selectedID)
	}
	v.typedRune('k')
	if v.selectedID != 59 {
		t.Fatalf("k moved to #%d", v.selectedID)
	}
	v.mods = func() fyne.KeyModifier { return fyne.KeyModifierShift }
	v.typedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
	v.typedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
	v.mods = func() fyne.KeyModifier { return 0 }
	if got := selected(v); !slices.Equal(got, []int64{59, 58, 57}) || v.Bulk.Count.Text != "3 selected" {
		t.Fatalf("shift+↓ selected %v (%q)", got, v.Bulk.Count.Text)
	}
	// Scrolled away, deliveries arrive: the selection stays, Newest counts.
	v.List.ScrollToOffset(20 * v.rowStride())
	h.arrive(4)
	if !strings.Contains(v.Newest.Text, "4 new") || !slices.Equal(selected(v), []int64{59, 58, 57}) {
		t.Fatalf("Newest %q, selected %v", v.Newest.Text, selected(v))
	}
	v.typedKey(&fyne.KeyEvent{Name: fyne.KeyHome})
	if v.List.GetScrollOffset() != 0 || v.Newest.Text != "Newest" {
		t.Fatalf("Home: offset %v, Newest %q", v.List.GetScrollOffset(), v.Newest.Text)
	}
	v.typedKey(&fyne.KeyEvent{Name: fyne.KeyUp})
	if v.selectedID != 58 || !v.sel.empty() {
		t.Fatalf("↑ after a selection: #%d, selection %v", v.selectedID, v.sel)
	}
	v.typedRune('?')
	if ov := h.win.w.Canvas().Overlays().Top(); ov == nil || !strings.Contains(labelsIn(ov), "Ctrl+A") {
		t.Fatal("? shows no keyboard help")
	}
}
