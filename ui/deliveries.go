package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

// Filter choices shown in the selects.
const (
	allTypes       = "All event types"
	anySignature   = "Any signature"
	allDedupe      = "New and duplicates"
	duplicatesOnly = "Duplicates only"
	divergentOnly  = "Divergent only"
)

// deliveriesView is the Deliveries tab: filters, the live list and the
// detail pane of the selected delivery. Widgets are fields so tests can
// drive them.
type deliveriesView struct {
	win   *mainWindow
	model listModel

	TypeSelect    *widget.Select
	SigSelect     *widget.Select
	DedupeSelect  *widget.Select
	ProblemsCheck *widget.Check
	Search        *widget.Entry
	ClearButton   *widget.Button
	// Expression is the filter as an expression (ui/filter.go): the
	// quick filters write its start, the user may edit or extend it.
	Expression *exprEntry
	ExprHelp   *widget.Button
	// ExprError shows a compile error under the field, the caret under
	// the column; FilterNote what the last search could not check.
	ExprError   *widget.Label
	ExprMessage *widget.Label
	errorBox    *fyne.Container
	FilterNote  *widget.Label
	// Newest scrolls the list back to the newest delivery (Home does
	// too); it says how many arrived above the rows in view.
	Newest     *widget.Button
	List       *rowList
	CountLabel *widget.Label
	NoMatch    *widget.Label
	Detail     *detailView
	Empty      *emptyState

	// badges holds the forward badge of loaded rows that have one.
	badges map[int64]forward.Badge

	// selectedID is the delivery shown in the detail pane (0: none). The
	// rows draw the selection from it and sel: the list's own selection
	// is an index, which live rows arriving above would move.
	selectedID int64
	// sel is the multi-selection (ui/selection.go); Bulk its actions.
	sel  multiSelection
	Bulk *bulkBar
	// mods reports the keyboard modifiers held (Ctrl-, Shift-click).
	mods func() fyne.KeyModifier
	// rowViews are the row objects the list made (it reuses them).
	rowViews []*rowView
	// newAbove counts deliveries that arrived above the rows in view
	// while the list was scrolled away from the newest.
	newAbove int
	// stride is a row's height plus the list's gap, once measured.
	stride float32
	// counting is set while a recount of the filter runs; recount asks
	// for another when it ends.
	counting, recount bool
	// rowsAt is when the rows last followed the newest; rowsDue is set
	// while a refresh of them waits (a flood: floodRowsEvery).
	rowsAt  time.Time
	rowsDue bool
	// quiet suppresses filter queries while Clear resets several widgets.
	quiet bool

	// filter is what the list shows; quickExpr the part of the expression
	// the quick filters wrote; settingExpr is set while the window (not
	// the user) writes the field.
	filter      listFilter
	quickExpr   string
	settingExpr bool
	// stopSearch cancels the running search (a newer filter); searching
	// is set while one runs.
	stopSearch context.CancelFunc
	searching  bool
	// progressEvery is how often a search says how far it got.
	progressEvery time.Duration

	split   *container.Split
	body    *fyne.Container
	content fyne.CanvasObject
}

func newDeliveriesView(win *mainWindow) *deliveriesView {
	v := &deliveriesView{win: win, badges: map[int64]forward.Badge{}, progressEvery: searchProgressEvery, mods: currentModifiers}
	v.model.total = -1

	bar := v.buildFilterBar() // ui/filter.go
	v.Newest = widget.NewButtonWithIcon("Newest", theme.MoveUpIcon(), v.newest)
	v.Newest.Importance = widget.LowImportance
	v.CountLabel = widget.NewLabel("")
	v.CountLabel.TextStyle = fyne.TextStyle{Italic: true}
	v.NoMatch = widget.NewLabelWithStyle("No delivery matches these filters.", fyne.TextAlignCenter, fyne.TextStyle{Italic: true})
	v.NoMatch.Hide()

	v.List = newRowList(v)
	v.Detail = newDetailView(win)
	v.Empty = newEmptyState(win)
	v.Bulk = newBulkBar(v)

	filters := container.NewVBox(
		bar,
		container.NewBorder(nil, nil, v.ProblemsCheck, v.Newest, container.NewHBox(layout.NewSpacer(), v.CountLabel)),
		v.Bulk.content,
	)
	left := container.NewBorder(filters, nil, nil, nil, container.NewStack(v.List, container.NewCenter(v.NoMatch)))
	v.split = container.NewHSplit(left, v.Detail.content)
	v.split.Offset = 0.46
	v.body = container.NewStack(v.split)
	v.content = v.body
	return v
}

// start loads the first page.
func (v *deliveriesView) start() { v.query() }

// clearFilters sets every quick filter back to all and empties the
// expression.
func (v *deliveriesView) clearFilters() {
	v.quiet = true
	v.TypeSelect.SetSelectedIndex(0)
	v.SigSelect.SetSelectedIndex(0)
	v.DedupeSelect.SetSelectedIndex(0)
	v.ProblemsCheck.SetChecked(false)
	v.Search.SetText("")
	v.quickExpr = ""
	v.setExpression("")
	v.quiet = false
	v.showExprError(nil)
	v.filter = listFilter{}
	v.query()
}

// query reloads the list for the current filter. Without an expression
// the first page and the count are separate store calls, so the rows
// appear before a slow count; with one, a search walks the store (see
// search).
func (v *deliveriesView) query() {
	if v.stopSearch != nil {
		v.stopSearch()
		v.stopSearch = nil
	}
	v.searching = false
	f := v.filter
	gen := v.model.setFilter(f)
	v.win.snapshotLive()
	v.newAbove = 0
	v.List.ScrollToTop()
	v.setFilterNote("", widget.MediumImportance)
	v.selectionFilterChanged()
	v.refreshList()
	if !f.empty() {
		v.search(gen, f)
		return
	}
	store := v.win.svc.Store
	v.win.bridge.Go(func() func() {
		page, err := store.List(context.Background(), storage.Filter{}, pageSize)
		badges := v.win.loadBadges(summaryIDs(page))
		return func() {
			if err != nil {
				v.win.showError(fmt.Errorf("list deliveries: %w", err))
				v.model.applyPage(gen, nil, 0)
			} else if !v.model.applyPage(gen, page, pageSize) {
				return
			}
			clear(v.badges)
			v.setBadges(badges)
			v.refreshList()
		}
	})
	v.win.bridge.Go(func() func() {
		n, err := store.Count(context.Background(), storage.Filter{})
		if err != nil {
			return nil
		}
		return func() {
			v.model.applyCount(gen, n)
			v.refreshCounts()
		}
	})
}

// loadMore loads the page after the loaded rows.
func (v *deliveriesView) loadMore() {
	gen, f := v.model.gen, v.model.filter
	before := v.model.nextPage()
	v.model.loading = true
	store := v.win.svc.Store
	v.win.bridge.Go(func() func() {
		page, err := findPage(context.Background(), store, f, before, pageSize)
		badges := v.win.loadBadges(summaryIDs(page))
		return func() {
			if err != nil {
				v.win.showError(fmt.Errorf("list deliveries: %w", err))
				page = nil
			}
			v.setBadges(badges)
			if v.model.applyPage(gen, page, pageSize) {
				v.refreshList()
			}
		}
	})
}

// liveQuery runs on the bridge goroutine: which of the changed deliveries
// match the current filter. The filter is read through the returned
// generation check, so a filter change in between only wastes a query.
func (v *deliveriesView) liveQuery(ids []int64, f listFilter, gen int) func() {
	matching, err := findAmong(context.Background(), v.win.svc.Store, f, ids)
	if err != nil {
		return nil
	}
	badges := v.win.loadBadges(summaryIDs(matching))
	return func() {
		v.setBadges(badges)
		v.keepPlace(func() bool { return v.model.applyLive(gen, ids, matching) })
		for _, id := range ids {
			if id == v.selectedID {
				v.Detail.load(id) // re-verified: show the new verdict
			}
		}
	}
}

// resyncRows is how many of the newest matching rows a store change
// reads again: enough for what another process writes between two looks
// of the store's watch; more means a gap, and the list starts over there.
const resyncRows = 50

// resyncQuery runs on the bridge goroutine after the store changed (any
// process): the newest matching rows, merged by id into the list, so
// deliveries stored by another process and analyses finished since show.
func (v *deliveriesView) resyncQuery(f listFilter, gen int) func() {
	page, err := findPage(context.Background(), v.win.svc.Store, f, 0, resyncRows)
	if err != nil {
		return nil
	}
	badges := v.win.loadBadges(summaryIDs(page))
	return func() {
		v.setBadges(badges)
		v.keepPlace(func() bool { return v.model.applyNewest(gen, page, resyncRows) })
		if !v.model.filter.empty() && v.model.total < 0 {
			// A gap: the list started over, and its count with it.
			v.recountSoon()
		}
	}
}

// recountSoon counts the filter's matches again (another process may have
// stored some), one count at a time.
func (v *deliveriesView) recountSoon() {
	if v.counting {
		v.recount = true
		return
	}
	v.counting = true
	f, gen, store := v.model.filter, v.model.gen, v.win.svc.Store
	v.win.bridge.Go(func() func() {
		st, err := rules.Find(context.Background(), store, f.expr, rules.FindOptions{}, func(*rules.Input) error { return nil })
		n := int64(st.Matched)
		return func() {
			v.counting = false
			if err == nil {
				v.model.applyCount(gen, n)
				v.refreshCounts()
			}
			if v.recount {
				v.recount = false
				v.recountSoon()
			}
		}
	})
}

// maxRows bounds the rows the list keeps while it follows the newest:
// older ones are dropped and paged in again when scrolled to, so a window
// open for a million deliveries holds a few pages.
const maxRows = 2 * pageSize

// rowStride is a row's height plus the list's gap between rows.
func (v *deliveriesView) rowStride() float32 {
	if v.stride == 0 {
		v.stride = newRowView().MinSize().Height + v.List.Theme().Size(theme.SizeNamePadding)
	}
	return v.stride
}

// keepPlace applies change (rows inserted or removed) so that the rows in
// view stay where they are: at the top the list follows the newest, else
// it keeps the row at its top in place and counts what arrived above it.
func (v *deliveriesView) keepPlace(change func() bool) {
	off, stride := v.List.GetScrollOffset(), v.rowStride()
	at := int(off / stride)
	var anchor int64
	if off >= 1 && at < len(v.model.rows) {
		anchor = v.model.rows[at].ID
	}
	if !change() {
		return
	}
	if anchor != 0 {
		j, _ := v.model.find(anchor)
		if j > at {
			v.newAbove += j - at
		}
		v.List.ScrollToOffset(off + float32(j-at)*stride)
	} else if len(v.model.rows) > maxRows {
		v.trim(maxRows)
	}
	if anchor == 0 && v.win.bridge.flooding() && time.Since(v.rowsAt) < floodRowsEvery {
		v.rowsLater()
		v.refreshCounts()
		v.refreshNewest()
		return
	}
	v.rowsAt = time.Now()
	v.refreshList()
}

// rowsLater refreshes the rows floodRowsEvery after they last followed
// the newest, once however many batches arrive meanwhile.
func (v *deliveriesView) rowsLater() {
	if v.rowsDue {
		return
	}
	v.rowsDue = true
	wait := floodRowsEvery - time.Since(v.rowsAt)
	v.win.bridge.Go(func() func() {
		time.Sleep(wait)
		return func() {
			v.rowsDue = false
			v.rowsAt = time.Now()
			v.refreshList()
		}
	})
}

// trim drops the rows from n on and their badges; scrolling there pages
// them in again.
func (v *deliveriesView) trim(n int) {
	for _, r := range v.model.rows[n:] {
		delete(v.badges, r.ID)
	}
	v.model.rows = slices.Clip(v.model.rows[:n])
	v.model.exhausted = false
}

// newest scrolls the list to the newest delivery (the Newest button, Home).
func (v *deliveriesView) newest() {
	v.newAbove = 0
	v.List.ScrollToTop()
	v.List.Refresh()
	v.refreshNewest()
}

// refreshNewest says on the Newest button how many arrived out of view.
func (v *deliveriesView) refreshNewest() {
	text, imp := "Newest", widget.LowImportance
	if v.newAbove > 0 {
		text, imp = fmt.Sprintf("%s new", human.Count(int64(v.newAbove))), widget.HighImportance
	}
	if v.Newest.Text != text || v.Newest.Importance != imp {
		v.Newest.Text, v.Newest.Importance = text, imp
		v.Newest.Refresh()
	}
}

// summaryIDs is the ids of rows.
func summaryIDs(rows []storage.Summary) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// setBadges merges loaded badges; a queued delivery whose attempt
// already arrived keeps the attempt's.
func (v *deliveriesView) setBadges(b map[int64]forward.Badge) {
	for id, bd := range b {
		if old, ok := v.badges[id]; ok && bd.State == forward.BadgeQueued && old.State != forward.BadgeQueued {
			continue
		}
		v.badges[id] = bd
	}
}

// attemptsDone shows finished attempts on their rows at once (no store
// read: the attempt is the row's new latest).
func (v *deliveriesView) attemptsDone(attempts []*forward.Attempt) {
	for _, a := range attempts {
		if _, ok := v.model.find(a.DeliveryID); ok {
			v.badges[a.DeliveryID] = a.Badge()
		}
	}
	v.List.Refresh()
}

// reloadBadges reads the loaded rows' badges again (forwarding changed).
func (v *deliveriesView) reloadBadges() {
	ids := summaryIDs(v.model.rows)
	v.win.bridge.Go(func() func() {
		badges := v.win.loadBadges(ids)
		return func() {
			clear(v.badges)
			v.setBadges(badges)
			v.List.Refresh()
		}
	})
}

func (v *deliveriesView) refreshList() {
	v.List.Refresh()
	v.refreshCounts()
	v.refreshNewest()
	noRows := len(v.model.rows) == 0 && !v.model.loading
	everEmpty := noRows && v.model.filter.empty() && v.win.stats.Deliveries == 0
	var want fyne.CanvasObject = v.split
	if everEmpty {
		want = v.Empty.content
	}
	// Only a swap needs the body refreshed: a refresh would also go
	// through the whole detail pane, which was most of a filter change.
	if len(v.body.Objects) != 1 || v.body.Objects[0] != want {
		v.body.Objects = []fyne.CanvasObject{want}
		v.body.Refresh()
	}
	if noRows && !everEmpty {
		v.NoMatch.Show()
	} else {
		v.NoMatch.Hide()
	}
}

// refreshCounts says how many deliveries the list holds. Without a
// filter that is the store's count, the header's: both read one number.
func (v *deliveriesView) refreshCounts() {
	var text string
	switch {
	case v.model.filter.empty():
		text = plural.Count(int(v.win.stats.Deliveries), "delivery", "deliveries")
	case v.searching:
		return // the search says how far it got
	case v.model.total < 0:
		text = fmt.Sprintf("%d shown", len(v.model.rows))
	default:
		text = fmt.Sprintf("%s of %s match", human.Count(v.model.total), human.Count(v.win.stats.Deliveries))
	}
	if v.CountLabel.Text != text {
		v.CountLabel.SetText(text)
	}
}

// selectIndex shows row i in the detail pane.
func (v *deliveriesView) selectIndex(i int) {
	if i >= 0 && i < len(v.model.rows) {
		v.selectID(v.model.rows[i].ID)
	}
}

// selectID shows delivery id in the detail pane and marks its row; no
// list refresh (which sets every visible row again).
func (v *deliveriesView) selectID(id int64) {
	if id == v.selectedID {
		return
	}
	v.selectedID = id
	v.showSelection()
	v.Detail.load(id)
}

// showSelection marks the rows of the selected deliveries in view.
func (v *deliveriesView) showSelection() {
	for _, r := range v.rowViews {
		r.setSelected(r.shown != 0 && v.isSelected(r.shown))
	}
}

// shownMessage is the delivery in the detail pane and its hook uuid
// ("" when none, or not a message).
func (v *deliveriesView) shownMessage() (int64, string) {
	if r := v.Detail.rec; r != nil && r.Analysis != nil {
		return r.Delivery.ID, r.Analysis.HookUUID
	}
	return 0, ""
}

// isSelected reports a delivery shown in the detail pane or in the
// multi-selection.
func (v *deliveriesView) isSelected(id int64) bool {
	return id == v.selectedID || v.sel.has(id)
}

// unselect empties the detail pane.
func (v *deliveriesView) unselect() {
	v.selectedID = 0
	v.Detail.clear()
	v.showSelection()
}

// move selects the previous (-1) or next (+1) row alone.
func (v *deliveriesView) move(delta int) {
	v.clearSelection()
	i := 0
	if cur, ok := v.model.find(v.selectedID); ok && v.selectedID != 0 {
		i = cur + delta
	}
	if i < 0 || i >= len(v.model.rows) {
		return
	}
	v.selectIndex(i)
	v.List.ScrollTo(i)
}

// open jumps to a delivery by id (links between copies of one event). A
// delivery hidden by the filters is still shown in the detail pane.
func (v *deliveriesView) open(id int64) {
	if i, ok := v.model.find(id); ok {
		v.selectIndex(i)
		v.List.ScrollTo(i)
		return
	}
	v.selectedID = id
	v.showSelection()
	v.Detail.load(id)
}

// removed drops deleted deliveries from the list.
func (v *deliveriesView) removed(ids ...int64) {
	v.model.remove(ids...)
	for _, id := range ids {
		if id == v.selectedID {
			v.unselect()
		}
	}
	v.refreshList()
}

// copySelectedBody is Ctrl+C outside a text field.
func (v *deliveriesView) copySelectedBody() {
	if v.Detail.rec != nil {
		v.Detail.copyBody()
	}
}

// rowList is the virtualized deliveries list; it also moves the selection
// with the arrow keys (widget.List only moves its focus highlight).
type rowList struct {
	widget.List
	v *deliveriesView
}

func newRowList(v *deliveriesView) *rowList {
	l := &rowList{v: v}
	l.Length = func() int { return len(v.model.rows) }
	l.CreateItem = func() fyne.CanvasObject {
		r := newRowView()
		r.onTap = v.tapRow
		v.rowViews = append(v.rowViews, r)
		return r
	}
	l.UpdateItem = func(i widget.ListItemID, o fyne.CanvasObject) {
		if i < len(v.model.rows) {
			s := v.model.rows[i]
			b, has := v.badges[s.ID]
			o.(*rowView).set(s, v.model.filter, v.isSelected(s.ID))
			o.(*rowView).forward.set(forwardLook(b, has, v.win.forwardOff()))
		}
		if i == 0 && v.newAbove > 0 && l.GetScrollOffset() < v.rowStride() {
			// Scrolled back up to the newest: nothing new is out of view.
			v.newAbove = 0
			v.refreshNewest()
		}
		if v.model.needMore(i) {
			v.loadMore()
		}
	}
	l.OnSelected = func(i widget.ListItemID) {
		if i >= 0 && i < len(v.model.rows) {
			v.win.trace.selected(v.model.rows[i].ID)
		}
		v.selectIndex(i)
		// The rows draw the selection by id (selectedID).
		l.UnselectAll()
	}
	l.ExtendBaseWidget(l)
	return l
}

// TypedKey moves the selection with the keys (ui/keys.go).
func (l *rowList) TypedKey(ev *fyne.KeyEvent) {
	if !l.v.typedKey(ev) {
		l.List.TypedKey(ev)
	}
}

// TypedRune moves the selection with j and k.
func (l *rowList) TypedRune(r rune) {
	if !l.v.typedRune(r) {
		l.List.TypedRune(r)
	}
}

// rowView is one list row: time, signature and dedupe badges, summary,
// problems, path.
type rowView struct {
	widget.BaseWidget
	// selected is the selection's background, shown on the selected row.
	selected *canvas.Rectangle
	// shown is the id of the delivery the row shows; onTap selects it.
	shown    int64
	onTap    func(id int64)
	when     *widget.Label
	sig      *badge
	dedupe   *badge
	problems *badge
	// forward is the delivery's forwarding: → 200, → refused, queued, → off.
	forward *badge
	summary *widget.Label
	path    *widget.Label
}

func newRowView() *rowView {
	r := &rowView{
		selected: canvas.NewRectangle(theme.Color(theme.ColorNameSelection)),
		when:     widget.NewLabelWithStyle("00:00:00.000", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true}),
		sig:      newBadge(92),
		dedupe:   newBadge(0),
		problems: newBadge(0),
		forward:  newBadge(0),
		summary:  widget.NewLabel(""),
		path:     widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true}),
	}
	r.summary.Truncation = fyne.TextTruncateEllipsis
	r.path.Truncation = fyne.TextTruncateEllipsis
	r.path.SizeName = theme.SizeNameCaptionText
	r.ExtendBaseWidget(r)
	return r
}

func (r *rowView) CreateRenderer() fyne.WidgetRenderer {
	// Line 1: when it came, whether it is genuine, what it says.
	// Line 2: the request, then dedupe and problems badges.
	top := container.NewBorder(nil, nil, container.NewHBox(r.when, container.NewCenter(r.sig)), nil, r.summary)
	bottom := container.NewBorder(nil, nil, nil,
		container.NewHBox(container.NewCenter(r.forward), container.NewCenter(r.dedupe), container.NewCenter(r.problems)), r.path)
	r.selected.Hide()
	return widget.NewSimpleRenderer(container.NewStack(r.selected, container.New(&tightVBox{}, top, bottom)))
}

// tightVBox stacks rows without the theme's padding between them, so a
// two-line list row stays compact; hidden objects take no room.
type tightVBox struct{}

func (tightVBox) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	n := 0
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		m := o.MinSize()
		s.Width = max(s.Width, m.Width)
		s.Height += m.Height
		n++
	}
	if n > 1 {
		s.Height -= 8 * float32(n-1)
	}
	return s
}

func (tightVBox) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	y := float32(0)
	n := 0
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		h := o.MinSize().Height
		if n > 0 {
			y -= 8
		}
		n++
		o.Resize(fyne.NewSize(size.Width, h))
		o.Move(fyne.NewPos(0, y))
		y += h
	}
}

// Tapped selects the delivery the row shows.
func (r *rowView) Tapped(*fyne.PointEvent) {
	if r.onTap != nil && r.shown != 0 {
		r.onTap(r.shown)
	}
}

// setSelected shows or hides the selection's background.
func (r *rowView) setSelected(selected bool) {
	if selected != r.selected.Visible() {
		r.selected.FillColor = r.Theme().Color(theme.ColorNameSelection, fyne.CurrentApp().Settings().ThemeVariant())
		r.selected.Hidden = !selected
		r.selected.Refresh()
	}
}

func (r *rowView) set(s storage.Summary, f listFilter, selected bool) {
	r.shown = s.ID
	r.setSelected(selected)
	setText(r.when, s.ReceivedAt.Local().Format("15:04:05.000"))
	switch {
	case s.Rejected:
		r.sig.set("not POST", theme.CancelIcon(), theme.ColorNameDisabled)
	case !s.Analyzed:
		r.sig.set(signatureLook(""))
	default:
		r.sig.set(signatureLook(s.Signature))
	}
	r.dedupe.set(dedupeLook(s))
	r.problems.set(problemsLook(s.Problems))
	setText(r.summary, clipped(rowSummary(s, f)))
	meta := fmt.Sprintf("#%d  %s %s · %s", s.ID, s.Method, s.Path, human.Bytes(s.BodyLength))
	if s.Status != 0 {
		meta += fmt.Sprintf(" · %d", s.Status)
	}
	if s.EventCount > 1 {
		meta += fmt.Sprintf(" · %d events", s.EventCount)
	}
	if s.RelaySeq > 0 {
		meta += fmt.Sprintf(" · via relay #%d", s.RelaySeq)
	}
	setText(r.path, meta)
}

// setText changes a label's text only when it differs: a list refresh
// sets every visible row again, and SetText lays the label out anew.
func setText(l *widget.Label, s string) {
	if l.Text != s {
		l.SetText(s)
	}
}

// rowSummary is the one line a row shows for a delivery. A batch listed
// because of a type filter says that type first: its first event may be
// of another.
func rowSummary(s storage.Summary, f listFilter) string {
	switch {
	case s.Rejected:
		return fmt.Sprintf("%s request rejected (only POST is a delivery)", s.Method)
	case !s.Analyzed:
		return "analysing…"
	case s.DecodeError != "":
		return "Not a webhook message: " + s.DecodeError
	case s.EventCount == 0:
		return "Message with no events"
	}
	line := s.FirstSummary
	if line == "" {
		line = s.FirstType
	}
	if len(f.types) > 0 && !slices.Contains(f.types, s.FirstType) {
		return fmt.Sprintf("%s in a batch of %d events; the first: %s", strings.Join(f.types, " or "), s.EventCount, line)
	}
	if s.EventCount > 1 {
		line += fmt.Sprintf("  (+%d more)", s.EventCount-1)
	}
	if s.Truncated {
		line = "[truncated] " + line
	}
	return line
}

// ago says how long ago t was, for facts like "first seen".
func ago(t time.Time, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
