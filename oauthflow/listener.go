package oauthflow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/plural"
)

// ErrNotLocal means the redirect URI cannot be served on this machine.
var ErrNotLocal = errors.New("redirect URI is not http on localhost, 127.0.0.1 or [::1]")

// ErrCallbackTimeout means no callback arrived in time.
var ErrCallbackTimeout = errors.New("no callback arrived in time")

// ListenCallback starts the one-shot callback listener on exactly the
// redirect URI's host, port and path (step 2). Call it before the browser
// opens so the redirect cannot arrive before anyone listens. A busy port
// returns a *PortBusyError. stop shuts the listener down.
func (f *Flow) ListenCallback() (stop func(), err error) {
	host, port, path, ok := f.profile.LocalRedirect()
	if !ok {
		return nil, fmt.Errorf("listen for the callback on %s: %w; paste the redirected URL instead", f.profile.RedirectURI, ErrNotLocal)
	}
	lns, err := listenLoopback(host, port)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			// Browsers ask for /favicon.ico and the like; they must not
			// use up the one shot.
			http.NotFound(w, r)
			return
		}
		f.HandleCallback(w, r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	for _, ln := range lns {
		go func(ln net.Listener) { _ = srv.Serve(ln) }(ln)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// maxRecordedRefusals bounds how many refused callbacks one authorization
// attempt records and reports one by one: any web page can fire requests at
// the loopback port in a loop, and each would otherwise cost a stored
// transcript and a printed line. Later ones are still answered and counted.
const maxRecordedRefusals = 10

// CallbackRefusal is a request to the callback address that did not settle
// the flow: forged or stale (its state value is wrong or missing), not
// readable as a callback, or carrying neither code nor error. It was
// answered with a page saying what was wrong, the flow recorded it as a
// callback transcript, and the wait for the real callback goes on.
type CallbackRefusal struct {
	// Count is how many requests this authorization attempt has refused,
	// this one included.
	Count int
	// Status is the HTTP status the request was answered with.
	Status int
	// Err says why: a *StateMismatchError, or an error wrapping
	// ErrNoCallbackParams or saying the URL does not parse.
	Err error
	// Transcript is the recorded request and answer, raw: redact it before
	// showing it.
	Transcript Transcript
	// Last marks the last refusal of the attempt reported one by one;
	// later ones are answered and counted (Flow.Refused) but neither
	// recorded nor reported.
	Last bool
}

// ErrAlreadyReceived means the flow settled on an earlier callback; a
// later one changes nothing.
var ErrAlreadyReceived = errors.New("this authorization already received its callback; start a new authorization to receive another")

// HandleCallback serves a request to the callback address on behalf of the
// flow: the loopback listener uses it, and so can any other server that
// receives the callback (the webhook receiver's tunnel serving
// /oauth/callback). The first callback carrying this attempt's state value
// (any callback, with the state check off) settles the flow: its code is
// kept for the exchange, or its error is the service's answer. Anything
// else is answered with a page saying what was wrong, recorded, reported to
// Options.OnCallbackRefused, and the wait goes on: any web page can send a
// request to a loopback port, and it must not end the login. Requests after
// the flow settled are told so and change nothing.
func (f *Flow) HandleCallback(w http.ResponseWriter, r *http.Request) {
	status, body := f.receive(r)
	writeHTML(w, status, body)
}

// receive does HandleCallback's work and returns the answer.
func (f *Flow) receive(r *http.Request) (int, string) {
	ctx := r.Context()
	already := renderPage(pageData{Title: "Already received", Class: "bad", Lines: []string{
		"Hookscope already received a callback for this authorization; this one was ignored.",
		"To authorize again, start a new authorization in Hookscope."}})
	f.mu.Lock()
	settled := f.settled
	f.mu.Unlock()
	if settled {
		// Nothing waits any more: a reload of the callback page or a late
		// request is answered, not recorded.
		return http.StatusConflict, already
	}
	t := f.inboundTranscript(r)
	res, err := ParseCallbackURL(t.Request.URL)
	if err != nil {
		return f.refuse(ctx, t, res, err)
	}
	res, err = f.accept(res)
	switch {
	case errors.Is(err, ErrAlreadyReceived):
		return http.StatusConflict, already
	case errors.Is(err, ErrStateMismatch):
		return f.refuse(ctx, t, res, err)
	}
	// Settled: a code, or the service's error (itself a well-formed
	// callback, so answered 200 with the explanation).
	body := renderPage(callbackPage(res, err))
	if err != nil {
		t.Error = err.Error()
	}
	t.Notes = append(t.Notes, res.Notes...)
	t.Response = pageResponse(http.StatusOK, body)
	f.record(ctx, t)
	// Saved before the waiter wakes: the exchange it starts saves a newer
	// state (the code sent) that this one must not overwrite.
	f.saveState(ctx)
	f.deliver(res, err)
	return http.StatusOK, body
}

// inboundTranscript starts the transcript of a received callback request.
func (f *Flow) inboundTranscript(r *http.Request) Transcript {
	scheme := "http"
	// Behind the tunnel the request arrives as plain http; the browser used https.
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return Transcript{Step: StepCallback, Inbound: true, Time: f.opts.Now().UTC(),
		Request: Request{Method: r.Method, URL: scheme + "://" + r.Host + r.URL.RequestURI(), Header: r.Header.Clone()}}
}

// refuse answers, records and reports a request that does not settle the
// flow, which goes on waiting.
func (f *Flow) refuse(ctx context.Context, t Transcript, res *CallbackResult, err error) (int, string) {
	status := http.StatusBadRequest
	if errors.Is(err, ErrStateMismatch) {
		status = http.StatusForbidden
	}
	body := renderPage(refusalPage(err))
	t.Error = err.Error()
	if res != nil {
		t.Notes = append(t.Notes, res.Notes...)
	}
	t.Response = pageResponse(status, body)
	f.mu.Lock()
	f.refused++
	n := f.refused
	f.lastRefusal = err
	f.mu.Unlock()
	if n <= maxRecordedRefusals {
		t = f.record(ctx, t)
		if hook := f.opts.OnCallbackRefused; hook != nil {
			hook(CallbackRefusal{Count: n, Status: status, Err: err, Transcript: t, Last: n == maxRecordedRefusals})
		}
	}
	return status, body
}

// Refused returns how many requests to the callback address the current
// authorization attempt refused, and why the last one was.
func (f *Flow) Refused() (n int, last error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused, f.lastRefusal
}

func pageResponse(status int, body string) *Response {
	return &Response{Status: status, StatusText: http.StatusText(status), Proto: "HTTP/1.1",
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Cache-Control": {"no-store"}}, Body: body}
}

func writeHTML(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// refusalPage says why a request did not count as the callback.
func refusalPage(err error) pageData {
	var sme *StateMismatchError
	switch {
	case errors.As(err, &sme):
		return pageData{Title: "Callback refused", Class: "bad", Lines: []string{
			sme.Reason() + ".",
			"Its code was not used. Hookscope goes on waiting for the callback of the authorization it started."}}
	case errors.Is(err, ErrNoCallbackParams):
		return pageData{Title: "Nothing to receive here", Class: "bad", Lines: []string{
			"This address is Hookscope's OAuth callback, but the request carried neither code nor error.",
			"Open the authorization link from Hookscope to start the flow."}}
	}
	return pageData{Title: "Unreadable callback", Class: "bad", Lines: []string{err.Error()}}
}

func callbackPage(res *CallbackResult, err error) pageData {
	var de *DeniedError
	switch {
	case errors.As(err, &de):
		meaning, fix := OAuthError{Code: de.Code, Description: de.Description}.Explain()
		lines := []string{"The service answered error=" + de.Code + ": " + meaning + "."}
		if de.Description != "" {
			lines = append(lines, "It said: "+de.Description)
		}
		return pageData{Title: "Authorization not granted", Class: "bad", Lines: append(lines, fix+".")}
	case err != nil:
		return pageData{Title: "Callback problem", Class: "bad", Lines: []string{err.Error()}}
	}
	who := res.AccountName
	if who == "" {
		who = res.AccountID
	}
	lines := []string{"Hookscope received the authorization code and will exchange it for a token."}
	if who != "" {
		lines = append(lines, "Account: "+who+".")
	}
	if res.ContactName != "" || res.ContactEmail != "" {
		lines = append(lines, "Authorized by: "+res.ContactName+" "+res.ContactEmail)
	}
	return pageData{Title: "Authorization received", Class: "ok", Lines: lines}
}

// accept checks a parsed callback against the flow's state and, when it
// belongs to this attempt, settles the flow on it. A denial returns a
// *DeniedError, a wrong or missing state a *StateMismatchError (the flow
// neither keeps its code nor settles), a flow already settled
// ErrAlreadyReceived.
func (f *Flow) accept(res *CallbackResult) (*CallbackResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settled {
		return res, ErrAlreadyReceived
	}
	if !f.opts.NoRedirectState && f.state.RedirectState == "" {
		// The listener starts before the authorize URL exists; nothing
		// legitimate can arrive in between.
		return res, &StateMismatchError{Param: f.opts.StateParam, NotStarted: true}
	}
	if want := f.state.RedirectState; want != "" {
		got, ok := res.Get(f.opts.StateParam)
		if !ok || got != want {
			return res, &StateMismatchError{Param: f.opts.StateParam, Missing: !ok, Expected: want}
		}
	}
	if want := f.state.StandardState; want != "" && res.State != want {
		return res, &StateMismatchError{Param: "state", Missing: res.State == ""}
	}
	// The state keeps the parameters (a later exchange sends the code),
	// not the redirected URL: the callback transcript has the request.
	kept := *res
	kept.URL = ""
	f.state.Callback = &kept
	f.settled = true
	if res.Error != "" {
		return res, &DeniedError{Code: res.Error, Description: res.ErrorDescription}
	}
	return res, nil
}

// deliver hands the outcome that settled the flow to AwaitCallback.
func (f *Flow) deliver(res *CallbackResult, err error) {
	select {
	case f.callbacks <- callbackOutcome{res: res, err: err}:
	default:
	}
}

// AwaitCallback waits for the callback that settles the flow (from the
// listener, HandleCallback or a pasted URL) until ctx ends or timeout
// passes (0: no time-out). Refused requests do not end the wait.
func (f *Flow) AwaitCallback(ctx context.Context, timeout time.Duration) (*CallbackResult, error) {
	var tc <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		tc = timer.C
	}
	select {
	case o := <-f.callbacks:
		return o.res, o.err
	case <-tc:
		msg := fmt.Sprintf("no callback arrived at %s within %s", f.profile.RedirectURI, timeout)
		if n, last := f.Refused(); n > 0 {
			msg += fmt.Sprintf("; %s to it meanwhile (the last: %v)", plural.Count(n, "request was refused", "requests were refused"), last)
		}
		return nil, &StepError{Step: StepCallback, Err: ErrCallbackTimeout, Msg: msg,
			Fix: "finish the authorization in the browser; if the browser showed an error page (often: redirect_uri does not match the registered one), fix the profile; if it landed on another address, paste that URL instead"}
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the callback: %w", ctx.Err())
	}
}

// AcceptCallbackURL takes a redirected URL the user pasted (for a
// non-local redirect URI) and checks it like a received callback. One that
// belongs to this attempt settles the flow (AwaitCallback returns it too);
// a refused one is returned as the error and changes nothing.
func (f *Flow) AcceptCallbackURL(ctx context.Context, raw string) (*CallbackResult, error) {
	t := Transcript{Step: StepCallback, Label: "pasted", Inbound: true, Time: f.opts.Now().UTC(), Request: Request{Method: http.MethodGet, URL: raw}}
	res, err := ParseCallbackURL(raw)
	if err == nil {
		res, err = f.accept(res)
	}
	if errors.Is(err, ErrAlreadyReceived) {
		return res, err
	}
	if err != nil {
		t.Error = err.Error()
	}
	if res != nil {
		t.Notes = append(t.Notes, res.Notes...)
	}
	f.record(ctx, t)
	f.saveState(ctx)
	// Settled: a code, or the service's error.
	var de *DeniedError
	if err == nil || errors.As(err, &de) {
		f.deliver(res, err)
	}
	return res, err
}

// Opener opens a URL in the user's browser. Tests and --no-browser pass
// one that does nothing.
type Opener func(ctx context.Context, url string) error

// SystemOpener opens the URL with the platform's handler: xdg-open on
// Linux and BSDs, open on macOS, rundll32 on Windows.
func SystemOpener(ctx context.Context, u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.CommandContext(ctx, "open", u)
	case "windows":
		cmd = exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.CommandContext(ctx, "xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("open the browser (%s): %w; open the URL yourself", cmd.Path, err)
	}
	// Reap it in the background; the opener's exit status says little.
	go func() { _ = cmd.Wait() }()
	return nil
}

// LoginOptions tune Login.
type LoginOptions struct {
	// Open opens the authorize URL in a browser; nil opens nothing.
	Open Opener
	// OnURL is told the authorize URL once the listener is up (print it).
	OnURL func(string)
	// Timeout bounds the wait for the callback (0: until ctx ends).
	Timeout time.Duration
}

// Login runs authorize, callback and exchange for a local redirect URI:
// the listener starts before the browser opens, the callback is checked,
// and its code is exchanged at once.
func (f *Flow) Login(ctx context.Context, o LoginOptions) (*CallbackResult, *Token, error) {
	stop, err := f.ListenCallback()
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	u, err := f.AuthorizeURL(ctx)
	if err != nil {
		return nil, nil, err
	}
	if o.OnURL != nil {
		o.OnURL(u)
	}
	if o.Open != nil {
		if err := o.Open(ctx, u); err != nil && o.OnURL == nil {
			return nil, nil, err
		}
	}
	res, err := f.AwaitCallback(ctx, o.Timeout)
	if err != nil {
		return res, nil, err
	}
	tok, err := f.Exchange(ctx, "", false)
	return res, tok, err
}
