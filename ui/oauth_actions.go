package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/oauthflow"
)

// The stepper's actions: each runs its network step through the bridge and
// shows the outcome on its card.

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
		Placement: pl, Recorder: t.store, UserAgent: "Hookscope/" + t.m.svc.Version,
		OnCallbackRefused: func(r oauthflow.CallbackRefusal) { t.later(func() { t.callbackRefused(r) }) }}
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
			if !oauthNotFound(err) {
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
			t.steps.RefreshNote.Show()
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
	v.Refused.SetText("")
	v.Refused.Hide()
	v.Reuse.Hide()
	v.TokenBox.RemoveAll()
	v.Results.RemoveAll()
	v.RefreshNote.SetText("")
	v.RefreshNote.Hide()
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
			v.pasteRow.Show()
			v.enable()
			v.relayout(v.AuthorizeCard)
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
			// The settling callback is the last one recorded: nothing is
			// recorded once the flow settled.
			ts := t.transcriptsOf(f, oauthflow.StepCallback)
			if len(ts) > 1 {
				ts = ts[len(ts)-1:]
			}
			t.callbackArrived(f, res, err, ts)
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
	t.run(func() func() {
		res, err := f.AcceptCallbackURL(context.Background(), raw)
		ts := t.transcriptsOf(f, oauthflow.StepCallback)
		return func() {
			var de *oauthflow.DeniedError
			switch {
			case errors.Is(err, oauthflow.ErrAlreadyReceived):
				t.m.showStatus("This authorization already received its callback; press Authorize to start a new one.")
			case err != nil && !errors.As(err, &de):
				// Refused: the wait (listener or tunnel) goes on.
				t.showRefused(ts[len(ts)-1], "The pasted address was refused")
			default:
				t.callbackArrived(f, res, err, ts[len(ts)-1:])
			}
		}
	})
}

// callbackRefused shows a request to the callback that the flow refused
// (forged, stale, unreadable) while it goes on waiting.
func (t *oauthTab) callbackRefused(r oauthflow.CallbackRefusal) {
	if t.flow == nil || r.Transcript.FlowID != t.flow.ID() || t.settledFlow == t.flow {
		return
	}
	what := plural.Count(r.Count, "request to the callback was refused", "requests to the callback were refused")
	if r.Last {
		what += " (later ones are answered but no longer listed)"
	}
	t.showRefused(r.Transcript, what)
}

// showRefused lists a refused callback on the Callback card, with its
// request and answer in the disclosure, and says that the wait goes on.
func (t *oauthTab) showRefused(tr oauthflow.Transcript, what string) {
	v := t.steps
	shown := t.display([]oauthflow.Transcript{tr})[0]
	v.Refused.SetText("⚠ " + what + "; still waiting for the real one. Last: " + shown.Error + ".")
	v.Refused.Show()
	v.CallbackCard.show(append(v.CallbackCard.transcripts, tr))
	v.relayout(v.CallbackCard)
}

// callbackArrived shows the callback that settled the flow and, when it
// carries a code, goes on to the exchange if asked to. A flow settles
// once: a pasted URL and the listener can report the same outcome.
func (t *oauthTab) callbackArrived(f *oauthflow.Flow, res *oauthflow.CallbackResult, err error, ts []oauthflow.Transcript) {
	if t.settledFlow == f {
		return
	}
	t.settledFlow = f
	t.stopWaiting()
	v := t.steps
	v.Cancel.Hide()
	v.pasteRow.Hide()
	defer v.relayout(v.CallbackCard)
	v.CallbackCard.show(append(v.CallbackCard.transcripts, ts...))
	v.showCallback(res)
	st := f.State()
	if res != nil && (st.RedirectState != "" || st.StandardState != "") {
		v.StateCheck.Importance = widget.SuccessImportance
		v.StateCheck.SetText("✓ State check passed: the callback carries the values Hookscope sent.")
	} else {
		v.StateCheck.Importance = widget.WarningImportance
		v.StateCheck.SetText("State check off: a forged callback would not be noticed.")
	}
	v.StateCheck.Show()
	if err != nil {
		v.Waiting.SetText("The service did not grant the authorization.")
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
	// Replaces what the status line said while waiting (a browser that
	// could not be opened, say): the flow has moved on.
	t.m.showStatus("The callback arrived: the service granted the authorization.")
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
			defer v.relayout(v.ExchangeCard)
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
	defer v.relayout(v.RefreshCard)
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
	v.RefreshNote.Show()
	v.showToken(rr.Token)
}

func (t *oauthTab) autoRefresh(on bool) {
	t.cancelAutoRefresh()
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

// stopAutoRefresh ends auto-refresh and unticks its box (another flow
// or profile takes over).
func (t *oauthTab) stopAutoRefresh() {
	t.cancelAutoRefresh()
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
			defer v.relayout(v.CallCard)
			v.results = res
			ts := make([]oauthflow.Transcript, 0, len(res))
			for _, r := range res {
				ts = append(ts, r.Transcript)
			}
			v.CallCard.show(ts)
			v.showResults()
			if err != nil {
				// Which calls failed and why (oauthflow.Calls.Err), or why
				// none could be made.
				v.CallCard.failErr(err)
				return
			}
			v.CallCard.set(stepDone)
		}
	})
}

func (t *oauthTab) cancelAutoRefresh() {
	if t.autoCancel != nil {
		t.autoCancel()
		t.autoCancel = nil
	}
}
