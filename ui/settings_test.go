package ui

import (
	"errors"
	"image/color"
	"math"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// TestSettingsStatusFollowsEdits: what the last Save said goes away with
// the next edit; an edit undone leaves nothing to save.
func TestSettingsStatusFollowsEdits(t *testing.T) {
	h := newHarness(t, nil)
	s := h.win.settingsV
	test.Tap(s.SaveButton)
	if s.Status.Text != "Saved." {
		t.Fatalf("status after Save = %q", s.Status.Text)
	}
	const unsaved = "Unsaved changes: press Save settings to apply them."
	for _, edit := range []struct {
		name      string
		do, undo  func()
		wantAfter string
	}{
		{"path", func() { test.Type(s.Path, "x") }, func() { s.Path.SetText("/webhooks") }, ""},
		{"answer", func() { test.Tap(s.Rules.Presets[0]) }, func() { test.Tap(s.Rules.Rows[0].Delete) }, ""},
		{"notify", func() { test.Tap(s.NotifyInvalid) }, func() { test.Tap(s.NotifyInvalid) }, ""},
		{"bad body cap", func() { s.MaxBodyKiB.SetText("lots") }, func() { s.MaxBodyKiB.SetText("10240") }, ""},
	} {
		edit.do()
		if s.Status.Text != unsaved {
			t.Errorf("%s edited: status %q, want %q", edit.name, s.Status.Text, unsaved)
		}
		edit.undo()
		if s.Status.Text != edit.wantAfter {
			t.Errorf("%s undone: status %q, want %q", edit.name, s.Status.Text, edit.wantAfter)
		}
	}
	test.Type(s.Keep, "5")
	test.Tap(s.SaveButton)
	if s.Status.Text != "Saved." {
		t.Fatalf("status after the second Save = %q", s.Status.Text)
	}
}

// TestSettingsFooterStaysInView: Save and its message are on screen at
// the default window size and at the smallest, without scrolling.
func TestSettingsFooterStaysInView(t *testing.T) {
	h := newHarness(t, nil)
	s := h.win.settingsV
	h.win.Tabs.SelectIndex(3) // Settings
	test.Tap(s.SaveButton)
	drv := fyne.CurrentApp().Driver()
	for _, size := range []fyne.Size{{Width: 1280, Height: 800}, h.win.w.Content().MinSize()} {
		h.win.w.Resize(size)
		c := h.win.w.Canvas().Size()
		for name, o := range map[string]fyne.CanvasObject{"Save settings": s.SaveButton, "status": s.Status} {
			p, sz := drv.AbsolutePositionForObject(o), o.Size()
			if p.X < 0 || p.Y < 0 || p.X+sz.Width > c.Width || p.Y+sz.Height > c.Height {
				t.Errorf("window %v: %s at %v size %v lies outside the %v canvas", size, name, p, sz, c)
			}
		}
	}
}

// TestTextPassesContrast: every label of the window, in every tab and in
// a delivery's detail, reads at WCAG AA (4.5:1) on the background in the
// light and the dark variant of the window's theme; form hints too.
func TestTextPassesContrast(t *testing.T) {
	h := newHarness(t, divergentPair)
	h.win.deliveries.open(2)
	test.Tap(h.win.settingsV.SaveButton) // "Saved." in its colour
	th := newHouseTheme()
	seen := map[string]bool{}
	walkText(h.win.w.Content(), func(where string, c fyne.ThemeColorName) {
		for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
			key := string(c) + where + string(rune('0'+v))
			if seen[key] {
				continue
			}
			seen[key] = true
			if r := contrast(th.Color(c, v), th.Color(theme.ColorNameBackground, v)); r < 4.5 {
				t.Errorf("%s (%s, variant %d): contrast %.2f:1, want at least 4.5:1", where, c, v, r)
			}
		}
	})
	if len(seen) < 6 {
		t.Fatalf("only %d colours seen: the walk missed the window", len(seen))
	}
}

// walkText reports the colour of every label and form hint under o.
func walkText(o fyne.CanvasObject, fn func(where string, c fyne.ThemeColorName)) {
	walk(o, func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			if x.Text != "" {
				fn(labelSnippet(x.Text), importanceColor(x.Importance))
			}
		case *widget.Form:
			for _, it := range x.Items {
				if it.HintText != "" {
					fn("hint "+labelSnippet(it.HintText), theme.ColorNamePlaceHolder)
				}
			}
		}
	})
}

func labelSnippet(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// importanceColor is the colour widget.Label gives an importance.
func importanceColor(i widget.Importance) fyne.ThemeColorName {
	switch i {
	case widget.LowImportance:
		return theme.ColorNameDisabled
	case widget.HighImportance:
		return theme.ColorNamePrimary
	case widget.DangerImportance:
		return theme.ColorNameError
	case widget.WarningImportance:
		return theme.ColorNameWarning
	case widget.SuccessImportance:
		return theme.ColorNameSuccess
	}
	return theme.ColorNameForeground
}

// contrast is the WCAG 2 contrast ratio of two colours.
func contrast(a, b color.Color) float64 {
	lum := func(c color.Color) float64 {
		r, g, b, _ := c.RGBA()
		ch := func(v uint32) float64 {
			x := float64(v) / 0xffff
			if x <= 0.03928 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(b)
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// TestEnterAddsTheSecret: Enter in "Add signature secret" adds it, as the
// Add button does; an empty field adds nothing.
func TestEnterAddsTheSecret(t *testing.T) {
	h := newHarness(t, nil)
	var got []string
	d, e := secretDialog(h.win.w, func(s string) { got = append(got, s) })
	d.Show()
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	test.Type(e, "s3cret")
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if len(got) != 1 || got[0] != "s3cret" {
		t.Fatalf("added %q, want only s3cret", got)
	}
}

// blockingReceiver is a receiver whose Restart waits until released, as
// a restart that waits for the old socket's requests does.
type blockingReceiver struct {
	*fakeReceiver
	release chan struct{}
}

func (r blockingReceiver) Restart(addr string) error {
	<-r.release
	return r.fakeReceiver.Restart(addr)
}

// TestSaveAndFreePortDoNotHoldTheWindow: Save and Use a free port move
// the receiver off the UI goroutine (a restart can take seconds): the tap
// returns at once, the button is disabled and says what runs, and the
// outcome shows when the move is done.
func TestSaveAndFreePortDoNotHoldTheWindow(t *testing.T) {
	h := newHarness(t, nil)
	h.win.bridge.inline = false // background work in goroutines, as in the app
	recv := blockingReceiver{fakeReceiver: h.recv, release: make(chan struct{})}
	h.win.svc.Receiver = recv
	s := h.win.settingsV
	s.ListenAddr.SetText("127.0.0.1:9999")
	test.Tap(s.SaveButton) // returns while the receiver is still moving
	if !s.SaveButton.Disabled() || !strings.Contains(s.Status.Text, "moving the receiver to 127.0.0.1:9999") {
		t.Fatalf("while saving: button disabled %v, status %q", s.SaveButton.Disabled(), s.Status.Text)
	}
	close(recv.release)
	h.win.bridge.work.Wait()
	if s.SaveButton.Disabled() || s.Status.Text != "Saved." || h.recv.addr != "127.0.0.1:9999" {
		t.Fatalf("after the move: button disabled %v, status %q, receiver %s", s.SaveButton.Disabled(), s.Status.Text, h.recv.addr)
	}

	recv.release = make(chan struct{})
	h.win.svc.Receiver = recv
	h.recv.busy = map[string]bool{"127.0.0.1:9999": true}
	h.recv.err = errors.New("taken")
	h.win.header.refresh()
	fp := h.win.header.FreePort
	test.Tap(fp)
	if !fp.Disabled() || !strings.Contains(fp.Text, "Finding") {
		t.Fatalf("while finding a port: disabled %v, text %q", fp.Disabled(), fp.Text)
	}
	close(recv.release)
	h.win.bridge.work.Wait()
	if h.recv.addr != "127.0.0.1:10000" || h.win.settings.ListenAddr != "127.0.0.1:10000" || fp.Disabled() {
		t.Fatalf("after Use a free port: receiver %s, saved %s, button disabled %v", h.recv.addr, h.win.settings.ListenAddr, fp.Disabled())
	}
}

// TestSecretDialogTakesTheTyping: the secret field has the focus when
// "Add signature secret" opens, so typing and Enter add it.
func TestSecretDialogTakesTheTyping(t *testing.T) {
	h := newHarness(t, nil)
	h.win.promptSecret()
	f := h.win.w.Canvas().Focused()
	e, ok := f.(*widget.Entry)
	if !ok || !e.Password {
		t.Fatalf("focused %T, want the secret field", f)
	}
}
