package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/storage"
)

// replayStore is what the replay, export and consumer-check views need
// beyond Store: somewhere to record replays, their history, and a walk
// over records. *storage.DB implements it; a window whose store does not
// hides those buttons.
type replayStore interface {
	replay.Recorder
	replay.History
	Each(ctx context.Context, f storage.Filter, fn func(*inspector.Record) error) error
}

// maxSelection bounds a replay or export of the filtered list, as the CLI
// does: a selection of a million deliveries is a mistake, not a test.
const maxSelection = 1000

// editableBody is the largest body the replay dialog offers to edit: a
// multi-line entry lays out ~100 KB in well under a second, beyond that
// it stalls the window (see DESIGN.md).
const editableBody = 100 << 10

// replayDeps returns the store as a replayStore when it is one.
func (m *mainWindow) replayDeps() (replayStore, bool) {
	rs, ok := m.svc.Store.(replayStore)
	return rs, ok
}

// ingester returns the running engine as an import target when it is one.
func (m *mainWindow) ingester() (export.Ingester, bool) {
	ing, ok := m.svc.Engine.(export.Ingester)
	return ing, ok
}

// runContext returns a context that ends when the window closes or when
// the returned cancel is called (a Cancel button).
func (m *mainWindow) runContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancels = append(m.cancels, cancel)
	return ctx, cancel
}

// progress hands the latest of a burst of progress updates to the UI at
// most every flushEvery; the final update is always applied. It may be
// called from any goroutine (engine callbacks).
type progress struct {
	b    *bridge
	mu   sync.Mutex
	last time.Time
}

func (p *progress) push(final bool, apply func()) {
	p.mu.Lock()
	now := time.Now()
	if !final && now.Sub(p.last) < flushEvery {
		p.mu.Unlock()
		return
	}
	p.last = now
	p.mu.Unlock()
	p.b.do(apply)
}

// selectionPicker describes which deliveries a bulk action takes: the
// deliveries selected in the list (Ctrl-click, Shift-click, Ctrl+A), or,
// when none are, every delivery the filter matches (newest first, up to
// a limit) plus the one shown when the filter hides it.
type selectionPicker struct {
	spec     selectionSpec
	selected int64

	Explain         *widget.Label
	Limit           *widget.Entry
	IncludeSelected *widget.Check
	content         fyne.CanvasObject
}

func newSelectionPicker(m *mainWindow) *selectionPicker {
	v := m.deliveries
	p := &selectionPicker{spec: v.pickSpec()}
	if !p.spec.picked() {
		p.selected = v.selectedID
	}
	p.Explain = widget.NewLabel(p.spec.describe())
	p.Explain.Wrapping = fyne.TextWrapWord
	p.Limit = widget.NewEntry()
	p.Limit.SetText("100")
	p.Limit.Validator = func(s string) error {
		_, err := parseLimit(s)
		return err
	}
	p.IncludeSelected = widget.NewCheck("", nil)
	if p.selected != 0 {
		p.IncludeSelected.SetText(fmt.Sprintf("also the delivery shown, #%d", p.selected))
		p.IncludeSelected.SetChecked(true)
	} else {
		p.IncludeSelected.Hide()
	}
	limitRow := container.NewBorder(nil, nil, widget.NewLabel("At most the newest"), widget.NewLabel(fmt.Sprintf("(1–%d)", maxSelection)), p.Limit)
	p.content = container.NewVBox(p.Explain, limitRow, p.IncludeSelected)
	setLimit := func(n int64) {
		if n > 0 {
			p.Limit.SetText(strconv.FormatInt(min(n, maxSelection), 10))
		}
	}
	if p.spec.count >= 0 {
		if p.spec.picked() || p.spec.count < 100 {
			setLimit(p.spec.count)
		}
		return p
	}
	store, spec := m.svc.Store, p.spec
	m.bridge.Go(func() func() {
		n, err := spec.countNow(context.Background(), store)
		return func() {
			if err != nil {
				p.Explain.SetText(spec.describe() + fmt.Sprintf(" (count failed: %v)", err))
				return
			}
			p.spec.count = n
			p.Explain.SetText(p.spec.describe())
			if spec.picked() || n < 100 {
				setLimit(n)
			}
		}
	})
	return p
}

func parseLimit(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > maxSelection {
		return 0, fmt.Errorf("the limit must be a whole number from 1 to %d", maxSelection)
	}
	return n, nil
}

// spec reads the picker's widgets; call on the UI goroutine.
func (p *selectionPicker) pick() (selectionSpec, int, int64, error) {
	n, err := parseLimit(p.Limit.Text)
	if err != nil {
		return selectionSpec{}, 0, 0, err
	}
	var extra int64
	if p.selected != 0 && p.IncludeSelected.Checked {
		extra = p.selected
	}
	return p.spec, n, extra, nil
}

// loadSelection loads the newest limit deliveries of the selection, plus
// extra when it is not among them, oldest first (the order they arrived
// in).
func loadSelection(ctx context.Context, store Store, rs replayStore, spec selectionSpec, limit int, extra int64) ([]*inspector.Record, error) {
	ids, err := spec.resolve(ctx, store, limit)
	if err != nil {
		return nil, fmt.Errorf("list the selection: %w", err)
	}
	if extra != 0 && !slices.Contains(ids, extra) {
		ids = append(ids, extra)
	}
	if len(ids) == 0 {
		if spec.picked() {
			return nil, errors.New("nothing is selected")
		}
		return nil, errors.New("no delivery matches the current filter")
	}
	var recs []*inspector.Record
	err = rs.Each(ctx, storage.Filter{IDs: ids}, func(r *inspector.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load the selection: %w", err)
	}
	return recs, nil
}

// resultHeadline is the one line that says how a replay went.
func resultHeadline(r *replay.Result) (string, widget.Importance) {
	lat := human.Duration(r.Latency)
	switch {
	case r.Status == 0:
		return "No answer: " + r.Error, widget.DangerImportance
	case r.OK():
		return fmt.Sprintf("%d %s · %s", r.Status, r.StatusText, lat), widget.SuccessImportance
	case r.Status >= 300 && r.Status < 400:
		return fmt.Sprintf("%d %s · %s — a redirect: the service does not follow redirects", r.Status, r.StatusText, lat), widget.WarningImportance
	}
	line := fmt.Sprintf("%d %s · %s — not a 2xx: the service would send it again", r.Status, r.StatusText, lat)
	if r.Error != "" {
		line += " (" + r.Error + ")"
	}
	return line, widget.DangerImportance
}

// resultDetail is the answer's headers and body, pretty when JSON.
func resultDetail(r *replay.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s replay of #%d to %s at %s, %s sent\n", modeWords(r.Mode), r.DeliveryID, r.Target, r.SentAt.Local().Format("15:04:05"), human.Bytes(int64(r.BodySize)))
	if r.HookUUID != "" {
		fmt.Fprintf(&b, "hook %s, events %s\n", r.HookUUID, strings.Join(r.Events, ", "))
	}
	if r.Status == 0 {
		fmt.Fprintf(&b, "\nNo answer.\n%s\n", r.Error)
		return b.String()
	}
	fmt.Fprintf(&b, "\nHTTP %d %s\n", r.Status, r.StatusText)
	for _, h := range r.ResponseHeaders {
		fmt.Fprintf(&b, "%s: %s\n", h.Name, h.Value)
	}
	b.WriteByte('\n')
	b.WriteString(prettyBody(r.ResponseBody))
	if r.ResponseTruncated {
		fmt.Fprintf(&b, "\n[answer cut at %s]\n", human.Bytes(int64(len(r.ResponseBody))))
	}
	return b.String()
}

// prettyBody indents JSON, keeps UTF-8 text as is and hex-dumps the rest.
func prettyBody(body []byte) string {
	if len(body) == 0 {
		return "(empty body)"
	}
	if json.Valid(body) {
		return string(catalog.Pretty(body))
	}
	if utf8.Valid(body) {
		return string(body)
	}
	return hexDump(body)
}

// historyLine is one row of a delivery's replay history.
func historyLine(r *replay.Result) string {
	what := "no answer"
	if r.Status != 0 {
		what = fmt.Sprintf("%d", r.Status)
	}
	return fmt.Sprintf("%s  %-9s %-11s %8s  %s", r.SentAt.Local().Format("01-02 15:04:05"), what, modeWords(r.Mode), human.Duration(r.Latency), r.Target)
}

// passwordEntry is an entry for a secret: masked, never pre-filled.
func passwordEntry(placeholder string) *widget.Entry {
	e := widget.NewPasswordEntry()
	e.SetPlaceHolder(placeholder)
	return e
}

// targetEntry is a URL entry pre-filled with your app's URL: the Forward
// to field's, else the remembered replay target.
func (m *mainWindow) targetEntry() *widget.Entry {
	e := widget.NewEntry()
	e.SetPlaceHolder("http://127.0.0.1:3000/webhooks")
	if app := m.forwardTarget(); app != "" {
		e.SetText(app)
		return e
	}
	store := m.svc.Store
	m.bridge.Go(func() func() {
		last, err := replay.LastTarget(context.Background(), store)
		if err != nil || last == "" {
			return nil
		}
		return func() {
			if e.Text == "" {
				e.SetText(last)
			}
		}
	})
	return e
}

// rememberTarget keeps url for next time; called off the UI goroutine.
func rememberTarget(store Store, url string) {
	_, _ = replay.RememberTarget(context.Background(), store, url)
}

// showDialog opens content in a dialog sized for reading results.
func (m *mainWindow) showDialog(title string, content fyne.CanvasObject, size fyne.Size, onClose func()) *widget.PopUp {
	closeBtn := widget.NewButton("Close", nil)
	head := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	body := container.NewBorder(head, container.NewHBox(layout.NewSpacer(), closeBtn), nil, nil, content)
	pop := widget.NewModalPopUp(container.NewPadded(body), m.w.Canvas())
	closeBtn.OnTapped = func() {
		pop.Hide()
		if onClose != nil {
			onClose()
		}
	}
	cs := m.w.Canvas().Size()
	if cs.Width > 100 && cs.Height > 100 {
		size = fyne.NewSize(min(size.Width, cs.Width-40), min(size.Height, cs.Height-40))
	}
	pop.Resize(size)
	pop.Show()
	return pop
}

// wrapForGrid breaks lines longer than width so a TextGrid never needs
// a horizontal scroll wider than the dialog (answers are often one long
// JSON line).
func wrapForGrid(s string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		for utf8.RuneCountInString(line) > width {
			cut := 0
			for n := 0; n < width; n++ {
				_, size := utf8.DecodeRuneInString(line[cut:])
				cut += size
			}
			b.WriteString(line[:cut])
			b.WriteByte('\n')
			line = line[cut:]
		}
		b.WriteString(line)
	}
	return b.String()
}

// modeWords names a replay mode as the dialog does.
func modeWords(m replay.Mode) string {
	switch m {
	case replay.ModeRaw:
		return "byte-exact"
	case replay.ModeResigned:
		return "re-signed"
	case replay.ModeEdited:
		return "edited"
	case replay.ModeSplit:
		return "split"
	case replay.ModeMerged:
		return "merged"
	}
	return string(m)
}
