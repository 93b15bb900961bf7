package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// emptyState is what a newcomer sees before the first delivery: the two
// ways to get one. The service posts from the internet, so it needs the
// public URL; the local one answers this machine only.
type emptyState struct {
	win *mainWindow

	// Step1 says how to connect the real service.
	Step1 *widget.Label
	// PublicURL is the tunnel's URL, or what to do to get one.
	PublicURL  *widget.Label
	CopyPublic *widget.Button
	// URL is the local URL (or why the receiver does not listen).
	URL     *widget.Label
	CopyURL *widget.Button
	// LocalNote says what the local URL is for.
	LocalNote *widget.Label
	SendTest  *widget.Button
	content   fyne.CanvasObject
}

func newEmptyState(win *mainWindow) *emptyState {
	e := &emptyState{win: win}
	title := widget.NewLabelWithStyle("No deliveries yet", fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameHeadingText
	url := func() *widget.Label {
		l := widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
		l.Selectable = true
		l.Truncation = fyne.TextTruncateEllipsis
		return l
	}
	e.PublicURL = url()
	e.CopyPublic = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { win.copy(win.publicURL(), "public consumer URL") })
	e.URL = url()
	e.CopyURL = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { win.copy(win.localURL(), "local consumer URL") })
	e.LocalNote = widget.NewLabel("The local URL answers on this machine only: use it with hookscope send, the sandbox and your own tests. The service cannot reach it.")
	e.LocalNote.Wrapping = fyne.TextWrapWord
	e.SendTest = widget.NewButtonWithIcon("Send test deliveries", theme.MailSendIcon(), win.sendTest)
	e.SendTest.Importance = widget.HighImportance

	step := func(n string, l *widget.Label) fyne.CanvasObject {
		num := widget.NewLabelWithStyle(n, fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
		l.Wrapping = fyne.TextWrapWord
		return container.NewBorder(nil, nil, num, nil, l)
	}
	bold := func(s string) *widget.Label {
		return widget.NewLabelWithStyle(s, fyne.TextAlignTrailing, fyne.TextStyle{Bold: true})
	}
	e.Step1 = widget.NewLabel("")
	urls := container.New(layout.NewFormLayout(),
		bold("Public"), container.NewBorder(nil, nil, nil, e.CopyPublic, e.PublicURL),
		bold("Local"), container.NewBorder(nil, nil, nil, e.CopyURL, e.URL),
		layout.NewSpacer(), e.LocalNote,
	)
	one := container.NewVBox(step("1", e.Step1), urls)
	two := container.NewVBox(
		step("2", widget.NewLabel("Or click Send test deliveries: Hookscope's simulator posts signed sample messages of every event type — with duplicates, a divergent copy and a bad signature — to the local URL.")),
		container.NewHBox(e.SendTest),
	)
	if win.svc.SendTest == nil {
		two.Hide()
	}
	icon := canvas.NewImageFromResource(win.icon)
	icon.FillMode = canvas.ImageFillContain
	icon.SetMinSize(fyne.NewSquareSize(72))
	box := container.NewVBox(container.NewCenter(icon), title, widget.NewSeparator(), one, widget.NewSeparator(), two)
	// It scrolls in a window lower than it: its height is not the window's minimum.
	e.content = container.NewVScroll(container.NewCenter(container.NewGridWrap(fyne.NewSize(680, 520), box)))
	return e
}

// refresh shows both URLs and names the secrets button as the header
// does. While the receiver is not listening neither URL works: it says
// why instead, and Copy and Send test are off (the header offers a free
// port).
func (e *emptyState) refresh() {
	w := e.win
	e.Step1.SetText("For the real service, use the public URL: press Start tunnel in the header, paste the URL as the POST URL of a webhook in the service's account settings, and copy the webhook's Secret Key into Hookscope with “" + secretButtonLabel(len(w.secrets)) + "”.")
	if _, err := w.receiverState(); err != nil {
		showURL(e.URL, "not listening: "+err.Error()+". Use a free port (above) or stop the other program and press Save in Settings.", false)
		e.CopyURL.Disable()
		e.CopyPublic.Disable()
		e.SendTest.Disable()
		return
	}
	showURL(e.URL, w.localURL(), true)
	e.CopyURL.Enable()
	e.PublicURL.TextStyle = fyne.TextStyle{Monospace: true}
	switch u := w.publicURL(); {
	case u != "":
		e.PublicURL.SetText(u)
		e.CopyPublic.Enable()
	default:
		e.PublicURL.TextStyle = fyne.TextStyle{}
		e.PublicURL.SetText(w.tunnelHint())
		e.CopyPublic.Disable()
	}
	if !w.sending {
		e.SendTest.Enable()
	}
}
