package ui

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/human"
)

// Columns of the consumer-check table.
const (
	colVerdict = iota
	colCase
	colAnswer
	colExplain
	checkColumns
)

// consumerView is "Consumer check…": the standard 22-case run against the
// developer's endpoint, each case's verdict as a badge in a table, the
// full explanation of the selected case, and the report as text.
type consumerView struct {
	win *mainWindow
	rep *replay.Replayer

	Target   *widget.Entry
	UseSaved *widget.Check
	Secret   *widget.Entry
	Limit    *widget.Entry
	Run      *widget.Button
	Cancel   *widget.Button
	CopyText *widget.Button
	Progress *widget.ProgressBar
	Summary  *widget.Label
	// Lead says what the endpoint did across every case (the report's
	// findings), above the table; hidden when it behaved.
	Lead    *widget.Label
	Table   *widget.Table
	Explain *widget.Label
	// ExplainScroll scrolls Explain; each case's text opens at its top.
	ExplainScroll *container.Scroll
	savedFirst    []byte

	mu     sync.Mutex // guards pending: OnCase runs on the check's goroutine
	pend   []replay.CaseResult
	cases  []replay.CaseResult
	cancel func()
	// report is the finished check (tests read it).
	report  *replay.CheckReport
	content fyne.CanvasObject
}

// openConsumerCheck shows the Consumer check dialog.
func (m *mainWindow) openConsumerCheck() *consumerView {
	v := newConsumerView(m)
	m.showDialog("Consumer check", v.content, fyne.NewSize(1040, 720), func() {
		if v.cancel != nil {
			v.cancel()
		}
	})
	return v
}

func newConsumerView(m *mainWindow) *consumerView {
	v := &consumerView{win: m, rep: replay.New(nil)}
	v.Target = m.targetEntry()
	v.Secret = passwordEntry("the webhook secret your consumer verifies with (never stored)")
	v.UseSaved = widget.NewCheck("use the first secret from Settings", func(on bool) {
		if on {
			v.Secret.Disable()
		} else {
			v.Secret.Enable()
		}
	})
	if len(m.secrets) > 0 {
		v.savedFirst = m.secrets[0]
		v.UseSaved.SetChecked(true)
	} else {
		v.UseSaved.Hide()
	}
	v.Limit = widget.NewEntry()
	v.Limit.SetText(replay.ServiceTimeout.String())
	v.Run = widget.NewButtonWithIcon("Run check", theme.MediaPlayIcon(), v.start)
	v.Run.Importance = widget.HighImportance
	v.Cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() {
		if v.cancel != nil {
			v.cancel()
		}
	})
	v.Cancel.Disable()
	v.CopyText = widget.NewButtonWithIcon("Copy as text", theme.ContentCopyIcon(), v.copyText)
	v.CopyText.Disable()
	v.Progress = widget.NewProgressBar()
	v.Progress.Max = float64(len(replay.CheckCases()))
	v.Progress.TextFormatter = func() string {
		return fmt.Sprintf("%d of %d cases", int(v.Progress.Value), int(v.Progress.Max))
	}
	v.Summary = widget.NewLabel(fmt.Sprintf("%d cases: one message per event type, a duplicate, a re-sent message, an out-of-order pair, a bad and a missing signature.", len(replay.CheckCases())))
	v.Summary.Wrapping = fyne.TextWrapWord
	v.Summary.TextStyle = fyne.TextStyle{Bold: true}
	v.Lead = widget.NewLabel("")
	v.Lead.Wrapping = fyne.TextWrapWord
	v.Lead.Hide()
	v.Explain = widget.NewLabel("Select a row to read its explanation.")
	v.Explain.Wrapping = fyne.TextWrapWord

	v.Table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.cases), checkColumns },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return container.NewStack(container.NewCenter(newBadge(64)), l)
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row >= len(v.cases) {
				return
			}
			c := v.cases[id.Row]
			st := o.(*fyne.Container)
			b := st.Objects[0].(*fyne.Container).Objects[0].(*badge)
			l := st.Objects[1].(*widget.Label)
			if id.Col == colVerdict {
				b.set(verdictLook(c.Verdict))
				l.Hide()
				return
			}
			b.set("", nil, "")
			l.Show()
			switch id.Col {
			case colCase:
				l.SetText(c.Name)
			case colAnswer:
				l.SetText(caseAnswer(c))
			case colExplain:
				l.SetText(firstSentence(c.Explanation))
			}
		})
	v.Table.ShowHeaderColumn = false
	v.Table.CreateHeader = func() fyne.CanvasObject {
		return widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	v.Table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Row == -1 {
			o.(*widget.Label).SetText([]string{"Verdict", "Case", "Answer", "What it means"}[id.Col])
		}
	}
	v.Table.SetColumnWidth(colVerdict, 90)
	v.Table.SetColumnWidth(colCase, 230)
	v.Table.SetColumnWidth(colAnswer, 170)
	v.Table.SetColumnWidth(colExplain, 480)
	v.Table.OnSelected = func(id widget.TableCellID) {
		if id.Row >= 0 && id.Row < len(v.cases) {
			c := v.cases[id.Row]
			v.Explain.SetText(fmt.Sprintf("%s — %s\nExpected: %s\n%s", c.Name, c.Title, c.Expect, c.Explanation))
			v.ExplainScroll.ScrollToTop()
		}
	}

	limit := container.NewHBox(widget.NewLabel("answer within"), container.NewGridWrap(fyne.NewSize(80, v.Limit.MinSize().Height), v.Limit))
	form := widget.NewForm(
		widget.NewFormItem("Consumer URL", container.NewBorder(nil, nil, nil, limit, v.Target)),
		widget.NewFormItem("Secret", container.NewBorder(nil, nil, v.UseSaved, nil, v.Secret)),
	)
	top := container.NewVBox(form, container.NewBorder(nil, nil, container.NewHBox(v.Run, v.Cancel, v.CopyText), nil, v.Progress), v.Summary, v.Lead)
	v.ExplainScroll = container.NewVScroll(v.Explain)
	v.ExplainScroll.SetMinSize(fyne.NewSize(100, 90))
	v.content = container.NewBorder(top, v.ExplainScroll, nil, nil, v.Table)
	return v
}

// verdictLook is a verdict's badge: colour, icon and word.
func verdictLook(v replay.Verdict) (string, fyne.Resource, fyne.ThemeColorName) {
	switch v {
	case replay.Pass:
		return "pass", theme.ConfirmIcon(), theme.ColorNameSuccess
	case replay.Warn:
		return "warn", theme.WarningIcon(), theme.ColorNameWarning
	case replay.Fail:
		return "fail", theme.CancelIcon(), theme.ColorNameError
	}
	return string(v), theme.QuestionIcon(), theme.ColorNameDisabled
}

// caseAnswer sums up the answers of a case's sends: "200 · 1.2ms".
func caseAnswer(c replay.CaseResult) string {
	parts := make([]string, 0, len(c.Sends))
	for _, s := range c.Sends {
		if s.Status == 0 {
			parts = append(parts, "no answer")
			continue
		}
		parts = append(parts, fmt.Sprintf("%d · %s", s.Status, human.Duration(s.Latency)))
	}
	return strings.Join(parts, ", ")
}

// firstSentence keeps a table cell short; the full text is below the table.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

// start runs the check off the UI goroutine, a row per finished case.
func (v *consumerView) start() {
	target := strings.TrimSpace(v.Target.Text)
	opts := replay.CheckOptions{Target: target}
	var err error
	if _, perr := replay.ParseTarget(target); perr != nil {
		err = perr
	}
	if v.UseSaved.Checked && len(v.savedFirst) > 0 {
		opts.Secret = v.savedFirst
	} else {
		opts.Secret = []byte(v.Secret.Text)
	}
	if err == nil && len(opts.Secret) == 0 {
		err = errors.New("enter the webhook secret your consumer verifies with: the check signs every message with it")
	}
	if err == nil {
		opts.Limit, err = time.ParseDuration(strings.TrimSpace(v.Limit.Text))
		if err != nil || opts.Limit <= 0 || opts.Limit > 2*time.Minute {
			err = errors.New("the time limit must be a duration such as 10s (at most 2m)")
		}
	}
	if err != nil {
		v.Summary.Importance = widget.DangerImportance
		v.Summary.SetText(err.Error())
		return
	}
	ctx, cancel := v.win.runContext()
	v.cancel = cancel
	v.Run.Disable()
	v.CopyText.Disable()
	v.Cancel.Enable()
	v.mu.Lock()
	v.pend = nil
	v.mu.Unlock()
	v.cases, v.report = nil, nil
	v.Lead.Hide()
	v.Table.Refresh()
	v.Progress.SetValue(0)
	v.Summary.Importance = widget.MediumImportance
	v.Summary.SetText("Running…")
	total := len(replay.CheckCases())
	prog := &progress{b: v.win.bridge}
	opts.OnCase = func(c replay.CaseResult) {
		v.mu.Lock()
		v.pend = append(v.pend, c)
		snap := append([]replay.CaseResult(nil), v.pend...)
		v.mu.Unlock()
		prog.push(len(snap) == total, func() { v.showCases(snap) })
	}
	rep, store := v.rep, v.win.svc.Store
	v.win.bridge.Go(func() func() {
		defer cancel()
		report, err := rep.CheckConsumer(ctx, opts)
		if err == nil {
			rememberTarget(store, target)
		}
		return func() {
			v.cancel = nil
			v.Run.Enable()
			v.Cancel.Disable()
			if err != nil {
				// Keep the cases that finished before the cancel or failure.
				v.mu.Lock()
				done := append([]replay.CaseResult(nil), v.pend...)
				v.mu.Unlock()
				v.showCases(done)
				v.Summary.Importance = widget.DangerImportance
				v.Summary.SetText("The check did not finish: " + err.Error())
				return
			}
			v.report = report
			v.showCases(worstFirst(report.Cases))
			if len(v.cases) > 0 && v.cases[0].Verdict != replay.Pass {
				v.Table.Select(widget.TableCellID{Row: 0, Col: colCase})
			}
			v.CopyText.Enable()
			msg := fmt.Sprintf("%d passed, %d warned, %d failed — %s.", report.Passed, report.Warned, report.Failed, report.Target)
			v.Summary.Importance = widget.SuccessImportance
			switch {
			case report.Failed > 0:
				v.Summary.Importance = widget.DangerImportance
			case report.Warned > 0:
				v.Summary.Importance = widget.WarningImportance
			}
			v.Summary.SetText(msg)
			v.showLead(report.Findings)
		}
	})
}

// showLead puts the report's findings above the table: what the endpoint
// did, before which cases it failed.
func (v *consumerView) showLead(fs []replay.Finding) {
	if len(fs) == 0 {
		v.Lead.Hide()
		v.content.Refresh()
		return
	}
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = "• " + f.Text
	}
	v.Lead.SetText("What the endpoint did:\n" + strings.Join(lines, "\n"))
	v.Lead.Importance = widget.WarningImportance
	if fs[0].Severity == replay.Fail {
		v.Lead.Importance = widget.DangerImportance
	}
	v.Lead.Show()
	// Lay the dialog out again: shown in a pop-up, the grown text was
	// drawn over the table's head.
	v.content.Refresh()
}

func (v *consumerView) showCases(cs []replay.CaseResult) {
	v.cases = cs
	v.Progress.SetValue(float64(len(cs)))
	v.Table.Refresh()
}

// reportText is the report as the CLI prints it.
func (v *consumerView) reportText() string {
	if v.report == nil {
		return ""
	}
	var b bytes.Buffer
	_ = v.report.WriteText(&b)
	return b.String()
}

func (v *consumerView) copyText() {
	if s := v.reportText(); s != "" {
		v.win.copy(s, "the consumer check report")
	}
}

// worstFirst orders finished cases fail, warn, pass, keeping the check's
// order within each: what needs fixing is on screen without scrolling.
func worstFirst(cs []replay.CaseResult) []replay.CaseResult {
	rank := func(v replay.Verdict) int {
		switch v {
		case replay.Fail:
			return 0
		case replay.Warn:
			return 1
		}
		return 2
	}
	out := append([]replay.CaseResult(nil), cs...)
	slices.SortStableFunc(out, func(a, b replay.CaseResult) int { return rank(a.Verdict) - rank(b.Verdict) })
	return out
}
