package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/human"
)

// Replay modes as the dialog names them.
const (
	modeExact   = "Byte-exact"
	modeResign  = "Re-signed"
	modeEdited  = "Edited body"
	historySize = 20
)

// replayView is the Replay dialog of one delivery: target, mode, Send,
// the answer inline and the delivery's replay history. Widgets are fields
// so tests drive them.
type replayView struct {
	win *mainWindow
	rs  replayStore
	d   *inspector.Delivery
	rep *replay.Replayer

	Target       *widget.Entry
	Mode         *widget.RadioGroup
	Secret       *widget.Entry
	Stale        *widget.Check
	Body         *widget.Entry
	BodyStatus   *widget.Label
	Send         *widget.Button
	Headline     *widget.Label
	Detail       *widget.TextGrid
	History      *widget.List
	HistoryTitle *widget.Label
	Tabs         *container.AppTabs

	form    *widget.Form
	history []*replay.Result
	// last is the result on show (tests read it).
	last    *replay.Result
	content fyne.CanvasObject
}

// openReplay shows the Replay dialog for the delivery in the detail pane.
func (m *mainWindow) openReplay() *replayView {
	rs, ok := m.replayDeps()
	rec := m.deliveries.Detail.rec
	if !ok || rec == nil {
		return nil
	}
	v := newReplayView(m, rs, rec.Delivery)
	m.showDialog(fmt.Sprintf("Replay delivery #%d", rec.Delivery.ID), v.content, fyne.NewSize(980, 700), nil)
	return v
}

func newReplayView(m *mainWindow, rs replayStore, d *inspector.Delivery) *replayView {
	v := &replayView{win: m, rs: rs, d: d, rep: replay.New(rs)}
	v.Target = m.targetEntry()
	v.Secret = passwordEntry("secret to re-sign with (never stored)")
	v.Stale = widget.NewCheck("send with the old signature on purpose (no secret)", nil)
	v.Body = widget.NewMultiLineEntry()
	v.Body.TextStyle = fyne.TextStyle{Monospace: true}
	v.Body.Wrapping = fyne.TextWrapOff
	v.BodyStatus = widget.NewLabel("")
	v.BodyStatus.Wrapping = fyne.TextWrapWord
	modes := []string{modeExact, modeResign}
	editable := len(d.Body) <= editableBody && utf8.Valid(d.Body) && !d.Truncated
	if editable {
		modes = append(modes, modeEdited)
		v.Body.SetText(string(d.Body))
	}
	v.Body.OnChanged = func(string) { v.validateBody() }
	v.Mode = widget.NewRadioGroup(modes, func(string) { v.modeChanged() })
	v.Mode.Horizontal = true
	v.Mode.Required = true
	v.Send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.send)
	v.Send.Importance = widget.HighImportance
	v.Headline = widget.NewLabelWithStyle("Not sent yet.", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.Headline.SizeName = theme.SizeNameSubHeadingText
	v.Headline.Wrapping = fyne.TextWrapWord
	v.Detail = widget.NewTextGrid()
	// It scrolls: a long answer was drawn past the pane, over the history
	// and out of the dialog.
	v.Detail.Scroll = fyne.ScrollBoth
	v.History = widget.NewList(
		func() int { return len(v.history) },
		func() fyne.CanvasObject {
			l := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(v.history) {
				o.(*widget.Label).SetText(historyLine(v.history[i]))
			}
		})
	v.History.OnSelected = func(i widget.ListItemID) {
		if i < len(v.history) {
			v.showResult(v.history[i])
			v.Tabs.SelectIndex(0)
		}
	}

	note := ""
	switch {
	case d.Truncated:
		note = "This delivery was cut at the body cap: it cannot be replayed (it would send a different body)."
		v.Send.Disable()
	case !editable:
		note = fmt.Sprintf("The body (%s) is too large or not text, so it can be sent byte-exact or re-signed but not edited here.", human.Bytes(int64(len(d.Body))))
	}
	noteLabel := widget.NewLabel(note)
	noteLabel.Wrapping = fyne.TextWrapWord
	noteLabel.Importance = widget.WarningImportance
	if note == "" {
		noteLabel.Hide()
	}

	v.form = widget.NewForm(
		widget.NewFormItem("Target URL", v.Target),
		widget.NewFormItem("Mode", v.Mode),
		widget.NewFormItem("Secret", v.Secret),
	)
	top := container.NewVBox(v.form, container.NewHBox(v.Send, v.Stale), noteLabel)
	result := container.NewBorder(v.Headline, nil, nil, nil, capped(v.Detail))
	// A captured body is usually one long line; indenting it makes it
	// editable (the edited body is re-signed, so its bytes may change).
	pretty := widget.NewButton("Indent JSON", func() {
		if b := []byte(v.Body.Text); json.Valid(b) {
			v.Body.SetText(string(catalog.Pretty(b)))
		}
	})
	reset := widget.NewButton("Back to the captured body", func() { v.Body.SetText(string(d.Body)) })
	editor := container.NewBorder(nil, container.NewBorder(nil, nil, nil, container.NewHBox(pretty, reset), v.BodyStatus), nil, nil, v.Body)
	v.HistoryTitle = widget.NewLabelWithStyle("Replay history", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	// The answer and the delivery's earlier replays side by side in
	// time: the newest result on top, the history under it.
	split := container.NewVSplit(result, container.NewBorder(v.HistoryTitle, nil, nil, nil, v.History))
	split.Offset = 0.68
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Result", split),
		container.NewTabItem("Edit body", editor),
	)
	v.content = container.NewBorder(top, nil, nil, nil, v.Tabs)
	v.Mode.SetSelected(modeExact)
	v.validateBody()
	v.loadHistory()
	return v
}

// modeChanged enables what the chosen mode uses.
func (v *replayView) modeChanged() {
	switch v.Mode.Selected {
	case modeExact:
		v.Secret.Disable()
		v.Stale.Hide()
	case modeResign:
		v.Secret.Enable()
		v.Stale.Hide()
	case modeEdited:
		v.Secret.Enable()
		v.Stale.Show()
		v.Tabs.Select(v.Tabs.Items[1])
	}
	if v.form != nil {
		v.form.Refresh() // the labels follow their widget's enabled state
	}
}

// validateBody checks the edited body as the user types.
func (v *replayView) validateBody() error {
	err := replay.ValidateJSON([]byte(v.Body.Text))
	if err != nil {
		v.BodyStatus.Importance = widget.DangerImportance
		v.BodyStatus.SetText(err.Error())
	} else {
		v.BodyStatus.Importance = widget.SuccessImportance
		v.BodyStatus.SetText(fmt.Sprintf("Valid JSON (%s). Sent re-signed with the secret above.", human.Bytes(int64(len(v.Body.Text)))))
	}
	return err
}

// options reads the form; the error is for the user.
func (v *replayView) options() (replay.Options, error) {
	target := strings.TrimSpace(v.Target.Text)
	if target == "" {
		return replay.Options{}, errors.New("enter the URL of your consumer")
	}
	if _, err := replay.ParseTarget(target); err != nil {
		return replay.Options{}, err
	}
	opts := replay.Options{Target: target}
	secret := []byte(v.Secret.Text)
	switch v.Mode.Selected {
	case modeResign:
		if len(secret) == 0 {
			return opts, errors.New("re-signing needs a secret: enter the one your consumer verifies with")
		}
		opts.Secret = secret
	case modeEdited:
		if err := v.validateBody(); err != nil {
			v.Tabs.Select(v.Tabs.Items[1])
			return opts, fmt.Errorf("not sent: %w", err)
		}
		opts.Body = []byte(v.Body.Text)
		opts.Secret = secret
		opts.StaleSignature = v.Stale.Checked
		if len(secret) == 0 && !opts.StaleSignature {
			return opts, errors.New("an edited body needs a secret to be re-signed (or tick “send with the old signature”)")
		}
	}
	return opts, nil
}

// send replays the delivery off the UI goroutine and shows the answer.
func (v *replayView) send() {
	opts, err := v.options()
	if err != nil {
		v.Headline.Importance = widget.DangerImportance
		v.Headline.SetText(err.Error())
		v.Tabs.Refresh()
		return
	}
	v.Send.Disable()
	v.Headline.Importance = widget.MediumImportance
	v.Headline.SetText("Sending to " + replay.RedactURL(opts.Target) + "…")
	ctx, cancel := v.win.runContext()
	rep, rs, store, d := v.rep, v.rs, v.win.svc.Store, v.d
	v.win.bridge.Go(func() func() {
		defer cancel()
		res, err := rep.Replay(ctx, d, opts)
		if err == nil || res != nil {
			rememberTarget(store, opts.Target)
		}
		hist, herr := rs.Replays(ctx, d.ID, historySize)
		return func() {
			v.Send.Enable()
			if herr == nil {
				v.history = hist
				v.setHistory(hist)
			}
			if res != nil {
				v.showResult(res)
			}
			if err != nil {
				v.Headline.Importance = widget.DangerImportance
				v.Headline.SetText(err.Error())
			}
			v.Tabs.SelectIndex(0)
		}
	})
}

// showResult puts a replay's outcome in the Result tab.
func (v *replayView) showResult(r *replay.Result) {
	v.last = r
	line, imp := resultHeadline(r)
	v.Headline.Importance = imp
	v.Headline.SetText(line)
	v.Detail.SetText(wrapForGrid(resultDetail(r), 160))
}

// loadHistory fills the History tab with the delivery's earlier replays.
func (v *replayView) loadHistory() {
	rs, id := v.rs, v.d.ID
	v.win.bridge.Go(func() func() {
		hist, err := rs.Replays(context.Background(), id, historySize)
		if err != nil {
			return func() { v.win.showError(fmt.Errorf("replay history of #%d: %w", id, err)) }
		}
		return func() {
			v.history = hist
			v.setHistory(hist)
		}
	})
}

// setHistory shows the delivery's replays, newest first.
func (v *replayView) setHistory(hist []*replay.Result) {
	v.history = hist
	v.History.Refresh()
	switch len(hist) {
	case 0:
		v.HistoryTitle.SetText("Replay history: none yet")
	case historySize:
		v.HistoryTitle.SetText(fmt.Sprintf("Replay history: the newest %d (select one to see its answer)", historySize))
	default:
		v.HistoryTitle.SetText(fmt.Sprintf("Replay history: %d (select one to see its answer)", len(hist)))
	}
}
