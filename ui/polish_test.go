package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/station"
)

// TestInputBordersPassContrast: the outline of text fields, unchecked
// checkboxes and radios stands out at WCAG 1.4.11's 3:1 from the field's
// fill and from the window's background, in both variants.
func TestInputBordersPassContrast(t *testing.T) {
	th := newHouseTheme()
	for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		border := th.Color(theme.ColorNameInputBorder, v)
		for _, against := range []fyne.ThemeColorName{theme.ColorNameInputBackground, theme.ColorNameBackground} {
			if r := contrast(border, th.Color(against, v)); r < 3 {
				t.Errorf("variant %d: input border on %s: contrast %.2f:1, want at least 3:1", v, against, r)
			}
		}
	}
}

// labelsUnder is the text of every label under o.
func labelsUnder(o fyne.CanvasObject) []string {
	var out []string
	walk(o, func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok && l.Text != "" {
			out = append(out, l.Text)
		}
	})
	return out
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// TestEmptyStateSaysWhichURLTheServiceNeeds: the service cannot reach
// 127.0.0.1, so step 1 sends the real service to the public URL (Start
// tunnel) and says what the local URL is for; the secrets button is
// named as the header names it, with and without a secret.
func TestEmptyStateSaysWhichURLTheServiceNeeds(t *testing.T) {
	h := newHarness(t, nil)
	e := h.win.deliveries.Empty
	for _, secrets := range [][][]byte{nil, {[]byte("s1")}} {
		h.win.setSecrets(secrets)
		text := labelsUnder(e.content)
		button := h.win.header.SecretButton.Text
		if !anyContains(text, "“"+button+"”") {
			t.Errorf("%d secrets: the header's button reads %q, the empty state says:\n%s", len(secrets), button, strings.Join(text, "\n"))
		}
		for _, want := range []string{"Start tunnel", "public URL", "hookscope send", "sandbox"} {
			if !anyContains(text, want) {
				t.Errorf("%d secrets: the empty state does not say %q:\n%s", len(secrets), want, strings.Join(text, "\n"))
			}
		}
	}
	if !anyContains(labelsUnder(e.content), "http://127.0.0.1:8787/webhooks") {
		t.Error("the local URL is not shown")
	}
}

// TestForwardModeSaysWhatItChooses: each mode's choice names the CLI's
// --forward-mode value and says who answers the service; the row with
// the longest choice fits a 1280 px window with room for a URL.
func TestForwardModeSaysWhatItChooses(t *testing.T) {
	h := newForwardHarness(t, station.DefaultSettings())
	h.app.Settings().SetTheme(newHouseTheme())
	f := h.win.header.Forward
	for _, mode := range []forward.Mode{forward.ModeAck, forward.ModePassThrough} {
		found := false
		for _, o := range f.Mode.Options {
			if strings.HasPrefix(o, string(mode)+":") && strings.Contains(o, "answers") {
				found = true
			}
		}
		if !found {
			t.Errorf("no choice says what %q does: %q", mode, f.Mode.Options)
		}
	}
	f.Mode.SetSelected(f.Mode.Options[len(f.Mode.Options)-1])
	h.win.w.Resize(fyne.NewSize(1280, 800))
	if w := h.win.w.Content().MinSize().Width; w > 1280 {
		t.Errorf("the window needs %.0f px", w)
	}
	th := f.Mode.Theme()
	if need := fyne.MeasureText(f.Mode.Selected, th.Size(theme.SizeNameText), fyne.TextStyle{}).Width + th.Size(theme.SizeNameInlineIcon) + 2*th.Size(theme.SizeNameInnerPadding); f.Mode.Size().Width < need {
		t.Errorf("the mode shows %.0f px of the %.0f its choice %q needs", f.Mode.Size().Width, need, f.Mode.Selected)
	}
	if w := f.Field.Size().Width; w < 420 {
		t.Errorf("the Forward to field is %.0f px wide at 1280 px, want room for a URL", w)
	}
}

// shotsBody is the answer scripts/shots-app.py gives: six lines pretty.
const shotsBody = `{"received": 3, "types": ["media.created"], "queued_jobs": 1}`

// scrollOf is the scroll container o lies in under root, or nil.
func scrollOf(root, o fyne.CanvasObject) *container.Scroll {
	var found *container.Scroll
	var visit func(c fyne.CanvasObject, in *container.Scroll) bool
	visit = func(c fyne.CanvasObject, in *container.Scroll) bool {
		if c == o {
			found = in
			return true
		}
		switch x := c.(type) {
		case *container.Scroll:
			return visit(x.Content, x)
		case *fyne.Container:
			for _, ch := range x.Objects {
				if visit(ch, in) {
					return true
				}
			}
		case *container.Split:
			return visit(x.Leading, in) || visit(x.Trailing, in)
		}
		return false
	}
	visit(root, nil)
	return found
}

// TestForwardPaneShowsTheWholeAnswer: at 1280×800 one attempt takes one
// row, the attempt's words and the app's response headers are all in
// view, and so is every line of a six-line answer, without dragging a
// divider.
func TestForwardPaneShowsTheWholeAnswer(t *testing.T) {
	app := startTestApp(t, "127.0.0.1:0")
	app.body = []byte(shotsBody)
	set := station.DefaultSettings()
	set.ForwardTo, set.ForwardOn = "http://"+app.addr+"/webhooks", true
	h := newForwardHarness(t, set)
	h.app.Settings().SetTheme(newHouseTheme())
	h.post(t, "media.created")
	h.waitFor(t, "forwarded", func() bool { return allEqual(h.rowBadges(), "→ 200", 1) })
	d := h.win.deliveries
	d.List.Select(0)
	d.Detail.Tabs.Select(d.Detail.forwardTab)
	h.win.w.Resize(fyne.NewSize(1280, 800))
	p := d.Detail.Forward
	if len(p.attempts) != 1 || p.Body.Rows() < 5 {
		t.Fatalf("%d attempts, %d body rows", len(p.attempts), p.Body.Rows())
	}

	row := p.List.CreateItem().MinSize().Height
	if hgt := p.List.Size().Height; hgt > row+2 {
		t.Errorf("one attempt's list is %.0f px tall, one row is %.0f", hgt, row)
	}
	for _, want := range []string{"Your app answered 200 OK", "X-App: test", "Content-Type: application/json"} {
		var label fyne.CanvasObject
		walk(p.content, func(o fyne.CanvasObject) {
			switch l := o.(type) {
			case *widget.Label:
				if strings.Contains(l.Text, want) {
					label = l
				}
			case *widget.RichText:
				if strings.Contains(l.String(), want) {
					label = l
				}
			}
		})
		if label == nil {
			t.Errorf("the pane does not say %q", want)
			continue
		}
		if s := scrollOf(p.content, label); s != nil && s.Size().Height+1 < s.Content.MinSize().Height {
			t.Errorf("%q: %.0f of the description's %.0f px in view", want, s.Size().Height, s.Content.MinSize().Height)
		}
	}
	sep := p.Body.List.Theme().Size(theme.SizeNameSeparatorThickness)
	line := p.Body.List.CreateItem().MinSize().Height
	if shown := int((p.Body.List.Size().Height + sep) / (line + sep)); shown < p.Body.Rows() {
		t.Errorf("the answer shows %d of its %d lines (%.0f px)", shown, p.Body.Rows(), p.Body.List.Size().Height)
	}
}

// longAnswer is an app's answer of 14 lines pretty-printed.
const longAnswer = `{"ok": true, "received": 12, "types": ["media.created"], "queued_jobs": 1, "handler": {"name": "webhooks#create", "duration_ms": 3.2, "db_queries": 2}, "warnings": ["signature not checked in development", "duplicate detection is off"]}`

// TestForwardPaneKeepsEightLinesWhileTheAppIsDown: at 1280×800, with the
// "app down" line under the header, an earlier answer shows at least 8
// lines (it showed one).
func TestForwardPaneKeepsEightLinesWhileTheAppIsDown(t *testing.T) {
	app := startTestApp(t, "127.0.0.1:0")
	app.body = []byte(longAnswer)
	set := station.DefaultSettings()
	set.ForwardTo, set.ForwardOn = "http://"+app.addr+"/webhooks", true
	h := newForwardHarness(t, set)
	h.app.Settings().SetTheme(newHouseTheme())
	h.win.w.Resize(fyne.NewSize(1280, 800))
	h.post(t, "media.created")
	h.waitFor(t, "forwarded", func() bool { return allEqual(h.rowBadges(), "→ 200", 1) })
	app.srv.Close()
	h.post(t, "media.ready")
	f := h.win.header.Forward
	h.waitFor(t, "the app down line", func() bool { return f.Down.Visible() })
	d := h.win.deliveries
	d.open(1)
	d.Detail.Tabs.Select(d.Detail.forwardTab)
	h.win.w.Resize(fyne.NewSize(1280, 800))
	p := d.Detail.Forward
	if p.Body.Rows() < 12 {
		t.Fatalf("the answer has %d lines", p.Body.Rows())
	}
	sep := p.Body.List.Theme().Size(theme.SizeNameSeparatorThickness)
	line := p.Body.List.CreateItem().MinSize().Height
	if shown := int((p.Body.List.Size().Height + sep) / (line + sep)); shown < 8 {
		t.Errorf("the answer shows %d lines (%.0f px), want at least 8", shown, p.Body.List.Size().Height)
	}
	if w, h := h.win.w.Content().MinSize().Width, h.win.w.Content().MinSize().Height; w > 960 || h > 640 {
		t.Errorf("the window needs %.0f×%.0f px, want at most 960×640", w, h)
	}
}

// TestAttemptRowSaysItsOutcomeFirst: a cut attempt row keeps its outcome
// (it was cut at "(attempt 6, given …" behind the time and host).
func TestAttemptRowSaysItsOutcomeFirst(t *testing.T) {
	a := &forward.Attempt{Number: 6, Outcome: forward.Refused, GaveUp: true, Kind: forward.KindAck,
		Target: "http://localhost:3000/webhooks", StartedAt: time.Date(2026, 11, 25, 14, 3, 5, 0, time.UTC)}
	if got := attemptLine(a); !strings.HasPrefix(got, "→ refused (attempt 6, given up) · ") {
		t.Fatalf("row %q", got)
	}
}

// TestEverythingFitsAt960x640: the window and every dialog it opens fit
// 960×640 (half of a 1920 px screen), so every control can be reached.
func TestEverythingFitsAt960x640(t *testing.T) {
	h := newForwardHarness(t, station.DefaultSettings())
	h.app.Settings().SetTheme(newHouseTheme())
	const w, hgt = 960, 640
	if m := h.win.w.Content().MinSize(); m.Width > w || m.Height > hgt {
		t.Errorf("the empty window needs %.0f×%.0f", m.Width, m.Height)
	}
	h.post(t, "media.created")
	h.waitFor(t, "a row", func() bool { return len(h.win.deliveries.model.rows) == 1 })
	h.win.deliveries.List.Select(0)
	if m := h.win.w.Content().MinSize(); m.Width > w || m.Height > hgt {
		t.Errorf("the window needs %.0f×%.0f", m.Width, m.Height)
	}
	// A dialog is the content, its title and its Close button, padded.
	chrome := fyne.NewSize(2*theme.Padding(), 100)
	for name, content := range map[string]fyne.CanvasObject{
		"Replay…":           h.win.openReplay().content,
		"Replay selection…": h.win.openChaos().content,
		"Consumer check…":   h.win.openConsumerCheck().content,
		"Export…":           h.win.openExport().content,
		"Import…":           h.win.openImport().content,
	} {
		if m := content.MinSize().Add(chrome); m.Width > w-40 || m.Height > hgt-40 {
			t.Errorf("%s needs %.0f×%.0f, more than the window leaves it", name, m.Width, m.Height)
		}
	}
}
