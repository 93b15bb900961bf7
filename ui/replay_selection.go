package ui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// Batch shapes a chaos run offers.
const (
	shapeAsIs  = "As captured"
	shapeSplit = "One event per message"
	shapeMerge = "All in one message"
)

// chaosView is "Replay selection…": the selected deliveries sent again the
// way the service's at-least-once, unordered delivery would, with a plan
// preview, live progress and Cancel.
type chaosView struct {
	win *mainWindow
	rs  replayStore
	rep *replay.Replayer

	Pick     *selectionPicker
	Target   *widget.Entry
	Times    *widget.Entry
	Shuffle  *widget.Check
	Shape    *widget.RadioGroup
	Delay    *widget.Entry
	Secret   *widget.Entry
	Preview  *widget.Button
	Start    *widget.Button
	Cancel   *widget.Button
	Progress *widget.ProgressBar
	Summary  *widget.Label
	Lines    *widget.List

	mu     sync.Mutex // guards lines: OnResult appends from the engine goroutine
	lines  []string
	shown  []string
	cancel context.CancelFunc
	// report is the finished run (tests read it).
	report  *replay.ChaosReport
	content fyne.CanvasObject
}

// openChaos shows the "Replay selection…" dialog.
func (m *mainWindow) openChaos() *chaosView {
	rs, ok := m.replayDeps()
	if !ok {
		return nil
	}
	v := newChaosView(m, rs)
	m.showDialog("Replay selection", v.content, fyne.NewSize(980, 720), func() {
		if v.cancel != nil {
			v.cancel()
		}
	})
	return v
}

func newChaosView(m *mainWindow, rs replayStore) *chaosView {
	v := &chaosView{win: m, rs: rs, rep: replay.New(rs)}
	v.Pick = newSelectionPicker(m)
	v.Target = m.targetEntry()
	v.Times = widget.NewEntry()
	v.Times.SetText("1")
	v.Shuffle = widget.NewCheck("shuffle the order of all sends", nil)
	v.Shape = widget.NewRadioGroup([]string{shapeAsIs, shapeSplit, shapeMerge}, nil)
	v.Shape.Required = true
	v.Shape.Horizontal = true
	v.Shape.SetSelected(shapeAsIs)
	v.Delay = widget.NewEntry()
	v.Delay.SetText("0s")
	v.Secret = passwordEntry("re-signing secret (needed to split or merge; never stored)")
	v.Preview = widget.NewButtonWithIcon("Preview plan", theme.VisibilityIcon(), v.preview)
	v.Start = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.start)
	v.Start.Importance = widget.HighImportance
	v.Cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() {
		if v.cancel != nil {
			v.cancel()
		}
	})
	v.Cancel.Disable()
	v.Progress = widget.NewProgressBar()
	v.Summary = widget.NewLabel("Preview the plan, then Send.")
	v.Summary.Wrapping = fyne.TextWrapWord
	v.Lines = widget.NewList(
		func() int { return len(v.shown) },
		func() fyne.CanvasObject {
			l := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(v.shown) {
				o.(*widget.Label).SetText(v.shown[i])
			}
		})

	form := widget.NewForm(
		widget.NewFormItem("Target URL", v.Target),
		widget.NewFormItem("Send each", container.NewBorder(nil, nil, nil, widget.NewLabel("time(s), same bytes and hook uuid"), v.Times)),
		widget.NewFormItem("Order", v.Shuffle),
		widget.NewFormItem("Messages", v.Shape),
		widget.NewFormItem("Delay", container.NewBorder(nil, nil, nil, widget.NewLabel("between sends, e.g. 200ms"), v.Delay)),
		widget.NewFormItem("Secret", v.Secret),
	)
	buttons := container.NewHBox(v.Preview, v.Start, v.Cancel)
	top := container.NewVBox(v.Pick.content, form, container.NewBorder(nil, nil, buttons, nil, v.Progress), v.Summary)
	v.content = container.NewBorder(top, nil, nil, nil, v.Lines)
	return v
}

// options reads the form; errors are for the user.
func (v *chaosView) options() (replay.ChaosOptions, error) {
	target := strings.TrimSpace(v.Target.Text)
	if _, err := replay.ParseTarget(target); err != nil {
		return replay.ChaosOptions{}, err
	}
	times, err := strconv.Atoi(strings.TrimSpace(v.Times.Text))
	if err != nil || times < 1 || times > 100 {
		return replay.ChaosOptions{}, errors.New("“send each” must be a whole number from 1 to 100")
	}
	delay, err := time.ParseDuration(strings.TrimSpace(v.Delay.Text))
	if err != nil || delay < 0 || delay > time.Minute {
		return replay.ChaosOptions{}, errors.New("the delay must be a duration such as 0s, 200ms or 2s (at most 1m)")
	}
	opts := replay.ChaosOptions{Target: target, Times: times, Shuffle: v.Shuffle.Checked, Delay: delay,
		Split: v.Shape.Selected == shapeSplit, Merge: v.Shape.Selected == shapeMerge}
	if v.Secret.Text != "" {
		opts.Secret = []byte(v.Secret.Text)
	}
	if (opts.Split || opts.Merge) && len(opts.Secret) == 0 {
		return opts, errors.New("splitting or merging builds new bodies, which must be signed: enter the secret your consumer verifies with")
	}
	return opts, nil
}

func (v *chaosView) fail(err error) {
	v.Summary.Importance = widget.DangerImportance
	v.Summary.SetText(err.Error())
}

// load reads the form and loads the selection off the UI goroutine.
func (v *chaosView) load(then func(ds []*inspector.Delivery, opts replay.ChaosOptions) func()) {
	opts, err := v.options()
	if err != nil {
		v.fail(err)
		return
	}
	f, limit, extra, err := v.Pick.pick()
	if err != nil {
		v.fail(err)
		return
	}
	store, rs := v.win.svc.Store, v.rs
	v.win.bridge.Go(func() func() {
		recs, err := loadSelection(context.Background(), store, rs, f, limit, extra)
		if err != nil {
			return func() { v.fail(err) }
		}
		ds := make([]*inspector.Delivery, len(recs))
		for i, r := range recs {
			ds[i] = r.Delivery
		}
		return then(ds, opts)
	})
}

// preview shows what a run would send, without sending.
func (v *chaosView) preview() {
	v.load(func(ds []*inspector.Delivery, opts replay.ChaosOptions) func() {
		plan, err := replay.PlanChaos(ds, opts)
		if err != nil {
			return func() { v.fail(err) }
		}
		lines := make([]string, len(plan))
		for i, p := range plan {
			lines[i] = planLine(i, p)
		}
		return func() {
			v.Summary.Importance = widget.MediumImportance
			v.Summary.SetText(fmt.Sprintf("Plan: %s from %s. Nothing is sent until you press Send.", plural.Count(len(plan), "request", "requests"), plural.Count(len(ds), "delivery", "deliveries")))
			v.shown = lines
			v.Lines.Refresh()
		}
	})
}

func planLine(i int, p replay.Planned) string {
	src := make([]string, len(p.Sources))
	for j, id := range p.Sources {
		src[j] = fmt.Sprintf("#%d", id)
	}
	return fmt.Sprintf("%3d. %-10s %s  from %s  hook %s  %s  %s", i+1, modeWords(p.Mode), p.Position(), strings.Join(src, ","), p.HookUUID, plural.Count(len(p.Events), "event", "events"), human.Bytes(int64(len(p.Request.Body))))
}

// start runs the chaos replay with progress; Cancel stops it.
func (v *chaosView) start() {
	v.load(func(ds []*inspector.Delivery, opts replay.ChaosOptions) func() {
		return func() { v.run(ds, opts) }
	})
}

func (v *chaosView) run(ds []*inspector.Delivery, opts replay.ChaosOptions) {
	ctx, cancel := v.win.runContext()
	v.cancel = cancel
	v.Start.Disable()
	v.Preview.Disable()
	v.Cancel.Enable()
	v.Progress.SetValue(0)
	v.Summary.Importance = widget.MediumImportance
	v.Summary.SetText("Sending…")
	v.mu.Lock()
	v.lines = nil
	v.mu.Unlock()
	v.shown = nil
	v.Lines.Refresh()
	prog := &progress{b: v.win.bridge}
	opts.OnResult = func(done, total int, r *replay.Result) {
		line, _ := resultHeadline(r)
		v.mu.Lock()
		v.lines = append(v.lines, fmt.Sprintf("%3d. %-10s #%d %s → %s", done, modeWords(r.Mode), r.DeliveryID, r.Position(), line))
		snap := append([]string(nil), v.lines...)
		v.mu.Unlock()
		prog.push(done == total, func() {
			v.Progress.SetValue(float64(done) / float64(max(total, 1)))
			v.Summary.SetText(fmt.Sprintf("Sent %d of %d…", done, total))
			v.shown = snap
			v.Lines.Refresh()
			v.Lines.ScrollToBottom()
		})
	}
	rep, store := v.rep, v.win.svc.Store
	v.win.bridge.Go(func() func() {
		defer cancel()
		report, err := rep.Chaos(ctx, ds, opts)
		cancelled := ctx.Err() != nil
		rememberTarget(store, opts.Target)
		v.mu.Lock()
		snap := append([]string(nil), v.lines...)
		v.mu.Unlock()
		return func() {
			v.cancel = nil
			v.Start.Enable()
			v.Preview.Enable()
			v.Cancel.Disable()
			v.shown = snap
			v.Lines.Refresh()
			if err != nil {
				v.fail(err)
				return
			}
			v.report = report
			sent := len(report.Results)
			msg := fmt.Sprintf("%s sent: %d answered 2xx, %d refused, %d without an answer.", plural.Count(sent, "request", "requests"), report.Answered2xx, report.Refused, report.Failed)
			if cancelled {
				msg = "Cancelled. " + msg
			}
			v.Summary.Importance = widget.SuccessImportance
			if report.Refused+report.Failed > 0 || cancelled {
				v.Summary.Importance = widget.WarningImportance
			}
			v.Summary.SetText(msg + " Every send is in its delivery's replay history.")
		}
	})
}
