package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/sandbox"
)

// oauthScopes are the five scopes of spec 5.2, in the spec's order.
var oauthScopes = [...]string{"all:all", "all:read", "media:read", "stats:read", "media:upload"}

// oauthProfilesView is the profile list and its editor.
type oauthProfilesView struct {
	t       *oauthTab
	content fyne.CanvasObject

	List     *widget.List
	profiles []oauthflow.Profile
	selected string

	Name, BaseURL, AuthURL, ClientID, ClientSecret, RedirectURI *widget.Entry
	Scopes                                                      map[string]*widget.Check

	New, Save, Delete, TrySandbox *widget.Button
	UseLoopback, UseTunnel        *widget.Button
	TunnelHint                    *widget.Label
	Preflight                     *widget.Label
	SandboxInfo                   *widget.Label
	EmptyHint                     *widget.Label
}

func newOAuthProfilesView(t *oauthTab) *oauthProfilesView {
	v := &oauthProfilesView{t: t, Scopes: map[string]*widget.Check{}}
	v.List = widget.NewList(func() int { return len(v.profiles) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("profile")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(v.profiles) {
				p := v.profiles[i]
				o.(*widget.Label).SetText(p.Name + "  ·  " + p.BaseURL)
			}
		})
	v.List.OnSelected = func(i widget.ListItemID) {
		if i < len(v.profiles) && v.profiles[i].Name != v.selected {
			v.fill(v.profiles[i])
			v.t.profileChosen(v.profiles[i])
		}
	}
	entry := func(placeholder string) *widget.Entry {
		e := widget.NewEntry()
		e.SetPlaceHolder(placeholder)
		e.OnChanged = func(string) { v.checkPreflight() }
		return e
	}
	v.Name = entry("my-app")
	v.BaseURL = entry("https://api.example.com")
	v.AuthURL = entry("empty: same as the base URL")
	v.ClientID = entry("from the application's page")
	v.ClientSecret = widget.NewPasswordEntry()
	v.ClientSecret.SetPlaceHolder("kept in the store file (0600), never logged")
	v.RedirectURI = entry("exactly the registered Redirect URI")
	v.New = widget.NewButtonWithIcon("New", theme.ContentAddIcon(), v.newProfile)
	v.Save = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), v.save)
	v.Save.Importance = widget.HighImportance
	v.Delete = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), v.delete)
	v.TrySandbox = widget.NewButtonWithIcon("Try with the sandbox", theme.MediaPlayIcon(), v.trySandbox)
	v.TrySandbox.Importance = widget.HighImportance
	v.UseLoopback = widget.NewButton("Loopback URI", v.useLoopback)
	v.UseTunnel = widget.NewButton("Tunnel URL", v.useTunnel)
	v.TunnelHint = widget.NewLabel("")
	v.TunnelHint.Wrapping = fyne.TextWrapWord
	v.TunnelHint.SizeName = theme.SizeNameCaptionText
	v.Preflight = widget.NewLabel("")
	v.Preflight.Wrapping = fyne.TextWrapWord
	v.Preflight.Importance = widget.WarningImportance
	v.SandboxInfo = widget.NewLabel("No account needed: the built-in sandbox plays the service on this machine.")
	v.SandboxInfo.Wrapping = fyne.TextWrapWord
	v.SandboxInfo.SizeName = theme.SizeNameCaptionText

	scopeBox := container.NewVBox()
	for _, s := range oauthScopes {
		c := widget.NewCheck(s, nil)
		v.Scopes[s] = c
		meaning := widget.NewLabel(sandbox.ScopeMeaning(s))
		meaning.Wrapping = fyne.TextWrapWord
		meaning.SizeName = theme.SizeNameCaptionText
		scopeBox.Add(container.NewBorder(nil, nil, c, nil, meaning))
	}
	form := widget.NewForm(
		widget.NewFormItem("Name", v.Name),
		widget.NewFormItem("Base URL", v.BaseURL),
		widget.NewFormItem("Auth URL", v.AuthURL),
		widget.NewFormItem("Client ID", v.ClientID),
		widget.NewFormItem("Client secret", v.ClientSecret),
		widget.NewFormItem("Redirect URI", v.RedirectURI),
	)
	helpers := container.NewHBox(widget.NewLabel("Use:"), v.UseLoopback, v.UseTunnel)
	scopesHead := widget.NewLabelWithStyle("Scopes you expect (spec 5.2)", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	scopesNote := widget.NewLabel("The service grants the scopes the application was registered with; missing ones are flagged after the exchange.")
	scopesNote.Wrapping = fyne.TextWrapWord
	scopesNote.SizeName = theme.SizeNameCaptionText
	editor := container.NewVBox(
		widget.NewLabelWithStyle("Profile", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		form, helpers, v.TunnelHint,
		scopesHead, scopesNote, scopeBox,
		container.NewHBox(v.Save, v.Delete),
		v.Preflight,
	)
	top := container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabelWithStyle("Profiles", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.New),
	)
	listHeight := canvas.NewRectangle(nil)
	listHeight.SetMinSize(fyne.NewSize(0, 110))
	v.EmptyHint = widget.NewLabel("No profiles yet: press New, or Try with the sandbox.")
	v.EmptyHint.Wrapping = fyne.TextWrapWord
	listBox := container.NewStack(listHeight, v.List, container.NewVBox(v.EmptyHint))
	sandboxBox := container.NewVBox(v.TrySandbox, v.SandboxInfo, widget.NewSeparator())
	v.content = container.NewVScroll(container.NewPadded(container.NewVBox(sandboxBox, top, listBox, widget.NewSeparator(), editor)))
	v.refreshHelpers()
	return v
}

// profile reads the editor.
func (v *oauthProfilesView) profile() oauthflow.Profile {
	p := oauthflow.Profile{
		Name:         strings.TrimSpace(v.Name.Text),
		BaseURL:      strings.TrimSpace(v.BaseURL.Text),
		AuthURL:      strings.TrimSpace(v.AuthURL.Text),
		ClientID:     strings.TrimSpace(v.ClientID.Text),
		ClientSecret: v.ClientSecret.Text,
		RedirectURI:  strings.TrimSpace(v.RedirectURI.Text),
	}
	for _, s := range oauthScopes {
		if v.Scopes[s].Checked {
			p.Scopes = append(p.Scopes, s)
		}
	}
	if p.Name == "" {
		p.Name = "default"
	}
	return p
}

// fill shows p in the editor.
func (v *oauthProfilesView) fill(p oauthflow.Profile) {
	v.selected = p.Name
	v.Name.SetText(p.Name)
	v.BaseURL.SetText(p.BaseURL)
	v.AuthURL.SetText(p.AuthURL)
	v.ClientID.SetText(p.ClientID)
	v.ClientSecret.SetText(p.ClientSecret)
	v.RedirectURI.SetText(p.RedirectURI)
	for _, s := range oauthScopes {
		v.Scopes[s].SetChecked(false)
	}
	for _, s := range p.Scopes {
		if c, ok := v.Scopes[s]; ok {
			c.SetChecked(true)
		}
	}
	v.checkPreflight()
}

// checkPreflight shows the engine's pre-flight findings, without the port
// probe's side effects mattering (it binds and releases at once).
func (v *oauthProfilesView) checkPreflight() {
	if v.Preflight == nil {
		return
	}
	p := v.profile()
	if p.BaseURL == "" && p.ClientID == "" {
		v.Preflight.SetText("")
		return
	}
	var lines []string
	for _, w := range oauthflow.Preflight(p) {
		if w.Code == "exact-match" {
			continue // said once in the docs; on every keystroke it is noise
		}
		mark := "•"
		if w.Blocking {
			mark = "✗"
		}
		lines = append(lines, mark+" "+w.Message)
	}
	v.Preflight.SetText(strings.Join(lines, "\n"))
}

// reload lists the stored profiles and selects name (the first when "").
func (v *oauthProfilesView) reload(name string) {
	store := v.t.store
	v.t.run(func() func() {
		ps, err := store.ListProfiles(context.Background())
		return func() {
			if err != nil {
				v.t.m.showError(fmt.Errorf("OAuth profiles: %w", err))
				return
			}
			v.profiles = ps
			v.List.Refresh()
			if len(ps) == 0 {
				v.EmptyHint.Show()
			} else {
				v.EmptyHint.Hide()
			}
			for i, p := range ps {
				if p.Name == name || (name == "" && i == 0) {
					v.List.Select(i)
					break
				}
			}
		}
	})
}

func (v *oauthProfilesView) newProfile() {
	v.List.UnselectAll()
	v.fill(oauthflow.Profile{Name: fmt.Sprintf("profile-%d", len(v.profiles)+1)})
	v.t.profileChosen(oauthflow.Profile{})
}

// save stores the editor's profile; it reports bad input and keeps it.
func (v *oauthProfilesView) save() {
	p := v.profile()
	if err := p.Validate(); err != nil {
		v.t.m.showError(err)
		return
	}
	v.persist(p, func() { v.t.m.showStatus(fmt.Sprintf("Saved OAuth profile %q.", p.Name)) })
}

func (v *oauthProfilesView) persist(p oauthflow.Profile, done func()) {
	store := v.t.store
	old := v.selected
	v.t.run(func() func() {
		err := store.SaveProfile(context.Background(), p)
		var derr error
		if err == nil && old != "" && old != p.Name {
			// A rename: the editor edits one profile, so the old name goes.
			if _, lerr := store.LoadProfile(context.Background(), old); lerr == nil {
				derr = store.DeleteProfile(context.Background(), old)
			}
		}
		return func() {
			if err != nil {
				v.t.m.showError(fmt.Errorf("save OAuth profile: %w", err))
				return
			}
			v.selected = p.Name
			v.t.profileChosen(p)
			v.reload(p.Name)
			if derr != nil {
				// Both profiles exist now: say so rather than the rename.
				v.t.m.showError(fmt.Errorf("saved OAuth profile %q, but the old profile %q is still there (delete it in the list): %w", p.Name, old, derr))
				return
			}
			if done != nil {
				done()
			}
		}
	})
}

func (v *oauthProfilesView) delete() {
	name := v.selected
	if name == "" {
		return
	}
	store := v.t.store
	v.t.run(func() func() {
		err := store.DeleteProfile(context.Background(), name)
		return func() {
			if err != nil {
				v.t.m.showError(fmt.Errorf("delete OAuth profile: %w", err))
				return
			}
			v.selected = ""
			v.List.UnselectAll()
			v.t.m.showStatus(fmt.Sprintf("Deleted OAuth profile %q (its history stays).", name))
			v.reload("")
		}
	})
}

func (v *oauthProfilesView) useLoopback() {
	u, err := oauthLoopbackURI()
	if err != nil {
		v.t.m.showError(err)
		return
	}
	v.RedirectURI.SetText(u)
	v.t.m.showStatus("Redirect URI set to a free loopback port: register exactly this URI for the application.")
}

func (v *oauthProfilesView) useTunnel() {
	u := v.t.tunnelCallbackURL()
	if u == "" {
		return
	}
	v.RedirectURI.SetText(u)
	v.t.m.showStatus("Redirect URI set to the tunnel: register it for the application; it changes when the tunnel restarts.")
}

// refreshHelpers enables the tunnel helper only when the tunnel is ready.
func (v *oauthProfilesView) refreshHelpers() {
	if u := v.t.tunnelCallbackURL(); u != "" {
		v.UseTunnel.Enable()
		v.TunnelHint.SetText("Tunnel: " + u)
		return
	}
	v.UseTunnel.Disable()
	switch {
	case v.t.hub == nil:
		v.TunnelHint.SetText("Loopback: Hookscope listens on the redirect URI itself while it waits for the callback.")
	default:
		v.TunnelHint.SetText("Start the tunnel (header) to use its public URL + " + OAuthCallbackPath + " as the redirect URI.")
	}
}

// trySandbox starts the sandbox and a matching profile.
func (v *oauthProfilesView) trySandbox() {
	if v.t.sandbox != nil {
		v.reload("sandbox")
		return
	}
	v.TrySandbox.Disable()
	v.SandboxInfo.SetText("Starting the sandbox…")
	v.t.run(func() func() {
		srv, p, media, err := v.t.startSandbox()
		return func() {
			v.TrySandbox.Enable()
			if err != nil {
				v.SandboxInfo.SetText("")
				v.t.m.showError(err)
				return
			}
			v.t.sandbox, v.t.sandboxMedia = srv, media
			v.TrySandbox.SetText("Sandbox running")
			v.SandboxInfo.SetText(fmt.Sprintf("Sandbox at %s. Press Authorize, then log in as owner@example.com with password owner (or manager@example.com / manager; viewer@example.com / viewer is refused).", p.BaseURL))
			v.selected = ""
			v.fill(p)
			v.persist(p, func() {
				v.t.m.showStatus("Sandbox started with a matching profile: press Authorize in the Steps panel.")
			})
		}
	})
}
