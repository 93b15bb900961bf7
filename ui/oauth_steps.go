package ui

import (
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
	// The failure goes first: it is what the user needs to read.
	inner := container.NewVBox(head, c.Problem, c.Fix, body, c.Accord)
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
		if !strings.HasSuffix(fix, ".") {
			fix += "."
		}
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
		c.Detail.Add(oauthTranscriptView(tr))
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
	t        *oauthTab
	content  fyne.CanvasObject
	scroll   *container.Scroll
	cardBox  *fyne.Container
	pasteRow fyne.CanvasObject

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
	// Refused says how many requests to the callback were refused
	// (forged, stale, unreadable) while the wait goes on, and why the
	// last one was.
	Refused  *widget.Label
	callback *oauthflow.CallbackResult

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
	v.AutoExchange = widget.NewCheck("as soon as the callback arrives", nil)
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
	v.Refused = widget.NewLabel("")
	v.Refused.Wrapping = fyne.TextWrapWord
	v.Refused.Importance = widget.WarningImportance
	v.Refused.Hide()
	v.pasteRow = container.NewBorder(nil, nil, nil, v.UsePaste, v.Paste)
	v.pasteRow.Hide()
	cbBody := container.NewVBox(
		container.NewBorder(nil, nil, nil, v.Cancel, v.Waiting),
		v.Refused,
		v.pasteRow,
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
		oauthCaption("Where the token call sends client_id, client_secret and the grant (spec 4.2: the URL query):"),
		v.Placement,
		container.NewHBox(v.Exchange, v.AutoExchange),
		v.Reuse,
		v.TokenBox,
	)
	v.ExchangeCard = newStepCard(v, 3, "Exchange", exBody)

	// 4 Refresh
	v.Refresh = widget.NewButtonWithIcon("Refresh token", theme.ViewRefreshIcon(), v.t.refresh)
	v.AutoRefresh = widget.NewCheck("auto-refresh a minute before expiry", v.t.autoRefresh)
	v.RefreshNote = widget.NewLabel("")
	v.RefreshNote.Wrapping = fyne.TextWrapWord
	v.RefreshNote.Hide()
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
		container.NewBorder(nil, nil, widget.NewLabel("Token as:"), nil, v.TokenMethod),
		v.Body,
		v.Results,
	)
	v.CallCard = newStepCard(v, 5, "Call API", callBody)

	toolbar := container.NewBorder(nil, nil, nil, v.Reveal, v.Profile)
	v.cardBox = container.NewVBox(toolbar,
		v.AuthorizeCard.content, v.CallbackCard.content, v.ExchangeCard.content, v.RefreshCard.content, v.CallCard.content)
	v.scroll = container.NewVScroll(container.NewPadded(v.cardBox))
	v.content = v.scroll
	v.enable()
	return v
}

// relayout makes the scroll take the cards' new heights into account
// (a Scroll does not notice its content's MinSize changing) and, when
// focus is set, scrolls so that card's top is visible.
func (v *oauthStepsView) relayout(focus *stepCard) {
	v.scroll.Refresh()
	if focus == nil {
		return
	}
	y := focus.content.Position().Y
	if y < v.scroll.Offset.Y || y > v.scroll.Offset.Y+v.scroll.Size().Height*0.6 {
		v.scroll.ScrollToOffset(fyne.NewPos(0, y))
	}
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
	v.Refused.SetText("")
	v.Refused.Hide()
	v.CallbackParams.RemoveAll()
	v.Reuse.Hide()
	v.TokenBox.RemoveAll()
	v.RefreshNote.SetText("")
	v.RefreshNote.Hide()
	v.Results.RemoveAll()
	v.pasteRow.Hide()
	v.enable()
	v.relayout(nil)
	// Another flow starts at its first step.
	v.scroll.ScrollToTop()
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
		shown = oauthMask(value)
	}
	n := widget.NewLabelWithStyle(name, fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	val := widget.NewLabel(shown)
	val.Wrapping = fyne.TextWrapBreak
	cp := widget.NewButtonWithIcon("", theme.ContentCopyIcon(), func() { v.t.m.copy(value, name) })
	nameBox := container.NewGridWrap(fyne.NewSize(160, n.MinSize().Height), n)
	return container.NewBorder(nil, nil, nameBox, cp, val)
}

// oauthMask hides a secret but says how long it is.
func oauthMask(s string) string {
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
		v.Results.Add(oauthCallResultView(r, tr))
	}
	v.Results.Refresh()
}

// oauthCallResultView is one token method's answer: status, explanation and
// the pretty-printed body.
func oauthCallResultView(r oauthflow.CallResult, tr oauthflow.Transcript) fyne.CanvasObject {
	b := newBadge(60)
	switch {
	case r.OK:
		b.set(fmt.Sprintf("%d", r.Status), theme.ConfirmIcon(), theme.ColorNameSuccess)
	case r.Status == 0:
		b.set("no answer", theme.ErrorIcon(), theme.ColorNameError)
	default:
		b.set(fmt.Sprintf("%d", r.Status), theme.ErrorIcon(), theme.ColorNameError)
	}
	title := widget.NewLabelWithStyle(oauthMethodLabel(r.Method), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.Wrapping = fyne.TextWrapWord
	box := container.NewVBox(container.NewBorder(nil, nil, nil, b, title))
	if tr.Response != nil {
		box.Add(oauthCaption(fmt.Sprintf("%s %s · %s", tr.Response.Proto, tr.Response.StatusText, tr.Response.Duration.Round(time.Microsecond))))
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
		box.Add(oauthCaption("Note: " + n))
	}
	if tr.Response != nil && tr.Response.Body != "" {
		box.Add(oauthLines(oauthPretty(tr.Response.Body)))
	}
	return box
}

func oauthMethodLabel(m oauthflow.TokenMethod) string {
	switch m {
	case oauthflow.MethodAccessToken:
		return methodAccessToken
	case oauthflow.MethodBearerToken:
		return methodBearerToken
	}
	return methodHeader
}

// oauthPretty indents JSON (catalog.Pretty) and leaves anything else as is.
func oauthPretty(s string) string {
	if p := catalog.Pretty([]byte(s)); len(p) > 0 {
		return string(p)
	}
	return s
}

func oauthCaption(s string) *widget.Label {
	l := widget.NewLabel(s)
	l.Wrapping = fyne.TextWrapWord
	l.SizeName = theme.SizeNameCaptionText
	return l
}

// oauthMaxLabelLines is the longest text shown as one label; longer texts
// become a list of lines, since Fyne lays out a huge label very slowly.
const oauthMaxLabelLines = 40

// oauthLines shows text: a monospace label when short, a virtualized list
// of lines (a fixed-height window onto it) when long.
func oauthLines(s string) fyne.CanvasObject {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= oauthMaxLabelLines && len(s) <= 8<<10 {
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

// oauthTranscriptView renders one exchange: request line, headers, raw body,
// then status, duration, headers, raw body, notes.
func oauthTranscriptView(tr oauthflow.Transcript) fyne.CanvasObject {
	box := container.NewVBox()
	dir := "→ "
	if tr.Inbound {
		dir = "← received: "
	}
	box.Add(widget.NewLabelWithStyle(tr.Title(), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	var req strings.Builder
	req.WriteString(dir + tr.Request.Method + " " + tr.Request.URL + "\n")
	for _, k := range oauthHeaderKeys(tr.Request.Header) {
		for _, val := range tr.Request.Header[k] {
			req.WriteString(k + ": " + val + "\n")
		}
	}
	if tr.Request.Body != "" {
		req.WriteString("\n" + tr.Request.Body)
	}
	box.Add(oauthLines(req.String()))
	if r := tr.Response; r != nil {
		var resp strings.Builder
		fmt.Fprintf(&resp, "← %s %d %s  (%s)\n", r.Proto, r.Status, r.StatusText, r.Duration.Round(time.Microsecond))
		for _, k := range oauthHeaderKeys(r.Header) {
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
		box.Add(oauthLines(resp.String()))
	}
	for _, n := range tr.Notes {
		box.Add(oauthCaption("Note: " + n))
	}
	return box
}

func oauthHeaderKeys(h map[string][]string) []string {
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
