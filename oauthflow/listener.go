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

// HandleCallback serves a redirected browser request on behalf of the
// flow: the loopback listener uses it, and so can any other server that
// receives the callback (the webhook receiver's tunnel serving
// /oauth/callback). The first request carrying code or error settles the
// flow; later ones are told so and change nothing.
func (f *Flow) HandleCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	scheme := "http"
	// Behind the tunnel the request arrives as plain http; the browser used https.
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	full := scheme + "://" + r.Host + r.URL.RequestURI()
	t := Transcript{Step: StepCallback, Inbound: true, Time: f.opts.Now().UTC(),
		Request: Request{Method: r.Method, URL: full, Header: r.Header.Clone()}}
	res, err := ParseCallbackURL(full)
	var page pageData
	status := http.StatusOK
	switch {
	case errors.Is(err, ErrNoCallbackParams):
		// Not a callback at all (a reload without parameters, a probe):
		// answer, but keep waiting for the real one.
		page = pageData{Title: "Nothing to receive here", Class: "bad", Lines: []string{
			"This address is Hookscope's OAuth callback, but the request carried neither code nor error.",
			"Open the authorization link from Hookscope to start the flow."}}
		status = http.StatusBadRequest
		writePage(w, status, page)
		return
	case err != nil:
		page = pageData{Title: "Unreadable callback", Class: "bad", Lines: []string{err.Error()}}
		status = http.StatusBadRequest
	}
	f.mu.Lock()
	already := f.delivered
	f.mu.Unlock()
	if already {
		writePage(w, http.StatusConflict, pageData{Title: "Already received", Class: "bad", Lines: []string{
			"Hookscope already received a callback for this authorization; this one was ignored.",
			"To authorize again, start a new authorization in Hookscope."}})
		return
	}
	if err == nil {
		res, err = f.accept(res)
		page = callbackPage(res, err)
	}
	if err != nil {
		t.Error = err.Error()
		if status == http.StatusOK {
			status = http.StatusBadRequest
		}
	}
	if res != nil {
		t.Notes = append(t.Notes, res.Notes...)
	}
	body := renderPage(page)
	t.Response = &Response{Status: status, StatusText: http.StatusText(status), Proto: "HTTP/1.1",
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Cache-Control": {"no-store"}}, Body: body}
	f.record(r.Context(), t)
	// Saved before the waiter wakes: the exchange it starts saves a newer
	// state (the spent code) that this one must not overwrite.
	f.saveState(r.Context())
	f.deliver(res, err)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func writePage(w http.ResponseWriter, status int, p pageData) {
	w.WriteHeader(status)
	_, _ = w.Write([]byte(renderPage(p)))
}

func callbackPage(res *CallbackResult, err error) pageData {
	var sme *StateMismatchError
	var de *DeniedError
	switch {
	case errors.As(err, &sme):
		return pageData{Title: "Callback refused", Class: "bad", Lines: []string{
			"This redirect does not belong to the authorization Hookscope started (its state value does not match), so its code was not used.",
			"If you opened an old authorization link, start again from Hookscope."}}
	case errors.As(err, &de):
		meaning, fix := OAuthError{Code: de.Code}.Explain()
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

// accept checks a parsed callback against the flow's state and remembers
// it. A denial returns a *DeniedError, a wrong or missing state a
// *StateMismatchError (whose code is discarded).
func (f *Flow) accept(res *CallbackResult) (*CallbackResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
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
	f.state.Callback = res
	if res.Error != "" {
		return res, &DeniedError{Code: res.Error, Description: res.ErrorDescription}
	}
	return res, nil
}

// deliver hands the first outcome to AwaitCallback.
func (f *Flow) deliver(res *CallbackResult, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.delivered {
		return
	}
	f.delivered = true
	select {
	case f.callbacks <- callbackOutcome{res: res, err: err}:
	default:
	}
}

// AwaitCallback waits for the callback (from the listener or
// HandleCallback) until ctx ends or timeout passes (0: no time-out).
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
		return nil, &StepError{Step: StepCallback, Err: ErrCallbackTimeout,
			Msg: fmt.Sprintf("no callback arrived at %s within %s", f.profile.RedirectURI, timeout),
			Fix: "finish the authorization in the browser; if the browser showed an error page (often: redirect_uri does not match the registered one), fix the profile; if it landed on another address, paste that URL instead"}
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the callback: %w", ctx.Err())
	}
}

// AcceptCallbackURL takes a redirected URL the user pasted (for a
// non-local redirect URI) and checks it like a received callback.
func (f *Flow) AcceptCallbackURL(ctx context.Context, raw string) (*CallbackResult, error) {
	t := Transcript{Step: StepCallback, Label: "pasted", Inbound: true, Time: f.opts.Now().UTC(), Request: Request{Method: http.MethodGet, URL: raw}}
	res, err := ParseCallbackURL(raw)
	if err == nil {
		res, err = f.accept(res)
	}
	if err != nil {
		t.Error = err.Error()
	}
	if res != nil {
		t.Notes = append(t.Notes, res.Notes...)
	}
	f.record(ctx, t)
	f.saveState(ctx)
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
