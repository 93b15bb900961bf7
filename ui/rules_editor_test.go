package ui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/station"
)

// TestRulesEditorEditsReordersAndSaves: rules added by typing and by a
// preset, moved and deleted, are saved in their order and put in force;
// the Up of the first and the Down of the last are disabled.
func TestRulesEditorEditsReordersAndSaves(t *testing.T) {
	h := newHarness(t, nil)
	s := h.win.settingsV
	e := s.Rules
	if !e.Empty.Visible() {
		t.Fatal("no rule and no word about what that means")
	}
	test.Tap(e.AddRule)
	test.Type(e.Rows[0].Entry, "media.* => 500")
	test.Tap(e.Presets[3]) // 500 x2 then 200
	if e.Empty.Visible() || len(e.Rows) != 2 {
		t.Fatalf("%d rows, empty note shown %v", len(e.Rows), e.Empty.Visible())
	}
	test.Tap(e.Rows[1].Up)
	if !e.Rows[0].Up.Disabled() || !e.Rows[1].Down.Disabled() || e.Rows[0].Down.Disabled() {
		t.Fatal("the first rule moves up or the last down")
	}
	if e.Rows[0].Number.Text != "1." || e.Rows[1].Number.Text != "2." {
		t.Fatalf("numbers %q %q", e.Rows[0].Number.Text, e.Rows[1].Number.Text)
	}
	test.Tap(s.SaveButton)
	want := []string{"500 x2 then 200", "media.* => 500"}
	if s.Status.Text != "Saved." || !slices.Equal(h.win.settings.AnswerRules, want) || !slices.Equal(h.engine.answer, want) {
		t.Fatalf("saved %q (%q), in force %q", h.win.settings.AnswerRules, s.Status.Text, h.engine.answer)
	}
	saved, _ := station.LoadSettings(context.Background(), h.store)
	if !slices.Equal(saved.AnswerRules, want) {
		t.Fatalf("stored %q", saved.AnswerRules)
	}
	test.Tap(e.Rows[0].Delete)
	test.Tap(s.SaveButton)
	if want := []string{"media.* => 500"}; !slices.Equal(h.win.settings.AnswerRules, want) {
		t.Fatalf("after delete %q", h.win.settings.AnswerRules)
	}
	if hd := h.win.header; hd.Answers.Text != "answering 500 to media.*" || !hd.answersRow.Visible() {
		t.Fatalf("header says %q", hd.Answers.Text)
	}
	// Saved rules come back in the editor, an empty row left out.
	test.Tap(e.AddRule)
	test.Tap(s.SaveButton)
	s.fill(h.win.settings)
	if len(e.Rows) != 1 || e.Rows[0].Entry.Text != "media.* => 500" {
		t.Fatalf("filled %d rows", len(e.Rows))
	}
}

// TestRulesEditorShowsTheErrorUnderTheRule: a rule that does not compile
// shows its column and message under it, Save refuses it and nothing
// changes; fixed, it saves.
func TestRulesEditorShowsTheErrorUnderTheRule(t *testing.T) {
	h := newHarness(t, nil)
	s := h.win.settingsV
	e := s.Rules
	test.Tap(e.Presets[0]) // 500: fine
	test.Tap(e.AddRule)
	bad := e.Rows[1]
	test.Type(bad.Entry, `events.exists(x, x.tpye == "media.ready") => 500`)
	if !bad.Error.Visible() || !strings.Contains(bad.Error.Text, "^") || !strings.Contains(bad.Error.Text, "tpye") {
		t.Fatalf("error under the rule: shown %v, %q", bad.Error.Visible(), bad.Error.Text)
	}
	if lines := strings.Split(bad.Error.Text, "\n"); len(lines) < 2 || strings.Index(lines[1], "^") != strings.Index(lines[0], ".tpye") {
		t.Fatalf("caret not under the column:\n%s", bad.Error.Text)
	}
	if e.Rows[0].Error.Visible() {
		t.Fatal("the good rule shows an error")
	}
	test.Tap(s.SaveButton)
	if !strings.Contains(s.Status.Text, "Not saved") || !strings.Contains(s.Status.Text, "answer rule 2") {
		t.Fatalf("status %q", s.Status.Text)
	}
	if len(h.win.settings.AnswerRules) != 0 || h.engine.answer != nil {
		t.Fatalf("a wrong rule was saved: %q, in force %q", h.win.settings.AnswerRules, h.engine.answer)
	}
	bad.Entry.SetText("media.* => 50")
	if !bad.Error.Visible() || !strings.Contains(bad.Error.Text, "50") {
		t.Fatalf("bad action: %q", bad.Error.Text)
	}
	bad.Entry.SetText(`events.exists(x, x.type == "media.ready") => close`)
	if bad.Error.Visible() {
		t.Fatalf("fixed rule still shows %q", bad.Error.Text)
	}
	test.Tap(s.SaveButton)
	if s.Status.Text != "Saved." || len(h.win.settings.AnswerRules) != 2 {
		t.Fatalf("fixed: %q, %q", s.Status.Text, h.win.settings.AnswerRules)
	}
}

// TestRulesEditorTestsTheSelectedDelivery: the rules as edited (not yet
// saved) are tried on the delivery shown in Deliveries, and the result
// names the rule that matched, its answer and the attempt of a
// sequence; without a selection it says to select one.
func TestRulesEditorTestsTheSelectedDelivery(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	e := h.win.settingsV.Rules
	e.setLines([]string{"media.created => 500", "media.* => 500 x2 then 200"})
	test.Tap(e.Test)
	if !strings.Contains(e.TestResult.Text, "Select a delivery") {
		t.Fatalf("nothing selected: %q", e.TestResult.Text)
	}
	h.win.deliveries.open(2) // media.ready
	test.Tap(e.Test)
	for _, want := range []string{"Rule 2 answers delivery 2", "500 Internal Server Error", "Rule 2: media.* => 500 x2 then 200", "attempt 1 of the sequence"} {
		if !strings.Contains(e.TestResult.Text, want) {
			t.Errorf("result %q lacks %q", e.TestResult.Text, want)
		}
	}
	h.win.deliveries.open(1) // media.created
	test.Tap(e.Test)
	if !strings.Contains(e.TestResult.Text, "Rule 1 answers delivery 1") || strings.Contains(e.TestResult.Text, "sequence") {
		t.Errorf("delivery 1: %q", e.TestResult.Text)
	}
	// An edit makes the result stale: it goes.
	test.Tap(e.Rows[0].Delete)
	if e.TestResult.Visible() {
		t.Fatalf("a result for other rules stays: %q", e.TestResult.Text)
	}
	e.setLines([]string{"viewing_session.* => close"})
	test.Tap(e.Test)
	if !strings.Contains(e.TestResult.Text, "No rule answers delivery 1") {
		t.Errorf("no match: %q", e.TestResult.Text)
	}
	if len(h.win.settings.AnswerRules) != 0 {
		t.Fatalf("testing saved the rules: %q", h.win.settings.AnswerRules)
	}
}

// TestSavedRulesAreNotUnsavedChanges: a window opened on saved rules has
// nothing to save (filling the form once said "Unsaved changes").
func TestSavedRulesAreNotUnsavedChanges(t *testing.T) {
	h := newHarness(t, nil)
	set := station.DefaultSettings()
	set.AnswerRules = []string{`delivery.signature == "invalid" => close`, "live_event.* => 500 x2 then 200"}
	w := h.app.NewWindow("second")
	m := newMainWindow(h.app, w, h.win.svc, set, nil, nil, true)
	t.Cleanup(func() { m.close(); w.Close() })
	if got := m.settingsV.Status.Text; got != "" {
		t.Fatalf("status %q after filling the saved settings", got)
	}
}

// TestAnswerRulesButtonOpensTheCard: the header's Answer rules… opens
// Settings scrolled to the rules, the first time too.
func TestAnswerRulesButtonOpensTheCard(t *testing.T) {
	h := newHarness(t, nil)
	h.win.w.Resize(fyne.NewSize(960, 640))
	h.win.settingsV.Rules.setLines([]string{"500"})
	test.Tap(h.win.settingsV.SaveButton)
	h.win.Tabs.SelectIndex(0)
	test.Tap(h.win.header.AnswerMode)
	if h.win.Tabs.Selected().Content != h.win.settingsV.content {
		t.Fatal("Answer rules… does not open Settings")
	}
	if y := h.win.settingsV.scroll.Offset.Y; y <= 0 {
		t.Fatalf("Settings not scrolled to the rules (offset %v)", y)
	}
}
