package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

// listFilter is what the deliveries list shows: the deliveries an
// expression matches, every delivery when expr is nil. Filtering is the
// domain's (rules.Find, the store narrowing first), so the list, the
// command line's --where and the bulk actions agree on what matches.
type listFilter struct {
	expr *rules.Expr
	// types are the event types the expression narrows to: a batch row
	// listed for one of them says so (its first event may be another).
	types []string
}

func newListFilter(e *rules.Expr) listFilter {
	if e == nil {
		return listFilter{}
	}
	return listFilter{expr: e, types: e.Narrowing(time.Now()).Types}
}

// empty reports the filter that shows every delivery.
func (f listFilter) empty() bool { return f.expr == nil }

// source is the expression as typed ("" for every delivery).
func (f listFilter) source() string {
	if f.expr == nil {
		return ""
	}
	return f.expr.Source()
}

// summaries reads the rows of ids (newest first).
func summaries(ctx context.Context, store Store, ids []int64) ([]storage.Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return store.List(ctx, storage.Filter{IDs: ids}, len(ids))
}

// findPage returns the rows of up to limit deliveries f matches with ids
// below before (0: no bound), newest first. Run it off the UI goroutine.
func findPage(ctx context.Context, store Store, f listFilter, before int64, limit int) ([]storage.Summary, error) {
	if f.empty() {
		return store.List(ctx, storage.Filter{BeforeID: before}, limit)
	}
	var ids []int64
	_, err := rules.Find(ctx, store, f.expr, rules.FindOptions{NewestFirst: true, Limit: limit, BeforeID: before}, func(in *rules.Input) error {
		ids = append(ids, in.Record.Delivery.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return summaries(ctx, store, ids)
}

// findAmong returns the rows of those of ids that f matches, newest
// first. Run it off the UI goroutine.
func findAmong(ctx context.Context, store Store, f listFilter, ids []int64) ([]storage.Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if f.empty() {
		return summaries(ctx, store, ids)
	}
	lo, hi := slices.Min(ids), slices.Max(ids)
	var match []int64
	_, err := rules.Find(ctx, store, f.expr, rules.FindOptions{NewestFirst: true, AfterID: lo - 1, BeforeID: hi + 1}, func(in *rules.Input) error {
		if id := in.Record.Delivery.ID; slices.Contains(ids, id) {
			match = append(match, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return summaries(ctx, store, match)
}

// countingSource counts the deliveries the store hands an expression (the
// search's "checked N"), stops the walk when its context ends (a newer
// keystroke), and reports progress every so often. fn runs on the
// search's goroutine.
type countingSource struct {
	rules.Source
	ctx      context.Context
	read     atomic.Int64
	every    time.Duration
	last     time.Time
	progress func(read int64)
}

// EachNarrowed is the store's, counted.
func (c *countingSource) EachNarrowed(ctx context.Context, q rules.Query, fn func(*rules.Input) error) error {
	return c.Source.EachNarrowed(ctx, q, func(in *rules.Input) error {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		n := c.read.Add(1)
		if c.progress != nil && time.Since(c.last) >= c.every {
			c.last = time.Now()
			c.progress(n)
		}
		return fn(in)
	})
}

// searchProgressEvery is how often a running search says how far it got.
const searchProgressEvery = 250 * time.Millisecond

// searchResult is how a finished search went.
type searchResult struct {
	stats rules.FindStats
	err   error
}

// search runs the filter's expression over the whole store off the UI
// goroutine, newest first: the first page shows as soon as it is found,
// the count follows the walk ("checked 40,000 of 100,000"), and a newer
// filter cancels it. The list's total is the matches plus the rows that
// arrived live above the newest one the walk saw.
func (v *deliveriesView) search(gen int, f listFilter) {
	ctx, cancel := context.WithCancel(context.Background())
	v.stopSearch = cancel
	v.searching = true
	store, total, sel := v.win.svc.Store, v.win.stats.Deliveries, v.selectedID
	started := time.Now()
	var matched atomic.Int64
	src := &countingSource{Source: store, ctx: ctx, every: v.progressEvery, last: started}
	src.progress = func(read int64) {
		m := matched.Load()
		v.win.bridge.do(func() {
			if v.model.gen == gen && v.searching {
				v.showProgress(read, m, total)
			}
		})
	}
	v.win.bridge.Go(func() func() {
		defer cancel()
		var first []int64
		var top int64
		shown := false
		page := func() func() {
			rows, err := summaries(ctx, store, first)
			badges := v.win.loadBadges(first)
			return func() {
				if err != nil && ctx.Err() == nil {
					v.win.showError(fmt.Errorf("list deliveries: %w", err))
				}
				if !v.model.applyPage(gen, rows, pageSize) {
					return
				}
				v.setBadges(badges)
				v.refreshList()
			}
		}
		// The delivery in the detail pane stays there only while it
		// matches the filter, loaded or not.
		hidden := false
		if sel != 0 {
			still, err := findAmong(ctx, store, f, []int64{sel})
			hidden = err == nil && len(still) == 0
		}
		st, err := rules.Find(ctx, src, f.expr, rules.FindOptions{NewestFirst: true}, func(in *rules.Input) error {
			matched.Add(1)
			if shown {
				return nil
			}
			if top == 0 {
				top = in.Record.Delivery.ID
			}
			first = append(first, in.Record.Delivery.ID)
			if len(first) == pageSize {
				shown = true
				v.win.bridge.do(page())
			}
			return nil
		})
		if ctx.Err() != nil {
			return nil // a newer filter owns the list
		}
		var apply func()
		if !shown {
			apply = page()
		}
		res := searchResult{stats: st, err: err}
		return func() {
			if v.model.gen != gen {
				return
			}
			if apply != nil {
				apply()
			}
			if hidden && v.selectedID == sel {
				v.unselect()
			}
			v.model.applyCount(gen, int64(st.Matched)+int64(v.model.above(top)))
			v.searchDone(res)
		}
	})
}

// showProgress says how far a running search got.
func (v *deliveriesView) showProgress(read, matched int64, total int64) {
	text := fmt.Sprintf("Searching… checked %s of %s, %s so far", human.Count(read), human.Count(total), plural.Count(int(matched), "match", "matches"))
	v.CountLabel.SetText(text)
}

// searchDone shows how the search went: the count (refreshCounts) and,
// under the expression, the deliveries it could not check.
func (v *deliveriesView) searchDone(r searchResult) {
	v.searching = false
	v.refreshCounts()
	switch {
	case r.err != nil:
		v.setFilterNote(fmt.Sprintf("The search stopped: %v", r.err), widget.DangerImportance)
	case r.stats.Failed > 0:
		v.setFilterNote(fmt.Sprintf("%s could not be checked (they are not listed): %v. Guard with has() or ?. (docs/rules.md).",
			plural.Count(r.stats.Failed, "delivery", "deliveries"), r.stats.FirstFailure), widget.WarningImportance)
	default:
		v.setFilterNote("", widget.MediumImportance)
	}
}

// setFilterNote shows (or, empty, hides) the line under the expression
// about the last search.
func (v *deliveriesView) setFilterNote(text string, imp widget.Importance) {
	if text == "" {
		if v.FilterNote.Visible() {
			v.FilterNote.SetText("")
			v.FilterNote.Hide()
		}
		return
	}
	v.FilterNote.Importance = imp
	v.FilterNote.SetText(text)
	v.FilterNote.Show()
}

// quick is the quick filters' state as the domain writes it.
func (v *deliveriesView) quick() rules.Quick {
	var q rules.Quick
	if t := v.TypeSelect.Selected; t != "" && t != allTypes {
		q.Types = []string{t}
	}
	if s := v.SigSelect.Selected; s != "" && s != anySignature {
		q.Signatures = []string{s}
	}
	switch v.DedupeSelect.Selected {
	case duplicatesOnly:
		q.Duplicates = true
	case divergentOnly:
		q.Divergent = true
	}
	q.Problems = v.ProblemsCheck.Checked
	q.Text = strings.TrimSpace(v.Search.Text)
	return q
}

// The filter bar. The quick filters (search words, type, signature,
// duplicates, problems) write the start of the expression, which the user
// sees and may edit or extend: the expression is the one truth. Editing
// the part the quick filters wrote sets them back to "all" (they no
// longer describe it); a change of a quick filter rewrites its part and
// keeps what the user added after it.

// buildFilterBar makes the filter widgets.
func (v *deliveriesView) buildFilterBar() fyne.CanvasObject {
	types := append([]string{allTypes}, catalog.TypeNames()...)
	v.TypeSelect = widget.NewSelect(types, func(string) { v.quickChanged() })
	v.TypeSelect.SetSelectedIndex(0)
	v.SigSelect = widget.NewSelect([]string{anySignature, "valid", "invalid", "missing", "unverified"}, func(string) { v.quickChanged() })
	v.SigSelect.SetSelectedIndex(0)
	v.DedupeSelect = widget.NewSelect([]string{allDedupe, duplicatesOnly, divergentOnly}, func(string) { v.quickChanged() })
	v.DedupeSelect.SetSelectedIndex(0)
	v.ProblemsCheck = widget.NewCheck("Problems only", func(bool) { v.quickChanged() })
	v.Search = widget.NewEntry()
	v.Search.SetPlaceHolder("Search words in bodies and summaries…  (Ctrl+F)")
	v.Search.OnChanged = func(string) { v.quickChanged() }
	v.ClearButton = widget.NewButtonWithIcon("Clear", theme.ContentClearIcon(), v.clearFilters)

	v.Expression = newExprEntry()
	v.Expression.SetPlaceHolder(`an expression, e.g. delivery.signature == "invalid"`)
	v.Expression.OnChanged = v.expressionChanged
	v.ExprHelp = widget.NewButtonWithIcon("", theme.QuestionIcon(), v.showExprHelp)
	v.ExprError = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	v.ExprError.Importance = widget.DangerImportance
	v.ExprError.Wrapping = fyne.TextWrapOff
	v.ExprError.Truncation = fyne.TextTruncateClip
	v.ExprError.Hide()
	v.ExprMessage = widget.NewLabel("")
	v.ExprMessage.Importance = widget.DangerImportance
	v.ExprMessage.Wrapping = fyne.TextWrapWord
	v.ExprMessage.Hide()
	// The caret lines and the message read as one block.
	v.errorBox = container.New(&tightVBox{}, v.ExprError, v.ExprMessage)
	v.errorBox.Hide()
	v.FilterNote = widget.NewLabel("")
	v.FilterNote.Wrapping = fyne.TextWrapWord
	v.FilterNote.Hide()

	where := widget.NewLabelWithStyle("where", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return container.NewVBox(
		container.NewBorder(nil, nil, nil, v.ClearButton, v.Search),
		container.NewGridWithColumns(3, v.TypeSelect, v.SigSelect, v.DedupeSelect),
		container.NewBorder(nil, nil, where, v.ExprHelp, v.Expression),
		v.errorBox,
		v.FilterNote,
	)
}

// exprEntry is the expression field: monospace, wrapped, one to three
// lines as the expression needs (fit), so the whole expression is in
// view: a one-line field showed the end of a long one only.
type exprEntry struct{ widget.Entry }

// exprRows is the most lines the field grows to before it scrolls.
const exprRows = 3

func newExprEntry() *exprEntry {
	e := &exprEntry{}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapBreak
	e.TextStyle = fyne.TextStyle{Monospace: true}
	e.ExtendBaseWidget(e)
	e.SetMinRowsVisible(1)
	return e
}

// fit shows as many lines as the text needs at the field's width.
func (e *exprEntry) fit() {
	w := e.Size().Width - 2*theme.InnerPadding() - 2*theme.InputBorderSize()
	if w <= 0 {
		return
	}
	cw := fyne.MeasureText("M", theme.TextSize(), e.TextStyle).Width
	// Characters a line holds, one spare for the cursor.
	per := max(int(w/cw)-1, 1)
	rows := 0
	for _, line := range strings.Split(e.Text, "\n") {
		rows += max(1, (len([]rune(line))+per-1)/per)
	}
	rows = min(max(rows, 1), exprRows)
	e.SetMinRowsVisible(rows)
}

// Resize fits the lines to the new width.
func (e *exprEntry) Resize(s fyne.Size) {
	e.Entry.Resize(s)
	e.fit()
}

// quickChanged rewrites the quick filters' part of the expression.
func (v *deliveriesView) quickChanged() {
	if v.quiet || v.List == nil {
		return
	}
	next := v.quick().Expr()
	rest := v.userPart(v.Expression.Text)
	text := next
	switch {
	case next == "":
		text = rest
	case rest != "":
		text = next + " && " + rest
	}
	v.quickExpr = next
	v.setExpression(text)
	v.applyExpression(text)
}

// userPart is what the user wrote after the quick filters' part, as a
// conjunct ("" when nothing). Text that is not "&& …" after the quick
// part (the user wrote "Q || x") is taken whole.
func (v *deliveriesView) userPart(text string) string {
	text = strings.TrimSpace(text)
	if v.quickExpr != "" && strings.HasPrefix(text, v.quickExpr) {
		rest := strings.TrimSpace(text[len(v.quickExpr):])
		if rest == "" {
			return ""
		}
		if after, ok := strings.CutPrefix(rest, "&&"); ok {
			return conjunctOf(strings.TrimSpace(after))
		}
	}
	return conjunctOf(text)
}

// conjunctOf wraps an expression in parentheses when a quick filter put
// before it with && would bind tighter than its own operators.
func conjunctOf(s string) string {
	if s == "" || !strings.Contains(s, "||") && !strings.Contains(s, "?") {
		return s
	}
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		return s
	}
	return "(" + s + ")"
}

// setExpression shows text in the field without treating it as typing.
func (v *deliveriesView) setExpression(text string) {
	if v.Expression.Text == text {
		return
	}
	v.settingExpr = true
	v.Expression.SetText(text)
	v.settingExpr = false
	v.Expression.fit()
}

// expressionChanged is the user typing in the expression field.
func (v *deliveriesView) expressionChanged(text string) {
	if v.settingExpr || v.quiet || v.List == nil {
		return
	}
	v.Expression.fit()
	if v.quickExpr != "" && !strings.HasPrefix(text, v.quickExpr) {
		// The quick filters' part was edited: they no longer describe it.
		v.quiet = true
		v.TypeSelect.SetSelectedIndex(0)
		v.SigSelect.SetSelectedIndex(0)
		v.DedupeSelect.SetSelectedIndex(0)
		v.ProblemsCheck.SetChecked(false)
		v.Search.SetText("")
		v.quiet = false
		v.quickExpr = ""
	}
	v.applyExpression(text)
}

// applyExpression compiles text and, when it compiles, filters the list
// by it; when it does not, the caret line goes under the field and the
// list keeps the last expression that did.
func (v *deliveriesView) applyExpression(text string) {
	if strings.TrimSpace(text) == "" {
		v.showExprError(nil)
		v.setFilter(listFilter{})
		return
	}
	e, err := v.win.compiler.Compile(text)
	if err != nil {
		v.showExprError(err)
		return
	}
	v.showExprError(nil)
	v.setFilter(newListFilter(e))
}

// exprErrorWidth is how many characters of the expression the caret line
// shows when the label's width is not known yet.
const exprErrorWidth = 60

// showExprError shows a compile error under the field (nil hides it): the
// part of the expression around the column with a caret under it
// (monospace, never wrapped, so the caret stays under its character),
// then the message, wrapped, and what the list shows meanwhile.
func (v *deliveriesView) showExprError(err error) {
	if err == nil {
		if v.ExprError.Visible() || v.ExprMessage.Visible() {
			v.ExprError.SetText("")
			v.ExprError.Hide()
			v.ExprMessage.SetText("")
			v.ExprMessage.Hide()
			v.errorBox.Hide()
		}
		return
	}
	v.errorBox.Show()
	msg := err.Error()
	var ce rules.CompileErrors
	if errors.As(err, &ce) && len(ce) > 0 {
		msg = shortMessage(ce[0].Error())
		if len(ce) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(ce)-1)
		}
		width := exprErrorWidth
		if w := v.ExprError.Size().Width; w > 0 {
			cw := fyne.MeasureText("M", theme.TextSize(), fyne.TextStyle{Monospace: true}).Width
			width = max(20, int((w-2*theme.InnerPadding())/cw))
		}
		v.ExprError.SetText(caretLines(ce[0], width))
		v.ExprError.Show()
	} else {
		v.ExprError.Hide()
	}
	if shown := v.model.filter.source(); shown != "" {
		msg += "\nThe list still shows: " + ellipsis(shown, 160)
	} else {
		msg += "\nThe list still shows every delivery."
	}
	v.ExprMessage.SetText(msg)
	v.ExprMessage.Show()
}

// shortMessage drops a long message's parenthesised hint (the fields a
// delivery and an event have: five lines under a narrow field, and the ?
// button lists them).
func shortMessage(msg string) string {
	if i := strings.Index(msg, " ("); i > 0 && len(msg) > 100 {
		return msg[:i] + " (? lists the fields)"
	}
	return msg
}

// caretLines is the error's line of the expression, cut to width runes
// around the column ("…" where cut), and a caret under the column.
func caretLines(e *rules.Error, width int) string {
	lines := strings.Split(e.Expr, "\n")
	line := ""
	if e.Line >= 1 && e.Line <= len(lines) {
		line = strings.ReplaceAll(lines[e.Line-1], "\t", " ")
	}
	r := []rune(line)
	col := max(0, min(e.Column-1, len(r)))
	from := 0
	if len(r) > width {
		// Keep the column two thirds of the way in.
		from = max(0, min(col-width*2/3, len(r)-width+1))
	}
	to := min(len(r), from+width)
	shown := string(r[from:to])
	pad := col - from
	if from > 0 {
		shown = "…" + string(r[from+1:to])
	}
	if to < len(r) {
		shown = string([]rune(shown)[:len([]rune(shown))-1]) + "…"
	}
	return shown + "\n" + strings.Repeat(" ", pad) + "^"
}

// ellipsis cuts s to n runes.
func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// setFilter shows the deliveries f matches.
func (v *deliveriesView) setFilter(f listFilter) {
	if f.source() == v.model.filter.source() && v.model.total >= 0 {
		return
	}
	v.filter = f
	v.query()
}

// exprExamples are the expression help's examples: what each finds.
var exprExamples = []struct{ what, expr string }{
	{"a media.updated whose thumbnail changed", `events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`},
	{"one visitor's viewing sessions", `events.exists(e, e.type.startsWith("viewing_session.") && e.payload.?visitor.?id.orValue("") == "v_123")`},
	{"your app answered 500 (forwarding)", `delivery.forward.exists(f, f.status == 500)`},
	{"failed signatures in the last two hours", `delivery.signature == "invalid" && delivery.received_at > now - duration("2h")`},
	{"messages the service sent more than once", `delivery.resend`},
	{"batches of three events or more", `events.size() >= 3`},
	{"an old sender version", `!delivery.headers["user-agent"].startsWith("Service-Webhooks/0.0.4")`},
}

// showExprHelp opens a short guide to the expression field: the
// variables, and examples to use as they are.
func (v *deliveriesView) showExprHelp() {
	intro := widget.NewLabel("The filters above write a CEL expression into the \"where\" field; edit it or write your own. " +
		"It sees delivery (id, received_at, method, path, headers, size, body, signature, status, answer, hook_uuid, source, resend, problems, forward), " +
		"events (each with type, uuid, generated_at, payload, metadata, problems, summary, dedupe) and now. " +
		"delivery.mentions(\"words\") is the search box. docs/rules.md lists every field.")
	intro.Wrapping = fyne.TextWrapWord
	rows := container.NewVBox(intro)
	var d *widget.PopUp
	for _, ex := range exprExamples {
		code := widget.NewLabelWithStyle(ex.expr, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
		code.Wrapping = fyne.TextWrapBreak
		use := widget.NewButton("Use", func() {
			v.setExpression(ex.expr)
			v.expressionChanged(ex.expr)
			if d != nil {
				d.Hide()
			}
		})
		rows.Add(widget.NewLabelWithStyle(ex.what, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		rows.Add(container.NewBorder(nil, nil, nil, use, code))
	}
	d = v.win.showDialog("Filter expressions", container.NewVScroll(rows), fyne.NewSize(760, 560), nil)
}
