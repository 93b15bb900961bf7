package ui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
)

// multiSelection is the list's selection of several deliveries
// (Ctrl-click, Shift-click, Ctrl+A). Fyne's List selects one row; this
// one holds delivery ids, never row indexes (the list is live and
// batched), and Ctrl+A is the filter itself, not the rows in memory: it
// holds every delivery the filter matches up to the newest row shown then,
// whatever was loaded.
type multiSelection struct {
	ids map[int64]bool
	// all is Ctrl+A: every delivery the filter matches with an id up to
	// allMax, but those in except. allCount is how many that is (-1 until
	// the filter is counted).
	all      bool
	allMax   int64
	allCount int64
	except   map[int64]bool
	// anchor is where a Shift-click's range starts.
	anchor int64
}

// empty reports no multi-selection (the single click's delivery aside).
func (s *multiSelection) empty() bool { return !s.all && len(s.ids) == 0 }

// has reports a selected delivery; a row shown under Ctrl+A matches the
// filter, so its id is enough.
func (s *multiSelection) has(id int64) bool {
	if s.all {
		return id <= s.allMax && !s.except[id]
	}
	return s.ids[id]
}

// count is how many are selected, -1 while not known.
func (s *multiSelection) count() int64 {
	if !s.all {
		return int64(len(s.ids))
	}
	if s.allCount < 0 {
		return -1
	}
	return max(s.allCount-int64(len(s.except)), 0)
}

func (s *multiSelection) clear() {
	anchor := s.anchor
	*s = multiSelection{anchor: anchor}
}

func (s *multiSelection) add(id int64) {
	if s.all {
		delete(s.except, id)
		return
	}
	if s.ids == nil {
		s.ids = map[int64]bool{}
	}
	s.ids[id] = true
}

func (s *multiSelection) toggle(id int64) {
	switch {
	case s.all && s.has(id):
		if s.except == nil {
			s.except = map[int64]bool{}
		}
		s.except[id] = true
	case s.has(id):
		delete(s.ids, id)
	default:
		s.add(id)
	}
}

// selectionSpec is what a bulk action takes, copied off the UI
// goroutine: ids (Ctrl/Shift-click), the filter up to an id minus
// exceptions (Ctrl+A), or, when nothing is selected, the filter itself.
type selectionSpec struct {
	ids []int64
	// all takes every delivery the filter matches with an id up to
	// allMax (0: no bound), but except; ctrlA says the user selected so.
	all    bool
	ctrlA  bool
	filter listFilter
	allMax int64
	except map[int64]bool
	// count is how many it holds, -1 while not known.
	count int64
}

// picked reports a selection made in the list (not the filter as such).
func (p selectionSpec) picked() bool { return !p.all || p.ctrlA }

// selectionSpec copies the multi-selection.
func (v *deliveriesView) selectionSpec() selectionSpec {
	s := &v.sel
	if !s.all {
		ids := slices.Sorted(maps.Keys(s.ids))
		slices.Reverse(ids)
		return selectionSpec{ids: ids, count: int64(len(ids))}
	}
	return selectionSpec{all: true, ctrlA: true, filter: v.model.filter, allMax: s.allMax, except: maps.Clone(s.except), count: s.count()}
}

// pickSpec is what the Replay and Export dialogs take: the selection,
// else every delivery the filter matches.
func (v *deliveriesView) pickSpec() selectionSpec {
	if !v.sel.empty() {
		return v.selectionSpec()
	}
	n := v.model.total
	if v.model.filter.empty() {
		n = v.win.stats.Deliveries
	}
	return selectionSpec{all: true, filter: v.model.filter, count: n}
}

// describe says which deliveries the selection holds.
func (p selectionSpec) describe() string {
	if !p.all {
		return fmt.Sprintf("The %s selected in the list.", plural.Count(len(p.ids), "delivery", "deliveries"))
	}
	what := "every delivery (no filter is set)"
	if !p.filter.empty() {
		what = "every delivery the filter matches: " + ellipsis(p.filter.source(), 160)
	}
	n := " (counting…)"
	if p.count >= 0 {
		n = ": " + plural.Count(int(p.count), "delivery", "deliveries") + "."
	}
	if p.ctrlA {
		return fmt.Sprintf("Selected with Ctrl+A, %s, up to #%d%s", what, p.allMax, n)
	}
	return "Nothing is selected in the list (Ctrl-click, Shift-click or Ctrl+A select), so this takes " + what + n
}

// countNow counts the selection (off the UI goroutine).
func (p selectionSpec) countNow(ctx context.Context, store Store) (int64, error) {
	if !p.all {
		return int64(len(p.ids)), nil
	}
	o := rules.FindOptions{}
	if p.allMax > 0 {
		o.BeforeID = p.allMax + 1
	}
	var n int64
	_, err := rules.Find(ctx, store, p.filter.expr, o, func(in *rules.Input) error {
		if !p.except[in.Record.Delivery.ID] {
			n++
		}
		return nil
	})
	return n, err
}

// resolve lists the selected ids, newest first, at most limit (0: all).
// Ctrl+A's selection and the filter are found by the filter, so they hold
// deliveries never loaded into the list. Run it off the UI goroutine.
func (p selectionSpec) resolve(ctx context.Context, store Store, limit int) ([]int64, error) {
	if !p.all {
		if limit > 0 && len(p.ids) > limit {
			return p.ids[:limit], nil
		}
		return p.ids, nil
	}
	o := rules.FindOptions{NewestFirst: true}
	if p.allMax > 0 {
		o.BeforeID = p.allMax + 1
	}
	var ids []int64
	_, err := rules.Find(ctx, store, p.filter.expr, o, func(in *rules.Input) error {
		if id := in.Record.Delivery.ID; !p.except[id] {
			ids = append(ids, id)
		}
		if limit > 0 && len(ids) >= limit {
			return errEnoughIDs
		}
		return nil
	})
	if errors.Is(err, errEnoughIDs) {
		err = nil
	}
	return ids, err
}

var errEnoughIDs = errors.New("enough")

// modifiers are the keyboard modifiers held now (the desktop driver's;
// tests replace v.mods).
func currentModifiers() fyne.KeyModifier {
	if d, ok := fyne.CurrentApp().Driver().(desktop.Driver); ok {
		return d.CurrentKeyModifiers()
	}
	return 0
}

// toggleKey is Ctrl (Cmd on macOS) for Ctrl-click.
const toggleKey = fyne.KeyModifierControl | fyne.KeyModifierSuper

// tapRow selects the delivery a tapped row shows: a plain click shows it
// alone, Ctrl-click adds or removes it, Shift-click selects the loaded
// rows from the last clicked one to it. It goes by the row's delivery,
// not its index: during a flood the rows follow the newest once a
// second, so the model's row at that index may already be another one.
func (v *deliveriesView) tapRow(id int64) {
	v.win.trace.selected(id)
	if c := fyne.CurrentApp().Driver().CanvasForObject(v.List); c != nil {
		c.Focus(v.List) // the keys move from here
	}
	mods := v.mods()
	switch {
	case mods&fyne.KeyModifierShift != 0:
		v.selectRange(id)
	case mods&toggleKey != 0:
		if v.sel.empty() && v.selectedID != 0 && v.selectedID != id {
			v.sel.add(v.selectedID)
		}
		v.sel.toggle(id)
		v.sel.anchor = id
		if v.sel.has(id) {
			v.selectID(id)
		}
		v.selectionChanged()
	default:
		v.sel.anchor = id
		if !v.sel.empty() {
			v.sel.clear()
			v.selectionChanged()
		}
		v.selectID(id)
	}
}

// selectRange selects the loaded rows between the anchor (the last
// clicked row, else the one shown) and id, by id.
func (v *deliveriesView) selectRange(id int64) {
	from := cmpOrID(v.sel.anchor, v.selectedID, id)
	lo, hi := min(from, id), max(from, id)
	v.sel.clear()
	v.sel.anchor = from
	for _, r := range v.model.rows {
		if r.ID >= lo && r.ID <= hi {
			v.sel.add(r.ID)
		}
	}
	v.sel.add(id)
	v.selectID(id)
	v.selectionChanged()
}

// cmpOrID is the first non-zero id.
func cmpOrID(ids ...int64) int64 {
	for _, id := range ids {
		if id != 0 {
			return id
		}
	}
	return 0
}

// selectAll is Ctrl+A: every delivery the filter matches, up to the
// newest row shown (those arriving later are not selected).
func (v *deliveriesView) selectAll() {
	if len(v.model.rows) == 0 {
		return
	}
	v.sel = multiSelection{all: true, allMax: v.model.rows[0].ID, allCount: -1, anchor: v.sel.anchor}
	v.countAll()
	v.selectionChanged()
}

// countAll sets Ctrl+A's count from the filter's, once known.
func (v *deliveriesView) countAll() {
	if v.sel.all && v.sel.allCount < 0 && v.model.total >= 0 {
		v.sel.allCount = max(v.model.total-int64(v.model.above(v.sel.allMax)), 0)
	}
}

// clearSelection is Escape: back to the one delivery shown.
func (v *deliveriesView) clearSelection() {
	if v.sel.empty() {
		return
	}
	v.sel.clear()
	v.selectionChanged()
}

// selectionFilterChanged drops the selection when the filter changes: a
// selection of rows no longer shown would be acted on unseen.
func (v *deliveriesView) selectionFilterChanged() {
	if !v.sel.empty() {
		v.sel.clear()
		v.selectionChanged()
	}
}

// selectionChanged redraws the selected rows and the selection bar.
func (v *deliveriesView) selectionChanged() {
	v.showSelection()
	v.Bulk.refresh()
}

// extend is Shift+↑/↓: the next row joins the selection.
func (v *deliveriesView) extend(delta int) {
	cur, ok := v.model.find(v.selectedID)
	if !ok || v.selectedID == 0 {
		v.move(delta)
		return
	}
	i := cur + delta
	if i < 0 || i >= len(v.model.rows) {
		return
	}
	if v.sel.empty() {
		v.sel.add(v.selectedID)
	}
	next := v.model.rows[i].ID
	v.sel.add(next)
	v.selectID(next)
	v.List.ScrollTo(i)
	v.selectionChanged()
}

// bulkBar is the row of actions under the filters: on the filtered list
// when nothing is multi-selected (Replay selection…, Export…, Import…,
// Consumer check…), on the selection when something is ("37 selected":
// Replay…, Export…, Forward again, Delete, Clear).
type bulkBar struct {
	v *deliveriesView

	Count        *widget.Label
	Replay       *widget.Button
	Export       *widget.Button
	ForwardAgain *widget.Button
	Delete       *widget.Button
	Clear        *widget.Button
	// Progress says how far Forward again or Delete got.
	Progress *widget.Label

	filtered fyne.CanvasObject
	selected *fyne.Container
	content  *fyne.Container
	// busy is set while a bulk action runs.
	busy bool
}

func newBulkBar(v *deliveriesView) *bulkBar {
	m := v.win
	b := &bulkBar{v: v}
	b.Count = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	// Words without icons (Delete keeps its own): the row fits a
	// 1280 px window's list with a five-digit count.
	b.Replay = widget.NewButton("Replay…", func() { m.openChaos() })
	b.Export = widget.NewButton("Export…", func() { m.openExport() })
	b.ForwardAgain = widget.NewButton("Forward again", b.forwardAgain)
	b.Delete = widget.NewButtonWithIcon("Delete…", theme.DeleteIcon(), b.confirmDelete)
	b.Delete.Importance = widget.DangerImportance
	// Clear is Escape's button.
	b.Clear = widget.NewButtonWithIcon("", theme.CancelIcon(), v.clearSelection)
	b.Clear.Importance = widget.LowImportance
	b.Progress = widget.NewLabel("")
	b.Progress.Hide()
	row := newFlow()
	row.Add(b.Count)
	if _, ok := m.replayDeps(); ok {
		row.Add(b.Replay)
		row.Add(b.Export)
	}
	if m.svc.Forward != nil {
		row.Add(b.ForwardAgain)
	}
	row.Add(b.Delete)
	row.Add(b.Clear)
	b.selected = container.NewVBox(row, b.Progress)
	b.filtered = newBulkActions(m) // ui/replay_toolbar.go
	b.content = container.NewStack(b.filtered)
	return b
}

// refresh shows the filtered list's actions or the selection's.
func (b *bulkBar) refresh() {
	sel := &b.v.sel
	want := b.filtered
	if !sel.empty() || b.busy {
		want = b.selected
		n := "counting…"
		if c := sel.count(); c >= 0 {
			n = human.Count(c) + " selected"
		}
		if sel.empty() {
			n = ""
		}
		b.Count.SetText(n)
	}
	if b.content.Objects[0] != want {
		b.content.Objects = []fyne.CanvasObject{want}
		b.content.Refresh()
	}
	for _, btn := range []*widget.Button{b.Replay, b.Export, b.ForwardAgain, b.Delete} {
		if b.busy || sel.empty() {
			btn.Disable()
		} else {
			btn.Enable()
		}
	}
}

// setProgress shows how far a bulk action got ("" hides the line).
func (b *bulkBar) setProgress(text string, imp widget.Importance) {
	b.Progress.Importance = imp
	b.Progress.SetText(text)
	if text == "" {
		b.Progress.Hide()
	} else {
		b.Progress.Show()
	}
}

// forwardAgain sends every selected delivery to the app again, one after
// the other, off the UI goroutine, with progress and a summary.
func (b *bulkBar) forwardAgain() {
	m := b.v.win
	fw := m.svc.Forward
	if fw == nil {
		return
	}
	if len(fw.ForwardRoutes()) == 0 {
		m.showError(errors.New("forward again: forwarding is off; set Forward to in the header first"))
		return
	}
	spec := b.v.selectionSpec()
	store := m.svc.Store
	b.busy = true
	b.refresh()
	b.setProgress("Forwarding again…", widget.MediumImportance)
	prog := &progress{b: m.bridge}
	ctx, cancel := m.runContext()
	m.bridge.Go(func() func() {
		defer cancel()
		ids, err := spec.resolve(ctx, store, 0)
		var ok, failed, skipped int
		var firstErr error
		for i, id := range ids {
			if ctx.Err() != nil {
				break
			}
			attempts, ferr := fw.ForwardAgain(ctx, id, "")
			switch {
			case ferr != nil:
				failed++
				if firstErr == nil {
					firstErr = fmt.Errorf("#%d: %w", id, ferr)
				}
			case len(attempts) == 0:
				skipped++
			default:
				if allDelivered(attempts) {
					ok++
				} else {
					failed++
				}
			}
			done := i + 1
			prog.push(done == len(ids), func() {
				b.setProgress(fmt.Sprintf("Forwarding again: %s of %s…", human.Count(int64(done)), human.Count(int64(len(ids)))), widget.MediumImportance)
			})
		}
		return func() {
			b.busy = false
			b.refresh()
			if err != nil {
				b.setProgress("Forward again stopped: "+err.Error(), widget.DangerImportance)
				return
			}
			msg := fmt.Sprintf("Forwarded %s again: %d taken by the app (2xx), %d not", plural.Count(len(ids), "delivery", "deliveries"), ok, failed)
			if skipped > 0 {
				msg += fmt.Sprintf(", %d matched no route", skipped)
			}
			msg += "."
			imp := widget.SuccessImportance
			if failed > 0 {
				imp = widget.WarningImportance
				if firstErr != nil {
					msg += " First error: " + firstErr.Error()
				}
			}
			b.setProgress(msg, imp)
			m.showStatus(msg)
		}
	})
}

// allDelivered reports attempts all taken by the app (2xx).
func allDelivered(as []*forward.Attempt) bool {
	for _, a := range as {
		if a.Outcome != forward.Delivered {
			return false
		}
	}
	return true
}

// confirmDelete asks before deleting the selection, saying how many and
// what cannot be undone.
func (b *bulkBar) confirmDelete() {
	spec := b.v.selectionSpec()
	n := "the selected deliveries"
	if spec.count >= 0 {
		n = plural.Count(int(spec.count), "delivery", "deliveries")
	}
	msg := fmt.Sprintf("Delete %s from the store?\n\nTheir bodies, headers, events, forward attempts and replay history are removed "+
		"from %s. This cannot be undone (an export made before keeps its copy).", n, cmpOrText(b.v.win.svc.StorePath, "the store file"))
	if b.v.win.skipConfirm {
		b.deleteSelection(spec)
		return
	}
	d := dialog.NewConfirm("Delete "+n, msg, func(ok bool) {
		if ok {
			b.deleteSelection(spec)
		}
	}, b.v.win.w)
	d.SetConfirmText("Delete " + n)
	d.SetDismissText("Cancel")
	d.SetConfirmImportance(widget.DangerImportance)
	d.Show()
}

func cmpOrText(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// deleteBatch is how many deliveries one Delete call removes: each call
// is one transaction, so the receiver's writes go on in between.
const deleteBatch = 500

// deleteSelection deletes the selected deliveries off the UI goroutine.
func (b *bulkBar) deleteSelection(spec selectionSpec) {
	m := b.v.win
	store := m.svc.Store
	b.busy = true
	b.refresh()
	b.setProgress("Deleting…", widget.MediumImportance)
	prog := &progress{b: m.bridge}
	m.bridge.Go(func() func() {
		ctx := context.Background()
		ids, err := spec.resolve(ctx, store, 0)
		deleted := 0
		for chunk := range slices.Chunk(ids, deleteBatch) {
			if err != nil {
				break
			}
			if err = store.Delete(ctx, chunk...); err == nil {
				deleted += len(chunk)
				done := deleted
				prog.push(done == len(ids), func() {
					b.setProgress(fmt.Sprintf("Deleting: %s of %s…", human.Count(int64(done)), human.Count(int64(len(ids)))), widget.MediumImportance)
				})
			}
		}
		gone := ids[:deleted]
		st, serr := store.Stats(ctx)
		return func() {
			b.busy = false
			b.v.removed(gone...)
			if serr == nil {
				m.setStats(st)
			}
			// Deleted rows were loaded or not: the list and its count are
			// read again.
			b.v.query()
			b.refresh()
			msg := fmt.Sprintf("Deleted %s.", plural.Count(len(gone), "delivery", "deliveries"))
			if err != nil {
				b.setProgress(msg+" Then it stopped: "+err.Error(), widget.DangerImportance)
				return
			}
			b.setProgress("", widget.MediumImportance)
			m.showStatus(msg)
		}
	})
}
