package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/oauthflow"
)

// stepStatus is a card's state.
type stepStatus int

const (
	stepWaiting stepStatus = iota
	stepRunning
	stepDone
	stepFailed
)

func (s stepStatus) String() string {
	return [...]string{"waiting", "running", "done", "failed"}[s]
}

// stepCard is one step of the stepper: status, controls, what went wrong,
// and the exact request and response behind a disclosure.
type stepCard struct {
	v       *oauthStepsView
	title   string
	status  stepStatus
	Badge   *badge
	Problem *widget.Label
	Fix     *widget.Label
	Detail  *fyne.Container
	Accord  *widget.Accordion
	Curl    *widget.Button
	// transcripts are the step's raw (unredacted) transcripts; every
	// display and copy redacts them unless Reveal is on.
	transcripts []oauthflow.Transcript
	content     fyne.CanvasObject
}

func newStepCard(v *oauthStepsView, n int, title string, body fyne.CanvasObject) *stepCard {
	c := &stepCard{v: v, title: title}
	c.Badge = newBadge(84)
	c.Problem = widget.NewLabel("")
	c.Problem.Wrapping = fyne.TextWrapWord
	c.Problem.Importance = widget.DangerImportance
	c.Problem.Hide()
	c.Fix = widget.NewLabel("")
	c.Fix.Wrapping = fyne.TextWrapWord
	c.Fix.Hide()
	c.Detail = container.NewVBox()
	c.Accord = widget.NewAccordion(widget.NewAccordionItem("Request and response", c.Detail))
	c.Accord.Hide()
	c.Curl = widget.NewButtonWithIcon("Copy as curl", theme.ContentCopyIcon(), c.copyCurl)
	c.Curl.Disable()
	head := container.NewBorder(nil, nil,
		container.NewHBox(widget.NewLabelWithStyle(fmt.Sprintf("%d  %s", n, title), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), c.Badge),
		c.Curl)
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	inner := container.NewVBox(head, body, c.Problem, c.Fix, c.Accord)
	c.content = container.NewStack(bg, container.NewPadded(inner))
	c.set(stepWaiting)
	return c
}

// set changes the status badge.
func (c *stepCard) set(s stepStatus) {
	c.status = s
	switch s {
	case stepWaiting:
		c.Badge.set("waiting", theme.MoreHorizontalIcon(), theme.ColorNameDisabled)
	case stepRunning:
		c.Badge.set("running", theme.ViewRefreshIcon(), theme.ColorNamePrimary)
	case stepDone:
		c.Badge.set("done", theme.ConfirmIcon(), theme.ColorNameSuccess)
	case stepFailed:
		c.Badge.set("failed", theme.ErrorIcon(), theme.ColorNameError)
	}
	if s != stepFailed {
		c.Problem.Hide()
		c.Fix.Hide()
	}
}

// fail shows what went wrong and the likely fix.
func (c *stepCard) fail(msg, fix string) {
	c.set(stepFailed)
	c.Problem.SetText("What went wrong: " + msg)
	c.Problem.Show()
	if fix != "" {
		c.Fix.SetText("Likely fix: " + fix)
		c.Fix.Show()
	} else {
		c.Fix.Hide()
	}
}

// failErr shows err in plain words; a StepError carries its own fix.
func (c *stepCard) failErr(err error) {
	var se *oauthflow.StepError
	if errors.As(err, &se) {
		c.fail(se.Msg, se.Fix)
		return
	}
	c.fail(err.Error(), "")
}

// show replaces the step's transcripts and redraws the disclosure.
func (c *stepCard) show(ts []oauthflow.Transcript) {
	c.transcripts = ts
	c.render()
}

func (c *stepCard) render() {
	c.Detail.RemoveAll()
	if len(c.transcripts) == 0 {
		c.Accord.Hide()
		c.Curl.Disable()
		return
	}
	for _, tr := range c.v.t.display(c.transcripts) {
		c.Detail.Add(transcriptView(tr))
	}
	c.Accord.Show()
	c.Curl.Enable()
	c.Detail.Refresh()
}

// curlText is what Copy as curl copies: redacted unless revealed.
func (c *stepCard) curlText() string {
	o := c.v.t.renderOptions()
	var parts []string
	for _, tr := range c.transcripts {
		parts = append(parts, tr.Curl(o))
	}
	return strings.Join(parts, "\n\n")
}

func (c *stepCard) copyCurl() {
	what := "curl command (secrets redacted)"
	if c.v.Reveal.Checked {
		what = "curl command (secrets revealed)"
	}
	c.v.t.m.copy(c.curlText(), what)
}

// oauthStepsView is the five-step stepper.
type oauthStepsView struct {
	t       *oauthTab
	content fyne.CanvasObject

	Reveal  *widget.Check
	Profile *widget.Label

	// Authorize
	AuthorizeCard  *stepCard
	StateInURI     *widget.Check
	StandardState  *widget.Check
	PKCE           *widget.Check
	Authorize      *widget.Button
	AuthURL        *widget.Label
	CopyURL, Open  *widget.Button
	Waiting        *widget.Label
	Cancel         *widget.Button
	Paste          *widget.Entry
	UsePaste       *widget.Button
	authorizeURL   string
	AutoExchange   *widget.Check
	CallbackCard   *stepCard
	CallbackParams *fyne.Container
	StateCheck     *widget.Label
	callback       *oauthflow.CallbackResult

	// Exchange
	ExchangeCard *stepCard
	Placement    *widget.RadioGroup
	Exchange     *widget.Button
	Reuse        *fyne.Container
	ReuseText    *widget.Label
	SendAnyway   *widget.Button
	TokenBox     *fyne.Container
	Countdown    *widget.Label
	ScopeCheck   *widget.Label
	token        *oauthflow.Token

	// Refresh
	RefreshCard *stepCard
	Refresh     *widget.Button
	AutoRefresh *widget.Check
	RefreshNote *widget.Label

	// Call
	CallCard    *stepCard
	Path        *widget.Entry
	HTTPMethod  *widget.Select
	TokenMethod *widget.Select
	Body        *widget.Entry
	Call        *widget.Button
	Results     *fyne.Container
	results     []oauthflow.CallResult
}

// Token method labels, in the spec's order (5.5).
const (
	methodAccessToken = "access_token query"
	methodBearerToken = "bearer_token query"
	methodHeader      = "Authorization header"
	methodAll         = "all three side by side"
)

// Placement labels.
const (
	placeQuery = "query (the spec)"
	placeBody  = "form body"
	placeBasic = "HTTP Basic"
)

func newOAuthStepsView(t *oauthTab) *oauthStepsView {
	v := &oauthStepsView{t: t}
	v.Reveal = widget.NewCheck("Reveal secrets", func(bool) { v.rerender() })
	v.Profile = widget.NewLabel("Pick or create a profile on the left, or press Try with the sandbox.")
	v.Profile.Wrapping = fyne.TextWrapWord

	// 1 Authorize
	v.StateInURI = widget.NewCheck("hs_state in redirect_uri (forgery check)", nil)
	v.StateInURI.SetChecked(true)
	v.StandardState = widget.NewCheck("standard state", nil)
	v.PKCE = widget.NewCheck("PKCE (S256)", nil)
	v.Authorize = widget.NewButtonWithIcon("Authorize", theme.LoginIcon(), v.t.authorize)
	v.Authorize.Importance = widget.HighImportance
	v.AuthURL = widget.NewLabel("")
	v.AuthURL.Wrapping = fyne.TextWrapBreak
	v.AuthURL.TextStyle = fyne.TextStyle{Monospace: true}
	v.AuthURL.Hide()
	v.CopyURL = widget.NewButtonWithIcon("Copy URL", theme.ContentCopyIcon(), func() { v.t.m.copy(v.authorizeURL, "authorize URL") })
	v.Open = widget.NewButtonWithIcon("Open in browser", theme.ComputerIcon(), v.openBrowser)
	v.CopyURL.Disable()
	v.Open.Disable()
	v.AutoExchange = widget.NewCheck("exchange the code as soon as it arrives", nil)
	v.AutoExchange.SetChecked(true)
	authBody := container.NewVBox(
		container.NewHBox(v.StateInURI, v.StandardState, v.PKCE),
		container.NewHBox(v.Authorize, v.CopyURL, v.Open),
		v.AuthURL,
	)
	v.AuthorizeCard = newStepCard(v, 1, "Authorize", authBody)

	// 2 Callback
	v.Waiting = widget.NewLabel("Press Authorize first.")
	v.Waiting.Wrapping = fyne.TextWrapWord
	v.Cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), v.t.cancelAuthorize)
	v.Cancel.Hide()
	v.Paste = widget.NewEntry()
	v.Paste.SetPlaceHolder("…or paste the address the browser landed on (http://…/callback?code=…)")
	v.Paste.OnSubmitted = func(string) { v.t.pasteCallback() }
	v.UsePaste = widget.NewButton("Use pasted URL", v.t.pasteCallback)
	v.CallbackParams = container.NewVBox()
	v.StateCheck = widget.NewLabel("")
	v.StateCheck.Wrapping = fyne.TextWrapWord
	v.StateCheck.Hide()
	cbBody := container.NewVBox(
		container.NewBorder(nil, nil, nil, v.Cancel, v.Waiting),
		container.NewBorder(nil, nil, nil, v.UsePaste, v.Paste),
		v.AutoExchange,
		v.StateCheck,
		v.CallbackParams,
	)
	v.CallbackCard = newStepCard(v, 2, "Callback", cbBody)

	// 3 Exchange
	v.Placement = widget.NewRadioGroup([]string{placeQuery, placeBody, placeBasic}, func(string) { v.t.placementChanged() })
	v.Placement.Horizontal = true
	v.Placement.Required = true
	v.Placement.SetSelected(placeQuery)
	v.Exchange = widget.NewButtonWithIcon("Exchange code", theme.MailSendIcon(), func() { v.t.exchange(false) })
	v.ReuseText = widget.NewLabel("")
	v.ReuseText.Wrapping = fyne.TextWrapWord
	v.ReuseText.Importance = widget.WarningImportance
	v.SendAnyway = widget.NewButtonWithIcon("Send anyway", theme.WarningIcon(), func() { v.t.exchange(true) })
	v.SendAnyway.Importance = widget.DangerImportance
	keep := widget.NewButton("Keep it unsent", func() { v.Reuse.Hide() })
	v.Reuse = container.NewVBox(v.ReuseText, container.NewHBox(v.SendAnyway, keep))
	v.Reuse.Hide()
	v.TokenBox = container.NewVBox()
	v.Countdown = widget.NewLabel("")
	v.ScopeCheck = widget.NewLabel("")
	v.ScopeCheck.Wrapping = fyne.TextWrapWord
	exBody := container.NewVBox(
		caption("Where the token call sends client_id, client_secret and the grant (spec 4.2: the URL query):"),
		v.Placement,
		container.NewHBox(v.Exchange),
		v.Reuse,
		v.TokenBox,
	)
	v.ExchangeCard = newStepCard(v, 3, "Exchange", exBody)

	// 4 Refresh
	v.Refresh = widget.NewButtonWithIcon("Refresh token", theme.ViewRefreshIcon(), v.t.refresh)
	v.AutoRefresh = widget.NewCheck("auto-refresh a minute before expiry", v.t.autoRefresh)
	v.RefreshNote = widget.NewLabel("")
	v.RefreshNote.Wrapping = fyne.TextWrapWord
	v.RefreshCard = newStepCard(v, 4, "Refresh", container.NewVBox(container.NewHBox(v.Refresh, v.AutoRefresh), v.RefreshNote))

	// 5 Call API
	v.Path = widget.NewEntry()
	v.Path.SetPlaceHolder("/v1/medias/<hashed_id>")
	v.HTTPMethod = widget.NewSelect([]string{"GET", "PUT", "DELETE", "POST"}, nil)
	v.HTTPMethod.SetSelected("GET")
	v.TokenMethod = widget.NewSelect([]string{methodAccessToken, methodBearerToken, methodHeader, methodAll}, nil)
	v.TokenMethod.SetSelected(methodHeader)
	v.Body = widget.NewEntry()
	v.Body.SetPlaceHolder(`body for PUT/POST, e.g. {"name":"New title"} (optional)`)
	v.Call = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.t.call)
	v.Call.Importance = widget.HighImportance
	v.Results = container.NewGridWithColumns(1)
	callBody := container.NewVBox(
		container.NewBorder(nil, nil, v.HTTPMethod, v.Call, v.Path),
		container.NewHBox(widget.NewLabel("Token as:"), v.TokenMethod),
		v.Body,
		v.Results,
	)
	v.CallCard = newStepCard(v, 5, "Call API", callBody)

	toolbar := container.NewBorder(nil, nil, nil, v.Reveal, v.Profile)
	cards := container.NewVBox(toolbar,
		v.AuthorizeCard.content, v.CallbackCard.content, v.ExchangeCard.content, v.RefreshCard.content, v.CallCard.content)
	v.content = container.NewVScroll(container.NewPadded(cards))
	v.enable()
	return v
}

// cards lists the five cards in order.
func (v *oauthStepsView) cards() []*stepCard {
	return []*stepCard{v.AuthorizeCard, v.CallbackCard, v.ExchangeCard, v.RefreshCard, v.CallCard}
}

// reset empties every card (another profile was chosen).
func (v *oauthStepsView) reset() {
	for _, c := range v.cards() {
		c.set(stepWaiting)
		c.show(nil)
	}
	v.authorizeURL, v.callback, v.token, v.results = "", nil, nil, nil
	v.AuthURL.Hide()
	v.Waiting.SetText("Press Authorize first.")
	v.Cancel.Hide()
	v.Paste.SetText("")
	v.StateCheck.Hide()
	v.CallbackParams.RemoveAll()
	v.Reuse.Hide()
	v.TokenBox.RemoveAll()
	v.RefreshNote.SetText("")
	v.Results.RemoveAll()
	v.enable()
}

// enable turns the step buttons on and off by what the flow has.
func (v *oauthStepsView) enable() {
	on := func(b *widget.Button, ok bool) {
		if ok {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	f := v.t.flow
	on(v.Authorize, v.t.profiles != nil && v.t.profiles.selected != "")
	on(v.CopyURL, v.authorizeURL != "")
	on(v.Open, v.authorizeURL != "")
	on(v.UsePaste, f != nil && v.authorizeURL != "")
	on(v.Exchange, f != nil && v.callback != nil && v.callback.Code != "")
	hasRefresh := v.token != nil && v.token.RefreshToken != ""
	on(v.Refresh, f != nil && hasRefresh)
	on(v.Call, f != nil && v.token != nil)
	if hasRefresh {
		v.AutoRefresh.Enable()
	} else {
		v.AutoRefresh.Disable()
	}
}

func (v *oauthStepsView) openBrowser() {
	u, err := url.Parse(v.authorizeURL)
	if err != nil {
		v.t.m.showError(fmt.Errorf("authorize URL: %w", err))
		return
	}
	if err := v.t.m.app.OpenURL(u); err != nil {
		v.t.m.showError(fmt.Errorf("open the browser: %w; copy the URL instead", err))
	}
}

// rerender redraws everything that shows secrets (Reveal changed).
func (v *oauthStepsView) rerender() {
	for _, c := range v.cards() {
		c.render()
	}
	if v.callback != nil {
		v.showCallback(v.callback)
	}
	if v.token != nil {
		v.showToken(*v.token)
	}
	v.showResults()
	v.t.history.rerender()
}

// showCallback lists every parameter received.
func (v *oauthStepsView) showCallback(res *oauthflow.CallbackResult) {
	v.callback = res
	v.CallbackParams.RemoveAll()
	if res == nil {
		return
	}
	v.CallbackParams.Add(widget.NewLabelWithStyle(fmt.Sprintf("%d parameters received", len(res.Params)), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	for _, p := range res.Params {
		v.CallbackParams.Add(v.valueRow(p.Name, p.Value, p.Name == "code"))
	}
	for _, n := range res.Notes {
		l := widget.NewLabel("Note: " + n)
		l.Wrapping = fyne.TextWrapWord
		l.Importance = widget.WarningImportance
		v.CallbackParams.Add(l)
	}
}

// valueRow is "name  value  [Copy]"; secret values are masked unless
// revealed. Copy copies the value itself: it is the user's explicit ask.
func (v *oauthStepsView) valueRow(name, value string, secret bool) fyne.CanvasObject {
	shown := value
	if secret && !v.Reveal.Checked {
		shown = maskSecret(value)
	}
	n := widget.NewLabelWithStyle(name, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	val := widget.NewLabel(shown)
	val.Wrapping = fyne.TextWrapBreak
	cp := widget.NewButtonWithIcon("", theme.ContentCopyIcon(), func() { v.t.m.copy(value, name) })
	nameBox := container.NewGridWrap(fyne.NewSize(130, n.MinSize().Height), n)
	return container.NewBorder(nil, nil, nameBox, cp, val)
}

// maskSecret hides a secret but says how long it is.
func maskSecret(s string) string {
	if s == "" {
		return "(empty)"
	}
	return fmt.Sprintf("••••••••  (%d characters, hidden; tick Reveal secrets)", len(s))
}

// showToken shows the token fields, the countdown and the scope check.
func (v *oauthStepsView) showToken(tok oauthflow.Token) {
	v.token = &tok
	v.TokenBox.RemoveAll()
	v.TokenBox.Add(widget.NewLabelWithStyle("Token", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	v.TokenBox.Add(v.valueRow("access_token", tok.AccessToken, true))
	v.TokenBox.Add(v.valueRow("token_type", tok.TokenType, false))
	v.TokenBox.Add(v.valueRow("expires_in", fmt.Sprint(tok.ExpiresIn), false))
	v.TokenBox.Add(v.valueRow("refresh_token", tok.RefreshToken, true))
	v.TokenBox.Add(v.valueRow("scope", strings.Join(tok.Scope, " "), false))
	v.TokenBox.Add(v.Countdown)
	v.TokenBox.Add(v.ScopeCheck)
	v.tick()
	wanted := v.t.currentProfile().Scopes
	missing := tok.MissingScopes(wanted)
	switch {
	case len(wanted) == 0:
		v.ScopeCheck.Importance = widget.MediumImportance
		v.ScopeCheck.SetText(fmt.Sprintf("Scope granted: %s (no wanted scopes set in the profile).", strings.Join(tok.Scope, ", ")))
	case len(missing) == 0:
		v.ScopeCheck.Importance = widget.SuccessImportance
		v.ScopeCheck.SetText(fmt.Sprintf("✓ Granted %s covers every wanted scope (%s).", strings.Join(tok.Scope, ", "), strings.Join(wanted, ", ")))
	default:
		v.ScopeCheck.Importance = widget.DangerImportance
		v.ScopeCheck.SetText(fmt.Sprintf("✗ Missing: %s. Granted: %s; wanted: %s. The service grants the application's registered permissions: edit them in the service and authorize again.",
			strings.Join(missing, ", "), strings.Join(tok.Scope, ", "), strings.Join(wanted, ", ")))
	}
	v.TokenBox.Refresh()
}

// tick updates the countdown to expiry (once a second from the tab's
// ticker, through the bridge).
func (v *oauthStepsView) tick() {
	if v.token == nil {
		return
	}
	tok := *v.token
	now := v.t.now()
	switch {
	case tok.ExpiresAt.IsZero():
		v.Countdown.Importance = widget.WarningImportance
		v.Countdown.SetText("Expiry unknown (no expires_in).")
	case tok.Expired(now):
		v.Countdown.Importance = widget.DangerImportance
		v.Countdown.SetText(fmt.Sprintf("Expired at %s: refresh it.", tok.ExpiresAt.Local().Format("15:04:05")))
	default:
		left := tok.TimeLeft(now).Truncate(time.Second)
		v.Countdown.Importance = widget.SuccessImportance
		if left < 5*time.Minute {
			v.Countdown.Importance = widget.WarningImportance
		}
		v.Countdown.SetText(fmt.Sprintf("Expires in %s (at %s).", left, tok.ExpiresAt.Local().Format("15:04:05")))
	}
}

// showResults lays the call results side by side.
func (v *oauthStepsView) showResults() {
	v.Results.RemoveAll()
	if len(v.results) == 0 {
		return
	}
	v.Results.Layout = container.NewGridWithColumns(len(v.results)).Layout
	secrets := v.t.secrets()
	for _, r := range v.results {
		tr := r.Transcript
		if !v.Reveal.Checked {
			tr = oauthflow.Redact(tr, secrets...)
		}
		v.Results.Add(callResultView(r, tr))
	}
	v.Results.Refresh()
}

// callResultView is one token method's answer: status, explanation and
// the pretty-printed body.
func callResultView(r oauthflow.CallResult, tr oauthflow.Transcript) fyne.CanvasObject {
	b := newBadge(60)
	switch {
	case r.OK:
		b.set(fmt.Sprintf("%d", r.Status), theme.ConfirmIcon(), theme.ColorNameSuccess)
	case r.Status == 0:
		b.set("no answer", theme.ErrorIcon(), theme.ColorNameError)
	default:
		b.set(fmt.Sprintf("%d", r.Status), theme.ErrorIcon(), theme.ColorNameError)
	}
	title := widget.NewLabelWithStyle(methodLabel(r.Method), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.Wrapping = fyne.TextWrapWord
	box := container.NewVBox(container.NewBorder(nil, nil, nil, b, title))
	if tr.Response != nil {
		box.Add(caption(fmt.Sprintf("%s %s · %s", tr.Response.Proto, tr.Response.StatusText, tr.Response.Duration.Round(time.Microsecond))))
	}
	if tr.Error != "" {
		l := widget.NewLabel(tr.Error)
		l.Wrapping = fyne.TextWrapWord
		l.Importance = widget.DangerImportance
		box.Add(l)
		if tr.Fix != "" {
			f := widget.NewLabel("Likely fix: " + tr.Fix)
			f.Wrapping = fyne.TextWrapWord
			box.Add(f)
		}
	}
	for _, n := range tr.Notes {
		box.Add(caption("Note: " + n))
	}
	if tr.Response != nil && tr.Response.Body != "" {
		box.Add(linesView(prettyBody(tr.Response.Body)))
	}
	return box
}

func methodLabel(m oauthflow.TokenMethod) string {
	switch m {
	case oauthflow.MethodAccessToken:
		return methodAccessToken
	case oauthflow.MethodBearerToken:
		return methodBearerToken
	}
	return methodHeader
}

// prettyBody indents JSON (catalog.Pretty) and leaves anything else as is.
func prettyBody(s string) string {
	if p := catalog.Pretty([]byte(s)); len(p) > 0 {
		return string(p)
	}
	return s
}

func caption(s string) *widget.Label {
	l := widget.NewLabel(s)
	l.Wrapping = fyne.TextWrapWord
	l.SizeName = theme.SizeNameCaptionText
	l.Importance = widget.LowImportance
	return l
}

// maxLabelLines is the longest text shown as one label; longer texts
// become a list of lines, since Fyne lays out a huge label very slowly.
const maxLabelLines = 40

// linesView shows text: a monospace label when short, a virtualized list
// of lines (a fixed-height window onto it) when long.
func linesView(s string) fyne.CanvasObject {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= maxLabelLines && len(s) <= 8<<10 {
		l := widget.NewLabel(s)
		l.TextStyle = fyne.TextStyle{Monospace: true}
		l.Wrapping = fyne.TextWrapBreak
		return l
	}
	list := widget.NewList(func() int { return len(lines) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.TextStyle = fyne.TextStyle{Monospace: true}
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(lines[i]) })
	size := canvas.NewRectangle(nil)
	size.SetMinSize(fyne.NewSize(0, 320))
	return container.NewStack(size, list)
}

// transcriptView renders one exchange: request line, headers, raw body,
// then status, duration, headers, raw body, notes.
func transcriptView(tr oauthflow.Transcript) fyne.CanvasObject {
	box := container.NewVBox()
	dir := "→ "
	if tr.Inbound {
		dir = "← received: "
	}
	box.Add(widget.NewLabelWithStyle(tr.Title(), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	var req strings.Builder
	req.WriteString(dir + tr.Request.Method + " " + tr.Request.URL + "\n")
	for _, k := range sortedHeaderKeys(tr.Request.Header) {
		for _, val := range tr.Request.Header[k] {
			req.WriteString(k + ": " + val + "\n")
		}
	}
	if tr.Request.Body != "" {
		req.WriteString("\n" + tr.Request.Body)
	}
	box.Add(linesView(req.String()))
	if r := tr.Response; r != nil {
		var resp strings.Builder
		fmt.Fprintf(&resp, "← %s %d %s  (%s)\n", r.Proto, r.Status, r.StatusText, r.Duration.Round(time.Microsecond))
		for _, k := range sortedHeaderKeys(r.Header) {
			for _, val := range r.Header[k] {
				resp.WriteString(k + ": " + val + "\n")
			}
		}
		if r.Body != "" {
			resp.WriteString("\n" + r.Body)
		}
		if r.Truncated {
			resp.WriteString("\n… (body truncated at 4 MiB)")
		}
		box.Add(linesView(resp.String()))
	}
	for _, n := range tr.Notes {
		box.Add(caption("Note: " + n))
	}
	return box
}

func sortedHeaderKeys(h map[string][]string) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// ---- actions (oauthTab) ----

// currentProfile is the profile being edited.
func (t *oauthTab) currentProfile() oauthflow.Profile { return t.profiles.profile() }

// options are the flow options the toggles describe.
func (t *oauthTab) options() oauthflow.Options {
	v := t.steps
	pl := oauthflow.PlacementQuery
	switch v.Placement.Selected {
	case placeBody:
		pl = oauthflow.PlacementBody
	case placeBasic:
		pl = oauthflow.PlacementBasic
	}
	return oauthflow.Options{NoRedirectState: !v.StateInURI.Checked, StandardState: v.StandardState.Checked, PKCE: v.PKCE.Checked,
		Placement: pl, Recorder: t.store, UserAgent: "Hookscope/" + t.m.svc.Version}
}

// secrets are the values to redact by value.
func (t *oauthTab) secrets() []string {
	out := []string{t.currentProfile().ClientSecret}
	if t.flow != nil {
		out = append(out, t.flow.Secrets()...)
	}
	return out
}

// renderOptions redact unless Reveal is ticked.
func (t *oauthTab) renderOptions() oauthflow.RenderOptions {
	return oauthflow.RenderOptions{Reveal: t.steps.Reveal.Checked, Secrets: t.secrets()}
}

// display redacts transcripts unless revealed.
func (t *oauthTab) display(ts []oauthflow.Transcript) []oauthflow.Transcript {
	if t.steps.Reveal.Checked {
		return ts
	}
	return oauthflow.RedactAll(ts, t.secrets()...)
}

// profileChosen starts over for p: a stored token makes Refresh and Call
// usable at once.
func (t *oauthTab) profileChosen(p oauthflow.Profile) {
	t.stopWaiting()
	t.stopAutoRefresh()
	t.flow = nil
	t.steps.reset()
	if p.Name == "" {
		t.steps.Profile.SetText("New profile: fill it in and Save.")
		return
	}
	t.steps.Profile.SetText(fmt.Sprintf("Profile %s · %s", p.Name, p.BaseURL))
	if t.steps.Path.Text == "" || strings.HasPrefix(t.steps.Path.Text, "/v1/medias/") {
		id := "<hashed_id>"
		if p.Name == "sandbox" && t.sandboxMedia != "" {
			id = t.sandboxMedia
		}
		t.steps.Path.SetText("/v1/medias/" + id)
	}
	store, opts := t.store, t.options()
	t.run(func() func() {
		tok, err := store.LoadToken(context.Background(), p.Name)
		if err != nil {
			if !isNotFound(err) {
				return func() { t.m.showError(fmt.Errorf("load the token of %q: %w", p.Name, err)) }
			}
			return func() { t.steps.enable() }
		}
		f, ferr := oauthflow.New(p, opts)
		return func() {
			if ferr != nil || t.profiles.selected != p.Name {
				t.steps.enable()
				return
			}
			t.flow = f
			f.SetToken(tok)
			t.steps.showToken(tok)
			t.steps.ExchangeCard.set(stepDone)
			t.steps.RefreshNote.SetText("Token loaded from the store (obtained " + tok.ObtainedAt.Local().Format("2006-01-02 15:04") + ").")
			t.steps.enable()
		}
	})
}

// authorize builds a new flow and its authorize URL, starts listening for
// the callback (loopback listener or the receiver's tunnel path) and waits.
func (t *oauthTab) authorize() {
	p := t.currentProfile()
	if err := p.Validate(); err != nil {
		t.steps.AuthorizeCard.fail(err.Error(), "complete the profile on the left and Save")
		return
	}
	t.stopWaiting()
	t.stopAutoRefresh()
	v := t.steps
	for _, c := range v.cards() {
		c.set(stepWaiting)
		c.show(nil)
	}
	v.callback, v.token, v.results = nil, nil, nil
	v.CallbackParams.RemoveAll()
	v.StateCheck.Hide()
	v.Reuse.Hide()
	v.TokenBox.RemoveAll()
	v.Results.RemoveAll()
	v.RefreshNote.SetText("")
	v.AuthorizeCard.set(stepRunning)
	v.Authorize.Disable()
	opts := t.options()
	hub := t.hub
	tunnelURI := t.tunnelCallbackURL()
	t.run(func() func() {
		f, err := oauthflow.New(p, opts)
		if err != nil {
			return func() { v.Authorize.Enable(); v.AuthorizeCard.failErr(err) }
		}
		var stop, remove func()
		mode := "paste"
		if _, _, _, local := p.LocalRedirect(); local {
			stop, err = f.ListenCallback()
			if err != nil {
				return func() {
					v.Authorize.Enable()
					v.AuthorizeCard.fail(err.Error(), "free the port, or register a redirect URI with a free port (Loopback URI helper) and use it here")
				}
			}
			mode = "listen"
		} else if hub != nil && tunnelURI != "" && strings.HasPrefix(p.RedirectURI, strings.TrimSuffix(tunnelURI, OAuthCallbackPath)) {
			remove = hub.Add(f)
			mode = "tunnel"
		}
		u, err := f.AuthorizeURL(context.Background())
		ts := f.Transcripts(true)
		return func() {
			v.Authorize.Enable()
			if err != nil {
				if stop != nil {
					go stop()
				}
				if remove != nil {
					remove()
				}
				v.AuthorizeCard.failErr(err)
				return
			}
			t.flow = f
			t.stopListen, t.removeHub = stop, remove
			v.authorizeURL = u
			v.AuthURL.SetText(u)
			v.AuthURL.Show()
			v.AuthorizeCard.set(stepDone)
			v.AuthorizeCard.show(ts)
			v.CallbackCard.set(stepRunning)
			switch mode {
			case "listen":
				v.Waiting.SetText("Waiting for the browser at " + p.RedirectURI + " … Open the URL above, log in and approve.")
			case "tunnel":
				v.Waiting.SetText("Waiting for the callback through the tunnel (" + p.RedirectURI + ") … Open the URL above and approve.")
			default:
				v.Waiting.SetText("This redirect URI is not on this machine: after approving, paste the address the browser lands on.")
			}
			v.Cancel.Show()
			v.enable()
			if mode != "paste" {
				t.waitCallback(f)
			}
		}
	})
}

// waitCallback waits on its own goroutine; the outcome comes back through
// the bridge (or settle in tests).
func (t *oauthTab) waitCallback(f *oauthflow.Flow) {
	ctx, cancel := context.WithCancel(context.Background())
	t.cancelWait = cancel
	gen := t.waitGen
	go func() {
		res, err := f.AwaitCallback(ctx, 0)
		t.later(func() {
			if gen != t.waitGen || t.flow != f {
				return // cancelled, or superseded by a paste or a new attempt
			}
			t.callbackArrived(f, res, err, t.transcriptsOf(f, oauthflow.StepCallback))
		})
	}()
}

// transcriptsOf returns the flow's raw transcripts of one step.
func (t *oauthTab) transcriptsOf(f *oauthflow.Flow, step oauthflow.Step) []oauthflow.Transcript {
	var out []oauthflow.Transcript
	for _, tr := range f.Transcripts(true) {
		if tr.Step == step {
			out = append(out, tr)
		}
	}
	return out
}

func (t *oauthTab) cancelAuthorize() {
	t.stopWaiting()
	v := t.steps
	v.Cancel.Hide()
	v.CallbackCard.set(stepWaiting)
	v.Waiting.SetText("Cancelled: no longer listening. Press Authorize to start again, or paste a redirected URL.")
}

func (t *oauthTab) pasteCallback() {
	f := t.flow
	raw := strings.TrimSpace(t.steps.Paste.Text)
	if f == nil || raw == "" {
		return
	}
	t.stopWaiting()
	t.run(func() func() {
		res, err := f.AcceptCallbackURL(context.Background(), raw)
		ts := t.transcriptsOf(f, oauthflow.StepCallback)
		return func() { t.callbackArrived(f, res, err, ts[len(ts)-1:]) }
	})
}

// callbackArrived shows the callback and, when it carries a code, goes on
// to the exchange if asked to.
func (t *oauthTab) callbackArrived(f *oauthflow.Flow, res *oauthflow.CallbackResult, err error, ts []oauthflow.Transcript) {
	t.stopWaiting()
	v := t.steps
	v.Cancel.Hide()
	v.CallbackCard.show(ts)
	v.showCallback(res)
	st := f.State()
	var sme *oauthflow.StateMismatchError
	switch {
	case errors.As(err, &sme):
		v.StateCheck.Importance = widget.DangerImportance
		v.StateCheck.SetText("✗ State check failed: the code was discarded.")
	case res != nil && (st.RedirectState != "" || st.StandardState != ""):
		v.StateCheck.Importance = widget.SuccessImportance
		v.StateCheck.SetText("✓ State check passed: the callback carries the values Hookscope sent.")
	default:
		v.StateCheck.Importance = widget.WarningImportance
		v.StateCheck.SetText("State check off: a forged callback would not be noticed.")
	}
	v.StateCheck.Show()
	if err != nil {
		v.Waiting.SetText("The callback arrived with a problem.")
		var de *oauthflow.DeniedError
		if errors.As(err, &de) {
			meaning, fix := oauthflow.OAuthError{Code: de.Code, Description: de.Description}.Explain()
			msg := "the service redirected with error=" + de.Code + ": " + meaning
			if de.Description != "" {
				msg += " (it says: " + de.Description + ")"
			}
			v.CallbackCard.fail(msg, fix)
		} else {
			v.CallbackCard.failErr(err)
		}
		v.enable()
		return
	}
	v.Waiting.SetText("Callback received.")
	v.CallbackCard.set(stepDone)
	v.enable()
	if v.AutoExchange.Checked {
		t.exchange(false)
	}
}

// placementChanged carries the flow over to the new placement: same
// state (code, spent codes), new token-call shape.
func (t *oauthTab) placementChanged() {
	if t.flow == nil || t.steps == nil {
		return
	}
	f := t.flow
	tok, has := f.Token()
	var tp *oauthflow.Token
	if has {
		tp = &tok
	}
	nf, err := oauthflow.Resume(f.Profile(), f.State(), tp, t.options())
	if err != nil {
		t.m.showError(err)
		return
	}
	t.flow = nf
}

// exchange trades the code for a token; a code already sent shows the
// reuse warning instead, unless force.
func (t *oauthTab) exchange(force bool) {
	f := t.flow
	if f == nil {
		return
	}
	v := t.steps
	v.Reuse.Hide()
	v.ExchangeCard.set(stepRunning)
	v.Exchange.Disable()
	t.run(func() func() {
		before := len(f.Transcripts(true))
		tok, err := f.Exchange(context.Background(), "", force)
		ts := f.Transcripts(true)[before:]
		return func() {
			v.enable()
			if len(ts) > 0 {
				v.ExchangeCard.show(ts)
			}
			if errors.Is(err, oauthflow.ErrCodeSpent) {
				var se *oauthflow.StepError
				errors.As(err, &se)
				v.ExchangeCard.set(stepWaiting)
				v.ReuseText.SetText("⚠ " + se.Msg + ".\n" + se.Fix + ".")
				v.Reuse.Show()
				return
			}
			if err != nil {
				v.ExchangeCard.failErr(err)
				return
			}
			v.ExchangeCard.set(stepDone)
			v.showToken(*tok)
			v.enable()
		}
	})
}

func (t *oauthTab) refresh() {
	f := t.flow
	if f == nil {
		return
	}
	v := t.steps
	v.RefreshCard.set(stepRunning)
	v.Refresh.Disable()
	t.run(func() func() {
		before := len(f.Transcripts(true))
		rr, err := f.Refresh(context.Background())
		ts := f.Transcripts(true)[before:]
		return func() { t.refreshed(rr, err, ts) }
	})
}

// refreshed shows a refresh outcome (button or auto-refresh).
func (t *oauthTab) refreshed(rr *oauthflow.RefreshResult, err error, ts []oauthflow.Transcript) {
	v := t.steps
	v.enable()
	if len(ts) > 0 {
		v.RefreshCard.show(ts)
	}
	if err != nil {
		v.RefreshCard.failErr(err)
		return
	}
	v.RefreshCard.set(stepDone)
	v.RefreshNote.Importance = widget.SuccessImportance
	word := "unchanged"
	if rr.RefreshTokenChanged {
		v.RefreshNote.Importance = widget.WarningImportance
		word = "CHANGED"
	}
	v.RefreshNote.SetText(fmt.Sprintf("Refresh token %s at %s: %s.", word, t.now().Format("15:04:05"), rr.Note))
	v.showToken(rr.Token)
}

func (t *oauthTab) autoRefresh(on bool) {
	t.stopAutoRefresh()
	f := t.flow
	if !on || f == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.autoCancel = cancel
	go f.AutoRefresh(ctx, time.Minute, func(rr *oauthflow.RefreshResult, err error) {
		ts := t.transcriptsOf(f, oauthflow.StepRefresh)
		if len(ts) > 1 {
			ts = ts[len(ts)-1:]
		}
		t.later(func() {
			if t.flow == f {
				t.refreshed(rr, err, ts)
			}
		})
	})
	t.m.showStatus("Auto-refresh on: the token is refreshed a minute before it expires.")
}

func (t *oauthTab) stopAutoRefresh() {
	if t.autoCancel != nil {
		t.autoCancel()
		t.autoCancel = nil
	}
	if t.steps != nil && t.steps.AutoRefresh.Checked {
		t.steps.AutoRefresh.OnChanged = nil
		t.steps.AutoRefresh.SetChecked(false)
		t.steps.AutoRefresh.OnChanged = t.autoRefresh
	}
}

func (t *oauthTab) call() {
	f := t.flow
	if f == nil {
		return
	}
	v := t.steps
	var methods []oauthflow.TokenMethod
	switch v.TokenMethod.Selected {
	case methodAccessToken:
		methods = []oauthflow.TokenMethod{oauthflow.MethodAccessToken}
	case methodBearerToken:
		methods = []oauthflow.TokenMethod{oauthflow.MethodBearerToken}
	case methodAll:
		methods = []oauthflow.TokenMethod{oauthflow.MethodAccessToken, oauthflow.MethodBearerToken, oauthflow.MethodHeader}
	default:
		methods = []oauthflow.TokenMethod{oauthflow.MethodHeader}
	}
	req := oauthflow.CallRequest{Method: v.HTTPMethod.Selected, Path: strings.TrimSpace(v.Path.Text), Body: v.Body.Text, Methods: methods}
	if strings.HasPrefix(strings.TrimSpace(req.Body), "{") {
		req.ContentType = "application/json"
	}
	v.CallCard.set(stepRunning)
	v.Call.Disable()
	t.run(func() func() {
		res, err := f.Call(context.Background(), req)
		return func() {
			v.enable()
			v.results = res
			ts := make([]oauthflow.Transcript, 0, len(res))
			for _, r := range res {
				ts = append(ts, r.Transcript)
			}
			v.CallCard.show(ts)
			v.showResults()
			if err != nil {
				v.CallCard.failErr(err)
				return
			}
			failed := 0
			for _, r := range res {
				if !r.OK {
					failed++
				}
			}
			if failed > 0 {
				first := res[0].Transcript
				for _, r := range res {
					if !r.OK {
						first = r.Transcript
						break
					}
				}
				v.CallCard.fail(fmt.Sprintf("%d of %d calls failed: %s", failed, len(res), first.Error), first.Fix)
				return
			}
			v.CallCard.set(stepDone)
		}
	})
}
