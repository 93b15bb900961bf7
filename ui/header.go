package ui

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/tunnel"
)

// headerView is the strip above the tabs: the two consumer URLs, receiver
// and tunnel state, secrets, counts and the test-delivery button.
type headerView struct {
	win *mainWindow

	LocalURL     *widget.Label
	CopyLocal    *widget.Button
	PublicURL    *widget.Label
	CopyPublic   *widget.Button
	TunnelButton *widget.Button
	TunnelState  *badge
	Receiver     *badge
	Secrets      *badge
	SecretButton *widget.Button
	Counts       *widget.Label
	SendTest     *widget.Button

	content fyne.CanvasObject
}

func newHeaderView(win *mainWindow) *headerView {
	h := &headerView{win: win}
	h.LocalURL = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	h.LocalURL.Selectable = true
	h.CopyLocal = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { win.copy(win.localURL(), "local consumer URL") })
	h.PublicURL = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	h.PublicURL.Selectable = true
	h.PublicURL.Truncation = fyne.TextTruncateEllipsis
	h.CopyPublic = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { win.copy(win.publicURL(), "public consumer URL") })
	h.TunnelButton = widget.NewButtonWithIcon("Start tunnel", theme.MediaPlayIcon(), win.toggleTunnel)
	h.TunnelState = newBadge(0)
	h.Receiver = newBadge(0)
	h.Secrets = newBadge(0)
	h.SecretButton = widget.NewButtonWithIcon("Set secret…", theme.SettingsIcon(), win.promptSecret)
	h.SecretButton.Importance = widget.LowImportance
	h.Counts = widget.NewLabel("")
	h.SendTest = widget.NewButtonWithIcon("Send test deliveries", theme.MailSendIcon(), win.sendTest)
	h.SendTest.Importance = widget.HighImportance
	if win.svc.SendTest == nil {
		h.SendTest.Hide()
	}

	label := func(s string) *widget.Label {
		return widget.NewLabelWithStyle(s, fyne.TextAlignTrailing, fyne.TextStyle{Bold: true})
	}
	urls := container.New(layout.NewFormLayout(),
		label("Local"), container.NewBorder(nil, nil, nil, h.CopyLocal, h.LocalURL),
		label("Public"), container.NewBorder(nil, nil, nil, container.NewHBox(h.CopyPublic, h.TunnelButton), h.PublicURL),
	)
	h.Counts.Truncation = fyne.TextTruncateEllipsis
	h.Counts.Alignment = fyne.TextAlignTrailing
	status := container.NewBorder(nil, nil,
		container.NewHBox(container.NewCenter(h.Receiver), container.NewCenter(h.TunnelState), container.NewCenter(h.Secrets), h.SecretButton),
		h.SendTest, h.Counts)
	h.content = container.NewVBox(container.NewPadded(container.NewVBox(urls, status)), widget.NewSeparator())
	if win.svc.Tunnel == nil {
		h.TunnelButton.Hide()
	}
	return h
}

// refresh shows the window's current state.
func (h *headerView) refresh() {
	w := h.win
	h.LocalURL.SetText(w.localURL())
	if addr, err := w.receiverState(); err != nil {
		h.Receiver.set("receiver stopped", theme.ErrorIcon(), theme.ColorNameError)
	} else {
		h.Receiver.set("listening on "+addr, theme.RadioButtonCheckedIcon(), theme.ColorNameSuccess)
	}
	h.refreshTunnel()
	n := len(w.secrets)
	switch n {
	case 0:
		h.Secrets.set("no secret: signatures unverified", theme.VisibilityOffIcon(), theme.ColorNameWarning)
		h.SecretButton.SetText("Set secret…")
	case 1:
		h.Secrets.set("1 secret set", theme.ConfirmIcon(), theme.ColorNameSuccess)
		h.SecretButton.SetText("Secrets…")
	default:
		h.Secrets.set(fmt.Sprintf("%d secrets set", n), theme.ConfirmIcon(), theme.ColorNameSuccess)
		h.SecretButton.SetText("Secrets…")
	}
	s := w.stats
	h.Counts.SetText(fmt.Sprintf("%s deliveries · %s events · %s invalid · %s duplicates", thousands(s.Deliveries), thousands(s.Events), thousands(s.InvalidSignatures), thousands(s.Duplicates)))
}

func (h *headerView) refreshTunnel() {
	w := h.win
	if w.svc.Tunnel == nil {
		h.PublicURL.SetText("no tunnel control in this build")
		h.CopyPublic.Disable()
		h.TunnelState.set("", nil, "")
		return
	}
	if ok, why := w.svc.Tunnel.Installed(); !ok {
		h.PublicURL.SetText(why)
		h.CopyPublic.Hide()
		h.TunnelButton.Hide()
		h.TunnelState.set("", nil, "")
		return
	}
	h.TunnelButton.Show()
	h.CopyPublic.Show()
	st := w.tunnelStatus
	running := st.State == tunnel.Starting || st.State == tunnel.Ready || st.State == tunnel.Reconnecting
	if running {
		h.TunnelButton.SetText("Stop tunnel")
		h.TunnelButton.SetIcon(theme.MediaStopIcon())
	} else {
		h.TunnelButton.SetText("Start tunnel")
		h.TunnelButton.SetIcon(theme.MediaPlayIcon())
	}
	if u := w.publicURL(); u != "" {
		h.PublicURL.SetText(u)
		h.CopyPublic.Enable()
	} else {
		h.PublicURL.SetText("start the tunnel to get a public URL")
		h.CopyPublic.Disable()
	}
	switch st.State {
	case tunnel.Ready:
		h.TunnelState.set("tunnel ready", theme.ConfirmIcon(), theme.ColorNameSuccess)
	case tunnel.Starting:
		h.TunnelState.set("tunnel starting", theme.HistoryIcon(), theme.ColorNamePrimary)
	case tunnel.Reconnecting:
		h.TunnelState.set("tunnel reconnecting", theme.ViewRefreshIcon(), theme.ColorNameWarning)
	case tunnel.Failed:
		h.TunnelState.set("tunnel failed", theme.ErrorIcon(), theme.ColorNameError)
	default:
		h.TunnelState.set("tunnel off", theme.MediaStopIcon(), theme.ColorNameDisabled)
	}
}
