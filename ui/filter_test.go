package ui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/hookscope/hookscope/rules"
)

// TestQuickFiltersWriteTheExpression: each quick filter writes its part
// of the expression the user sees; what the user adds after it stays
// when a quick filter changes; editing the quick part sets the quick
// filters back to all; the list and its count follow the expression.
func TestQuickFiltersWriteTheExpression(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	expect := func(what, expr string, ids ...int64) {
		t.Helper()
		if v.Expression.Text != expr {
			t.Fatalf("%s: expression %q, want %q", what, v.Expression.Text, expr)
		}
		if got := rowIDs(v); !slices.Equal(got, ids) {
			t.Fatalf("%s: rows %v, want %v", what, got, ids)
		}
		if v.ExprError.Visible() {
			t.Fatalf("%s: an error shows: %s", what, v.ExprError.Text)
		}
	}
	expect("nothing set", "", 4, 3, 2, 1)
	v.TypeSelect.SetSelected("media.ready")
	expect("a type", `events.exists(e, e.type == "media.ready")`, 3, 2)
	if want := "2 of 4 match"; v.CountLabel.Text != want {
		t.Fatalf("count %q, want %q", v.CountLabel.Text, want)
	}
	test.Type(v.Search, "borealis")
	expect("and words", `events.exists(e, e.type == "media.ready") && delivery.mentions("borealis")`, 2)
	if want := "1 of 4 match"; v.CountLabel.Text != want {
		t.Fatalf("count %q, want %q", v.CountLabel.Text, want)
	}

	// The user extends it; a quick filter changed keeps the extension.
	v.Search.SetText("")
	typeAtEnd(v.Expression, ` && delivery.signature == "valid"`)
	expect("extended", `events.exists(e, e.type == "media.ready") && delivery.signature == "valid"`, 3)
	if v.TypeSelect.Selected != "media.ready" {
		t.Fatalf("an extension reset the type to %q", v.TypeSelect.Selected)
	}
	v.TypeSelect.SetSelected("media.created")
	expect("type changed", `events.exists(e, e.type == "media.created") && delivery.signature == "valid"`, 4, 3, 1)
	v.DedupeSelect.SetSelected(duplicatesOnly)
	expect("duplicates", `events.exists(e, e.type == "media.created") && events.exists(e, e.dedupe != "first") && delivery.signature == "valid"`, 4)

	// Editing what the quick filters wrote: they no longer describe it.
	v.Expression.SetText(`events.exists(e, e.type == "media.ready")`)
	expect("quick part edited", `events.exists(e, e.type == "media.ready")`, 3, 2)
	if v.TypeSelect.Selected != allTypes || v.DedupeSelect.Selected != allDedupe {
		t.Fatalf("quick filters not reset: %q %q", v.TypeSelect.Selected, v.DedupeSelect.Selected)
	}
	// A disjunction the user wrote keeps its meaning behind a quick filter.
	v.Expression.SetText(`delivery.id == 1 || delivery.id == 2`)
	v.SigSelect.SetSelected("invalid")
	expect("disjunction", `delivery.signature == "invalid" && (delivery.id == 1 || delivery.id == 2)`, 2)

	// A long expression shows whole: the field grows to three lines, and
	// back to one when emptied.
	test.Tap(v.ClearButton)
	one := v.Expression.MinSize().Height
	line := fyne.MeasureText("M", theme.TextSize(), fyne.TextStyle{Monospace: true}).Height
	v.Expression.SetText(strings.Repeat(`delivery.path != "/x" && `, 12) + "true")
	if h := v.Expression.MinSize().Height; h < one+1.5*line || h > one+2.5*line {
		t.Fatalf("a long expression's field is %v high, one line %v (%v a line)", h, one, line)
	}
	test.Tap(v.ClearButton)
	expect("cleared", "", 4, 3, 2, 1)
	if h := v.Expression.MinSize().Height; h != one {
		t.Fatalf("the emptied field stays %v high, one line %v", h, one)
	}
	if v.CountLabel.Text != "4 deliveries" {
		t.Fatalf("count after clear %q", v.CountLabel.Text)
	}
}

// TestExpressionErrorUnderTheField: a wrong expression is said under the
// field, the caret under its column in a monospace line, never in a
// dialog, and the list keeps the last expression that compiled.
func TestExpressionErrorUnderTheField(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.SigSelect.SetSelected("invalid")
	v.Expression.SetText(`events.exists(e, e.tpye == "media.ready")`)
	if !v.ExprError.Visible() || !v.ExprError.TextStyle.Monospace {
		t.Fatal("no monospace error under the field")
	}
	want := "events.exists(e, e.tpye == \"media.ready\")\n" + strings.Repeat(" ", 18) + "^"
	if v.ExprError.Text != want {
		t.Fatalf("error text:\n%s\nwant\n%s", v.ExprError.Text, want)
	}
	if m := v.ExprMessage.Text; !strings.HasPrefix(m, "column 19: undefined field 'tpye' (? lists the fields)\nThe list") || !strings.Contains(m, `The list still shows: delivery.signature == "invalid"`) {
		t.Fatalf("message: %s", m)
	}
	if got := rowIDs(v); !slices.Equal(got, []int64{2}) {
		t.Fatalf("rows %v: the last valid expression's are kept", got)
	}
	if ov := h.win.w.Canvas().Overlays().Top(); ov != nil {
		t.Fatal("an error opened an overlay")
	}
	v.Expression.SetText(`delivery.signature == "unsigned"`)
	if !strings.Contains(v.ExprMessage.Text, `did you mean "missing"?`) {
		t.Fatalf("message: %s", v.ExprMessage.Text)
	}
	// A long expression: the caret's part of it shows, the column in view.
	long := `delivery.path == "/webhooks" && delivery.method == "POST" && delivery.size > 10 && events.exists(e, e.tpye == "x")`
	v.Expression.SetText(long)
	lines := strings.Split(v.ExprError.Text, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "…") || !strings.Contains(lines[0], "e.tpye") || len([]rune(lines[0])) >= len(long) {
		t.Fatalf("long expression's error:\n%s", v.ExprError.Text)
	}
	if col := strings.Index(lines[1], "^"); col < 0 || !strings.HasPrefix(string([]rune(lines[0])[col:]), ".tpye") {
		t.Fatalf("the caret is not under the column:\n%s", v.ExprError.Text)
	}
	v.Expression.SetText(`events.exists(e, e.type == "media.ready")`)
	if v.ExprError.Visible() || v.ExprMessage.Visible() {
		t.Fatal("the error stays after a fix")
	}
	if got := rowIDs(v); !slices.Equal(got, []int64{3, 2}) {
		t.Fatalf("rows %v after the fix", got)
	}
}

// TestExpressionCouldNotBeChecked: deliveries the expression fails on are
// not listed, and the line under the field says how many and why.
func TestExpressionCouldNotBeChecked(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.Expression.SetText(`events.exists(e, e.payload.project.name != "")`)
	if !v.FilterNote.Visible() || !strings.Contains(v.FilterNote.Text, "could not be checked") || !strings.Contains(v.FilterNote.Text, "project") {
		t.Fatalf("note %v %q", v.FilterNote.Visible(), v.FilterNote.Text)
	}
	// media.ready carries no project: 2 fails; 3's first event has one.
	if got := rowIDs(v); !slices.Equal(got, []int64{4, 3, 1}) {
		t.Fatalf("rows %v", got)
	}
	v.Expression.SetText(`events.exists(e, has(e.payload.project) && e.payload.project.name != "")`)
	if v.FilterNote.Visible() {
		t.Fatalf("note stays: %q", v.FilterNote.Text)
	}
}

// slowSource lets a test act in the middle of a search: after reads
// deliveries it calls during once (on the search's goroutine: the
// harness's bridge is inline, so that is the test's).
type slowSource struct {
	Store
	reads  int
	at     int
	during func()
}

func (s *slowSource) EachNarrowed(ctx context.Context, q rules.Query, fn func(*rules.Input) error) error {
	return s.Store.EachNarrowed(ctx, q, func(in *rules.Input) error {
		s.reads++
		if s.reads == s.at && s.during != nil {
			f := s.during
			s.during = nil
			f()
		}
		return fn(in)
	})
}

// TestSearchProgressAndCancel: a search says how far it got, and a new
// keystroke cancels it: the list shows the newer filter's rows, never
// the older one's, and its count.
func TestSearchProgressAndCancel(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.progressEvery = 0 // report every delivery checked
	src := &slowSource{Store: h.win.svc.Store, at: 2}
	h.win.svc.Store = src
	var progress string
	src.during = func() { progress = v.CountLabel.Text }
	v.Expression.SetText(`delivery.path == "/webhooks" && delivery.body != ""`)
	if !strings.HasPrefix(progress, "Searching… checked 1 of 4") {
		t.Fatalf("progress %q", progress)
	}
	if v.CountLabel.Text != "4 of 4 match" {
		t.Fatalf("count %q", v.CountLabel.Text)
	}

	// A keystroke in the middle of the next search.
	src.reads, src.at = 0, 2
	src.during = func() { typeAtEnd(v.Expression, ` && delivery.signature == "invalid"`) }
	v.Expression.SetText(`delivery.body != ""`)
	if got := rowIDs(v); !slices.Equal(got, []int64{2}) {
		t.Fatalf("rows %v: the cancelled search's rows came back", got)
	}
	if v.CountLabel.Text != "1 of 4 match" || v.searching {
		t.Fatalf("count %q (searching %v)", v.CountLabel.Text, v.searching)
	}
	// The older search read 2, the newer all 4, and the older stopped at
	// the next one it was handed.
	if src.reads != 7 {
		t.Fatalf("%d deliveries read: the cancelled search went on", src.reads)
	}
}

// TestLiveRowsFollowTheExpression: a delivery arriving while an
// expression filters shows when it matches, with the count, and not
// otherwise.
func TestLiveRowsFollowTheExpression(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.Expression.SetText(`delivery.mentions("aurora")`)
	if got := rowIDs(v); !slices.Equal(got, []int64{4, 1}) {
		t.Fatalf("rows %v", got)
	}
	ctx := context.Background()
	rec1, _ := h.db.Get(ctx, 1)
	rec2, _ := h.db.Get(ctx, 2)
	ingestBody(t, h.eng, rec1.Delivery.Body, capturedSecret, 5) // Aurora again: matches
	ingestBody(t, h.eng, rec2.Delivery.Body, capturedSecret, 6) // Borealis: does not
	if err := h.eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	h.win.bridge.Flush()
	if got := rowIDs(v); !slices.Equal(got, []int64{5, 4, 1}) {
		t.Fatalf("rows %v after live deliveries", got)
	}
	if v.CountLabel.Text != "3 of 6 match" {
		t.Fatalf("count %q", v.CountLabel.Text)
	}
}

// typeAtEnd types s at the end of e's text, as a user does.
func typeAtEnd(e *exprEntry, s string) {
	e.CursorRow, e.CursorColumn = 0, len([]rune(e.Text))
	test.Type(e, s)
}
