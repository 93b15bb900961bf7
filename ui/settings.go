package ui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/station"
)

// settingsView is the Settings tab.
type settingsView struct {
	win *mainWindow

	ListenAddr      *widget.Entry
	Path            *widget.Entry
	MaxBodyKiB      *widget.Entry
	Keep            *widget.Entry
	NotifyInvalid   *widget.Check
	NotifyDivergent *widget.Check
	// Rules is the answer rules editor.
	Rules       *rulesEditor
	Cloudflared *widget.Entry
	// ForwardCA names a PEM file of certificates trusted for https
	// forward targets besides the system's; ChooseCA picks it.
	ForwardCA  *widget.Entry
	ChooseCA   *widget.Button
	SaveButton *widget.Button
	Status     *widget.Label

	SecretsList  *fyne.Container
	AddSecret    *widget.Button
	SecretsWhere *widget.Label

	// Relay is the Team relay card (nil without a relay link).
	Relay *relaySection

	scroll  *container.Scroll
	content fyne.CanvasObject
}

func newSettingsView(win *mainWindow) *settingsView {
	v := &settingsView{win: win}
	v.ListenAddr = widget.NewEntry()
	v.Path = widget.NewEntry()
	v.MaxBodyKiB = widget.NewEntry()
	v.Keep = widget.NewEntry()
	v.Keep.SetPlaceHolder("0 = keep every delivery")
	v.NotifyInvalid = widget.NewCheck("Notify me of deliveries with an invalid signature", nil)
	v.NotifyDivergent = widget.NewCheck("Notify me of divergent duplicates (same uuid, different content)", nil)
	v.Rules = newRulesEditor(win, v.edited)
	v.Cloudflared = widget.NewEntry()
	v.Cloudflared.SetPlaceHolder("cloudflared (looked up on PATH)")
	v.ForwardCA = widget.NewEntry()
	v.ForwardCA.SetPlaceHolder("none: the system's certificates only")
	v.ChooseCA = widget.NewButtonWithIcon("Trust CA file…", theme.FolderOpenIcon(), v.chooseCA)
	v.SaveButton = widget.NewButtonWithIcon("Save settings", theme.DocumentSaveIcon(), v.save)
	v.SaveButton.Importance = widget.HighImportance
	v.Status = widget.NewLabel("")
	v.Status.Wrapping = fyne.TextWrapWord

	v.SecretsList = container.NewVBox()
	v.AddSecret = widget.NewButtonWithIcon("Add secret…", theme.ContentAddIcon(), win.promptSecret)
	// Normal text colour: the theme's "low importance" is its disabled
	// colour, which fails contrast in both variants (1.3:1 and 1.6:1).
	v.SecretsWhere = widget.NewLabel("")
	v.SecretsWhere.Wrapping = fyne.TextWrapWord

	receiver := widget.NewForm(
		widget.NewFormItem("Listen address", v.ListenAddr),
		widget.NewFormItem("Consumer path", v.Path),
		widget.NewFormItem("Body cap (KiB)", v.MaxBodyKiB),
		widget.NewFormItem("Keep at most", v.Keep),
	)
	receiver.Items[1].HintText = "Shown in the consumer URLs; POSTs to any path are recorded."
	receiver.Items[2].HintText = "Larger bodies are answered 413 and stored truncated."
	receiver.Items[3].HintText = "Deliveries; older ones are deleted as new ones arrive. 0 keeps all."
	secrets := container.NewVBox(v.SecretsWhere, v.SecretsList, container.NewHBox(v.AddSecret))
	caForm := widget.NewForm(widget.NewFormItem("CA file", container.NewBorder(nil, nil, nil, v.ChooseCA, v.ForwardCA)))
	caForm.Items[0].HintText = "A PEM file of the certificates that sign your app's https certificate (a private or development CA)."
	tunnelForm := widget.NewForm(widget.NewFormItem("cloudflared path", v.Cloudflared))
	tunnelForm.Items[0].HintText = "Leave empty to use cloudflared from PATH."
	about := widget.NewLabel(fmt.Sprintf("Hookscope %s · store %s", win.svc.Version, win.svc.StorePath))
	about.Wrapping = fyne.TextWrapBreak

	cards := []fyne.CanvasObject{
		widget.NewCard("Receiver", "", receiver),
		widget.NewCard("Answer rules", "How the receiver answers each delivery (it is always stored first): provoke the service's re-sends on purpose.", v.Rules.content),
	}
	if win.svc.Relay != nil {
		v.Relay = newRelaySection(win)
		cards = append(cards, widget.NewCard("Team relay", "Receive while this laptop sleeps; every developer of a team gets every delivery.", v.Relay.content))
	}
	cards = append(cards, widget.NewCard("Signature secrets", "The webhook's Secret Key; several during a rotation.", secrets))
	if win.svc.Forward != nil {
		cards = append(cards, widget.NewCard("Forwarding", "The Forward to row above sets where; this, whom to trust.", caForm))
	}
	cards = append(cards,
		widget.NewCard("Notifications", "", container.NewVBox(v.NotifyInvalid, v.NotifyDivergent)),
		widget.NewCard("Tunnel", "", tunnelForm),
		about,
	)
	body := container.NewVBox(cards...)
	// Save and what it said stay in view below the scrolling cards, at
	// any window size: the tab's minimum height includes them.
	footer := container.NewVBox(widget.NewSeparator(), container.NewPadded(container.NewBorder(nil, nil, v.SaveButton, nil, v.Status)))
	v.scroll = container.NewVScroll(container.NewPadded(body))
	v.content = container.NewBorder(nil, footer, nil, nil, v.scroll)
	for _, e := range []*widget.Entry{v.ListenAddr, v.Path, v.MaxBodyKiB, v.Keep, v.Cloudflared, v.ForwardCA} {
		e.OnChanged = func(string) { v.edited() }
	}
	v.NotifyInvalid.OnChanged = func(bool) { v.edited() }
	v.NotifyDivergent.OnChanged = func(bool) { v.edited() }
	return v
}

// edited replaces what the last Save said, which no longer describes the
// form: unsaved changes are named as such until saved or undone.
func (v *settingsView) edited() {
	if set, err := v.read(v.win.settings); err == nil && set.Equal(v.win.settings) {
		v.Status.SetText("")
		return
	}
	v.Status.Importance = widget.MediumImportance
	v.Status.SetText("Unsaved changes: press Save settings to apply them.")
}

// fill shows set in the widgets.
func (v *settingsView) fill(set station.Settings) {
	v.ListenAddr.SetText(set.ListenAddr)
	v.Path.SetText(set.Path)
	v.MaxBodyKiB.SetText(strconv.FormatInt(set.MaxBody/1024, 10))
	v.Keep.SetText(strconv.FormatInt(set.Keep, 10))
	v.NotifyInvalid.SetChecked(set.NotifyInvalid)
	v.NotifyDivergent.SetChecked(set.NotifyDivergent)
	v.Rules.setLines(set.AnswerRules)
	v.Cloudflared.SetText(set.Cloudflared)
	v.ForwardCA.SetText(set.ForwardCA)
	// The widgets' callbacks ran while half of them were filled.
	v.edited()
}

// read returns the settings the widgets describe.
func (v *settingsView) read(base station.Settings) (station.Settings, error) {
	set := base
	set.ListenAddr = strings.TrimSpace(v.ListenAddr.Text)
	set.Path = strings.TrimSpace(v.Path.Text)
	kib, err := strconv.ParseInt(strings.TrimSpace(v.MaxBodyKiB.Text), 10, 64)
	if err != nil {
		return base, fmt.Errorf("body cap %q is not a whole number of KiB", v.MaxBodyKiB.Text)
	}
	set.MaxBody = kib * 1024
	keep := strings.TrimSpace(v.Keep.Text)
	if keep == "" {
		keep = "0"
	}
	if set.Keep, err = strconv.ParseInt(keep, 10, 64); err != nil {
		return base, fmt.Errorf("retention %q is not a whole number of deliveries", v.Keep.Text)
	}
	set.NotifyInvalid = v.NotifyInvalid.Checked
	set.NotifyDivergent = v.NotifyDivergent.Checked
	if err := v.Rules.err(); err != nil {
		return base, err
	}
	set.AnswerRules = v.Rules.lines()
	set.Cloudflared = strings.TrimSpace(v.Cloudflared.Text)
	set.ForwardCA = strings.TrimSpace(v.ForwardCA.Text)
	if set.ForwardCA != base.ForwardCA {
		// Said when chosen, while forwarding is off too.
		if err := station.CheckForwardCA(set.ForwardCA); err != nil {
			return base, err
		}
	}
	return set, set.Validate()
}

func (v *settingsView) save() {
	set, err := v.read(v.win.settings)
	if err != nil {
		v.Status.Importance = widget.DangerImportance
		v.Status.SetText("Not saved: " + err.Error())
		return
	}
	v.SaveButton.Disable()
	v.Status.Importance = widget.MediumImportance
	v.Status.SetText("Saving…")
	if r := v.win.svc.Receiver; r != nil && (r.Err() != nil || set.ListenAddr != v.win.settings.ListenAddr) {
		v.Status.SetText("Saving: moving the receiver to " + set.ListenAddr + "…")
	}
	v.win.applySettings(set, func(err error) {
		v.SaveButton.Enable()
		if err != nil {
			v.Status.Importance = widget.DangerImportance
			v.Status.SetText(err.Error())
			return
		}
		v.Status.Importance = widget.SuccessImportance
		v.Status.SetText("Saved.")
	})
}

// chooseCA picks the CA file with the file dialog; Save settings applies
// it.
func (v *settingsView) chooseCA() {
	d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil || rc == nil {
			return
		}
		path := rc.URI().Path()
		rc.Close()
		v.ForwardCA.SetText(path)
		if err := station.CheckForwardCA(path); err != nil {
			v.Status.Importance = widget.DangerImportance
			v.Status.SetText(err.Error())
		}
	}, v.win.w)
	d.Resize(fyne.NewSize(min(800, v.win.w.Canvas().Size().Width-40), min(560, v.win.w.Canvas().Size().Height-40)))
	d.Show()
}

// showSecrets lists the configured secrets, masked.
func (v *settingsView) showSecrets(secrets [][]byte, where string) {
	v.SecretsWhere.SetText("Kept in " + where + ", never in plain preference files or logs.")
	v.SecretsList.Objects = nil
	if len(secrets) == 0 {
		v.SecretsList.Add(widget.NewLabel("No secret set: signatures are not verified."))
	}
	for i, s := range secrets {
		i := i
		remove := widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), func() { v.win.removeSecret(i) })
		remove.Importance = widget.LowImportance
		label := widget.NewLabel(fmt.Sprintf("Secret %d: %s  (%d characters)", i+1, strings.Repeat("•", 12), len(s)))
		v.SecretsList.Add(container.NewBorder(nil, nil, nil, remove, label))
	}
	v.SecretsList.Refresh()
}

// secretDialog asks for a new secret with a masked entry (returned too,
// for tests).
func secretDialog(w fyne.Window, onSet func(secret string)) (*dialog.FormDialog, *widget.Entry) {
	e := widget.NewPasswordEntry()
	e.SetPlaceHolder("Secret Key from the service's webhook settings")
	e.Validator = func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("enter the secret")
		}
		return nil
	}
	d := dialog.NewForm("Add signature secret", "Add", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("Secret", e)},
		func(ok bool) {
			if ok {
				onSet(strings.TrimSpace(e.Text))
			}
		}, w)
	// Enter adds, as the Add button does (it is disabled while empty).
	e.OnSubmitted = func(string) { d.Submit() }
	d.Resize(fyne.NewSize(min(520, w.Canvas().Size().Width-40), 200))
	return d, e
}
