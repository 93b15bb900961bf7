package ui

import (
	"context"
	"errors"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/relay"
)

// relaySection is Settings' Team relay card: the connection string that
// `hookscope relay invite NAME` printed (it holds a credential, so it is
// masked until Show is pressed, kept in the secret vault and never
// logged), Connect and Disconnect, and the link's state in the words of
// the header line.
type relaySection struct {
	win *mainWindow

	// Field takes the pasted connection string; it renders bullets
	// unless its eye (ActionItem, Fyne's password revealer) was pressed.
	Field      *widget.Entry
	Connect    *widget.Button
	Disconnect *widget.Button
	// Who names the relay connected to, without the credential.
	Who *widget.Label
	// State is the link's state (relay.State.String), as in the header.
	State *widget.Label
	// Error says why the last Connect or Disconnect did not happen.
	Error *widget.Label

	// busy is set while a Connect or Disconnect runs.
	busy    bool
	content fyne.CanvasObject
}

func newRelaySection(win *mainWindow) *relaySection {
	r := &relaySection{win: win}
	r.Field = widget.NewPasswordEntry()
	r.Field.SetPlaceHolder("hookscope-relay-… (paste what `hookscope relay invite NAME` printed)")
	r.Field.OnChanged = func(string) { r.refresh() }
	r.Field.OnSubmitted = func(string) { r.connect() }
	r.Connect = widget.NewButtonWithIcon("Connect", theme.LoginIcon(), r.connect)
	r.Connect.Importance = widget.HighImportance
	r.Disconnect = widget.NewButtonWithIcon("Disconnect", theme.LogoutIcon(), r.disconnect)
	r.Who = widget.NewLabel("")
	r.Who.Wrapping = fyne.TextWrapWord
	r.State = widget.NewLabel("")
	r.State.Wrapping = fyne.TextWrapWord
	r.Error = widget.NewLabel("")
	r.Error.Wrapping = fyne.TextWrapWord
	r.Error.Importance = widget.DangerImportance
	r.Error.Hide()
	where := "this session only"
	if v := win.svc.Vault; v != nil && win.svc.RelayVault != nil {
		where = "kept in " + v.Where()
	}
	help := widget.NewLabel("A relay on an always-on machine receives the service's deliveries while this laptop sleeps; " +
		"connected, this window takes what it missed first, then the live ones (docs/relay.md). " +
		"The connection string holds your credential: it is " + where + ", never in logs.")
	help.Wrapping = fyne.TextWrapWord
	r.content = container.NewVBox(help,
		container.NewBorder(nil, nil, nil, container.NewHBox(r.Connect, r.Disconnect), r.Field),
		r.Error, r.Who, r.State)
	r.refresh()
	return r
}

// fill shows the saved connection string, masked.
func (r *relaySection) fill(conn string) {
	r.Field.SetText(conn)
	r.refresh()
}

// refresh shows the link's state and which buttons apply.
func (r *relaySection) refresh() {
	st, linked := r.win.relayState, r.win.relayLinked
	if r.busy {
		r.Connect.Disable()
		r.Disconnect.Disable()
	} else {
		if strings.TrimSpace(r.Field.Text) == "" {
			r.Connect.Disable()
		} else {
			r.Connect.Enable()
		}
		if linked {
			r.Disconnect.Enable()
		} else {
			r.Disconnect.Disable()
		}
	}
	if linked {
		r.Connect.SetText("Reconnect")
	} else {
		r.Connect.SetText("Connect")
	}
	switch {
	case !linked:
		r.Who.SetText("Not connected to a relay: deliveries arrive only while this window's receiver runs.")
		r.State.Hide()
		return
	case r.win.relayWho != "":
		r.Who.SetText("Linked to the relay as " + r.win.relayWho + ".")
	default:
		r.Who.SetText("Linked to a relay.")
	}
	text, imp := relayWords(st)
	r.State.Importance = imp
	r.State.SetText(capitalise(text))
	r.State.Show()
}

// showError says why Connect or Disconnect did not happen (nil hides it).
func (r *relaySection) showError(err error) {
	if err == nil {
		r.Error.SetText("")
		r.Error.Hide()
		return
	}
	r.Error.SetText(err.Error())
	r.Error.Show()
}

// connect reads the connection string, links the station to that relay
// (off the UI goroutine) and saves the string for the next start.
func (r *relaySection) connect() {
	link := r.win.svc.Relay
	if link == nil || r.busy {
		return
	}
	conn, err := relay.ParseConnString(r.Field.Text)
	if err != nil {
		r.showError(errors.New("Not connected: " + err.Error()))
		return
	}
	r.showError(nil)
	r.busy = true
	r.refresh()
	vault := r.win.svc.RelayVault
	r.win.bridge.Go(func() func() {
		err := link.SetRelay(context.Background(), &conn)
		var saveErr error
		if err == nil && vault != nil {
			saveErr = vault.SaveRelay(conn.String())
		}
		st, linked := link.RelayState()
		return func() {
			r.busy = false
			if err != nil {
				r.showError(errors.New("Not connected: " + err.Error()))
				r.refresh()
				return
			}
			r.win.relayWho = conn.Redacted()
			r.win.relayChanged(st, linked)
			if saveErr != nil {
				r.showError(errors.New("Connected, but not saved for the next start: " + saveErr.Error()))
			}
			r.win.showStatus("Connected to the relay as " + conn.Redacted() + ".")
		}
	})
}

// disconnect ends the link and forgets the saved string: the relay keeps
// the deliveries for this laptop's credential until it connects again.
func (r *relaySection) disconnect() {
	link := r.win.svc.Relay
	if link == nil || r.busy {
		return
	}
	r.busy = true
	r.refresh()
	vault := r.win.svc.RelayVault
	r.win.bridge.Go(func() func() {
		err := link.SetRelay(context.Background(), nil)
		var saveErr error
		if err == nil && vault != nil {
			saveErr = vault.SaveRelay("")
		}
		return func() {
			r.busy = false
			if err != nil {
				r.showError(errors.New("Still connected: " + err.Error()))
				r.refresh()
				return
			}
			r.win.relayWho = ""
			r.win.relayChanged(relay.State{}, false)
			r.showError(saveErr)
			r.win.showStatus("Disconnected from the relay; it keeps your deliveries until you connect again.")
		}
	})
}

// relayWords is a link state's line (relay.State.String: the words
// listen prints) and the importance it is shown with.
func relayWords(st relay.State) (string, widget.Importance) {
	switch st.Phase {
	case relay.Live:
		return st.String(), widget.SuccessImportance
	case relay.Unreachable:
		return st.String(), widget.WarningImportance
	case relay.StoreFailing, relay.Stopped:
		return st.String(), widget.DangerImportance
	}
	return st.String(), widget.MediumImportance
}

// relayBadge is the header's relay badge for st: the state's words, with
// an icon and colour by phase.
func relayBadge(st relay.State) (string, fyne.Resource, fyne.ThemeColorName) {
	text := st.String()
	switch st.Phase {
	case relay.Live:
		return text, theme.ConfirmIcon(), theme.ColorNameSuccess
	case relay.CatchingUp:
		return text, theme.DownloadIcon(), theme.ColorNamePrimary
	case relay.Unreachable:
		return text, theme.WarningIcon(), theme.ColorNameWarning
	case relay.StoreFailing, relay.Stopped:
		return text, theme.ErrorIcon(), theme.ColorNameError
	}
	return text, theme.HistoryIcon(), theme.ColorNamePrimary
}

// relayChanged shows the link's new state in the header and Settings.
func (m *mainWindow) relayChanged(st relay.State, linked bool) {
	m.relayState, m.relayLinked = st, linked
	m.header.refreshRelay()
	if m.settingsV.Relay != nil {
		m.settingsV.Relay.refresh()
	}
}
