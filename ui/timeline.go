package ui

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/internal/human"
)

// The re-send observatory's drawings (ui/resends.go shows them): a
// message's attempts as marks on a time axis, and the histogram of the
// gaps before re-sends. Drawn with canvas primitives: no chart library.

// kindLook is how an attempt's answer is drawn: the colour of the badges
// that say the same (green taken, red another status, amber closed, blue
// held), a shape so that colour is never the only sign, and the words of
// the legend.
func kindLook(k resends.Kind) (fyne.ThemeColorName, markShape, string) {
	switch k {
	case resends.KindOK:
		return theme.ColorNameSuccess, markDot, "2xx: taken"
	case resends.KindStatus:
		return theme.ColorNameError, markSquare, "another status"
	case resends.KindClosed:
		return theme.ColorNameWarning, markRing, "closed unanswered"
	}
	return theme.ColorNamePrimary, markFrame, "no answer in 10 s"
}

// markShape is a mark's form: filled or hollow, round or square.
type markShape int

const (
	markDot markShape = iota
	markSquare
	markRing
	markFrame
)

// markSize is a mark's width and height.
const markSize = 12

// newMark draws one mark of a kind.
func newMark(k resends.Kind, th fyne.Theme, v fyne.ThemeVariant) fyne.CanvasObject {
	name, shape, _ := kindLook(k)
	c := th.Color(name, v)
	switch shape {
	case markDot:
		m := canvas.NewCircle(c)
		return m
	case markRing:
		m := canvas.NewCircle(color.Transparent)
		m.StrokeColor, m.StrokeWidth = c, 2.5
		return m
	case markSquare:
		return canvas.NewRectangle(c)
	}
	m := canvas.NewRectangle(color.Transparent)
	m.StrokeColor, m.StrokeWidth = c, 2.5
	return m
}

// timeAxis maps the time since a message's first attempt to [0, 1] on a
// logarithmic scale, shared by every lane so that lanes compare: retry
// schedules grow (60 s, 5 min, 30 min), and a linear axis would crowd
// the first re-sends into a point.
type timeAxis struct{ max time.Duration }

func (a timeAxis) at(d time.Duration) float32 {
	if a.max <= 0 || d <= 0 {
		return 0
	}
	return float32(min(1, math.Log1p(d.Seconds())/math.Log1p(a.max.Seconds())))
}

// axisTicks are the times the axis labels, those within max.
func (a timeAxis) ticks() []time.Duration {
	var out []time.Duration
	for _, d := range []time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 12 * time.Hour, 48 * time.Hour} {
		if d <= a.max {
			out = append(out, d)
		}
	}
	return out
}

// axisFor fits the axis to the longest of the timelines (at least a
// minute, so a lane of a few seconds is not stretched across).
func axisFor(tls []resends.Timeline) timeAxis {
	a := timeAxis{max: time.Minute}
	for _, tl := range tls {
		if n := len(tl.Attempts); n > 1 {
			a.max = max(a.max, tl.Attempts[n-1].ReceivedAt.Sub(tl.Attempts[0].ReceivedAt))
		}
	}
	return a
}

// lanePad is the room left of a lane's first place; laneEnd the room
// right of its last (more: a scroll bar may lie over it).
const (
	lanePad = 10
	laneEnd = 24
)

// laneX is the x of t in [0, 1] in a lane or axis w wide.
func laneX(t, w float32) float32 { return lanePad + t*max(w-lanePad-laneEnd, 1) }

// laneView draws one message's attempts: a line, a mark per attempt at
// its time since the first, and the gap since the previous attempt above
// the line where it fits; hovering a mark says it in full, tapping it
// opens that delivery. big (the detail pane's) adds each answer under
// its mark.
type laneView struct {
	widget.BaseWidget
	attempts []resends.Attempt
	axis     timeAxis
	big      bool
	onTap    func(deliveryID int64)
	onHover  func(text string)
}

func newLaneView(big bool) *laneView {
	l := &laneView{big: big}
	l.ExtendBaseWidget(l)
	return l
}

// set shows a timeline on an axis.
func (l *laneView) set(attempts []resends.Attempt, axis timeAxis) {
	l.attempts, l.axis = attempts, axis
	l.Refresh()
}

// xOf is the x of an attempt in a lane w wide.
func (l *laneView) xOf(i int, w float32) float32 {
	d := l.attempts[i].ReceivedAt.Sub(l.attempts[0].ReceivedAt)
	return laneX(l.axis.at(d), w)
}

// nearest is the attempt whose mark is nearest x, -1 when none is within
// a mark's width.
func (l *laneView) nearest(x float32) int {
	best, dist := -1, float32(markSize)
	for i := range l.attempts {
		if d := abs32(l.xOf(i, l.Size().Width) - x); d <= dist {
			best, dist = i, d
		}
	}
	return best
}

func abs32(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// attemptText says an attempt in full, for hovering.
func attemptText(a resends.Attempt) string {
	s := fmt.Sprintf("Attempt %d · %s · %s answered %s", a.Number, a.ReceivedAt.Local().Format("2006-01-02 15:04:05"), byWord(a.By), a.Answer)
	if a.Number > 1 {
		s += fmt.Sprintf(" · %s after the attempt before", human.Duration(a.Gap))
	}
	return s + fmt.Sprintf(" · delivery #%d", a.DeliveryID)
}

func byWord(by string) string {
	if by == "app" {
		return "your app"
	}
	return "Hookscope"
}

// Tapped opens the delivery of the mark tapped.
func (l *laneView) Tapped(ev *fyne.PointEvent) {
	if i := l.nearest(ev.Position.X); i >= 0 && l.onTap != nil {
		l.onTap(l.attempts[i].DeliveryID)
	}
}

// MouseIn, MouseMoved and MouseOut say the hovered attempt.
func (l *laneView) MouseIn(ev *desktop.MouseEvent) { l.MouseMoved(ev) }

// MouseMoved says the attempt under the pointer.
func (l *laneView) MouseMoved(ev *desktop.MouseEvent) {
	if l.onHover == nil {
		return
	}
	if i := l.nearest(ev.Position.X); i >= 0 {
		l.onHover(attemptText(l.attempts[i]))
	}
}

// MouseOut ends the hover.
func (l *laneView) MouseOut() {}

func (l *laneView) MinSize() fyne.Size {
	h := float32(26)
	if l.big {
		h = 64
	}
	return fyne.NewSize(120, h)
}

func (l *laneView) CreateRenderer() fyne.WidgetRenderer {
	r := &laneRenderer{l: l, line: canvas.NewLine(color.Gray{Y: 0x80})}
	r.rebuild()
	return r
}

type laneRenderer struct {
	l     *laneView
	line  *canvas.Line
	marks []fyne.CanvasObject
	gaps  []*canvas.Text
	words []*canvas.Text
	objs  []fyne.CanvasObject
}

// rebuild makes the objects for the lane's attempts.
func (r *laneRenderer) rebuild() {
	th, v := r.l.Theme(), fyne.CurrentApp().Settings().ThemeVariant()
	r.line.StrokeColor = th.Color(theme.ColorNameDisabled, v)
	r.line.StrokeWidth = 1
	r.marks, r.gaps, r.words = r.marks[:0], r.gaps[:0], r.words[:0]
	r.objs = []fyne.CanvasObject{r.line}
	fg := th.Color(theme.ColorNameForeground, v)
	small := th.Size(theme.SizeNameCaptionText)
	for i, a := range r.l.attempts {
		m := newMark(a.Kind(), th, v)
		r.marks = append(r.marks, m)
		if i > 0 {
			g := canvas.NewText("+"+human.Duration(a.Gap), fg)
			g.TextSize = small
			r.gaps = append(r.gaps, g)
			r.objs = append(r.objs, g)
		}
		if r.l.big {
			w := canvas.NewText(a.Answer, fg)
			w.TextSize = small
			r.words = append(r.words, w)
			r.objs = append(r.objs, w)
		}
	}
	r.objs = append(r.objs, r.marks...)
}

func (r *laneRenderer) Layout(s fyne.Size) {
	l := r.l
	mid := s.Height / 2
	if l.big {
		mid = s.Height * 0.45
	}
	r.line.Position1 = fyne.NewPos(lanePad, mid)
	r.line.Position2 = fyne.NewPos(laneX(1, s.Width), mid)
	prevEnd := float32(-1)
	for i, m := range r.marks {
		x := l.xOf(i, s.Width)
		m.Resize(fyne.NewSquareSize(markSize))
		m.Move(fyne.NewPos(x-markSize/2, mid-markSize/2))
		if i > 0 {
			g := r.gaps[i-1]
			gs := g.MinSize()
			x0 := l.xOf(i-1, s.Width)
			cx := (x0 + x) / 2
			// The gap goes between its two marks when it fits there
			// and does not run into the one before; else hovering says it.
			fits := x-x0 >= gs.Width+markSize && cx-gs.Width/2 > prevEnd
			g.Hidden = !fits
			g.Move(fyne.NewPos(cx-gs.Width/2, mid-markSize/2-gs.Height))
			if fits {
				prevEnd = cx + gs.Width/2
			}
		}
		if l.big {
			w := r.words[i]
			ws := w.MinSize()
			w.Move(fyne.NewPos(min(max(x-ws.Width/2, 0), s.Width-ws.Width), mid+markSize/2+2))
			w.Hidden = i+1 < len(r.marks) && l.xOf(i+1, s.Width)-x < ws.Width+4
		}
	}
}

func (r *laneRenderer) MinSize() fyne.Size { return r.l.MinSize() }

func (r *laneRenderer) Refresh() {
	r.rebuild()
	r.Layout(r.l.Size())
	canvas.Refresh(r.l)
}

func (r *laneRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *laneRenderer) Destroy()                     {}

// axisView labels the lanes' shared time axis (same padding as a lane).
type axisView struct {
	widget.BaseWidget
	axis timeAxis
}

func newAxisView() *axisView {
	a := &axisView{}
	a.ExtendBaseWidget(a)
	return a
}

func (a *axisView) set(axis timeAxis) {
	a.axis = axis
	a.Refresh()
}

func (a *axisView) CreateRenderer() fyne.WidgetRenderer {
	r := &axisRenderer{a: a}
	r.rebuild()
	return r
}

type axisRenderer struct {
	a      *axisView
	ticks  []time.Duration
	labels []*canvas.Text
	lines  []*canvas.Line
	objs   []fyne.CanvasObject
}

func (r *axisRenderer) rebuild() {
	th, v := r.a.Theme(), fyne.CurrentApp().Settings().ThemeVariant()
	r.ticks = r.a.axis.ticks()
	r.labels, r.lines, r.objs = nil, nil, nil
	for _, d := range r.ticks {
		text := "first"
		if d > 0 {
			text = "+" + human.Duration(d)
		}
		t := canvas.NewText(text, th.Color(theme.ColorNameForeground, v))
		t.TextSize = th.Size(theme.SizeNameCaptionText)
		ln := canvas.NewLine(th.Color(theme.ColorNameDisabled, v))
		ln.StrokeWidth = 1
		r.labels, r.lines = append(r.labels, t), append(r.lines, ln)
		r.objs = append(r.objs, t, ln)
	}
}

func (r *axisRenderer) Layout(s fyne.Size) {
	for i, d := range r.ticks {
		x := laneX(r.a.axis.at(d), s.Width)
		ts := r.labels[i].MinSize()
		r.labels[i].Move(fyne.NewPos(min(max(x-ts.Width/2, 0), s.Width-ts.Width), 0))
		r.lines[i].Position1 = fyne.NewPos(x, ts.Height)
		r.lines[i].Position2 = fyne.NewPos(x, s.Height)
	}
}

func (r *axisRenderer) MinSize() fyne.Size {
	h := fyne.MeasureText("+5 min", theme.CaptionTextSize(), fyne.TextStyle{}).Height
	return fyne.NewSize(120, h+6)
}

func (r *axisRenderer) Refresh() {
	r.rebuild()
	r.Layout(r.a.Size())
	canvas.Refresh(r.a)
}

func (r *axisRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *axisRenderer) Destroy()                     {}

// gapHistogram draws the learned schedule: a bar per bucket of gaps
// before a re-send, its height the count, "n=41" above it and the
// bucket's median ("~1 min") under it; the gaps after a failed answer in
// the error colour, those after a 2xx (a service that re-sent what it
// was told it got) in amber, apart.
type gapHistogram struct {
	widget.BaseWidget
	afterFailure, afterOK []resends.Bucket
}

func newGapHistogram() *gapHistogram {
	h := &gapHistogram{}
	h.ExtendBaseWidget(h)
	return h
}

func (h *gapHistogram) set(s resends.Schedule) {
	h.afterFailure, h.afterOK = s.AfterFailure, s.AfterSuccess
	h.Refresh()
}

// histogram's measures.
const (
	barWidth  = 54
	barGap    = 14
	barHeight = 96
	groupGap  = 36
)

func (h *gapHistogram) MinSize() fyne.Size {
	n := len(h.afterFailure) + len(h.afterOK)
	w := float32(n)*(barWidth+barGap) + 2*lanePad
	if len(h.afterOK) > 0 && len(h.afterFailure) > 0 {
		w += groupGap
	}
	text := fyne.MeasureText("~60 s", theme.CaptionTextSize(), fyne.TextStyle{}).Height
	return fyne.NewSize(max(w, 200), barHeight+3*text+8)
}

func (h *gapHistogram) CreateRenderer() fyne.WidgetRenderer {
	r := &histRenderer{h: h}
	r.rebuild()
	return r
}

type histBar struct {
	rect       *canvas.Rectangle
	n, label   *canvas.Text
	count, max int
}

type histRenderer struct {
	h     *gapHistogram
	bars  []histBar
	base  *canvas.Line
	group []*canvas.Text
	objs  []fyne.CanvasObject
}

func (r *histRenderer) rebuild() {
	th, v := r.h.Theme(), fyne.CurrentApp().Settings().ThemeVariant()
	fg := th.Color(theme.ColorNameForeground, v)
	small := th.Size(theme.SizeNameCaptionText)
	top := 1
	for _, b := range append(append([]resends.Bucket{}, r.h.afterFailure...), r.h.afterOK...) {
		top = max(top, b.N)
	}
	r.bars, r.group = nil, nil
	r.base = canvas.NewLine(th.Color(theme.ColorNameDisabled, v))
	r.objs = []fyne.CanvasObject{r.base}
	add := func(bs []resends.Bucket, c fyne.ThemeColorName, title string) {
		if len(bs) == 0 {
			return
		}
		g := canvas.NewText(title, fg)
		g.TextSize = small
		g.TextStyle.Bold = true
		r.group = append(r.group, g)
		r.objs = append(r.objs, g)
		for _, b := range bs {
			rect := canvas.NewRectangle(th.Color(c, v))
			rect.CornerRadius = 2
			n := canvas.NewText(fmt.Sprintf("n=%s", human.Count(int64(b.N))), fg)
			n.TextSize = small
			label := canvas.NewText(b.Label(), fg)
			label.TextSize = small
			label.TextStyle.Bold = true
			r.bars = append(r.bars, histBar{rect: rect, n: n, label: label, count: b.N, max: top})
			r.objs = append(r.objs, rect, n, label)
		}
	}
	add(r.h.afterFailure, theme.ColorNameError, "after a failed answer")
	add(r.h.afterOK, theme.ColorNameWarning, "after a 2xx")
}

func (r *histRenderer) Layout(s fyne.Size) {
	textH := fyne.MeasureText("~60 s", theme.CaptionTextSize(), fyne.TextStyle{}).Height
	baseY := textH + 4 + barHeight + textH
	x := float32(lanePad)
	gi := 0
	for i, b := range r.bars {
		if i == len(r.h.afterFailure) && len(r.h.afterFailure) > 0 {
			x += groupGap
			gi++
		}
		if i == 0 || i == len(r.h.afterFailure) {
			if gi < len(r.group) {
				r.group[gi].Move(fyne.NewPos(x, 0))
			}
		}
		h := max(2, float32(b.count)/float32(b.max)*barHeight)
		b.rect.Resize(fyne.NewSize(barWidth, h))
		b.rect.Move(fyne.NewPos(x, baseY-h))
		ns := b.n.MinSize()
		b.n.Move(fyne.NewPos(x+(barWidth-ns.Width)/2, baseY-h-ns.Height))
		ls := b.label.MinSize()
		b.label.Move(fyne.NewPos(x+(barWidth-ls.Width)/2, baseY+2))
		x += barWidth + barGap
	}
	r.base.Position1 = fyne.NewPos(lanePad/2, baseY)
	r.base.Position2 = fyne.NewPos(max(x-barGap+lanePad/2, lanePad), baseY)
}

func (r *histRenderer) MinSize() fyne.Size { return r.h.MinSize() }

func (r *histRenderer) Refresh() {
	r.rebuild()
	r.Layout(r.h.Size())
	canvas.Refresh(r.h)
}

func (r *histRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *histRenderer) Destroy()                     {}

// legendView names the four marks, after lead (a title, or nil).
func legendView(lead fyne.CanvasObject) fyne.CanvasObject {
	th, v := fyne.CurrentApp().Settings().Theme(), fyne.CurrentApp().Settings().ThemeVariant()
	row := newFlow()
	if lead != nil {
		row.Add(lead)
	}
	for _, k := range []resends.Kind{resends.KindOK, resends.KindStatus, resends.KindClosed, resends.KindHeld} {
		_, _, words := kindLook(k)
		m := newMark(k, th, v)
		row.Add(newMarkLabel(m, words))
	}
	return row
}

// newMarkLabel is a mark followed by its words.
func newMarkLabel(m fyne.CanvasObject, words string) fyne.CanvasObject {
	box := &markBox{m: m}
	box.ExtendBaseWidget(box)
	return container.NewHBox(box, widget.NewLabel(words))
}

// markBox gives a mark its size and centres it.
type markBox struct {
	widget.BaseWidget
	m fyne.CanvasObject
}

func (b *markBox) CreateRenderer() fyne.WidgetRenderer { return &markBoxRenderer{b: b} }

type markBoxRenderer struct{ b *markBox }

func (r *markBoxRenderer) Layout(s fyne.Size) {
	r.b.m.Resize(fyne.NewSquareSize(markSize))
	r.b.m.Move(fyne.NewPos((s.Width-markSize)/2, (s.Height-markSize)/2))
}
func (r *markBoxRenderer) MinSize() fyne.Size           { return fyne.NewSquareSize(markSize + 6) }
func (r *markBoxRenderer) Refresh()                     { r.b.m.Refresh() }
func (r *markBoxRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.b.m} }
func (r *markBoxRenderer) Destroy()                     {}
