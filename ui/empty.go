package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// emptyState is what a newcomer sees before the first delivery: the two
// ways to get one.
type emptyState struct {
	win *mainWindow

	URL      *widget.Label
	CopyURL  *widget.Button
	SendTest *widget.Button
	content  fyne.CanvasObject
}

func newEmptyState(win *mainWindow) *emptyState {
	e := &emptyState{win: win}
	title := widget.NewLabelWithStyle("No deliveries yet", fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
	title.SizeName = theme.SizeNameHeadingText
	e.URL = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	e.URL.Selectable = true
	e.URL.Truncation = fyne.TextTruncateEllipsis
	e.CopyURL = widget.NewButtonWithIcon("Copy URL", theme.ContentCopyIcon(), func() {
		u := win.publicURL()
		if u == "" {
			u = win.localURL()
		}
		win.copy(u, "consumer URL")
	})
	e.SendTest = widget.NewButtonWithIcon("Send test deliveries", theme.MailSendIcon(), win.sendTest)
	e.SendTest.Importance = widget.HighImportance

	step := func(n, text string) fyne.CanvasObject {
		num := widget.NewLabelWithStyle(n, fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
		l := widget.NewLabel(text)
		l.Wrapping = fyne.TextWrapWord
		return container.NewBorder(nil, nil, num, nil, l)
	}
	one := container.NewVBox(
		step("1", "Paste this URL as the POST URL of a webhook in the service's account settings (and copy its Secret Key into Hookscope with “Set secret…”). Start the tunnel first so the service can reach this machine."),
		container.NewBorder(nil, nil, nil, e.CopyURL, e.URL),
	)
	two := container.NewVBox(
		step("2", "Or click Send test deliveries: Hookscope's simulator posts signed sample messages of every event type — with duplicates, a divergent copy and a bad signature — to your receiver."),
		container.NewHBox(e.SendTest),
	)
	if win.svc.SendTest == nil {
		two.Hide()
	}
	icon := canvas.NewImageFromResource(win.icon)
	icon.FillMode = canvas.ImageFillContain
	icon.SetMinSize(fyne.NewSquareSize(72))
	box := container.NewVBox(container.NewCenter(icon), title, widget.NewSeparator(), one, widget.NewSeparator(), two)
	e.content = container.NewCenter(container.NewGridWrap(fyne.NewSize(640, 440), box))
	return e
}

// refresh shows the URL to paste: the public one when the tunnel runs.
// While the receiver is not listening neither URL works: it says why
// instead, and Copy and Send test are off (the header offers a free port).
func (e *emptyState) refresh() {
	if _, err := e.win.receiverState(); err != nil {
		e.URL.Truncation, e.URL.Wrapping = fyne.TextTruncateOff, fyne.TextWrapWord
		e.URL.TextStyle = fyne.TextStyle{}
		e.URL.Importance = widget.DangerImportance
		e.URL.SetText("not listening: " + err.Error() + ". Use a free port (above) or stop the other program and press Save in Settings.")
		e.CopyURL.Disable()
		e.SendTest.Disable()
		return
	}
	e.URL.Truncation, e.URL.Wrapping = fyne.TextTruncateEllipsis, fyne.TextWrapOff
	e.URL.TextStyle = fyne.TextStyle{Monospace: true}
	e.URL.Importance = widget.MediumImportance
	if u := e.win.publicURL(); u != "" {
		e.URL.SetText(u)
	} else {
		e.URL.SetText(e.win.localURL())
	}
	e.CopyURL.Enable()
	if !e.win.sending {
		e.SendTest.Enable()
	}
}
