package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/forward"
	plurals "github.com/hookscope/hookscope/internal/plural"
)

// The Forward row's mode choices, in the order shown: listen's
// --forward-mode value, then who answers the service.
const (
	modeAckLabel         = "ack: Hookscope answers"
	modePassThroughLabel = "pass-through: your app answers"
)

// forwardPlaceholder is the Forward to field's hint.
const forwardPlaceholder = "your app's URL, e.g. http://localhost:3000/webhooks (Enter applies)"

// displayForward is the Forward to field as shown: every route's target
// with its credentials redacted (Route.Name), so a password typed into a
// URL is not on screen until the user reveals it.
func displayForward(field string) string {
	specs := forwardSpecs(field)
	for i, s := range specs {
		if r, err := forward.ParseRoute(s); err == nil {
			specs[i] = r.Name()
		}
	}
	return strings.Join(specs, " ")
}

// hasCredentials reports a Forward to field with credentials in a URL.
func hasCredentials(field string) bool {
	return displayForward(field) != strings.Join(forwardSpecs(field), " ")
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

	row fyne.CanvasObject
}

func newForwardRow(win *mainWindow) *forwardRow {
	f := &forwardRow{win: win, routes: map[string]forward.RouteStatus{}, downSince: map[string]time.Time{}}
	f.Field = widget.NewEntry()
	f.Field.SetPlaceHolder(forwardPlaceholder)
	f.Field.TextStyle = fyne.TextStyle{Monospace: true}
	f.Field.OnSubmitted = func(string) { f.apply() }
	f.Field.OnChanged = func(string) {
		if !f.quiet {
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
		container.NewHBox(container.NewCenter(f.State), f.Reveal, f.Mode, f.On), f.Field)
	return f
}

// fill shows the saved settings.
func (f *forwardRow) fill(set Settings) {
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
	if set.ForwardOn && len(forwardSpecs(set.ForwardTo)) == 0 {
		f.quiet = true
		f.On.SetChecked(false)
		f.quiet = false
		f.win.showError(fmt.Errorf("forward: type your app's URL first, for example http://localhost:3000/webhooks"))
		f.win.w.Canvas().Focus(f.Field)
		return
	}
	f.win.setForward(set)
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
	for _, name := range sortedKeys(f.routes) {
		if rs := f.routes[name]; rs.State == forward.RouteDown {
			down = append(down, rs.DownText(now))
		}
	}
	switch {
	case f.err != nil:
		f.State.set("not forwarding", theme.ErrorIcon(), theme.ColorNameError)
	case f.edited():
		f.State.set("press Enter to apply", theme.InfoIcon(), theme.ColorNamePrimary)
	case !set.ForwardOn || set.ForwardTo == "":
		f.State.set("forwarding off", theme.MediaStopIcon(), theme.ColorNameDisabled)
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setForward applies set's forwarding to the station (off the UI
// goroutine: the running forwarder finishes what it sends first), then
// saves set and shows the new state. A field that does not parse is
// said, and nothing changes.
func (m *mainWindow) setForward(set Settings) {
	fw := m.svc.Forward
	if fw == nil {
		return
	}
	cfg, err := set.forwardConfig()
	if err != nil {
		m.showError(fmt.Errorf("forward: %w", err))
		m.header.Forward.err = err
		m.header.Forward.refresh()
		return
	}
	m.bridge.Go(func() func() {
		err := fw.SetForward(context.Background(), cfg)
		status := fw.ForwardStatus()
		return func() {
			f := m.header.Forward
			if err != nil {
				f.err = err
				f.refresh()
				m.showError(fmt.Errorf("forward: %w", err))
				return
			}
			f.err = nil
			f.reset(status)
			m.settings.ForwardTo, m.settings.ForwardOn, m.settings.ForwardMode = set.ForwardTo, set.ForwardOn, set.ForwardMode
			if err := saveSettings(context.Background(), m.svc.Store, m.settings); err != nil {
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
	// Note says what the list shows (or why it is empty).
	Note *widget.Label
	// List has one line per attempt, newest first.
	List *widget.List
	// Info is the selected attempt: target, outcome, error, headers.
	Info *widget.Label
	// Body is the app's answer in the code viewer.
	Body *codeView

	attempts []*forward.Attempt
	selected int
	id       int64

	// split holds the list and the answer; hidden without attempts.
	split   *container.Split
	content fyne.CanvasObject
}

// allRoutes is the Route choice that forwards to every matching route.
const allRoutes = "All routes"

func newForwardPane(d *detailView) *forwardPane {
	p := &forwardPane{d: d, selected: -1}
	p.Route = widget.NewSelect([]string{allRoutes}, nil)
	p.Route.SetSelected(allRoutes)
	p.Again = widget.NewButtonWithIcon("Forward again", theme.MailForwardIcon(), p.again)
	p.Note = widget.NewLabel("")
	p.Note.Wrapping = fyne.TextWrapWord
	p.List = widget.NewList(func() int { return len(p.attempts) },
		func() fyne.CanvasObject {
			l := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(p.attempts) {
				o.(*widget.Label).SetText(attemptLine(p.attempts[len(p.attempts)-1-i]))
			}
		})
	p.List.OnSelected = func(i widget.ListItemID) { p.show(len(p.attempts) - 1 - i) }
	p.Info = widget.NewLabel("")
	p.Info.Wrapping = fyne.TextWrapWord
	p.Body = newCodeView(d.win.copy)
	p.Body.Find.SetPlaceHolder("Find in the app's answer…")
	top := container.NewVBox(container.NewBorder(nil, nil, widget.NewLabel("Forward again to"), p.Again, p.Route), p.Note)
	// Attempts, then the chosen one in words (headers can be many
	// lines), then its body: each part scrolls, and the user moves the
	// dividers.
	answer := container.NewVSplit(container.NewVScroll(container.NewPadded(p.Info)), p.Body.content)
	answer.Offset = 0.45
	p.split = container.NewVSplit(p.List, answer)
	p.split.Offset = 0.25
	p.split.Hide()
	p.content = container.NewBorder(top, nil, nil, nil, p.split)
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
		p.Body.setText(nil, codePlain)
		p.split.Hide()
		return
	}
	p.split.Show()
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
	if !contains(p.Route.Options, p.Route.Selected) {
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
	switch {
	case n > 0:
		p.Note.SetText(plurals.Count(n, "attempt", "attempts") + ", newest first; select one to see your app's answer.")
	case on && w.deliveries.badges[p.id].State == forward.BadgeQueued:
		p.Note.SetText("Queued: it waits for your app, behind the deliveries received before it; it goes as soon as your app answers.")
	case on:
		p.Note.SetText("Not forwarded: it arrived while forwarding was off. Forward again sends it now.")
	default:
		p.Note.SetText("Not forwarded: forwarding is off. Type your app's URL in the header's Forward to field and turn it on.")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// show fills Info and Body with attempt i.
func (p *forwardPane) show(i int) {
	if i < 0 || i >= len(p.attempts) {
		return
	}
	p.selected = i
	a := p.attempts[i]
	p.Info.SetText(attemptDetail(a))
	body := a.ResponseBody
	mode := codePlain
	if json.Valid(body) && jsonLooking(body) {
		body, mode = catalog.Pretty(body), codeJSON
	}
	p.Body.setText(body, mode)
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

// attemptLine is one attempt in the list: "#2  14:03:05.120  ack
// localhost:3000  → 500 in 12 ms (attempt 2, next in 2 s)".
func attemptLine(a *forward.Attempt) string {
	host := a.Target
	if u, err := url.Parse(a.Target); err == nil && u.Host != "" {
		host = u.Host
	}
	// "next in" as it was planned when the attempt ended.
	return fmt.Sprintf("%s  %-12s %s  → %s", a.StartedAt.Local().Format("15:04:05.000"), a.Kind, host, a.Short(a.StartedAt.Add(a.Latency)))
}

// attemptDetail is everything an attempt recorded but its body, in words.
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
		fmt.Fprintf(&b, "Your app answered %d %s in %s.", a.Status, a.StatusText, forward.Spoken(a.Latency))
	default:
		fmt.Fprintf(&b, "No answer (%s) after %s.", a.Outcome, forward.Spoken(a.Latency))
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
	if len(a.ResponseHeaders) > 0 {
		b.WriteString("\nResponse headers:")
		for _, h := range a.ResponseHeaders {
			fmt.Fprintf(&b, "\n  %s: %s", h.Name, h.Value)
		}
	}
	switch {
	case a.Outcome.Down() || a.Status == 0:
	case len(a.ResponseBody) == 0:
		b.WriteString("\nThe answer had no body.")
	case a.ResponseTruncated:
		fmt.Fprintf(&b, "\nThe answer's body, truncated: only its first %s were kept.", humanBytes(int64(len(a.ResponseBody))))
	default:
		fmt.Fprintf(&b, "\nThe answer's body (%s):", humanBytes(int64(len(a.ResponseBody))))
	}
	return b.String()
}
