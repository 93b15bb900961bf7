package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

func manyDeliveries(n int) func(*fakeStore) {
	return func(s *fakeStore) {
		for i := range n {
			s.add("media.created", fmt.Sprintf("Media “Clip %d” created", i+1), inspector.SignatureValid, nil)
		}
	}
}

// arrive stores n deliveries and reports them to the window as the
// engine does, then applies the batch.
func (h *harness) arrive(n int) {
	for range n {
		r := h.store.add("media.ready", "ready", inspector.SignatureValid, nil)
		h.engine.sub(r)
	}
	h.win.bridge.Flush()
}

// firstShown is the delivery in the list's top visible row.
func firstShown(v *deliveriesView) int64 {
	i := int(v.List.GetScrollOffset() / v.rowStride())
	return v.model.rows[i].ID
}

// TestLiveRowsLeaveTheViewInPlaceAndSayHowManyAreNew: scrolled away from
// the newest, the rows in view stay put while deliveries arrive above
// them, the Newest button counts them, and Newest (or Home) goes back up.
// At the top, the list follows the newest.
func TestLiveRowsLeaveTheViewInPlaceAndSayHowManyAreNew(t *testing.T) {
	h := newHarness(t, manyDeliveries(60))
	v := h.win.deliveries
	v.List.ScrollToOffset(10 * v.rowStride())
	before := firstShown(v)
	h.arrive(5)
	if got := firstShown(v); got != before {
		t.Fatalf("the top row in view went from #%d to #%d", before, got)
	}
	if !strings.Contains(v.Newest.Text, "5 new") {
		t.Fatalf("Newest button = %q, want it to count 5 new", v.Newest.Text)
	}
	test.Tap(v.Newest)
	if v.List.GetScrollOffset() != 0 || v.Newest.Text != "Newest" {
		t.Fatalf("after Newest: offset %v, button %q", v.List.GetScrollOffset(), v.Newest.Text)
	}
	h.arrive(2)
	if got := firstShown(v); got != 67 {
		t.Fatalf("at the top the list shows #%d first, want the newest #67", got)
	}
	v.List.ScrollToOffset(20 * v.rowStride())
	h.arrive(1)
	v.List.TypedKey(&fyne.KeyEvent{Name: fyne.KeyHome})
	if v.List.GetScrollOffset() != 0 || firstShown(v) != 68 {
		t.Fatalf("Home: offset %v, first #%d", v.List.GetScrollOffset(), firstShown(v))
	}
}

// TestSelectionFollowsItsDeliveryNotItsIndex: rows arriving above the
// selected one leave the selection, its highlight and the detail on it,
// and the list where it was.
func TestSelectionFollowsItsDeliveryNotItsIndex(t *testing.T) {
	h := newHarness(t, manyDeliveries(30))
	v := h.win.deliveries
	v.List.ScrollToOffset(5 * v.rowStride())
	v.List.Select(7)
	id := v.model.rows[7].ID
	offset := v.List.GetScrollOffset()
	h.arrive(3)
	if v.selectedID != id || !strings.Contains(v.Detail.Title.Text, fmt.Sprintf("#%d ", id)) {
		t.Fatalf("selected #%d, detail %q; want #%d", v.selectedID, v.Detail.Title.Text, id)
	}
	if got := v.List.GetScrollOffset(); got != offset+3*v.rowStride() {
		t.Fatalf("offset %v, want %v (kept in place)", got, offset+3*v.rowStride())
	}
	var highlighted []int64
	walkRendered(v.List, func(o fyne.CanvasObject) {
		if r, ok := o.(*rowView); ok && r.selected.Visible() {
			highlighted = append(highlighted, r.shown)
		}
	})
	if len(highlighted) != 1 || highlighted[0] != id {
		t.Fatalf("highlighted rows %v, want only #%d", highlighted, id)
	}
}

// TestListKeepsAFewPagesWhileItFollows: a window that follows the newest
// for hours holds a bounded number of rows and badges.
func TestListKeepsAFewPagesWhileItFollows(t *testing.T) {
	h := newHarness(t, nil)
	v := h.win.deliveries
	for range 12 {
		h.arrive(100)
	}
	if n := len(v.model.rows); n > maxRows {
		t.Fatalf("%d rows loaded after 1,200 live deliveries, want at most %d", n, maxRows)
	}
	if v.model.exhausted {
		t.Fatal("trimmed rows cannot be paged in again: the list says it is exhausted")
	}
	if !strings.Contains(v.CountLabel.Text, "1,200 deliveries") {
		t.Fatalf("count = %q", v.CountLabel.Text)
	}
}

// TestFilterThatHidesTheSelectionEmptiesTheDetail: a filter that the
// selected delivery does not match takes it out of the detail pane.
func TestFilterThatHidesTheSelectionEmptiesTheDetail(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.open(2) // media.ready about Borealis
	v.TypeSelect.SetSelected(catalog.TypeMediaCreated)
	if v.selectedID != 0 || v.Detail.rec != nil {
		t.Fatalf("after a filter hiding it: selected #%d, detail shows %v", v.selectedID, v.Detail.rec != nil)
	}
	v.open(3) // a batch carrying media.created then media.ready
	v.TypeSelect.SetSelected(catalog.TypeMediaReady)
	if v.selectedID != 3 {
		t.Fatalf("a filter the selection matches unselected it (#%d)", v.selectedID)
	}
}

// TestTypeFilterNamesTheMatchingTypeInBatchRows: a batch listed because a
// later event matches the type filter says that type, not only its first.
func TestTypeFilterNamesTheMatchingTypeInBatchRows(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.TypeSelect.SetSelected(catalog.TypeMediaReady)
	var got string
	for i, r := range v.model.rows {
		if r.ID == 3 {
			got = rowSummary(v.model.rows[i], v.model.filter)
		}
	}
	if !strings.HasPrefix(got, "media.ready in a batch of 2 events; the first: ") {
		t.Fatalf("row #3 under the media.ready filter says %q", got)
	}
}

// TestAnotherProcessesDeliveriesShowWithinTheWatch: deliveries another
// process stores in the window's store (listen --db) appear in the list,
// and the header and the list give the same count.
func TestAnotherProcessesDeliveriesShowWithinTheWatch(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	stop := h.win.watchStore(h.db)
	defer stop()
	other, err := storage.Open(filepath.Join(h.dir, "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	eng := inspector.NewEngine(other, inspector.Options{})
	g := simulate.New(9)
	for i := range 3 {
		ingestBody(t, eng, g.Message(g.Event(catalog.TypeMediaDeleted)).Body(), capturedSecret, 10+i)
	}
	if err := eng.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := h.win.deliveries
	deadline := time.Now().Add(10 * time.Second)
	for len(v.model.rows) < 7 || !v.model.rows[0].Analyzed {
		if time.Now().After(deadline) {
			t.Fatalf("the other process's deliveries never showed: rows %v", rowIDs(v))
		}
		time.Sleep(20 * time.Millisecond)
		h.win.bridge.Flush()
	}
	if !strings.HasPrefix(h.win.header.Counts.Text, "7 deliveries") || v.CountLabel.Text != "7 deliveries" {
		t.Fatalf("header %q, list %q: want both to say 7 deliveries", h.win.header.Counts.Text, v.CountLabel.Text)
	}
}

// walkRendered calls fn for o and everything its renderers draw.
func walkRendered(o fyne.CanvasObject, fn func(fyne.CanvasObject)) {
	fn(o)
	switch x := o.(type) {
	case *fyne.Container:
		for _, c := range x.Objects {
			walkRendered(c, fn)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(x).Objects() {
			walkRendered(c, fn)
		}
	}
}

func TestFlowRateCountsTheLastSecond(t *testing.T) {
	var r flowRate
	t0 := time.Unix(100, 0)
	steps := []struct {
		at   time.Duration
		n    int
		want int
	}{
		{0, 3, 3},
		{300 * time.Millisecond, 5, 8},
		{900 * time.Millisecond, 0, 8},
		{1200 * time.Millisecond, 2, 7}, // the first batch is over a second old
		{3 * time.Second, 0, 0},
	}
	for _, s := range steps {
		if got := r.add(t0.Add(s.at), s.n); got != s.want {
			t.Errorf("at %v: %d, want %d", s.at, got, s.want)
		}
	}
}

// TestTappedRowSelectsTheDeliveryItShows: during a flood the rows follow
// the newest once a second, so the model's row at a tapped index may be
// another delivery than the one drawn there; a tap selects the drawn one.
func TestTappedRowSelectsTheDeliveryItShows(t *testing.T) {
	h := newHarness(t, manyDeliveries(20))
	v := h.win.deliveries
	var row *rowView
	for _, r := range v.rowViews {
		if r.shown == 18 {
			row = r
		}
	}
	if row == nil {
		t.Fatal("no row shows #18")
	}
	// Rows arrive and the model moves on without the rows being drawn again.
	for range 5 {
		h.store.add("media.ready", "ready", inspector.SignatureValid, nil)
	}
	page, _ := h.store.List(context.Background(), storage.Filter{}, 5)
	v.model.applyLive(v.model.gen, nil, page)
	test.Tap(row)
	if v.selectedID != 18 || !strings.Contains(v.Detail.Title.Text, "#18 ") {
		t.Fatalf("tapped the row drawn for #18: selected #%d, detail %q", v.selectedID, v.Detail.Title.Text)
	}
}
