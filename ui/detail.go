package ui

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
)

// detailData is everything the detail pane shows, prepared off the UI
// goroutine so opening a large delivery never stalls the window.
type detailData struct {
	rec *inspector.Record
	// json is true when the body is one JSON value: the JSON tab shows it
	// pretty-printed, formatted only when that tab is first shown.
	json bool
	// copies per event index: every stored copy of that event's uuid.
	copies map[int][]storage.EventRef
	// decoded per event index: typed fields from the catalogue.
	decoded map[int]catalog.Event
	// diffs per event index: what changed from the first copy, path by
	// path; firsts holds that first copy and its delivery for the full diff.
	diffs  map[int][]inspector.JSONChange
	firsts map[int]firstCopy
	// attempts are the delivery's forward attempts, oldest first.
	attempts []*forward.Attempt
	// timeline is the delivery's message's attempts by the service (nil:
	// no hook uuid).
	timeline *resends.Timeline
}

// firstCopy is the first stored copy of a divergent event.
type firstCopy struct {
	deliveryID int64
	raw        json.RawMessage
}

// maxChangesShown bounds the changes listed on an event card (each is a
// wrapped label); the full diff shows the rest.
const maxChangesShown = 20

// maxChangeText shortens one listed change (an added object can be long).
const maxChangeText = 300

// maxCards bounds the event cards of one delivery: a card costs a few
// milliseconds to lay out (wrapped text is measured word by word), so a
// batch of thousands would take seconds. Past it the tab says what the
// batch holds and points to the JSON tab, which shows every event.
const maxCards = 10

// detailView is the right-hand pane: actions, then tabs Events, JSON,
// Raw, Headers and Signature.
type detailView struct {
	win *mainWindow
	rec *inspector.Record
	dat *detailData
	// loading is the id whose load is in flight; older loads are dropped.
	loading int64

	Title        *widget.Label
	Meta         *widget.Label
	CopyBody     *widget.Button
	CopyPretty   *widget.Button
	CopyCurl     *widget.Button
	DeleteButton *widget.Button
	Tabs         *container.AppTabs
	// eventsTab and sigTab build their content when first shown.
	eventsTab, sigTab *lazyTab
	EventsBox         *fyne.Container
	// EventsScroll and SigScroll scroll the Events and Signature tabs;
	// every scrollable pane opens a delivery at its top.
	EventsScroll, SigScroll *container.Scroll
	// DiffView shows a divergent copy's full diff, in a dialog.
	DiffView *codeView
	// ValueView shows an event card's long value whole (Show all), in a
	// dialog: valueDialog while it is open.
	ValueView   *codeView
	valueDialog dialog.Dialog
	// JSONView and RawView are virtualized line lists: only the visible
	// rows are built, so every line of a body of megabytes is reachable
	// and opening one costs what a small one does.
	JSONView *codeView
	// jsonTab formats the body into JSONView when first shown.
	jsonTab *lazyTab
	RawNote *widget.Label
	RawView *codeView
	// HeadersBox lists the headers as received, each value whole
	// (wrapped; a long one cut with Show all) beside its Copy button.
	HeadersBox    *fyne.Container
	HeadersScroll *container.Scroll
	headersTab    *lazyTab
	SigBox        *fyne.Container
	// Forward is the Forward tab (nil without forwarding).
	Forward    *forwardPane
	forwardTab *container.TabItem
	// Resent says how many times the service sent the delivery's message
	// and opens the Re-sends tab (hidden for a message sent once).
	Resent *widget.Button

	headers     []inspector.Header
	placeholder fyne.CanvasObject
	pane        *fyne.Container
	content     fyne.CanvasObject
}

func newDetailView(win *mainWindow) *detailView {
	d := &detailView{win: win}
	d.Title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	d.Title.Truncation = fyne.TextTruncateEllipsis
	d.Meta = widget.NewLabel("")
	d.Meta.Truncation = fyne.TextTruncateEllipsis
	d.CopyBody = widget.NewButtonWithIcon("Body", theme.ContentCopyIcon(), d.copyBody)
	d.CopyPretty = widget.NewButtonWithIcon("Pretty JSON", theme.ContentCopyIcon(), d.copyPretty)
	d.CopyCurl = widget.NewButtonWithIcon("curl", theme.ContentCopyIcon(), d.copyCurl)
	d.DeleteButton = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), d.confirmDelete)
	d.DeleteButton.Importance = widget.DangerImportance

	d.EventsBox = container.NewVBox()
	d.JSONView = newCodeView(win.copy)
	d.RawNote = widget.NewLabel("")
	d.RawNote.Wrapping = fyne.TextWrapWord
	d.RawNote.Importance = widget.WarningImportance
	d.RawView = newCodeView(win.copy)
	d.HeadersBox = container.NewVBox()
	d.HeadersScroll = container.NewScroll(container.NewPadded(d.HeadersBox))
	d.headersTab = newLazyTab(d.HeadersScroll)
	d.SigBox = container.NewVBox()
	d.EventsScroll = container.NewScroll(container.NewPadded(d.EventsBox))
	d.SigScroll = container.NewScroll(container.NewPadded(d.SigBox))
	d.eventsTab = newLazyTab(d.EventsScroll)
	d.sigTab = newLazyTab(d.SigScroll)
	d.DiffView = newCodeView(win.copy)
	d.DiffView.Find.SetPlaceHolder("Find in diff…")
	d.ValueView = newCodeView(win.copy)
	d.ValueView.Find.SetPlaceHolder("Find in this value…")
	d.jsonTab = newLazyTab(d.JSONView.content)

	d.Tabs = container.NewAppTabs(
		container.NewTabItem("Events", d.eventsTab),
		container.NewTabItem("JSON", d.jsonTab),
		container.NewTabItem("Raw", newLazyTab(container.NewBorder(d.RawNote, nil, nil, nil, d.RawView.content))),
		container.NewTabItem("Headers", d.headersTab),
		container.NewTabItem("Signature", d.sigTab),
	)
	if win.svc.Forward != nil {
		d.Forward = newForwardPane(d)
		d.forwardTab = container.NewTabItem("Forward", d.Forward.content)
		d.Tabs.Append(d.forwardTab)
	}
	d.Resent = widget.NewButtonWithIcon("", theme.HistoryIcon(), win.showResends)
	d.Resent.Hide()
	// Two rows: what it is, with what to do to it; how it came, with what
	// to copy. Title and request line are cut at the pane's edge, the
	// buttons never overlap (the pane is as wide as they need).
	copies := container.NewHBox(d.CopyBody, d.CopyPretty, d.CopyCurl)
	head := container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(d.Resent, newReplayButton(win), d.DeleteButton), d.Title),
		container.NewBorder(nil, nil, nil, copies, d.Meta))
	if p := win.trace.detailProbe(); p != nil {
		head.Add(p)
	}
	d.pane = container.NewBorder(head, nil, nil, nil, d.Tabs)
	// The pane never widens the window: long values scroll or wrap inside it.
	d.placeholder = container.NewCenter(widget.NewLabelWithStyle("Select a delivery to see its events, body, headers and signature.", fyne.TextAlignCenter, fyne.TextStyle{Italic: true}))
	d.content = container.NewStack(d.placeholder)
	return d
}

// clear shows the placeholder.
func (d *detailView) clear() {
	d.rec, d.dat, d.loading = nil, nil, 0
	d.content.(*fyne.Container).Objects = []fyne.CanvasObject{d.placeholder}
	d.content.Refresh()
}

// load fetches and shows delivery id.
func (d *detailView) load(id int64) {
	d.loading = id
	store, fw := d.win.svc.Store, d.win.svc.Forward
	d.win.bridge.Go(func() func() {
		dat, err := prepareDetail(context.Background(), store, id)
		if err == nil && fw != nil {
			dat.attempts, _ = fw.ForwardAttempts(context.Background(), id)
		}
		return func() {
			if d.loading != id {
				return
			}
			if err != nil {
				d.win.showError(err)
				return
			}
			d.show(dat)
		}
	})
}

// prepareDetail does the slow part of opening a delivery: the store reads
// and decoding. Pretty-printing waits for the JSON tab (or Copy pretty
// JSON), which most openings never show.
func prepareDetail(ctx context.Context, store Store, id int64) (*detailData, error) {
	rec, err := store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("open delivery %d: %w", id, err)
	}
	dat := &detailData{rec: rec, copies: map[int][]storage.EventRef{}, decoded: map[int]catalog.Event{}, diffs: map[int][]inspector.JSONChange{}, firsts: map[int]firstCopy{}}
	dat.json = json.Valid(rec.Delivery.Body)
	if rec.Analysis == nil {
		return dat, nil
	}
	if h := rec.Analysis.HookUUID; h != "" {
		if tls, err := resends.Timelines(ctx, store, []string{h}); err == nil && len(tls) == 1 {
			dat.timeline = &tls[0]
		}
	}
	for i, ev := range rec.Analysis.Events {
		if i == maxCards {
			break
		}
		dat.decoded[i] = catalog.DecodeEvent(ev.Raw)
		if ev.UUID == "" || ev.Copies <= 1 && !ev.Duplicate {
			continue
		}
		refs, err := store.EventCopies(ctx, ev.UUID)
		if err == nil {
			dat.copies[i] = refs
		}
		if fc, err := inspector.DivergentFrom(ctx, store, rec, i); err == nil && fc != nil {
			dat.diffs[i] = fc.Changes
			dat.firsts[i] = firstCopy{deliveryID: fc.DeliveryID, raw: fc.Raw}
		}
	}
	return dat, nil
}

// show renders prepared data. Another delivery opens with every pane at
// its top; the same delivery shown again (a new verdict) keeps its place,
// and its body, which never changes, is not laid out again.
func (d *detailView) show(dat *detailData) {
	fresh := d.rec == nil || d.rec.Delivery.ID != dat.rec.Delivery.ID
	d.rec, d.dat = dat.rec, dat
	del := dat.rec.Delivery
	d.Title.SetText(fmt.Sprintf("Delivery #%d — %s", del.ID, deliveryHeadline(dat.rec)))
	meta := fmt.Sprintf("%s %s · %s · %s · from %s", del.Method, del.Path, del.ReceivedAt.Local().Format("2006-01-02 15:04:05.000"), human.Bytes(del.BodyLength), del.RemoteAddr)
	if del.Source == relay.DeliverySource {
		// The relay received it (its time, address and answer); this
		// store took it from the relay's stream at that sequence.
		meta += fmt.Sprintf(" · via relay #%d", del.RelaySeq)
	}
	if del.Status != 0 {
		meta += fmt.Sprintf(" · answered %d", del.Status)
	} else {
		meta += " · not answered"
	}
	d.Meta.SetText(meta)
	valid := utf8.Valid(del.Body)
	if valid && !dat.json && !jsonLooking(del.Body) {
		d.CopyPretty.Disable()
	} else {
		d.CopyPretty.Enable()
	}
	// The cards and the signature form are the costly parts (wrapped text
	// is measured word by word); a hidden tab builds them when shown.
	d.eventsTab.update(func() { d.showEvents(dat) })
	if fresh {
		mode := codePlain
		if dat.json && jsonLooking(del.Body) {
			mode = codeJSON
		}
		// setText scrolls the JSON and Raw views to their tops.
		d.jsonTab.update(func() { d.JSONView.setFormatted(catalog.Pretty(del.Body), mode, len(del.Body)) })
		d.showRaw(del, valid)
		// A scroll already at its top is left alone: ScrollToTop lays
		// its content out again (the cards just built, ~5 ms a click).
		for _, sc := range []*container.Scroll{d.EventsScroll, d.SigScroll, d.HeadersScroll} {
			if sc.Offset.Y != 0 {
				sc.ScrollToTop()
			}
		}
		d.headers = del.Headers
		d.headersTab.update(d.showHeaders)
	}
	d.sigTab.update(func() { d.showSignature(dat.rec) })
	if d.Forward != nil {
		d.showAttempts(del.ID, dat.attempts)
	}
	d.showResent(dat.timeline)
	// Every part refreshed itself above; refreshing the pane again would
	// lay out all the event cards a second time.
	if c := d.content.(*fyne.Container); c.Objects[0] != d.pane {
		c.Objects = []fyne.CanvasObject{d.pane}
		c.Refresh()
	}
	d.win.trace.detailShown(del.ID)
}

// forwardTabTitle is the Forward tab's title: the latest attempt's
// outcome in a word or two ("Forward → 200"), so the tab says it unopened.
func forwardTabTitle(attempts []*forward.Attempt) string {
	if len(attempts) == 0 {
		return "Forward"
	}
	return "Forward " + attempts[len(attempts)-1].Badge().Text
}

// reloadForward reads the shown delivery's attempts again (one finished).
func (d *detailView) reloadForward() {
	if d.Forward == nil || d.rec == nil {
		return
	}
	id, fw := d.rec.Delivery.ID, d.win.svc.Forward
	d.win.bridge.Go(func() func() {
		attempts, err := fw.ForwardAttempts(context.Background(), id)
		return func() {
			if err != nil || d.rec == nil || d.rec.Delivery.ID != id {
				return
			}
			d.showAttempts(id, attempts)
		}
	})
}

// showAttempts shows a delivery's attempts in the Forward tab and its
// title. Only a changed title refreshes the tabs (which lays out the
// shown tab again).
func (d *detailView) showAttempts(id int64, attempts []*forward.Attempt) {
	d.Forward.set(id, attempts)
	if t := forwardTabTitle(attempts); t != d.forwardTab.Text {
		d.forwardTab.Text = t
		d.Tabs.Refresh()
	}
}

// forwardChanged shows whether Forward again can send (forwarding was
// turned on or off, or its routes changed).
func (d *detailView) forwardChanged() {
	if d.Forward != nil {
		d.Forward.refreshControls()
	}
}

func jsonLooking(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// deliveryHeadline is the detail title's short description.
func deliveryHeadline(r *inspector.Record) string {
	a := r.Analysis
	switch {
	case r.Delivery.Rejected:
		return r.Delivery.Method + " rejected"
	case a == nil:
		return "waiting for analysis"
	case a.Error != nil:
		return "not a webhook message"
	case len(a.Events) == 1:
		return a.Events[0].Type
	}
	return fmt.Sprintf("%d events", len(a.Events))
}

func (d *detailView) showRaw(del *inspector.Delivery, valid bool) {
	var notes []string
	if del.Truncated {
		notes = append(notes, fmt.Sprintf("Truncated: the body was %s, larger than the body cap; only the first %s were stored (the receiver answered 413).", human.Bytes(del.BodyLength), human.Bytes(int64(len(del.Body)))))
	}
	if del.ReadError != "" {
		notes = append(notes, "The body could not be read completely: "+del.ReadError)
	}
	if !valid {
		notes = append(notes, "The body is not valid UTF-8, so it is shown as a hex dump.")
		d.RawView.setText(del.Body, codeHex)
	} else {
		d.RawView.setText(del.Body, codePlain)
	}
	if len(del.Body) == 0 {
		notes = append(notes, "The body is empty.")
	}
	d.RawNote.Importance = widget.MediumImportance
	if len(notes) > 0 {
		d.RawNote.Importance = widget.WarningImportance
	}
	kind := "UTF-8 text"
	if !valid {
		kind = "binary"
	}
	info := fmt.Sprintf("The exact %s received (%s), byte for byte; long lines are folded to fit the pane (Copy body and Copy line copy them unchanged).", kind, human.Bytes(int64(len(del.Body))))
	d.RawNote.SetText(strings.Join(append([]string{info}, notes...), "\n"))
}

// maxHeadersShown bounds the Headers tab's rows (net/http accepts up to
// 1 MB of headers); Copy as curl has every header.
const maxHeadersShown = 200

// maxHeaderName is where a header name is cut in the name column.
const maxHeaderName = 48

// showHeaders lists the delivery's headers in the order received.
func (d *detailView) showHeaders() {
	var cells []fyne.CanvasObject
	for i, h := range d.headers {
		if i == maxHeadersShown {
			break
		}
		name := h.Name
		if r := []rune(name); len(r) > maxHeaderName {
			name = string(r[:maxHeaderName]) + "…"
		}
		copyBtn := widget.NewButtonWithIcon("", theme.ContentCopyIcon(), func() { d.win.copy(h.Value, "value of "+h.Name) })
		copyBtn.Importance = widget.LowImportance
		cells = append(cells,
			widget.NewLabelWithStyle(name, fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}),
			container.NewBorder(nil, nil, nil, copyBtn, d.longText(h.Name, h.Value, true)))
	}
	objs := []fyne.CanvasObject{container.New(layout.NewFormLayout(), cells...)}
	if n := len(d.headers) - maxHeadersShown; n > 0 {
		objs = append(objs, factLabel(fmt.Sprintf("…and %s more headers, not shown here: Copy as curl has them all.", human.Count(int64(n))), widget.WarningImportance))
	}
	d.HeadersBox.Objects = objs
	d.HeadersBox.Refresh()
}

// hexDump renders b as offset, hex and printable columns.
func hexDump(b []byte) string {
	return strings.TrimRight(hex.Dump(b), "\n")
}

func (d *detailView) showEvents(dat *detailData) {
	a := dat.rec.Analysis
	var objs []fyne.CanvasObject
	switch {
	case dat.rec.Delivery.Rejected:
		objs = append(objs, widget.NewLabel("Only POST requests are deliveries; this request was recorded and answered 405."))
	case a == nil:
		objs = append(objs, widget.NewLabel("This delivery is stored and waiting for analysis."))
	case a.Error != nil:
		msg := "The body is not a webhook message: " + a.Error.Reason
		if a.Error.Offset >= 0 {
			msg += fmt.Sprintf(" (at byte %d)", a.Error.Offset)
		}
		l := widget.NewLabel(msg)
		l.Wrapping = fyne.TextWrapWord
		l.Importance = widget.DangerImportance
		objs = append(objs, l)
	}
	if a != nil {
		if a.HookUUID != "" {
			hook := widget.NewForm(widget.NewFormItem("hook uuid", d.cardValue("hook uuid", a.HookUUID)))
			objs = append(objs, hook)
			if a.Resend && a.ResendOf != 0 && a.ResendOf != dat.rec.Delivery.ID {
				objs = append(objs, container.NewBorder(nil, nil, nil, d.link(a.ResendOf),
					factLabel("Re-sent message: the same hook uuid arrived before in", widget.WarningImportance)))
			}
		}
		if len(a.Problems) > 0 {
			objs = append(objs, widget.NewCard("Delivery problems", "", problemsBox(a.Problems)))
		}
		if len(a.Events) > maxCards {
			objs = append(objs, d.batchNote(a))
		}
		for i, ev := range a.Events {
			if i == maxCards {
				break
			}
			objs = append(objs, d.eventCard(i, ev, dat))
		}
	}
	d.EventsBox.Objects = objs
	d.EventsBox.Refresh()
}

// batchNote sums up a delivery with more events than cards.
func (d *detailView) batchNote(a *inspector.Analysis) fyne.CanvasObject {
	var dup, div, probs int
	for _, ev := range a.Events {
		switch {
		case ev.Divergent:
			div++
		case ev.Duplicate:
			dup++
		}
		if len(ev.Problems) > 0 {
			probs++
		}
	}
	msg := fmt.Sprintf("%s events in this delivery (%s duplicates, %s divergent, %s with problems). The first %d are shown as cards; the JSON tab shows every event, and its Find box searches them.",
		human.Count(int64(len(a.Events))), human.Count(int64(dup)), human.Count(int64(div)), human.Count(int64(probs)), maxCards)
	open := widget.NewButtonWithIcon("Open the JSON tab", theme.NavigateNextIcon(), func() { d.Tabs.SelectIndex(1) })
	open.Importance = widget.LowImportance
	return container.NewVBox(factLabel(msg, widget.WarningImportance), container.NewHBox(open))
}

func (d *detailView) eventCard(i int, ev inspector.EventAnalysis, dat *detailData) fyne.CanvasObject {
	dec := dat.decoded[i]
	title := clipped(ev.Type)
	if title == "" {
		title = "(event without a type)"
	}
	if !dec.Known && ev.Type != "" {
		title += "  (unknown type)"
	}
	// Objects are collected first and put in their containers at once:
	// each Container.Add or Form.Append lays the whole card out again,
	// which made 25 cards take ~0.4 s.
	var box []fyne.CanvasObject
	if ev.Summary != "" {
		box = append(box, factLabel(clipped(ev.Summary), widget.MediumImportance))
	}
	var facts []*widget.FormItem
	if len(dec.Fields) == 0 {
		facts = append(facts, widget.NewFormItem("uuid", d.cardValue("uuid", ev.UUID)), widget.NewFormItem("generated_at", d.cardValue("generated_at", ev.GeneratedRaw)))
	}
	for _, f := range dec.Fields {
		facts = append(facts, widget.NewFormItem(f.Label, d.cardValue(f.Label, f.Value)))
	}

	// Dedupe facts.
	var dd []fyne.CanvasObject
	switch {
	case ev.Divergent:
		dd = append(dd, factLabel(fmt.Sprintf("Divergent duplicate: copy %d of this uuid, and its content differs from the first copy.", ev.Copies), widget.DangerImportance))
	case ev.Duplicate:
		dd = append(dd, factLabel(fmt.Sprintf("Duplicate: copy %d of this uuid (same content as the first). Consumers must keep one.", ev.Copies), widget.MediumImportance))
	case ev.Copies > 1:
		dd = append(dd, factLabel(fmt.Sprintf("First copy of this event; %d copies have arrived in all.", ev.Copies), widget.MediumImportance))
	default:
		dd = append(dd, factLabel("New: the first and only copy of this uuid so far.", widget.SuccessImportance))
	}
	if refs := dat.copies[i]; len(refs) > 1 {
		links := container.NewHBox(widget.NewLabel("Copies:"))
		for _, r := range refs {
			if r.DeliveryID == dat.rec.Delivery.ID {
				links.Add(widget.NewLabelWithStyle(fmt.Sprintf("#%d (this)", r.DeliveryID), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
				continue
			}
			links.Add(d.link(r.DeliveryID))
		}
		dd = append(dd, container.NewHScroll(links))
		first := refs[0]
		dd = append(dd, factLabel(fmt.Sprintf("First seen %s (%s) in #%d.", first.ReceivedAt.Local().Format("15:04:05.000"), ago(first.ReceivedAt, time.Now()), first.DeliveryID), widget.MediumImportance))
	}
	if diff := dat.diffs[i]; len(diff) > 0 {
		dd = append(dd, d.changesBox(ev, diff, dat.firsts[i]))
	}
	box = append(box, container.NewVBox(dd...))
	if ev.OutOfOrder {
		note := ev.OrderNote
		if note == "" {
			note = "a later event about the same subject arrived first"
		}
		box = append(box, factLabel("Out of order: "+note, widget.WarningImportance))
	}
	if probs := append(append([]catalog.Problem(nil), ev.Problems...), extraProblems(ev.Problems, dec.Problems)...); len(probs) > 0 {
		box = append(box, problemsBox(probs))
	}
	// The facts that need attention come first, the typed fields after.
	box = append(box, widget.NewSeparator(), widget.NewForm(facts...))
	raw := ev.Raw
	copyBtn := widget.NewButtonWithIcon("Copy event", theme.ContentCopyIcon(), func() {
		d.win.copy(string(catalog.Pretty(raw)), "event "+ev.UUID)
	})
	copyBtn.Importance = widget.LowImportance
	box = append(box, container.NewHBox(layout.NewSpacer(), copyBtn))
	return widget.NewCard(title, "", container.NewVBox(box...))
}

// changesBox lists what changed from the first copy, path by path, with
// the full diff one click away.
func (d *detailView) changesBox(ev inspector.EventAnalysis, diff []inspector.JSONChange, first firstCopy) fyne.CanvasObject {
	head := fmt.Sprintf("What changed from the first copy (#%d):", first.deliveryID)
	var lines []fyne.CanvasObject
	for n, c := range diff {
		if n == maxChangesShown {
			lines = append(lines, factLabel(fmt.Sprintf("…and %d more changes: see the full diff.", len(diff)-n), widget.MediumImportance))
			break
		}
		text, cut := clipText(c.String(), cardValueLines, maxChangeText)
		if cut {
			text += "…"
		}
		l := widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
		l.Wrapping = fyne.TextWrapWord
		switch {
		case c.Added():
			l.Importance = widget.SuccessImportance
		case c.Removed():
			l.Importance = widget.DangerImportance
		}
		lines = append(lines, l)
	}
	raw := ev.Raw
	full := widget.NewButtonWithIcon("Full diff…", theme.VisibilityIcon(), func() { d.showFullDiff(ev.UUID, first, raw) })
	full.Importance = widget.LowImportance
	return container.NewVBox(
		container.NewBorder(nil, nil, nil, full, widget.NewLabelWithStyle(head, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})),
		container.New(tightVBox{}, lines...))
}

// showFullDiff opens the line diff of the first copy and this one, keys
// sorted so that their order is not a difference.
func (d *detailView) showFullDiff(uuid string, first firstCopy, raw json.RawMessage) {
	this := d.rec.Delivery.ID
	d.win.bridge.Go(func() func() {
		text := inspector.UnifiedJSONDiff(first.raw, raw, fmt.Sprintf("first copy (#%d)", first.deliveryID), fmt.Sprintf("this copy (#%d)", this))
		return func() {
			d.DiffView.setText([]byte(text), codeDiff)
			dlg := dialog.NewCustom("Event "+uuid+": full diff", "Close", d.DiffView.content, d.win.w)
			cs := d.win.w.Canvas().Size()
			dlg.Resize(fyne.NewSize(min(900, cs.Width-40), min(620, cs.Height-40)))
			dlg.Show()
		}
	})
}

// extraProblems returns catalogue problems not already in stored ones (a
// newer catalogue may find more than the stored analysis did).
func extraProblems(stored, fresh []catalog.Problem) []catalog.Problem {
	seen := map[catalog.Problem]bool{}
	for _, p := range stored {
		seen[p] = true
	}
	var out []catalog.Problem
	for _, p := range fresh {
		if !seen[p] {
			out = append(out, p)
		}
	}
	return out
}

func problemsBox(probs []catalog.Problem) fyne.CanvasObject {
	var box []fyne.CanvasObject
	for _, p := range probs {
		icon := theme.NewColoredResource(theme.InfoIcon(), theme.ColorNameForeground)
		switch p.Severity {
		case catalog.SeverityError:
			icon = theme.NewColoredResource(theme.ErrorIcon(), theme.ColorNameError)
		case catalog.SeverityWarning:
			icon = theme.NewColoredResource(theme.WarningIcon(), theme.ColorNameWarning)
		}
		text := p.Message
		if p.Path != "" {
			text = p.Path + ": " + p.Message
		}
		l := widget.NewLabel(string(p.Severity) + " — " + text)
		l.Wrapping = fyne.TextWrapWord
		box = append(box, container.NewBorder(nil, nil, widget.NewIcon(icon), nil, l))
	}
	return container.NewVBox(box...)
}

func (d *detailView) link(id int64) fyne.CanvasObject {
	b := widget.NewButton(fmt.Sprintf("#%d", id), func() { d.win.deliveries.open(id) })
	b.Importance = widget.LowImportance
	return b
}

func selectable(s string) *widget.Label {
	l := widget.NewLabel(s)
	if len(s) <= 60 {
		// Short values are copyable and need no wrapping; wrapping costs a
		// text measurement per break candidate, and most values are short.
		l.Selectable = true
		return l
	}
	// A selectable label does not wrap in Fyne 2.7, so a long value would
	// widen the card; long values are copied with "Copy event" instead.
	l.Wrapping = fyne.TextWrapBreak // URLs and digests have no spaces to wrap at
	return l
}

func factLabel(s string, imp widget.Importance) *widget.Label {
	l := widget.NewLabel(s)
	l.Wrapping = fyne.TextWrapWord
	l.Importance = imp
	return l
}

func (d *detailView) showSignature(r *inspector.Record) {
	box := d.SigBox
	if r.Analysis == nil {
		box.Objects = []fyne.CanvasObject{widget.NewLabel("Not verified yet: the delivery is waiting for analysis.")}
		box.Refresh()
		return
	}
	s := r.Analysis.Signature
	b := newBadge(0)
	b.set(signatureLook(s.Status))
	// Collected first, then laid out once (see eventCard).
	objs := []fyne.CanvasObject{container.NewHBox(widget.NewLabelWithStyle("X-Service-Signature", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), container.NewCenter(b))}
	if s.Reason != "" {
		objs = append(objs, factLabel(s.Reason, widget.MediumImportance))
	}
	recv := s.Received
	if recv == "" {
		recv = "(no X-Service-Signature header)"
	}
	items := []*widget.FormItem{widget.NewFormItem("Received", monoSelectable(recv))}
	for i, exp := range s.Expected {
		label := fmt.Sprintf("Expected with secret %d", i+1)
		val := monoSelectable(exp)
		if i == s.SecretIndex {
			items = append(items, widget.NewFormItem(label, container.NewVBox(val, factLabel("✓ this secret matched", widget.SuccessImportance))))
		} else {
			items = append(items, widget.NewFormItem(label, val))
		}
	}
	if s.SecretIndex >= 0 {
		items = append(items, widget.NewFormItem("Matched", widget.NewLabel(fmt.Sprintf("secret %d of %d", s.SecretIndex+1, len(s.Expected)))))
	}
	objs = append(objs, widget.NewForm(items...))
	if s.UpperCase {
		objs = append(objs, factLabel("The digest was sent in upper-case hex. Hookscope accepts it, but the service documents lower case: a strict consumer would reject it.", widget.WarningImportance))
	}
	if len(s.Expected) == 0 {
		set := widget.NewButtonWithIcon("Set a signature secret…", theme.SettingsIcon(), d.win.promptSecret)
		objs = append(objs, factLabel("No signature secret is configured, so the signature cannot be checked. Enter the Secret Key from the service's webhook settings.", widget.MediumImportance),
			container.NewHBox(set))
	}
	objs = append(objs, factLabel("The signature is the hex HMAC-SHA256 of the raw body, keyed with the webhook's Secret Key (spec 4.3). Expected digests are shown so you can compare them with your own code; they do not reveal the secret.", widget.MediumImportance))
	box.Objects = objs
	box.Refresh()
}

func monoSelectable(s string) *widget.Label {
	l := widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	l.Wrapping = fyne.TextWrapBreak
	return l
}

func (d *detailView) copyBody() {
	if d.rec == nil {
		return
	}
	d.win.copy(string(d.rec.Delivery.Body), fmt.Sprintf("body of #%d", d.rec.Delivery.ID))
}

func (d *detailView) copyPretty() {
	if d.dat == nil {
		return
	}
	d.win.copy(string(catalog.Pretty(d.rec.Delivery.Body)), fmt.Sprintf("pretty JSON of #%d", d.rec.Delivery.ID))
}

// copyCurl copies the delivery's curl command: the same text the curl
// export writes for it (same target, credentials redacted).
func (d *detailView) copyCurl() {
	if d.rec == nil {
		return
	}
	del, local, store := d.rec.Delivery, d.win.localURL(), d.win.svc.Store
	d.win.bridge.Go(func() func() {
		cmd := export.CurlCommand(del, export.CurlOptions{Target: curlTarget(context.Background(), store, local)})
		what := fmt.Sprintf("curl for #%d", del.ID)
		if export.Redacts(del) {
			what += " (credentials redacted; Export with reveal keeps them)"
		}
		return func() { d.win.copy(cmd, what) }
	})
}

func (d *detailView) confirmDelete() {
	if d.rec == nil {
		return
	}
	id := d.rec.Delivery.ID
	if d.win.skipConfirm {
		d.win.deleteDeliveries(id)
		return
	}
	dialog.ShowConfirm("Delete delivery", fmt.Sprintf("Delete delivery #%d from the store? This cannot be undone.", id), func(ok bool) {
		if ok {
			d.win.deleteDeliveries(id)
		}
	}, d.win.w)
}

// lazyTab holds a tab's content and passes refreshes on only while it is
// shown. Fyne 2.7's AppTabs refreshes every tab's content on each tab
// switch; with a delivery's event cards that alone took ~100 ms a switch.
// What the views change inside a tab they refresh themselves, so a hidden
// tab misses only theme changes, and Show catches those up.
type lazyTab struct {
	widget.BaseWidget
	content fyne.CanvasObject
	// look is the theme the content was last refreshed with.
	look tabLook
	// skipOnce drops the refresh AppTabs sends right after showing a tab
	// that is already up to date.
	skipOnce bool
	// pending builds the content for what was last opened, when the tab
	// was hidden then.
	pending func()
}

// update runs build now when the tab is shown, else when it is next shown
// (replacing an earlier pending build).
func (l *lazyTab) update(build func()) {
	if l.Visible() {
		l.pending = nil
		build()
		return
	}
	l.pending = build
}

// tabLook is what a theme change alters: the variant and the text size.
type tabLook struct {
	variant fyne.ThemeVariant
	text    float32
}

func currentLook() tabLook {
	return tabLook{fyne.CurrentApp().Settings().ThemeVariant(), theme.TextSize()}
}

func newLazyTab(content fyne.CanvasObject) *lazyTab {
	l := &lazyTab{content: content, look: currentLook()}
	l.ExtendBaseWidget(l)
	return l
}

// CreateRenderer shows the content at the tab's size.
func (l *lazyTab) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(l.content)
}

// Refresh refreshes the content when the tab is shown.
func (l *lazyTab) Refresh() {
	if !l.Visible() {
		return
	}
	if l.skipOnce {
		l.skipOnce = false
		return
	}
	l.look = currentLook()
	l.BaseWidget.Refresh()
}

// Show shows the tab, refreshing it first when the theme changed while it
// was hidden.
func (l *lazyTab) Show() {
	if l.Visible() {
		return
	}
	l.Hidden = false
	if p := l.pending; p != nil {
		l.pending = nil
		p() // refreshes what it builds
	}
	if l.look != currentLook() {
		l.Refresh()
		return
	}
	l.skipOnce = true
}
