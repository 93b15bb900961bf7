package ui

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/tunnel"
)

// headerView is the strip above the tabs: the two consumer URLs, receiver
// and tunnel state, secrets, counts and the test-delivery button.
type headerView struct {
	win *mainWindow

	LocalURL  *widget.Label
	CopyLocal *widget.Button
	// FreePort moves the receiver to a free port when its own is taken.
	FreePort     *widget.Button
	PublicURL    *widget.Label
	CopyPublic   *widget.Button
	TunnelButton *widget.Button
	TunnelState  *badge
	Receiver     *badge
	// Answers says how the answer rules answer while that is not 200 at
	// once to every delivery, in a row of its own (a rule's condition can
	// be long: beside the Local URL it hid the URL); AnswerMode opens
	// Settings at the rules.
	Answers      *widget.Label
	AnswerMode   *widget.Button
	answersLabel *widget.Label
	answersRow   fyne.CanvasObject
	Secrets      *badge
	SecretButton *widget.Button
	// Counts are the store's totals, shown at the right of the window's
	// status bar.
	Counts   *widget.Label
	SendTest *widget.Button
	// Forward is the Forward to row (nil without forwarding).
	Forward *forwardRow
	// Relay is the team relay link's state (relay.State.String), in a
	// row shown while a link is set; RelayButton opens Settings.
	Relay       *badge
	RelayButton *widget.Button
	relayLabel  *widget.Label
	relayRow    fyne.CanvasObject

	// TunnelLog opens the cloudflared log (when the tunnel control keeps
	// one); LogView is the last one opened.
	TunnelLog *widget.Button
	LogView   *tunnelLogView

	content fyne.CanvasObject
}

func newHeaderView(win *mainWindow) *headerView {
	h := &headerView{win: win}
	h.LocalURL = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	h.LocalURL.Selectable = true
	h.CopyLocal = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { win.copy(win.localURL(), "local consumer URL") })
	h.FreePort = widget.NewButtonWithIcon("Use a free port", theme.ViewRefreshIcon(), win.useFreePort)
	h.FreePort.Importance = widget.HighImportance
	h.FreePort.Hide()
	h.PublicURL = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	h.PublicURL.Selectable = true
	h.PublicURL.Truncation = fyne.TextTruncateEllipsis
	h.CopyPublic = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { win.copy(win.publicURL(), "public consumer URL") })
	h.TunnelButton = widget.NewButtonWithIcon("Start tunnel", theme.MediaPlayIcon(), win.toggleTunnel)
	h.TunnelState = newBadge(0)
	h.TunnelLog = widget.NewButtonWithIcon("Log", theme.ListIcon(), win.showTunnelLog)
	h.TunnelLog.Importance = widget.LowImportance
	h.TunnelLog.Hide()
	h.Receiver = newBadge(0)
	h.Answers = widget.NewLabel("")
	h.Answers.Importance = widget.WarningImportance
	h.Answers.Truncation = fyne.TextTruncateEllipsis
	h.AnswerMode = widget.NewButtonWithIcon("Answer rules…", theme.SettingsIcon(), win.showAnswerSettings)
	h.AnswerMode.Importance = widget.LowImportance
	h.Secrets = newBadge(0)
	h.SecretButton = widget.NewButtonWithIcon(secretButtonLabel(0), theme.SettingsIcon(), win.promptSecret)
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
	// Each URL row says whether that URL works (the receiver's state and
	// answer mode, the tunnel's state) beside it, with what goes with it:
	// the local URL is where Send test deliveries posts; the public one and
	// the webhook's Secret Key are what the service's settings need. Three
	// rows: the window keeps its height for the deliveries.
	rows := []fyne.CanvasObject{
		label("Local"), container.NewBorder(nil, nil, nil,
			container.NewHBox(container.NewCenter(h.Receiver), h.CopyLocal, h.FreePort, h.SendTest), h.LocalURL),
		label("Public"), container.NewBorder(nil, nil, nil,
			// At the top: a reason wrapping over lines leaves the buttons their size.
			container.NewVBox(container.NewHBox(container.NewCenter(h.TunnelState), h.TunnelLog, h.CopyPublic, h.TunnelButton, widget.NewSeparator(), container.NewCenter(h.Secrets), h.SecretButton)), h.PublicURL),
	}
	h.answersLabel = label("Answers")
	h.answersRow = container.NewBorder(nil, nil, widget.NewIcon(theme.WarningIcon()), h.AnswerMode, h.Answers)
	h.answersLabel.Hide()
	h.answersRow.Hide()
	rows = append(rows, h.answersLabel, h.answersRow)
	// Forward to sits beside the URLs the service posts to: where the
	// deliveries go next.
	var down fyne.CanvasObject = layout.NewSpacer()
	if win.svc.Forward != nil {
		h.Forward = newForwardRow(win)
		rows = append(rows, label("Forward to"), h.Forward.row)
		down = h.Forward.Down
	}
	if win.svc.Relay != nil {
		h.Relay = newBadge(0)
		h.RelayButton = widget.NewButtonWithIcon("Relay…", theme.SettingsIcon(), win.showRelaySettings)
		h.RelayButton.Importance = widget.LowImportance
		h.relayLabel = label("Relay")
		h.relayRow = container.NewBorder(nil, nil, nil, nil, container.NewHBox(container.NewCenter(h.Relay), h.RelayButton))
		h.relayLabel.Hide()
		h.relayRow.Hide()
		rows = append(rows, h.relayLabel, h.relayRow)
	}
	urls := container.New(layout.NewFormLayout(), rows...)
	h.LocalURL.Truncation = fyne.TextTruncateEllipsis
	h.Counts.Alignment = fyne.TextAlignTrailing
	h.Counts.SizeName = theme.SizeNameCaptionText
	h.content = container.NewVBox(container.NewPadded(container.NewVBox(urls, down)), widget.NewSeparator())
	if win.svc.Tunnel == nil {
		h.TunnelButton.Hide()
	}
	return h
}

// secretButtonLabel is the header's secrets button with n secrets set;
// the empty state names the button by it.
func secretButtonLabel(n int) string {
	if n == 0 {
		return "Set secret…"
	}
	return "Secrets…"
}

// refresh shows the window's current state.
func (h *headerView) refresh() {
	w := h.win
	h.refreshReceiver()
	h.refreshTunnel()
	n := len(w.secrets)
	switch n {
	case 0:
		h.Secrets.set("no secret: signatures unverified", theme.VisibilityOffIcon(), theme.ColorNameWarning)
	case 1:
		h.Secrets.set("1 secret set", theme.ConfirmIcon(), theme.ColorNameSuccess)
	default:
		h.Secrets.set(fmt.Sprintf("%d secrets set", n), theme.ConfirmIcon(), theme.ColorNameSuccess)
	}
	h.SecretButton.SetText(secretButtonLabel(n))
	if h.Forward != nil {
		h.Forward.refresh()
	}
	h.refreshRelay()
	h.refreshCounts()
}

// maxRelayLine is the longest relay line the header shows; Settings
// shows the whole (a refused credential's reason can be long).
const maxRelayLine = 110

// refreshRelay shows the relay row while a link is set.
func (h *headerView) refreshRelay() {
	if h.Relay == nil {
		return
	}
	if !h.win.relayLinked {
		h.relayLabel.Hide()
		h.relayRow.Hide()
		h.Relay.set("", nil, "")
		return
	}
	text, icon, c := relayBadge(h.win.relayState)
	h.Relay.set(ellipsis(text, maxRelayLine), icon, c)
	h.relayLabel.Show()
	h.relayRow.Show()
}

// refreshCounts shows the store's counts; a batch of live deliveries
// changes only them.
func (h *headerView) refreshCounts() {
	s := h.win.stats
	text := fmt.Sprintf("%s · %s · %s invalid · %s", plural.Count(int(s.Deliveries), "delivery", "deliveries"), plural.Count(int(s.Events), "event", "events"), human.Count(s.InvalidSignatures), plural.Count(int(s.Duplicates), "duplicate", "duplicates"))
	if h.Counts.Text != text {
		h.Counts.SetText(text)
		h.win.trace.countsShown(s.Deliveries)
	}
}

// showURL shows a URL in l (monospace, one line, cut at the edge) or, when
// !ok, text as the reason there is none (wrapping rather than cut off at
// the window's edge, in the error colour): the header and the empty state
// show the receiver alike.
func showURL(l *widget.Label, text string, ok bool) {
	if ok {
		l.Truncation, l.Wrapping = fyne.TextTruncateEllipsis, fyne.TextWrapOff
		l.TextStyle = fyne.TextStyle{Monospace: true}
		l.Importance = widget.MediumImportance
	} else {
		l.Truncation, l.Wrapping = fyne.TextTruncateOff, fyne.TextWrapWord
		l.TextStyle = fyne.TextStyle{}
		l.Importance = widget.DangerImportance
	}
	l.SetText(text)
}

// refreshReceiver says whether the receiver listens and how it answers.
// A receiver that does not listen says why, and what points at it (the
// local URL, Copy, Send test deliveries) is blanked or disabled.
func (h *headerView) refreshReceiver() {
	w := h.win
	addr, err := w.receiverState()
	if err != nil {
		showURL(h.LocalURL, "not listening: "+err.Error(), false)
		h.CopyLocal.Disable()
		h.FreePort.Show()
		h.SendTest.Disable()
		h.Receiver.set("receiver stopped", theme.ErrorIcon(), theme.ColorNameError)
		h.showAnswers("")
		return
	}
	showURL(h.LocalURL, w.localURL(), true)
	h.CopyLocal.Enable()
	h.FreePort.Hide()
	if !w.sending {
		h.SendTest.Enable()
	}
	h.Receiver.set("listening on "+addr, theme.RadioButtonCheckedIcon(), theme.ColorNameSuccess)
	h.showAnswers(w.settings.AnswerWarning())
}

// showAnswers shows the Answers row with text, or hides it ("").
func (h *headerView) showAnswers(text string) {
	if text == "" {
		h.answersLabel.Hide()
		h.answersRow.Hide()
		return
	}
	h.Answers.SetText(text)
	h.answersLabel.Show()
	h.answersRow.Show()
}

// refreshTunnel shows the tunnel's state: the badge, the Public row and
// the button agree. While cloudflared runs (or waits for its next try) the
// button stops it and the row says what it waits for or, when something
// is wrong, why and what to do; a tunnel that never connected is
// "starting", not "reconnecting".
func (h *headerView) refreshTunnel() {
	w := h.win
	if w.svc.Tunnel == nil {
		h.PublicURL.SetText("no tunnel control in this build")
		h.CopyPublic.Disable()
		h.TunnelState.set("", nil, "")
		return
	}
	if ok, why := w.svc.Tunnel.Installed(); !ok {
		showURL(h.PublicURL, why, false)
		h.CopyPublic.Hide()
		h.TunnelButton.Hide()
		h.TunnelLog.Hide()
		h.TunnelState.set("", nil, "")
		return
	}
	h.TunnelButton.Show()
	h.CopyPublic.Show()
	if lg, ok := w.svc.Tunnel.(tunnelLogs); ok {
		h.TunnelLog.Show()
		if len(lg.Logs()) == 0 {
			h.TunnelLog.Disable()
		} else {
			h.TunnelLog.Enable()
		}
	} else {
		h.TunnelLog.Hide()
	}
	st := w.tunnelStatus
	if tunnelRunning(st.State) {
		h.TunnelButton.SetText("Stop tunnel")
		h.TunnelButton.SetIcon(theme.MediaStopIcon())
	} else {
		h.TunnelButton.SetText("Start tunnel")
		h.TunnelButton.SetIcon(theme.MediaPlayIcon())
	}
	if u := w.publicURL(); u != "" {
		showURL(h.PublicURL, u, true)
		h.CopyPublic.Enable()
	} else {
		text, problem := tunnelLine(st)
		if problem {
			showURL(h.PublicURL, text, false)
		} else {
			showHint(h.PublicURL, text)
		}
		h.CopyPublic.Disable()
	}
	switch st.State {
	case tunnel.Ready:
		h.TunnelState.set("tunnel ready", theme.ConfirmIcon(), theme.ColorNameSuccess)
	case tunnel.Starting:
		if st.Reason != "" {
			h.TunnelState.set("tunnel starting", theme.WarningIcon(), theme.ColorNameWarning)
		} else {
			h.TunnelState.set("tunnel starting", theme.HistoryIcon(), theme.ColorNamePrimary)
		}
	case tunnel.Reconnecting:
		h.TunnelState.set("tunnel reconnecting", theme.ViewRefreshIcon(), theme.ColorNameWarning)
	case tunnel.Failed, tunnel.NotInstalled:
		h.TunnelState.set("tunnel failed", theme.ErrorIcon(), theme.ColorNameError)
	default:
		h.TunnelState.set("tunnel off", theme.MediaStopIcon(), theme.ColorNameDisabled)
	}
}

// tunnelRunning reports states in which cloudflared runs or is due to run
// again: Stop tunnel applies.
func tunnelRunning(st tunnel.State) bool {
	return st == tunnel.Starting || st == tunnel.Ready || st == tunnel.Reconnecting
}

// tunnelLine is the Public row's text while there is no public URL, and
// whether it reports a problem: what the tunnel waits for, or why it is
// not ready (and when the next try is), or why it gave up.
func tunnelLine(st tunnel.Status) (text string, problem bool) {
	reason := strings.TrimSuffix(st.Reason, ".")
	switch {
	case st.State == tunnel.Failed || st.State == tunnel.NotInstalled:
		return reason + ". Press Start tunnel to try again.", true
	case !tunnelRunning(st.State):
		return "start the tunnel to get a public URL", false
	case st.Reason == "":
		return "connecting to Cloudflare… the public URL shows here once the tunnel is ready", false
	case !st.NextRetry.IsZero():
		return fmt.Sprintf("%s. Try %d failed; next try at %s.", reason, st.Attempt, st.NextRetry.Format(time.TimeOnly)), true
	}
	return st.Reason, true
}

// showHint shows a note in l where a URL would be: ordinary text that
// wraps.
func showHint(l *widget.Label, text string) {
	l.Truncation, l.Wrapping = fyne.TextTruncateOff, fyne.TextWrapWord
	l.TextStyle = fyne.TextStyle{}
	l.Importance = widget.MediumImportance
	l.SetText(text)
}
