package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/human"
	plurals "github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/station"
)

// The Forward row's mode choices, in the order shown: listen's
// --forward-mode value, then who answers the service.
const (
	modeAckLabel         = "ack: Hookscope answers"
	modePassThroughLabel = "pass-through: your app answers"
)

// forwardPlaceholder is the Forward to field's hint.
const forwardPlaceholder = "your app's URL, e.g. http://localhost:3000/webhooks (Enter turns it on)"

// displayForward is the Forward to field as shown: every route's target
// with its credentials redacted (Route.Name), so a password typed into a
// URL is not on screen until the user reveals it.
func displayForward(field string) string {
	specs := forward.SplitRoutes(field)
	for i, s := range specs {
		if r, err := forward.ParseRoute(s); err == nil {
			specs[i] = r.Name()
		}
	}
	return strings.Join(specs, " ")
}

// hasCredentials reports a Forward to field with credentials in a URL.
func hasCredentials(field string) bool {
	return displayForward(field) != strings.Join(forward.SplitRoutes(field), " ")
}

// forwardRow is the header's Forward row: the Forward to field, the
// on/off switch, the mode, the route's state, and the line that says the
// app is down.
type forwardRow struct {
	win *mainWindow

	// Field is the Forward to field: a URL, or routes (URL or GLOB=URL)
	// separated by spaces. Enter applies it.
	Field *widget.Entry
	// Reveal shows the credentials of a saved target in the field.
	Reveal *widget.Button
	// On is the on/off switch.
	On *widget.Check
	// Mode is ack or pass-through.
	Mode *widget.Select
	// State says what forwarding does now.
	State *badge
	// Down says the app is down: how long, how many deliveries wait, why.
	Down *widget.Label

	// quiet suppresses the widgets' callbacks while fill sets them.
	quiet bool
	// routes is each route's latest state; downSince when it went down.
	routes    map[string]forward.RouteStatus
	downSince map[string]time.Time
	// err is why the saved configuration does not forward.
	err error
	// refused is why the last change was not applied (nothing changed);
	// it is said under the field, once, until the next change.
	refused error

	row fyne.CanvasObject
}

func newForwardRow(win *mainWindow) *forwardRow {
	f := &forwardRow{win: win, routes: map[string]forward.RouteStatus{}, downSince: map[string]time.Time{}}
	f.Field = widget.NewEntry()
	f.Field.SetPlaceHolder(forwardPlaceholder)
	f.Field.TextStyle = fyne.TextStyle{Monospace: true}
	// Enter means "forward there": it turns forwarding on (off when the
	// field was emptied).
	f.Field.OnSubmitted = func(string) {
		f.quiet = true
		f.On.SetChecked(len(forward.SplitRoutes(f.field())) > 0)
		f.quiet = false
		f.apply()
	}
	f.Field.OnChanged = func(string) {
		if !f.quiet {
			f.refused = nil // being fixed
			f.refresh()
		}
	}
	f.Reveal = widget.NewButtonWithIcon("Show", theme.VisibilityIcon(), f.reveal)
	f.Reveal.Importance = widget.LowImportance
	f.Reveal.Hide()
	f.On = widget.NewCheck("On", func(bool) {
		if !f.quiet {
			f.apply()
		}
	})
	f.Mode = widget.NewSelect([]string{modeAckLabel, modePassThroughLabel}, func(string) {
		if !f.quiet {
			f.apply()
		}
	})
	f.State = newBadge(0)
	f.Down = widget.NewLabel("")
	f.Down.Wrapping = fyne.TextWrapWord
	f.Down.Importance = widget.DangerImportance
	f.Down.Hide()
	f.row = container.NewBorder(nil, nil, nil,
		container.NewHBox(container.NewCenter(f.State), f.Reveal, wholeChoice(f.Mode), f.On), f.Field)
	return f
}

// wholeChoice gives a Select the width of its longest option, which it
// would otherwise cut ("ack: Hooks…"): the choice explains itself only
// when read whole.
func wholeChoice(s *widget.Select) fyne.CanvasObject {
	th := theme.Current()
	text := th.Size(theme.SizeNameText)
	widest := float32(0)
	for _, o := range s.Options {
		widest = max(widest, fyne.MeasureText(o, text, fyne.TextStyle{}).Width)
	}
	w := widest + th.Size(theme.SizeNameInlineIcon) + 4*th.Size(theme.SizeNameInnerPadding)
	return container.NewGridWrap(fyne.NewSize(max(w, s.MinSize().Width), s.MinSize().Height), s)
}

// fill shows the saved settings.
func (f *forwardRow) fill(set station.Settings) {
	f.quiet = true
	defer func() { f.quiet = false }()
	f.Field.SetText(displayForward(set.ForwardTo))
	f.On.SetChecked(set.ForwardOn)
	mode := modeAckLabel
	if forward.Mode(set.ForwardMode) == forward.ModePassThrough {
		mode = modePassThroughLabel
	}
	f.Mode.SetSelected(mode)
	f.refresh()
}

// field is the Forward to field's value: the saved one (credentials and
// all) while the field shows it redacted and unchanged.
func (f *forwardRow) field() string {
	saved := f.win.settings.ForwardTo
	if t := strings.TrimSpace(f.Field.Text); t != displayForward(saved) {
		return t
	}
	return saved
}

// edited reports a field that differs from what is saved.
func (f *forwardRow) edited() bool { return f.field() != f.win.settings.ForwardTo }

// reveal shows the saved field with its credentials.
func (f *forwardRow) reveal() {
	f.quiet = true
	f.Field.SetText(f.win.settings.ForwardTo)
	f.quiet = false
	f.refresh()
}

// apply makes the field, switch and mode take effect now, without a
// restart, and saves them (win.setForward).
func (f *forwardRow) apply() {
	set := f.win.settings
	set.ForwardTo = f.field()
	set.ForwardOn = f.On.Checked
	set.ForwardMode = string(forward.ModeAck)
	if f.Mode.Selected == modePassThroughLabel {
		set.ForwardMode = string(forward.ModePassThrough)
	}
	if set.ForwardOn && len(forward.SplitRoutes(set.ForwardTo)) == 0 {
		f.refuse(fmt.Errorf("type your app's URL first, for example http://localhost:3000/webhooks"))
		f.win.w.Canvas().Focus(f.Field)
		return
	}
	f.win.setForward(set)
}

// refuse says under the field why a change was not applied, and puts the
// switch and the mode back as they are: nothing was turned on.
func (f *forwardRow) refuse(err error) {
	f.refused = err
	saved := f.win.settings
	f.quiet = true
	f.On.SetChecked(saved.ForwardOn)
	mode := modeAckLabel
	if forward.Mode(saved.ForwardMode) == forward.ModePassThrough {
		mode = modePassThroughLabel
	}
	f.Mode.SetSelected(mode)
	f.quiet = false
	f.refresh()
}

// refresh shows forwarding's state: off, on (and how), down, or what is
// wrong with the field.
func (f *forwardRow) refresh() {
	w := f.win
	set := w.settings
	f.Reveal.Hidden = !hasCredentials(set.ForwardTo) || strings.TrimSpace(f.Field.Text) != displayForward(set.ForwardTo)
	f.Reveal.Refresh()
	var down []string
	now := time.Now()
	for _, name := range slices.Sorted(maps.Keys(f.routes)) {
		if rs := f.routes[name]; rs.State == forward.RouteDown {
			down = append(down, rs.DownText(now))
		}
	}
	_, stopped := w.receiverState()
	switch {
	case f.refused != nil:
		f.State.set("not applied", theme.ErrorIcon(), theme.ColorNameError)
	case f.edited():
		f.State.set("press Enter to apply", theme.InfoIcon(), theme.ColorNamePrimary)
	case f.err != nil:
		f.State.set("not forwarding", theme.ErrorIcon(), theme.ColorNameError)
	case !set.ForwardOn || set.ForwardTo == "":
		f.State.set("forwarding off", theme.MediaStopIcon(), theme.ColorNameDisabled)
	case stopped != nil:
		// The badges describe this window's receiver: nothing arrives
		// here to forward, whatever another process on the store does.
		f.State.set("idle: receiver stopped", theme.MediaPauseIcon(), theme.ColorNameWarning)
	case len(down) > 0:
		f.State.set("app down", theme.ErrorIcon(), theme.ColorNameError)
	default:
		mode := forward.Mode(set.ForwardMode)
		if mode == "" {
			mode = forward.ModeAck
		}
		f.State.set("forwarding ("+string(mode)+")", theme.MailForwardIcon(), theme.ColorNameSuccess)
	}
	if f.err != nil {
		down = append([]string{"Not forwarding: " + f.err.Error()}, down...)
	}
	if f.refused != nil {
		down = append([]string{"Not applied, nothing changed: " + f.refused.Error()}, down...)
	}
	if len(down) == 0 {
		f.Down.Hide()
		return
	}
	// Capitalised as the start of a line: "Your app at … is down".
	for i, s := range down {
		down[i] = strings.ToUpper(s[:1]) + s[1:]
	}
	f.Down.SetText(strings.Join(down, "\n"))
	f.Down.Show()
}

// routesChanged takes the routes' latest states; an app that comes back
// is said once in the status line (the words listen prints).
func (f *forwardRow) routesChanged(routes map[string]forward.RouteStatus) {
	for name, rs := range routes {
		was, seen := f.routes[name]
		switch {
		case rs.State == forward.RouteDown && (!seen || was.State != forward.RouteDown):
			f.downSince[name] = rs.Since
		case rs.State == forward.RouteUp && seen && was.State == forward.RouteDown:
			since := f.downSince[name]
			if since.IsZero() {
				since = was.Since
			}
			delete(f.downSince, name)
			f.win.showStatus(capitalise(rs.BackText(rs.Since.Sub(since))))
		}
		f.routes[name] = rs
	}
	f.refresh()
}

// reset forgets the routes of a replaced configuration.
func (f *forwardRow) reset(routes []forward.RouteStatus) {
	clear(f.routes)
	clear(f.downSince)
	for _, rs := range routes {
		f.routes[rs.Name] = rs
		if rs.State == forward.RouteDown {
			f.downSince[rs.Name] = rs.Since
		}
	}
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// setForward applies set's forwarding to the station (off the UI
// goroutine: the running forwarder finishes what it sends first), then
// saves set and shows the new state. A field that does not parse is
// said, and nothing changes.
func (m *mainWindow) setForward(set station.Settings) {
	fw := m.svc.Forward
	if fw == nil {
		return
	}
	cfg, err := set.ForwardConfig()
	if err != nil {
		m.header.Forward.refuse(err)
		return
	}
	m.bridge.Go(func() func() {
		err := fw.SetForward(context.Background(), cfg)
		status := fw.ForwardStatus()
		return func() {
			f := m.header.Forward
			if err != nil {
				f.refuse(err)
				return
			}
			f.err, f.refused = nil, nil
			f.reset(status)
			m.settings.ForwardTo, m.settings.ForwardOn, m.settings.ForwardMode = set.ForwardTo, set.ForwardOn, set.ForwardMode
			if err := station.SaveSettings(context.Background(), m.svc.Store, m.settings); err != nil {
				m.showError(err)
			}
			f.fill(m.settings)
			m.deliveries.reloadBadges()
			m.deliveries.Detail.forwardChanged()
			switch {
			case cfg == nil:
				m.showStatus("Forwarding is off; deliveries are still received and stored.")
			default:
				names := make([]string, len(cfg.Routes))
				for i, r := range cfg.Routes {
					names[i] = r.Name()
				}
				m.showStatus(fmt.Sprintf("Forwarding every delivery to %s (%s).", strings.Join(names, ", "), cfg.Mode))
			}
		}
	})
}

// forwardTarget is the URL of the Forward to field's first route, ""
// when there is none or it carries credentials (which a replay field
// would show).
func (m *mainWindow) forwardTarget() string {
	for _, spec := range forward.SplitRoutes(m.settings.ForwardTo) {
		if r, err := forward.ParseRoute(spec); err == nil {
			if t := r.Target.String(); r.TargetName() == t {
				return t
			}
			return ""
		}
	}
	return ""
}

// forwardEvents applies what the forwarder reported: badges, the Forward
// row, the detail's Forward pane.
func (m *mainWindow) forwardEvents(b batch) {
	if len(b.routes) > 0 {
		m.header.Forward.routesChanged(b.routes)
	}
	for _, w := range b.warnings {
		m.showStatus("Forward: " + w)
	}
	if len(b.attempts) == 0 {
		return
	}
	m.deliveries.attemptsDone(b.attempts)
	for _, a := range b.attempts {
		if a.DeliveryID == m.deliveries.selectedID {
			m.deliveries.Detail.reloadForward()
			break
		}
	}
}

// forwardLook is how a row shows its forwarding: the latest attempt
// (→ 200, → 500, → refused), queued, or off (forwarding was off).
// Nothing shows on a store whose window never forwarded.
func forwardLook(b forward.Badge, has, off bool) (string, fyne.Resource, fyne.ThemeColorName) {
	if !has {
		if off {
			return "→ off", theme.MediaStopIcon(), theme.ColorNameDisabled
		}
		return "", nil, ""
	}
	switch b.State {
	case forward.BadgeDelivered:
		return b.Text, theme.MailForwardIcon(), theme.ColorNameSuccess
	case forward.BadgeQueued:
		return b.Text, theme.HistoryIcon(), theme.ColorNamePrimary
	case forward.BadgeFailed:
		return b.Text, theme.ErrorIcon(), theme.ColorNameError
	}
	return b.Text, theme.ViewRefreshIcon(), theme.ColorNameWarning
}

// forwardOff reports that rows without an attempt show "→ off" (not
// forwarded: it arrived while forwarding was off): once a Forward to
// target is set. A window that never forwarded shows no forward badge.
func (m *mainWindow) forwardOff() bool {
	return m.svc.Forward != nil && m.settings.ForwardTo != ""
}

// loadBadges reads the forward badges of ids (off the UI goroutine).
func (m *mainWindow) loadBadges(ids []int64) map[int64]forward.Badge {
	if m.svc.Forward == nil || len(ids) == 0 {
		return nil
	}
	b, err := m.svc.Forward.Badges(context.Background(), ids)
	if err != nil {
		return nil
	}
	return b
}

// forwardPane is the detail's Forward tab: every attempt of the delivery,
// the selected one's answer, and Forward again.
type forwardPane struct {
	d *detailView

	// Again sends the delivery once more, now, to Route.
	Again *widget.Button
	// Route is "All routes" or one route.
	Route *widget.Select
	// Count says how many attempts the list shows, or in a word why
	// there are none; Note explains the latter (hidden with attempts).
	Count, Note *widget.Label
	// List has one line per attempt, newest first.
	List *widget.List
	// Info is the selected attempt in words: target, outcome, error.
	Info *widget.Label
	// Headers are the app's response headers, beside Info: one a line,
	// the name in bold.
	Headers *widget.RichText
	// Body is the app's answer in the code viewer.
	Body *codeView

	attempts []*forward.Attempt
	selected int
	id       int64

	// info holds Info and Headers; it scrolls in infoScroll.
	info       *fyne.Container
	infoScroll *container.Scroll
	// attempt holds the list, the words and the answer; hidden without
	// attempts.
	attempt *fyne.Container
	content fyne.CanvasObject
}

// attemptRowsShown is how many attempts the list shows before it scrolls.
const attemptRowsShown = 3

// attemptLayout stacks the attempts list, the chosen attempt's words and
// the app's answer with no divider to drag: the list is as tall as its
// rows (at most attemptRowsShown), the words as tall as they wrap to
// (scrolling when the answer needs the room for its first answerRowsKept
// lines, down to a quarter of the height left), and the answer takes the
// rest.
type attemptLayout struct{ p *forwardPane }

func (l attemptLayout) heights(width, height float32) (list, info float32) {
	p := l.p
	th := p.List.Theme()
	pad := th.Size(theme.SizeNamePadding)
	sep := th.Size(theme.SizeNameSeparatorThickness)
	rows := float32(min(max(len(p.attempts), 1), attemptRowsShown))
	list = rows*attemptRow().MinSize().Height + (rows-1)*sep
	// Wrapped labels know their height once they have their width.
	p.info.Resize(fyne.NewSize(width, p.info.MinSize().Height))
	need := p.info.MinSize().Height
	rest := height - list - 2*pad
	// The answer keeps room for its first answerRowsKept lines; the
	// words and headers get the rest (scrolling), at least a quarter.
	kept := min(max(p.Body.Rows(), 1), answerRowsKept)
	body := p.Body.content.MinSize().Height + float32(kept-1)*(p.Body.List.CreateItem().MinSize().Height+sep)
	info = min(need, max(rest/4, rest-body))
	return list, max(info, 0)
}

// answerRowsKept is how many lines of the app's answer the Forward pane
// keeps in view before it gives the attempt's words and headers room.
const answerRowsKept = 8

func (l attemptLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	p := l.p
	pad := p.List.Theme().Size(theme.SizeNamePadding)
	list, info := l.heights(size.Width, size.Height)
	p.List.Move(fyne.NewPos(0, 0))
	p.List.Resize(fyne.NewSize(size.Width, list))
	p.infoScroll.Move(fyne.NewPos(0, list+pad))
	p.infoScroll.Resize(fyne.NewSize(size.Width, info))
	y := list + info + 2*pad
	p.Body.content.Move(fyne.NewPos(0, y))
	p.Body.content.Resize(fyne.NewSize(size.Width, max(size.Height-y, 0)))
}

func (l attemptLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	p := l.p
	pad := p.List.Theme().Size(theme.SizeNamePadding)
	w := max(p.List.MinSize().Width, p.Body.content.MinSize().Width)
	return fyne.NewSize(w, attemptRow().MinSize().Height+p.Body.content.MinSize().Height+2*pad)
}

// infoColumns puts the attempt's words and its response headers side by
// side when the pane is wide enough for both, else one under the other;
// a hidden one leaves its room to the other.
type infoColumns struct{}

// infoColumnsFrom is the width from which the words and headers sit
// side by side.
const infoColumnsFrom = 560

func (infoColumns) shown(objs []fyne.CanvasObject) []fyne.CanvasObject {
	var out []fyne.CanvasObject
	for _, o := range objs {
		if o.Visible() {
			out = append(out, o)
		}
	}
	return out
}

func (c infoColumns) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	shown := c.shown(objs)
	if len(shown) == 0 {
		return
	}
	if size.Width >= infoColumnsFrom {
		w := size.Width / float32(len(shown))
		for i, o := range shown {
			o.Move(fyne.NewPos(float32(i)*w, 0))
			o.Resize(fyne.NewSize(w, size.Height))
		}
		return
	}
	y := float32(0)
	for _, o := range shown {
		o.Resize(fyne.NewSize(size.Width, o.MinSize().Height))
		h := o.MinSize().Height
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(size.Width, h))
		y += h
	}
}

func (c infoColumns) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	shown := c.shown(objs)
	wide := len(shown) > 0 && shown[0].Size().Width*float32(len(shown)) >= infoColumnsFrom-1
	for _, o := range shown {
		m := o.MinSize()
		s.Width = max(s.Width, m.Width)
		if wide {
			s.Height = max(s.Height, m.Height)
		} else {
			s.Height += m.Height
		}
	}
	return s
}

// attemptRow is the list's row: one attempt in a monospace line.
func attemptRow() *widget.Label {
	l := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	l.Truncation = fyne.TextTruncateEllipsis
	return l
}

// allRoutes is the Route choice that forwards to every matching route.
const allRoutes = "All routes"

func newForwardPane(d *detailView) *forwardPane {
	p := &forwardPane{d: d, selected: -1}
	p.Route = widget.NewSelect([]string{allRoutes}, nil)
	p.Route.SetSelected(allRoutes)
	p.Again = widget.NewButtonWithIcon("Forward again", theme.MailForwardIcon(), p.again)
	p.Count = widget.NewLabel("")
	p.Count.Truncation = fyne.TextTruncateEllipsis
	p.Note = widget.NewLabel("")
	p.Note.Wrapping = fyne.TextWrapWord
	p.List = widget.NewList(func() int { return len(p.attempts) },
		func() fyne.CanvasObject { return attemptRow() },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(p.attempts) {
				o.(*widget.Label).SetText(attemptLine(p.attempts[len(p.attempts)-1-i]))
			}
		})
	p.List.OnSelected = func(i widget.ListItemID) { p.show(len(p.attempts) - 1 - i) }
	p.Info = widget.NewLabel("")
	p.Info.Wrapping = fyne.TextWrapWord
	p.Headers = widget.NewRichText()
	p.Headers.Wrapping = fyne.TextWrapWord
	p.Headers.Hide()
	p.Body = newCodeView(d.win.copy)
	p.Body.Find.SetPlaceHolder("Find in the app's answer…")
	// What the list shows and Forward again share a row: the height
	// goes to the attempt.
	top := container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(widget.NewLabel("Forward again to"), p.Route, p.Again), p.Count),
		p.Note)
	p.info = container.New(infoColumns{}, p.Info, p.Headers)
	p.infoScroll = container.NewVScroll(p.info)
	p.attempt = container.New(attemptLayout{p}, p.List, p.infoScroll, p.Body.content)
	p.attempt.Hide()
	p.content = container.NewBorder(top, nil, nil, nil, p.attempt)
	return p
}

// set shows a delivery's attempts (oldest first), the newest selected.
func (p *forwardPane) set(id int64, attempts []*forward.Attempt) {
	same := id == p.id
	p.id, p.attempts = id, attempts
	p.refreshControls()
	p.List.UnselectAll()
	p.List.Refresh()
	if len(attempts) == 0 {
		p.selected = -1
		p.Info.SetText("")
		p.Headers.Hide()
		p.Body.setText(nil, codePlain)
		p.attempt.Hide()
		return
	}
	p.attempt.Show()
	if !same || p.selected < 0 || p.selected >= len(attempts) {
		p.selected = len(attempts) - 1
	}
	p.List.Select(len(attempts) - 1 - p.selected)
	p.show(p.selected)
}

// refreshControls says what the list holds and whether Forward again can
// send now.
func (p *forwardPane) refreshControls() {
	w := p.d.win
	var routes []string
	if w.svc.Forward != nil {
		for _, r := range w.svc.Forward.ForwardRoutes() {
			routes = append(routes, r.Name())
		}
	}
	p.Route.Options = append([]string{allRoutes}, routes...)
	if !slices.Contains(p.Route.Options, p.Route.Selected) {
		p.Route.SetSelected(allRoutes)
	}
	p.Route.Refresh()
	on := len(routes) > 0
	if on {
		p.Again.Enable()
		p.Route.Enable()
	} else {
		p.Again.Disable()
		p.Route.Disable()
	}
	n := len(p.attempts)
	p.Note.Show()
	switch {
	case n > 0:
		p.Count.SetText(plurals.Count(n, "attempt", "attempts") + ", newest first")
		p.Note.SetText("")
		p.Note.Hide()
	case on && w.deliveries.badges[p.id].State == forward.BadgeQueued:
		p.Count.SetText("Queued")
		p.Note.SetText("It waits for your app, behind the deliveries received before it; it goes as soon as your app answers.")
	case on:
		p.Count.SetText("Not forwarded")
		p.Note.SetText("It arrived while forwarding was off. Forward again sends it now.")
	default:
		p.Count.SetText("Not forwarded")
		p.Note.SetText("Forwarding is off. Type your app's URL in the header's Forward to field and turn it on.")
	}
}

// show fills Info and Body with attempt i.
func (p *forwardPane) show(i int) {
	if i < 0 || i >= len(p.attempts) {
		return
	}
	p.selected = i
	a := p.attempts[i]
	p.Info.SetText(attemptDetail(a))
	if h := attemptHeaders(a); h != nil {
		p.Headers.Segments = h
		p.Headers.Refresh()
		p.Headers.Show()
	} else {
		p.Headers.Hide()
	}
	body := a.ResponseBody
	mode := codePlain
	if json.Valid(body) && jsonLooking(body) {
		body, mode = catalog.Pretty(body), codeJSON
	}
	p.Body.setFormatted(body, mode, len(a.ResponseBody))
}

// again forwards the delivery once more to the chosen route(s).
func (p *forwardPane) again() {
	w := p.d.win
	fw, id := w.svc.Forward, p.id
	if fw == nil || id == 0 {
		return
	}
	route := p.Route.Selected
	if route == allRoutes {
		route = ""
	}
	p.Again.Disable()
	w.showStatus(fmt.Sprintf("Forwarding delivery #%d again…", id))
	w.bridge.Go(func() func() {
		got, err := fw.ForwardAgain(context.Background(), id, route)
		attempts, aerr := fw.ForwardAttempts(context.Background(), id)
		return func() {
			p.refreshControls()
			if err != nil {
				w.showError(fmt.Errorf("forward #%d again: %w", id, err))
				return
			}
			if aerr == nil && p.id == id {
				p.selected = len(attempts) - 1
				p.d.showAttempts(id, attempts)
			}
			parts := make([]string, len(got))
			for i, a := range got {
				parts[i] = a.Route + " → " + a.Short(a.StartedAt.Add(a.Latency))
				w.deliveries.attemptsDone([]*forward.Attempt{a})
			}
			w.showStatus(fmt.Sprintf("Forwarded #%d again: %s.", id, strings.Join(parts, "; ")))
		}
	})
}

// attemptLine is one attempt in the list, its outcome first so that a
// narrow pane cuts the least of it: "→ 500 in 12 ms (attempt 2, next in
// 2 s) · 14:03:05.120 · ack · localhost:3000". The chosen attempt is said
// whole below the list.
func attemptLine(a *forward.Attempt) string {
	host := a.Target
	if u, err := url.Parse(a.Target); err == nil && u.Host != "" {
		host = u.Host
	}
	// "next in" as it was planned when the attempt ended.
	return fmt.Sprintf("→ %s · %s · %s · %s", a.Short(a.StartedAt.Add(a.Latency)), a.StartedAt.Local().Format("15:04:05.000"), a.Kind, host)
}

// attemptDetail is what an attempt recorded, in words: not its headers
// (attemptHeaders) nor its body.
func attemptDetail(a *forward.Attempt) string {
	var b strings.Builder
	kind := map[forward.Kind]string{forward.KindAck: "from the queue", forward.KindPassThrough: "pass-through, before the service's answer", forward.KindAgain: "Forward again"}[a.Kind]
	route := ""
	if a.Route != a.Target {
		route = "route " + a.Route + ", "
	}
	fmt.Fprintf(&b, "Attempt %d to %s (%s%s), %s.\n", a.Number, a.Target, route, kind, a.StartedAt.Local().Format("2006-01-02 15:04:05.000"))
	switch a.Outcome {
	case forward.Delivered, forward.Rejected:
		fmt.Fprintf(&b, "Your app answered %d %s in %s.", a.Status, a.StatusText, human.Duration(a.Latency))
	default:
		fmt.Fprintf(&b, "No answer (%s) after %s.", a.Outcome, human.Duration(a.Latency))
	}
	if a.Error != "" && a.Outcome != forward.Rejected {
		b.WriteString(" " + capitalise(a.Error))
		if !strings.HasSuffix(a.Error, ".") && !strings.HasSuffix(a.Error, "?") {
			b.WriteString(".")
		}
	}
	if a.Relayed != 0 {
		fmt.Fprintf(&b, " The service was answered %d.", a.Relayed)
	}
	if a.Resigned {
		b.WriteString(" Re-signed with your app's secret.")
	}
	if a.Reforward {
		b.WriteString("\nRe-forward: Hookscope stopped while an earlier try was under way, so your app may have this delivery twice.")
	}
	if a.GaveUp {
		b.WriteString("\nGiven up after the last retry: Forward again sends it once more.")
	}
	// The body's size is in the code viewer's footer below.
	switch {
	case a.Outcome.Down() || a.Status == 0:
	case len(a.ResponseBody) == 0:
		b.WriteString("\nThe answer had no body.")
	case a.ResponseTruncated:
		fmt.Fprintf(&b, "\nThe answer's body, truncated: only its first %s were kept.", human.Bytes(int64(len(a.ResponseBody))))
	}
	return b.String()
}

// attemptHeaders is the app's response headers, one a line with the name
// in bold (as browsers' devtools show them: no heading line, so the answer
// keeps the height); nil without.
func attemptHeaders(a *forward.Attempt) []widget.RichTextSegment {
	var segs []widget.RichTextSegment
	for i, h := range a.ResponseHeaders {
		value := " " + h.Value
		if i < len(a.ResponseHeaders)-1 {
			// A line break, not a paragraph: paragraphs are spaced apart.
			value += "\n"
		}
		segs = append(segs,
			&widget.TextSegment{Text: h.Name + ":", Style: widget.RichTextStyle{Inline: true, TextStyle: fyne.TextStyle{Bold: true}}},
			&widget.TextSegment{Text: value, Style: widget.RichTextStyleInline})
	}
	return segs
}
