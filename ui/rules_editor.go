package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/rules"
)

// answerPresets are the one-click rules the Rules editor adds: the answer
// modes before rules, and the sequence that provokes a re-send per
// message.
var answerPresets = []struct{ label, rule string }{
	{"500", "500"},
	{"Hang 15 s", "hang"},
	{"Close", "close"},
	{"500 x2 then 200", "500 x2 then 200"},
}

// rulesEditor is Settings' ordered list of answer rules (`[COND =>]
// ACTION`, the grammar of listen --answer): each rule is compiled as it
// is typed and a wrong one shows its error under it; Test against
// selected delivery says what the rules would answer to the delivery
// shown in the Deliveries tab. The rules take effect with Save settings.
type rulesEditor struct {
	win      *mainWindow
	compiler *rules.Compiler

	// Rows are the rules, in order: the first that matches answers.
	Rows []*ruleRow
	// List holds the rows' widgets; Empty says what no rule means.
	List  *fyne.Container
	Empty *widget.Label
	// AddRule adds an empty rule; Presets add one of answerPresets each.
	AddRule *widget.Button
	Presets []*widget.Button
	// Test runs the rules (as edited, saved or not) on the selected
	// delivery; TestResult says which rule matched and the answer.
	Test       *widget.Button
	TestResult *widget.Label

	// changed is called after every edit.
	changed func()
	content fyne.CanvasObject
}

// ruleRow is one rule: its field, its error, and the buttons that move
// and delete it.
type ruleRow struct {
	Number *widget.Label
	Entry  *widget.Entry
	// Error shows the rule's compile error (caret under the column, then
	// the message); hidden while the rule compiles.
	Error  *widget.Label
	Up     *widget.Button
	Down   *widget.Button
	Delete *widget.Button

	err error
	box fyne.CanvasObject
}

func newRulesEditor(win *mainWindow, changed func()) *rulesEditor {
	c, err := rules.NewCompiler(rules.Arrival)
	if err != nil {
		// The environment is fixed at build time: a failure is a bug.
		panic(err)
	}
	e := &rulesEditor{win: win, compiler: c, changed: changed}
	e.List = container.NewVBox()
	e.Empty = widget.NewLabel("No rule: every delivery is answered 200 at once (normal).")
	e.AddRule = widget.NewButtonWithIcon("Add rule", theme.ContentAddIcon(), func() {
		r := e.add("")
		win.w.Canvas().Focus(r.Entry)
	})
	presets := container.NewHBox(widget.NewLabel("Add:"))
	for _, p := range answerPresets {
		b := widget.NewButton(p.label, func() { e.add(p.rule) })
		e.Presets = append(e.Presets, b)
		presets.Add(b)
	}
	e.Test = widget.NewButtonWithIcon("Test against selected delivery", theme.MediaPlayIcon(), e.test)
	e.TestResult = widget.NewLabel("")
	e.TestResult.Wrapping = fyne.TextWrapWord
	e.TestResult.Hide()
	if win.svc.TryAnswerRules == nil {
		e.Test.Hide()
	}
	help := widget.NewLabel("Each rule is [CONDITION =>] ACTION, for example media.* => 500 x2 then 200, or " +
		"events.exists(e, e.type == \"viewing_session.play\") => 200 after 12s. The first rule that matches answers; " +
		"a delivery no rule matches gets 200. docs/rules.md lists the fields and actions.")
	help.Wrapping = fyne.TextWrapWord
	e.content = container.NewVBox(help, e.Empty, e.List,
		container.NewHBox(e.AddRule, widget.NewSeparator(), presets),
		container.NewBorder(nil, nil, e.Test, nil), e.TestResult)
	return e
}

// setLines shows lines as the rules (the saved ones).
func (e *rulesEditor) setLines(lines []string) {
	e.Rows = nil
	for _, l := range lines {
		e.Rows = append(e.Rows, e.newRow(l))
	}
	e.rebuild()
}

// lines is the rules as edited, empty ones left out.
func (e *rulesEditor) lines() []string {
	var out []string
	for _, r := range e.Rows {
		if t := strings.TrimSpace(r.Entry.Text); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// err is the first wrong rule's error (a *rules.RuleError, numbered as
// saved), nil when every rule compiles.
func (e *rulesEditor) err() error {
	n := 0
	for _, r := range e.Rows {
		if strings.TrimSpace(r.Entry.Text) == "" {
			continue
		}
		if r.err != nil {
			return &rules.RuleError{Index: n, Err: r.err}
		}
		n++
	}
	return nil
}

// add appends a rule and returns its row.
func (e *rulesEditor) add(text string) *ruleRow {
	r := e.newRow(text)
	e.Rows = append(e.Rows, r)
	e.rebuild()
	e.edited()
	return r
}

// move moves rule i by delta places (-1 up, +1 down).
func (e *rulesEditor) move(r *ruleRow, delta int) {
	i := e.index(r)
	j := i + delta
	if i < 0 || j < 0 || j >= len(e.Rows) {
		return
	}
	e.Rows[i], e.Rows[j] = e.Rows[j], e.Rows[i]
	e.rebuild()
	e.edited()
}

// remove deletes a rule.
func (e *rulesEditor) remove(r *ruleRow) {
	if i := e.index(r); i >= 0 {
		e.Rows = append(e.Rows[:i], e.Rows[i+1:]...)
		e.rebuild()
		e.edited()
	}
}

func (e *rulesEditor) index(r *ruleRow) int {
	for i, x := range e.Rows {
		if x == r {
			return i
		}
	}
	return -1
}

func (e *rulesEditor) newRow(text string) *ruleRow {
	r := &ruleRow{Number: widget.NewLabel("")}
	r.Entry = widget.NewEntry()
	r.Entry.TextStyle = fyne.TextStyle{Monospace: true}
	r.Entry.SetPlaceHolder("media.* => 500 x2 then 200")
	r.Entry.SetText(text)
	r.Error = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	r.Error.Importance = widget.DangerImportance
	r.Error.Wrapping = fyne.TextWrapBreak
	r.Error.Hide()
	r.Up = widget.NewButtonWithIcon("", theme.MoveUpIcon(), func() { e.move(r, -1) })
	r.Down = widget.NewButtonWithIcon("", theme.MoveDownIcon(), func() { e.move(r, +1) })
	r.Delete = widget.NewButtonWithIcon("", theme.DeleteIcon(), func() { e.remove(r) })
	for _, b := range []*widget.Button{r.Up, r.Down, r.Delete} {
		b.Importance = widget.LowImportance
	}
	e.check(r)
	r.Entry.OnChanged = func(string) {
		e.check(r)
		e.edited()
	}
	// The error sits under the rule's field, its caret under the field's
	// text; the number and the buttons stay beside the field.
	r.box = container.NewBorder(nil, nil, container.NewVBox(r.Number), container.NewVBox(container.NewHBox(r.Up, r.Down, r.Delete)),
		container.NewVBox(r.Entry, r.Error))
	return r
}

// check compiles a rule and shows its error under it.
func (e *rulesEditor) check(r *ruleRow) {
	text := strings.TrimSpace(r.Entry.Text)
	r.err = nil
	if text != "" {
		_, r.err = e.compiler.ParseRule(text)
	}
	if r.err == nil {
		r.Error.SetText("")
		r.Error.Hide()
		return
	}
	msg := r.err.Error()
	var ce rules.CompileErrors
	if errors.As(r.err, &ce) && len(ce) > 0 {
		msg = ce[0].Error()
		// The list of fields is five lines under a rule: the docs have it.
		if i := strings.Index(msg, " ("); i > 0 && len(msg) > 100 {
			msg = msg[:i] + " (docs/rules.md lists the fields)"
		}
		msg = caretLines(ce[0], exprErrorWidth) + "\n" + msg
		if len(ce) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(ce)-1)
		}
	}
	r.Error.SetText(msg)
	r.Error.Show()
}

// rebuild lays the rows out in order, numbered, the first without Up and
// the last without Down.
func (e *rulesEditor) rebuild() {
	objs := make([]fyne.CanvasObject, len(e.Rows))
	for i, r := range e.Rows {
		r.Number.SetText(fmt.Sprintf("%d.", i+1))
		if i == 0 {
			r.Up.Disable()
		} else {
			r.Up.Enable()
		}
		if i == len(e.Rows)-1 {
			r.Down.Disable()
		} else {
			r.Down.Enable()
		}
		objs[i] = r.box
	}
	e.List.Objects = objs
	e.List.Refresh()
	e.Empty.Hidden = len(e.Rows) > 0
	e.Empty.Refresh()
}

// edited tells the form, and drops a test result that described other
// rules.
func (e *rulesEditor) edited() {
	if e.TestResult.Visible() {
		e.TestResult.SetText("")
		e.TestResult.Hide()
	}
	if e.changed != nil {
		e.changed()
	}
}

// test tells what the rules as edited would answer to the delivery
// selected in the Deliveries tab, arriving again as its message's next
// attempt (station.Station.TryAnswerRules, off the UI goroutine).
func (e *rulesEditor) test() {
	try := e.win.svc.TryAnswerRules
	rec := e.win.deliveries.Detail.rec
	switch {
	case try == nil:
		return
	case rec == nil:
		e.showResult("Select a delivery in the Deliveries tab first: the rules are tried on it.", widget.WarningImportance)
		return
	}
	if err := e.err(); err != nil {
		e.showResult("Fix the rule first: "+err.Error(), widget.DangerImportance)
		return
	}
	lines := e.lines()
	e.Test.Disable()
	e.showResult(fmt.Sprintf("Trying the rules on delivery #%d…", rec.Delivery.ID), widget.MediumImportance)
	e.win.bridge.Go(func() func() {
		trial, err := try(context.Background(), lines, rec, 0)
		return func() {
			e.Test.Enable()
			if err != nil {
				e.showResult("Could not try the rules: "+err.Error(), widget.DangerImportance)
				return
			}
			text := capitalise(trial.Explain) + "."
			if trial.Rule >= 0 && trial.Rule < len(lines) {
				text += "\nRule " + fmt.Sprint(trial.Rule+1) + ": " + lines[trial.Rule]
				if act, err := rules.ParseAction(actionOf(lines[trial.Rule])); err == nil && act.Sequence() {
					text += fmt.Sprintf(" (attempt %d of the sequence)", trial.Attempt)
				}
			}
			imp := widget.SuccessImportance
			if trial.Rule >= 0 && (trial.Step.Status != 200 || trial.Step.Close || trial.Step.Delay > 0) {
				imp = widget.WarningImportance
			}
			e.showResult(text, imp)
		}
	})
}

// actionOf is a rule's action text.
func actionOf(line string) string {
	if _, act, ok := rules.CutArrow(line); ok {
		return act
	}
	return line
}

func (e *rulesEditor) showResult(text string, imp widget.Importance) {
	e.TestResult.Importance = imp
	e.TestResult.SetText(text)
	e.TestResult.Show()
}
