package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
)

// The re-send observatory in the window: the Re-sends tab (every
// message, the learned schedule) and the detail pane's Re-sends tab (the
// selected delivery's message). The service's spec leaves its re-send
// schedule out; these show it from what the store holds (the domain:
// inspector/resends).

// maxLanes bounds the messages the Re-sends tab draws (the newest): the
// schedule and the exports still read every message.
const maxLanes = 500

// resendsReload is the shortest gap between two reads of the timelines
// while deliveries arrive with the tab open.
const resendsReload = 2 * time.Second

// resendsView is the window's Re-sends tab.
type resendsView struct {
	win *mainWindow

	// Scope keeps the messages the Deliveries filter selects a delivery of.
	Scope         *widget.Check
	RefreshButton *widget.Button
	ExportJSON    *widget.Button
	ExportCSV     *widget.Button
	Sentence      *widget.Label
	Retries       *widget.Label
	Histogram     *gapHistogram
	histScroll    *container.Scroll
	top           *container.Scroll
	Axis          *axisView
	Lanes         *widget.List
	// Message is the card of the shown delivery's message.
	Message *resendsPane
	// Hover says the attempt under the pointer; Summary what the lanes
	// leave out; Empty how to provoke re-sends when there are none.
	Hover   *widget.Label
	Summary *widget.Label
	Empty   *widget.Label

	// shown are the re-sent messages drawn, newest first.
	shown []resends.Timeline
	axis  timeAxis
	// schedule is the last one learned (tests read it).
	schedule resends.Schedule
	// loading is set while a read runs; again asks for another after it;
	// loadedAt is when the last one started; due is set while a reload
	// waits.
	loading, again, due bool
	loadedAt            time.Time

	content fyne.CanvasObject
}

func newResendsView(m *mainWindow) *resendsView {
	r := &resendsView{win: m}
	r.Scope = widget.NewCheck("only the messages the Deliveries filter selects", func(bool) { r.load() })
	r.RefreshButton = widget.NewButtonWithIcon("Refresh", theme.ViewRefreshIcon(), r.load)
	r.ExportJSON = widget.NewButtonWithIcon("Export JSON…", theme.DocumentSaveIcon(), func() { r.chooseExport(false) })
	r.ExportCSV = widget.NewButtonWithIcon("Export CSV…", theme.DocumentSaveIcon(), func() { r.chooseExport(true) })
	r.Sentence = widget.NewLabelWithStyle("Reading the store…", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	r.Sentence.Wrapping = fyne.TextWrapWord
	r.Retries = widget.NewLabel("")
	r.Retries.Wrapping = fyne.TextWrapWord
	r.Histogram = newGapHistogram()
	r.Message = newResendsPane(m)
	r.Axis = newAxisView()
	r.Hover = widget.NewLabel("Point at a mark to read the attempt; click it to open the delivery.")
	r.Hover.Truncation = fyne.TextTruncateEllipsis
	r.Summary = widget.NewLabel("")
	r.Summary.Wrapping = fyne.TextWrapWord
	r.Empty = widget.NewLabel("No message was sent more than once yet. The service sends a message again when it gets no 2xx within 10 s: " +
		"set an answer mode other than 200 in Settings (or answer rules with hookscope listen --answer, for example " +
		"'events.exists(e, e.type == \"media.ready\") => 500 x2 then 200'), and the timelines and the schedule show here.")
	r.Empty.Wrapping = fyne.TextWrapWord
	r.Empty.Hide()
	r.Lanes = widget.NewList(
		func() int { return len(r.shown) },
		func() fyne.CanvasObject { return newLaneRow(r.win, r.setHover) },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(r.shown) {
				o.(*laneRow).set(r.shown[i], r.axis)
			}
		})

	head := container.NewBorder(nil, nil,
		widget.NewLabelWithStyle("How the service re-sends", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewHBox(r.RefreshButton, r.ExportJSON, r.ExportCSV), r.Scope)
	// The bars scroll sideways past maxHistogramWidth, so fifteen of them
	// never widen the window.
	r.histScroll = container.NewHScroll(r.Histogram)
	schedule := container.NewBorder(nil, nil, r.histScroll, nil, r.Retries)
	legend := legendView(widget.NewLabelWithStyle("Messages sent more than once, newest first:", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	lanesHead := container.NewVBox(legend, r.Hover, container.NewBorder(nil, nil, laneLabelSpace(), nil, r.Axis))
	// The schedule scrolls above a divider and the lanes fill below it, so
	// the tab never sets the window's minimum height.
	// The shown delivery's message (when it was re-sent) comes first: it is
	// what the detail's "Sent N times…" opens the tab for.
	r.top = container.NewVScroll(container.NewVBox(head, r.Message.content, r.Sentence, schedule, r.Summary, r.Empty))
	split := container.NewVSplit(r.top, container.NewBorder(lanesHead, nil, nil, nil, r.Lanes))
	split.Offset = 0.45
	r.content = split
	return r
}

// maxHistogramWidth is the widest the histogram is shown before it
// scrolls.
const maxHistogramWidth = 460

// laneLabelWidth is the room left of every lane for the message's uuid.
const laneLabelWidth = 190

func laneLabelSpace() fyne.CanvasObject {
	return container.NewGridWrap(fyne.NewSize(laneLabelWidth, 1), widget.NewLabel(""))
}

// laneRow is one message in the Re-sends tab: its uuid and attempt count,
// then its lane.
type laneRow struct {
	widget.BaseWidget
	Label *widget.Label
	Lane  *laneView
}

func newLaneRow(m *mainWindow, hover func(string)) *laneRow {
	r := &laneRow{Label: widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true}), Lane: newLaneView(false)}
	r.Label.Truncation = fyne.TextTruncateEllipsis
	r.Lane.onTap = m.openDelivery
	r.Lane.onHover = hover
	r.ExtendBaseWidget(r)
	return r
}

func (r *laneRow) set(tl resends.Timeline, axis timeAxis) {
	setText(r.Label, fmt.Sprintf("%s ×%d", shortHook(tl.HookUUID), len(tl.Attempts)))
	r.Lane.set(tl.Attempts, axis)
}

func (r *laneRow) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(container.NewBorder(nil, nil,
		container.NewGridWrap(fyne.NewSize(laneLabelWidth, r.Label.MinSize().Height), r.Label), nil, r.Lane))
}

// shortHook cuts a hook uuid for a lane's label (the full one is in the
// delivery).
func shortHook(h string) string {
	if len(h) > 16 {
		return h[:8] + "…" + h[len(h)-6:]
	}
	return h
}

// setHover says the hovered attempt.
func (r *resendsView) setHover(text string) { setText(r.Hover, text) }

// shown reports the tab in view.
func (r *resendsView) visible() bool {
	return r.win.Tabs != nil && r.win.Tabs.Selected() == r.win.resendsTab
}

// storeChanged reads the timelines again, at most every resendsReload,
// while the tab is in view.
func (r *resendsView) storeChanged() {
	if !r.visible() || r.due {
		return
	}
	wait := resendsReload - time.Since(r.loadedAt)
	if wait <= 0 {
		r.load()
		return
	}
	r.due = true
	r.win.bridge.Go(func() func() {
		time.Sleep(wait)
		return func() {
			r.due = false
			if r.visible() {
				r.load()
			}
		}
	})
}

// scope is the expression the Scope check stands for (nil: every message).
func (r *resendsView) scope() *rules.Expr {
	if r.Scope.Checked {
		return r.win.deliveries.model.filter.expr
	}
	return nil
}

// load reads the timelines and learns the schedule off the UI goroutine.
func (r *resendsView) load() {
	if r.loading {
		r.again = true
		return
	}
	r.loading, r.loadedAt = true, time.Now()
	store, e := r.win.svc.Store, r.scope()
	shownID, hook := r.win.deliveries.shownMessage()
	r.win.bridge.Go(func() func() {
		rep, err := resends.Observe(context.Background(), store, e, nil, time.Now())
		var mine *resends.Timeline
		if hook != "" {
			if tls, err := resends.Timelines(context.Background(), store, []string{hook}); err == nil && len(tls) == 1 {
				mine = &tls[0]
			}
		}
		var shown []resends.Timeline
		var once int
		if err == nil {
			// Newest first; single attempts are the schedule's "nothing
			// after a 2xx" and are counted, not drawn.
			for _, tl := range slices.Backward(rep.Timelines) {
				if len(tl.Attempts) < 2 {
					once++
					continue
				}
				if len(shown) < maxLanes {
					shown = append(shown, tl)
				}
			}
		}
		return func() {
			r.loading = false
			r.Message.show(shownID, mine)
			if err != nil {
				r.Sentence.SetText("Could not read the timelines: " + err.Error())
			} else {
				r.show(rep.Schedule, shown, once)
			}
			if r.again {
				r.again = false
				r.load()
			}
		}
	})
}

// show draws a learned schedule and the re-sent messages.
func (r *resendsView) show(s resends.Schedule, shown []resends.Timeline, once int) {
	r.schedule, r.shown, r.axis = s, shown, axisFor(shown)
	r.Sentence.SetText(s.Summary())
	r.Retries.SetText(strings.Join(s.Details(), "\n"))
	r.Histogram.set(s)
	hm := r.Histogram.MinSize()
	r.histScroll.SetMinSize(fyne.NewSize(min(hm.Width, maxHistogramWidth), hm.Height))
	r.Axis.set(r.axis)
	summary := ""
	if once > 0 {
		summary = fmt.Sprintf("%s sent once (not drawn).", plural.Count(once, "message was", "messages were"))
	}
	if s.Resent > len(shown) {
		summary += fmt.Sprintf(" The newest %d of %s re-sent messages are drawn; the exports hold them all.", len(shown), human.Count(s.Resent))
	}
	r.Summary.SetText(strings.TrimSpace(summary))
	if s.Resent == 0 {
		r.Empty.Show()
	} else {
		r.Empty.Hide()
	}
	r.Lanes.Refresh()
}

// chooseExport asks where to write the timelines and the schedule.
func (r *resendsView) chooseExport(csv bool) {
	ext, what := ".json", "JSON"
	if csv {
		ext, what = ".csv", "CSV"
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil || w == nil {
			return
		}
		path := w.URI().Path()
		_ = w.Close() // the export replaces the file the picker made
		r.export(path, csv, func(err error) {
			if err != nil {
				r.win.showError(fmt.Errorf("export re-sends as %s: %w", what, err))
				return
			}
			r.win.showStatus(fmt.Sprintf("Wrote the re-send timelines and schedule (%s) to %s.", what, path))
		})
	}, r.win.w)
	d.SetFileName("hookscope-resends-" + time.Now().Format("20060102-150405") + ext)
	d.Show()
}

// export writes every message's timeline (in the tab's scope) and the
// schedule to path, as `hookscope resends --json` or `--csv` does, off
// the UI goroutine; done runs on it.
func (r *resendsView) export(path string, csv bool, done func(error)) {
	store, e := r.win.svc.Store, r.scope()
	r.win.bridge.Go(func() func() {
		err := writeResends(context.Background(), store, e, path, csv)
		return func() { done(err) }
	})
}

// writeResends is the export's work.
func writeResends(ctx context.Context, store Store, e *rules.Expr, path string, csv bool) error {
	rep, err := resends.Observe(ctx, store, e, nil, time.Now())
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if csv {
		err = resends.WriteCSV(&b, rep.Timelines)
	} else {
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// openDelivery shows a delivery in the Deliveries tab (a mark clicked).
func (m *mainWindow) openDelivery(id int64) {
	m.Tabs.Select(m.deliveriesTab)
	m.deliveries.clearSelection()
	m.deliveries.open(id)
}

// resendsPane is the Re-sends tab's card for the message of the delivery
// shown in the Deliveries tab: each attempt at its time, what it was
// answered and the gap before it, then the attempts as lines that open
// their delivery.
type resendsPane struct {
	m *mainWindow

	Title    *widget.Label
	Axis     *axisView
	Lane     *laneView
	Hover    *widget.Label
	Attempts *fyne.Container
	content  *fyne.Container
}

func newResendsPane(m *mainWindow) *resendsPane {
	p := &resendsPane{m: m}
	p.Title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	p.Title.Wrapping = fyne.TextWrapWord
	p.Axis = newAxisView()
	p.Lane = newLaneView(true)
	p.Lane.onTap = m.openDelivery
	p.Hover = widget.NewLabel("")
	p.Hover.Truncation = fyne.TextTruncateEllipsis
	p.Lane.onHover = func(s string) { setText(p.Hover, s) }
	p.Attempts = container.NewVBox()
	p.content = container.NewVBox(p.Title, p.Axis, p.Lane, p.Hover, p.Attempts, widget.NewSeparator())
	p.content.Hide()
	return p
}

// show draws the message of the delivery shown (nil hides the card: no
// delivery, or one without a hook uuid).
func (p *resendsPane) show(shown int64, tl *resends.Timeline) {
	p.Attempts.Objects = nil
	if tl == nil || len(tl.Attempts) == 0 {
		p.content.Hide()
		return
	}
	n := len(tl.Attempts)
	if n == 1 {
		// Sent once: nothing to draw.
		p.content.Hide()
		return
	}
	var title string
	{
		last := tl.Attempts[n-1]
		title = fmt.Sprintf("The message of delivery #%d (%s): %d attempts over %s; the last answered %s.", shown, tl.HookUUID, n,
			human.Duration(last.ReceivedAt.Sub(tl.Attempts[0].ReceivedAt)), last.Answer)
	}
	p.Title.SetText(title)
	axis := axisFor([]resends.Timeline{*tl})
	p.Axis.set(axis)
	p.Lane.set(tl.Attempts, axis)
	setText(p.Hover, "Point at a mark to read the attempt; click it, or Open on a line, to show that delivery.")
	for _, a := range tl.Attempts {
		gap := ""
		if a.Number > 1 {
			gap = "+" + human.Duration(a.Gap)
		}
		line := fmt.Sprintf("#%-2d %s  %-8s %-26s delivery #%d", a.Number, a.ReceivedAt.Local().Format("15:04:05.000"), gap, a.Answer, a.DeliveryID)
		id := a.DeliveryID
		text := widget.NewLabelWithStyle(line, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
		text.Truncation = fyne.TextTruncateEllipsis
		open := widget.NewButton("Open", func() { p.m.openDelivery(id) })
		open.Importance = widget.LowImportance
		if id == shown {
			open.SetText("shown")
			open.Disable()
		}
		p.Attempts.Objects = append(p.Attempts.Objects, container.NewBorder(nil, nil, newMarkFor(a.Kind()), open, text))
	}
	p.content.Show()
	p.content.Refresh()
}

// newMarkFor is a mark of a kind, sized for a line.
func newMarkFor(k resends.Kind) fyne.CanvasObject {
	box := &markBox{m: newMark(k, fyne.CurrentApp().Settings().Theme(), fyne.CurrentApp().Settings().ThemeVariant())}
	box.ExtendBaseWidget(box)
	return box
}

// showResent says on the detail's Re-sent button how many times the
// service sent the delivery's message (hidden when once).
func (d *detailView) showResent(tl *resends.Timeline) {
	if tl == nil || len(tl.Attempts) < 2 {
		d.Resent.Hide()
		return
	}
	d.Resent.SetText(fmt.Sprintf("Sent %d times…", len(tl.Attempts)))
	d.Resent.Show()
}

// showResends opens the Re-sends tab at its top, where the shown
// delivery's message is.
func (m *mainWindow) showResends() {
	m.Tabs.Select(m.resendsTab)
	m.resends.top.ScrollToTop()
}
