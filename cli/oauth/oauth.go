// Package oauth is `hookscope oauth`: the service's OAuth 2.0 flow step by
// step (login, authorize, exchange, refresh, call), saved profiles and
// transcripts.
package oauth

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/storage"
)

// exitCodes is what every oauth command's help says about its exit code.
const exitCodes = `Exit codes: 0 success; 1 the step failed (reason and fix printed): callback
time-out, denial, refused token call, any API call without a 2xx answer, a
failure to save to the store; 2 bad flags.`

// step is one subcommand that walks the flow.
type step struct{ name, short string }

// steps are the flow's subcommands in its order.
func steps() []step {
	return []step{
		{"login", "Authorize in the browser, receive the callback and exchange the code"},
		{"authorize", "Build the authorize URL and receive the callback (no exchange)"},
		{"exchange", "Exchange the code of the last callback (or --code) for a token"},
		{"refresh", "Get a new access token with the saved refresh token"},
		{"call", "Call the API with the saved token (three ways side by side with --method all)"},
	}
}

// NewCmd builds `hookscope oauth` and its subcommands.
func NewCmd(env *cmdutil.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "oauth <subcommand> [flags]",
		Short: "Walk the OAuth flow step by step: login, authorize, exchange, refresh, call, profiles, history",
		Long: `Walk the service's OAuth 2.0 flow step by step, showing every request and
response byte (secrets redacted unless --reveal). A profile (--profile NAME,
saved with --save) keeps the application's settings between steps.

` + exitCodes,
		Example: `  hookscope oauth login --profile demo --save --base-url http://127.0.0.1:8790 ...
  hookscope oauth call k3j9x2m7pq --profile demo --method all
  hookscope oauth history --profile demo --format har > flow.har`,
		Args:                       cmdutil.Subcommands,
		SuggestionsMinimumDistance: 2,
		RunE: func(*cobra.Command, []string) error {
			return cmdutil.UsageErrorf("missing subcommand: login, authorize, exchange, refresh, call, profiles or history")
		},
	}
	for _, s := range steps() {
		cmd.AddCommand(NewStepCmd(env, s.name, nil))
	}
	cmd.AddCommand(NewProfilesCmd(env, nil), NewHistoryCmd(env, nil))
	return cmd
}

// oauthExamples returns a subcommand's --help examples.
func oauthExamples(sub string) string {
	return map[string]string{
		"login": `  # against 'hookscope sandbox' (its demo app), saving the profile for later
  SECRET=sandbox-demo-secret hookscope oauth login --profile demo --save \
    --base-url http://127.0.0.1:8790 --client-id sandbox-demo-client \
    --client-secret-env SECRET --redirect-uri http://127.0.0.1:8765/callback

  # later: the saved profile, no browser (print the URL, still listen)
  hookscope oauth login --profile demo --no-browser

  # a tunnel redirect URI: approve, then paste the redirected URL
  hookscope oauth login --profile tunnel --paste

  # a service that wants the credentials in the form body, JSON output
  hookscope oauth login --profile demo --placement body --json`,
		"authorize": `  # print the URL and wait for the callback; the code is kept for 'exchange'
  hookscope oauth authorize --profile demo --no-browser
  # standard state and PKCE too
  hookscope oauth authorize --profile demo --standard-state --pkce`,
		"exchange": `  # exchange the code of the last 'authorize'
  hookscope oauth exchange --profile demo
  # send a code known to be used up, to see the service's answer
  hookscope oauth exchange --profile demo --force --transcript`,
		"refresh": `  hookscope oauth refresh --profile demo
  hookscope oauth refresh --profile demo --json --reveal`,
		"call": `  # medias#show with the token in the Authorization header (a hashed id, or a path)
  hookscope oauth call k3j9x2m7pq --profile demo
  hookscope oauth call /v1/medias/k3j9x2m7pq --profile demo --method header
  # the three token methods side by side, with curl commands
  hookscope oauth call k3j9x2m7pq --profile demo --method all --curl
  # any path and HTTP method
  hookscope oauth call /v1/medias/k3j9x2m7pq --profile demo --http-method PUT \
    --data 'name=New title' --content-type application/x-www-form-urlencoded`,
	}[sub]
}

// StepOptions are the flags of the steps (login, authorize, exchange,
// refresh, call); each step registers the ones it uses.
type StepOptions struct {
	Env  *cmdutil.Env
	Step string

	Profile, BaseURL, AuthURL, ClientID, SecretEnv, RedirectURI string
	Scopes                                                      []string
	Save                                                        bool
	DBPath                                                      string
	Placement                                                   string
	JSON, Reveal, Transcript, Curl                              bool
	Timeout                                                     time.Duration
	NoState, StdState, PKCE                                     bool
	NoBrowser, Paste                                            bool
	Code                                                        string
	Force                                                       bool
	Path, Media, HTTPMethod, TokenMethod, Data, ContentType     string

	placement oauthflow.Placement
	methods   []oauthflow.TokenMethod
	// recorder, when set, wraps the store as the flow's Recorder (tests
	// make saving fail with it).
	recorder func(oauthflow.Recorder) oauthflow.Recorder
}

// NewStepCmd builds `hookscope oauth <step>`; runF replaces the step in
// tests.
func NewStepCmd(env *cmdutil.Env, step string, runF func(context.Context, *StepOptions) error) *cobra.Command {
	o := &StepOptions{Env: env, Step: step}
	cmd := &cobra.Command{
		Use:     step + " [flags]",
		Example: oauthExamples(step),
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, runStep),
	}
	for _, s := range steps() {
		if s.name == step {
			cmd.Short = s.short
			cmd.Long = s.short + "."
		}
	}
	if step == "login" || step == "authorize" {
		cmd.Long += `

A request to the callback address that is not this attempt's callback (a
wrong hs_state, an old code, a page's forged request) is answered, printed
with its reason, and the wait goes on until the real callback or --timeout.
With --paste, a pasted address that is refused is explained and another line
is read, until --timeout.`
	}
	if step == "call" {
		cmd.Long += "\n\nWith --method all, the command fails when any method gets no 2xx answer."
	}
	cmd.Long += "\n\n" + exitCodes
	fs := cmd.Flags()
	fs.StringVar(&o.Profile, "profile", "", "profile name in the store (default \"default\"); flags given override its fields")
	fs.StringVar(&o.BaseURL, "base-url", "", "the service's API base URL ({base_url}, serves /oauth/token and /v1/)")
	fs.StringVar(&o.AuthURL, "auth-url", "", "the service's web app URL serving /oauth/authorize (default: the base URL)")
	fs.StringVar(&o.ClientID, "client-id", "", "the application's client ID")
	fs.StringVar(&o.SecretEnv, "client-secret-env", "", "name of the environment variable holding the client secret (kept out of shell history)")
	fs.StringVar(&o.RedirectURI, "redirect-uri", "", "the Redirect URI exactly as registered for the application")
	fs.StringArrayVar(&o.Scopes, "scope", nil, "a `scope` you expect to be granted (repeatable or comma-separated); missing ones are reported")
	fs.BoolVar(&o.Save, "save", false, "save the profile (with its client secret) in the store under --profile")
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.BoolVar(&o.JSON, "json", false, "print JSON (callback parameters, token fields, transcripts) instead of text")
	fs.BoolVar(&o.Reveal, "reveal", false, "show client secret, codes and tokens instead of REDACTED")
	fs.BoolVar(&o.Transcript, "transcript", false, "print the full transcript of this run as Markdown")
	fs.BoolVar(&o.Curl, "curl", false, "print each request as a curl command")
	_ = cmd.RegisterFlagCompletionFunc("profile", cmdutil.CompleteProfiles)
	if step == "login" || step == "exchange" || step == "refresh" {
		fs.StringVar(&o.Placement, "placement", "query", "where token calls put client and grant parameters: query (the spec), body or basic")
		_ = cmd.RegisterFlagCompletionFunc("placement", cmdutil.CompleteFixed("query\tURL query parameters (the spec)", "body\tform body", "basic\tHTTP Basic for the client"))
	}
	if step == "login" || step == "authorize" {
		fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the callback, or for an accepted --paste (0: until interrupted)")
		fs.BoolVar(&o.NoState, "no-state", false, "do not carry the anti-forgery hs_state parameter inside redirect_uri")
		fs.BoolVar(&o.StdState, "standard-state", false, "also send the standard OAuth state parameter")
		fs.BoolVar(&o.PKCE, "pkce", false, "use PKCE (S256)")
		fs.BoolVar(&o.NoBrowser, "no-browser", false, "print the URL instead of opening a browser (still listens for the callback)")
		fs.BoolVar(&o.Paste, "paste", false, "read the redirected URL from stdin instead of listening (for non-local redirect URIs)")
	}
	if step == "exchange" {
		fs.StringVar(&o.Code, "code", "", "the authorization code (default: the code of the last callback of this profile)")
		fs.BoolVar(&o.Force, "force", false, "send a code known to be used up (exchanged, or refused with invalid_grant) to see the service's answer")
	}
	if step == "call" {
		cmd.Use = "call [PATH | URL | HASHED_ID] [flags]"
		cmd.Args = cmdutil.MaxArgs(1, "one path (/v1/...), full URL or media hashed id")
		fs.StringVar(&o.Path, "path", "", "path under the base URL, or a full URL (default /v1/medias/<--media>); or give it as the argument")
		fs.StringVar(&o.Media, "media", "", "hashed id for the default path /v1/medias/<hashed_id>; or give it as the argument")
		fs.StringVar(&o.HTTPMethod, "http-method", "GET", "HTTP method: GET, PUT, POST, DELETE…")
		fs.StringVar(&o.TokenMethod, "method", "header", "how to pass the token: access_token, bearer_token, header or all (side by side)")
		fs.StringVar(&o.Data, "data", "", "request body")
		fs.StringVar(&o.ContentType, "content-type", "", "Content-Type of --data")
		_ = cmd.RegisterFlagCompletionFunc("method", cmdutil.CompleteFixed("header\tAuthorization: Bearer", "access_token\tquery parameter access_token", "bearer_token\tquery parameter bearer_token", "all\tthe three side by side"))
		_ = cmd.RegisterFlagCompletionFunc("http-method", cmdutil.CompleteFixed("GET", "PUT", "POST", "DELETE", "PATCH"))
	}
	return cmd
}

// validate checks the flags; call takes its argument as a path when it
// starts with / or is a URL, else as a media hashed id.
func (o *StepOptions) validate(args []string) error {
	var err error
	if o.placement, err = oauthflow.ParsePlacement(o.Placement); err != nil {
		return cmdutil.UsageErrorf("--placement: %v", err)
	}
	if o.Step == "call" {
		if len(args) == 1 {
			arg := args[0]
			isPath := strings.HasPrefix(arg, "/") || strings.Contains(arg, "://")
			switch {
			case isPath && o.Path != "" && o.Path != arg, !isPath && o.Media != "" && o.Media != arg:
				return cmdutil.UsageErrorf("the argument %q and --path/--media disagree: give what to call once", arg)
			case isPath:
				o.Path = arg
			default:
				o.Media = arg
			}
		}
		if o.methods, err = oauthflow.ParseTokenMethods(o.TokenMethod); err != nil {
			return cmdutil.UsageErrorf("--method: %v", err)
		}
		if o.Path == "" && o.Media == "" {
			return cmdutil.UsageErrorf("give what to call: a path such as /v1/medias/<hashed_id>, a full URL or a media hashed id (the argument, --path or --media)")
		}
	}
	if o.Timeout < 0 {
		return cmdutil.UsageErrorf("--timeout must not be negative")
	}
	if o.Save && o.Profile == "" {
		return cmdutil.UsageErrorf("--save needs --profile NAME")
	}
	if o.SecretEnv != "" && o.Env.Getenv(o.SecretEnv) == "" {
		return cmdutil.UsageErrorf("--client-secret-env %s: the environment variable is unset or empty", o.SecretEnv)
	}
	return nil
}

func runStep(ctx context.Context, o *StepOptions) error {
	sub := o.Step
	// Refusals of the callback are printed from the listener's goroutine
	// while this one prints too: every write goes whole.
	env := *o.Env
	env.Stdout, env.Stderr = cmdutil.NewSyncWriter(o.Env.Stdout), cmdutil.NewSyncWriter(o.Env.Stderr)
	// login and authorize start a flow, exchange --code brings its own
	// code, and --save keeps a profile: they may create the store. The
	// other steps continue a flow the store holds.
	open := cmdutil.OpenExistingStore
	if sub == "login" || sub == "authorize" || o.Save || o.Code != "" {
		open = func(_ *cmdutil.Env, path string) (*storage.DB, error) { return cmdutil.OpenStore(path) }
	}
	db, err := open(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	p, stored, err := o.resolveProfile(ctx, &env, db)
	if err != nil {
		return err
	}
	if o.Save {
		if err := db.SaveProfile(ctx, p); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "saved profile %q in %s\n", p.Name, db.Path())
	}
	var rec oauthflow.Recorder = db
	if o.recorder != nil {
		rec = o.recorder(db)
	}
	var flow *oauthflow.Flow
	opts := oauthflow.Options{Placement: o.placement, NoRedirectState: o.NoState, StandardState: o.StdState, PKCE: o.PKCE,
		Recorder: rec, UserAgent: "Hookscope/" + env.Version,
		OnCallbackRefused: func(r oauthflow.CallbackRefusal) { o.printRefusal(&env, flow, r) }}
	var tok *oauthflow.Token
	if t, err := db.LoadToken(ctx, p.Name); err == nil {
		tok = &t
	} else if !errors.Is(err, oauthflow.ErrNotFound) {
		return err
	}
	st := oauthflow.State{}
	if sub == "exchange" {
		if st, err = db.LatestFlowState(ctx, p.Name); err != nil && !errors.Is(err, oauthflow.ErrNotFound) {
			return err
		}
	}
	if flow, err = oauthflow.Resume(p, st, tok, opts); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	r := &oauthReport{Profile: p.Name, Store: db.Path(), profileSaved: stored || o.Save}
	var stepErr error
	switch sub {
	case "login", "authorize":
		stepErr = o.authorize(ctx, &env, flow, r, sub == "login")
	case "exchange":
		var t *oauthflow.Token
		t, stepErr = flow.Exchange(ctx, o.Code, o.Force)
		r.Token = t
	case "refresh":
		res, err := flow.Refresh(ctx)
		stepErr = err
		if res != nil {
			r.Token = &res.Token
			r.Refresh = res
		}
	case "call":
		path := o.Path
		if path == "" {
			path = oauthflow.DefaultCallPath(o.Media)
		}
		res, err := flow.Call(ctx, oauthflow.CallRequest{Method: o.HTTPMethod, Path: path, Body: o.Data, ContentType: o.ContentType, Methods: o.methods})
		stepErr = err
		r.calls = res
	}
	// A step that worked but could not be saved failed: the next step
	// (another process) would not find its code or token.
	if err := flow.RecordErr(); err != nil {
		r.saveFailed = true
		if stepErr == nil {
			stepErr = &oauthflow.StepError{Step: oauthflow.Step(sub), Msg: fmt.Sprintf("the %s worked, but saving it to the store %s failed: %v", sub, db.Path(), err),
				Fix: "check that the store's disk is writable and not full, then run the step again", Err: err}
		}
	}
	return o.finish(&env, flow, r, stepErr)
}

// printRefusal prints a request to the callback address that was refused
// while the wait goes on: its status and reason, redacted unless --reveal
// (on stderr with --json, which keeps stdout for the report).
func (o *StepOptions) printRefusal(env *cmdutil.Env, flow *oauthflow.Flow, r oauthflow.CallbackRefusal) {
	w := env.Stdout
	if o.JSON {
		w = env.Stderr
	}
	why := r.Transcript.Error
	if why == "" && r.Err != nil {
		why = r.Err.Error()
	}
	if !o.Reveal && flow != nil {
		why = oauthflow.Redact(oauthflow.Transcript{Error: why}, flow.Secrets()...).Error
	}
	line := fmt.Sprintf("Callback refused (answered %d): %s; still waiting for the real callback.", r.Status, refusalReason(why))
	if r.Last {
		line += " Later refusals are answered but no longer printed."
	}
	fmt.Fprintln(w, line)
}

// resolveProfile merges the stored profile (if any) with the flags, and
// reports whether the store holds it.
func (o *StepOptions) resolveProfile(ctx context.Context, env *cmdutil.Env, db *storage.DB) (oauthflow.Profile, bool, error) {
	name := o.Profile
	if name == "" {
		name = "default"
	}
	p, err := db.LoadProfile(ctx, name)
	stored := err == nil
	if err != nil && !errors.Is(err, oauthflow.ErrNotFound) {
		return p, stored, err
	}
	p.Name = name
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.BaseURL, o.BaseURL)
	set(&p.AuthURL, o.AuthURL)
	set(&p.ClientID, o.ClientID)
	set(&p.RedirectURI, o.RedirectURI)
	if o.SecretEnv != "" {
		v := env.Getenv(o.SecretEnv)
		if v == "" {
			return p, stored, cmdutil.UsageErrorf("--client-secret-env %s: the environment variable is unset or empty", o.SecretEnv)
		}
		p.ClientSecret = v
	}
	if len(o.Scopes) > 0 {
		p.Scopes = nil
		for _, s := range o.Scopes {
			for _, part := range strings.Split(s, ",") {
				if part = strings.TrimSpace(part); part != "" {
					p.Scopes = append(p.Scopes, part)
				}
			}
		}
	}
	if err := p.Validate(); err != nil {
		if !stored && o.Profile != "" && o.BaseURL == "" && o.ClientID == "" {
			return p, stored, cmdutil.UsageErrorf("profile %q is not in the store %s: create it with the profile flags and --save (see --help)", name, db.Path())
		}
		return p, stored, cmdutil.UsageErrorf("%v (give the profile flags, or --profile NAME of a saved profile)", err)
	}
	return p, stored, nil
}

// authorize runs step 1 and 2 (and 3 for login).
func (o *StepOptions) authorize(ctx context.Context, env *cmdutil.Env, flow *oauthflow.Flow, r *oauthReport, exchange bool) error {
	p := flow.Profile()
	info := env.Stdout
	if o.JSON {
		info = env.Stderr
	}
	_, _, _, local := p.LocalRedirect()
	paste := o.Paste || !local
	for _, w := range oauthflow.Preflight(p) {
		if paste && w.Code == "port-busy" {
			continue
		}
		if paste && w.Code == "remote-redirect" && o.Paste {
			continue
		}
		r.Warnings = append(r.Warnings, w)
		if w.Code == "exact-match" || w.Code == "remote-redirect" {
			continue // said below, where it matters
		}
		fmt.Fprintf(env.Stderr, "warning: %s\n", w.Message)
	}
	if !paste {
		stop, err := flow.ListenCallback()
		if err != nil {
			return err
		}
		defer stop()
	}
	u, err := flow.AuthorizeURL(ctx)
	if err != nil {
		return err
	}
	r.AuthorizeURL = u
	if paste {
		fmt.Fprintf(info, "Open this URL in a browser, approve, then paste the full address the browser lands on:\n\n  %s\n\n", u)
	} else {
		fmt.Fprintf(info, "Listening for the callback on %s (the service compares it exactly with the registered Redirect URI).\n", p.RedirectURI)
		if o.NoBrowser {
			fmt.Fprintf(info, "Open this URL in a browser:\n\n  %s\n\n", u)
		} else {
			fmt.Fprintf(info, "Opening the browser at:\n\n  %s\n\n", u)
			if err := oauthflow.SystemOpener(ctx, u); err != nil {
				fmt.Fprintf(env.Stderr, "warning: %v\n", err)
			}
		}
		fmt.Fprintf(info, "Waiting up to %s for the callback…\n", human.Duration(o.Timeout))
	}
	var res *oauthflow.CallbackResult
	if paste {
		res, err = o.awaitPaste(ctx, env, flow)
	} else {
		res, err = flow.AwaitCallback(ctx, o.Timeout)
	}
	r.Callback = res
	if err != nil {
		return err
	}
	if !exchange {
		fmt.Fprintln(info, "The code is kept in the store; run 'hookscope oauth exchange' to trade it for a token (codes are short-lived).")
		return nil
	}
	tok, err := flow.Exchange(ctx, "", false)
	r.Token = tok
	return err
}

// refusalReason drops the "callback refused: " a refusal's error starts
// with, for a line that already says so.
func refusalReason(why string) string {
	return strings.TrimSuffix(strings.TrimPrefix(why, "callback refused: "), ".")
}

// awaitPaste reads pasted addresses from stdin until one settles the flow
// (its code, or the service's error) or --timeout passes: a refused one
// (another attempt's state, not a callback URL) is explained and another
// line is read.
func (o *StepOptions) awaitPaste(ctx context.Context, env *cmdutil.Env, flow *oauthflow.Flow) (*oauthflow.CallbackResult, error) {
	if env.Stdin == nil {
		return nil, errors.New("--paste: no standard input to read the redirected URL from")
	}
	info := env.Stdout
	if o.JSON {
		info = env.Stderr
	}
	lines := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(env.Stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				select {
				case lines <- l:
				case <-ctx.Done():
					return
				}
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		readErr <- err
	}()
	var deadline <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	refused := 0
	var last error
	gaveUp := func(why string) error {
		msg := why
		if refused > 0 {
			msg += fmt.Sprintf("; %s (the last: %v)", plural.Count(refused, "pasted address was refused", "pasted addresses were refused"), last)
		}
		return &oauthflow.StepError{Step: oauthflow.StepCallback, Err: oauthflow.ErrCallbackTimeout, Msg: msg,
			Fix: "approve in the browser, then paste the full address it lands on (it starts with the Redirect URI and carries code= or error=)"}
	}
	for {
		select {
		case l := <-lines:
			res, err := flow.AcceptCallbackURL(ctx, l)
			var de *oauthflow.DeniedError
			if err == nil || errors.As(err, &de) || errors.Is(err, oauthflow.ErrAlreadyReceived) {
				return res, err
			}
			refused++
			last = err
			why := err.Error()
			if !o.Reveal {
				why = oauthflow.Redact(oauthflow.Transcript{Error: why}, flow.Secrets()...).Error
			}
			fmt.Fprintf(info, "That address was refused: %s.\nPaste the full address the browser landed on after approving (still waiting", refusalReason(why))
			if o.Timeout > 0 {
				fmt.Fprintf(info, ", up to %s in all", human.Duration(o.Timeout))
			}
			fmt.Fprintln(info, "):")
		case err := <-readErr:
			return nil, gaveUp(fmt.Sprintf("standard input ended (%v) before an accepted address was pasted", err))
		case <-deadline:
			return nil, gaveUp(fmt.Sprintf("no accepted address was pasted within %s", human.Duration(o.Timeout)))
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the pasted address: %w", ctx.Err())
		}
	}
}

// oauthReport is what a step prints.
type oauthReport struct {
	Profile      string                    `json:"profile"`
	Store        string                    `json:"store"`
	AuthorizeURL string                    `json:"authorize_url,omitempty"`
	Warnings     []oauthflow.Warning       `json:"warnings,omitempty"`
	Callback     *oauthflow.CallbackResult `json:"callback,omitempty"`
	Token        *oauthflow.Token          `json:"token,omitempty"`
	TokenState   *tokenState               `json:"token_state,omitempty"`
	Refresh      *oauthflow.RefreshResult  `json:"refresh,omitempty"`
	Calls        []callLine                `json:"calls,omitempty"`
	Error        string                    `json:"error,omitempty"`
	Fix          string                    `json:"fix,omitempty"`
	Transcripts  []oauthflow.Transcript    `json:"transcripts"`
	Curl         []string                  `json:"curl,omitempty"`

	calls oauthflow.Calls
	// saveFailed: the step's outcome could not be saved to the store.
	saveFailed bool
	// profileSaved: the store holds the profile (or --save put it there),
	// so later steps find it by name.
	profileSaved bool
	// denial is the service's error on the callback, explained in the
	// callback's block rather than again after the steps.
	denial *oauthflow.DeniedError
}

// callLine is one API call in the JSON report: why it failed, redacted
// like the transcripts, beside its outcome.
type callLine struct {
	oauthflow.CallResult
	Error string `json:"error,omitempty"`
	Fix   string `json:"fix,omitempty"`
}

type tokenState struct {
	TimeLeft      string   `json:"time_left,omitempty"`
	Expired       bool     `json:"expired"`
	MissingScopes []string `json:"missing_scopes,omitempty"`
}

// redactToken hides a token's secrets unless reveal.
func redactToken(t oauthflow.Token, reveal bool) oauthflow.Token {
	if reveal {
		return t
	}
	if t.AccessToken != "" {
		t.AccessToken = oauthflow.Redacted
	}
	if t.RefreshToken != "" {
		t.RefreshToken = oauthflow.Redacted
	}
	return t
}

func (o *StepOptions) finish(env *cmdutil.Env, flow *oauthflow.Flow, r *oauthReport, stepErr error) error {
	ro := flow.RenderOptions(o.Reveal)
	r.Transcripts = flow.Transcripts(o.Reveal)
	if r.Callback != nil {
		c := *r.Callback
		if !o.Reveal && c.Code != "" {
			c.Code = oauthflow.Redacted
			c.URL = oauthflow.Redact(oauthflow.Transcript{Request: oauthflow.Request{URL: c.URL}}, ro.Secrets...).Request.URL
			params := make([]oauthflow.Param, len(c.Params))
			for i, p := range c.Params {
				if p.Name == "code" {
					p.Value = oauthflow.Redacted
				}
				params[i] = p
			}
			c.Params = params
		}
		r.Callback = &c
	}
	now := time.Now()
	if r.Token != nil {
		t := redactToken(*r.Token, o.Reveal)
		r.Token = &t
		r.TokenState = &tokenState{Expired: t.Expired(now), MissingScopes: t.MissingScopes(flow.Profile().Scopes)}
		if !t.ExpiresAt.IsZero() {
			r.TokenState.TimeLeft = t.TimeLeft(now).Round(time.Second).String()
		}
	}
	if r.Refresh != nil {
		rr := *r.Refresh
		rr.Token = redactToken(rr.Token, o.Reveal)
		r.Refresh = &rr
	}
	for _, c := range r.calls {
		t := c.Transcript
		if !o.Reveal {
			t = oauthflow.Redact(t, ro.Secrets...)
		}
		r.Calls = append(r.Calls, callLine{CallResult: c, Error: t.Error, Fix: t.Fix})
	}
	for _, t := range flow.Transcripts(true) {
		if !t.Inbound && t.Step != oauthflow.StepAuthorize {
			r.Curl = append(r.Curl, t.Curl(ro))
		}
	}
	if stepErr != nil {
		var se *oauthflow.StepError
		var de *oauthflow.DeniedError
		switch {
		case errors.As(stepErr, &de):
			meaning, fix := oauthflow.OAuthError{Code: de.Code, Description: de.Description}.Explain()
			r.Error, r.Fix, r.denial = "the service redirected with error="+de.Code+": "+meaning, fix, de
		case errors.As(stepErr, &se):
			r.Error, r.Fix = se.Msg, se.Fix
		default:
			r.Error = stepErr.Error()
		}
		if !o.Reveal {
			red := oauthflow.Redact(oauthflow.Transcript{Error: r.Error, Fix: r.Fix}, ro.Secrets...)
			r.Error, r.Fix = red.Error, red.Fix
		}
	}
	if o.JSON {
		if err := cmdutil.PrintJSON(env, r); err != nil {
			return err
		}
	} else {
		o.printText(env, flow, r)
		if o.Curl {
			for _, c := range r.Curl {
				fmt.Fprintf(env.Stdout, "\n%s\n", c)
			}
		}
		if o.Transcript {
			fmt.Fprintf(env.Stdout, "\n%s", oauthflow.Markdown("hookscope oauth: profile "+r.Profile, flow.Transcripts(true), ro))
		}
	}
	if stepErr != nil {
		// Explained once above (text or JSON); the exit gets a short line.
		return stepFailed{}
	}
	return nil
}

// stepFailed is a failure already explained on stdout: Execute's line on
// stderr only says the command failed.
type stepFailed struct{}

// Error is the short message.
func (stepFailed) Error() string { return "failed (exit 1); the reason and fix are printed above" }

func (o *StepOptions) printText(env *cmdutil.Env, flow *oauthflow.Flow, r *oauthReport) {
	w := env.Stdout
	// What the Token block below says (the times, the refresh token's
	// fate) is said there once, not again among the token step's notes.
	saidBelow := func(t oauthflow.Transcript, note string) bool {
		if r.Token == nil || t.Error != "" || (t.Step != oauthflow.StepExchange && t.Step != oauthflow.StepRefresh) {
			return false
		}
		return (r.Refresh != nil && note == r.Refresh.Note) || strings.HasPrefix(note, "token obtained at ")
	}
	if c := r.Callback; c != nil {
		if c.Denied() {
			fmt.Fprintf(w, "Callback: error=%s", c.Error)
			if c.ErrorDescription != "" {
				fmt.Fprintf(w, " (%s)", c.ErrorDescription)
			}
			fmt.Fprintln(w)
		} else if c.Code != "" {
			fmt.Fprintf(w, "Callback: code %s\n  account %s %q %s\n  contact %s %s <%s>\n", c.Code, c.AccountID, c.AccountName, c.AccountURL, c.ContactID, c.ContactName, c.ContactEmail)
		}
		if len(c.Extra) > 0 {
			var ex []string
			for _, p := range c.Extra {
				ex = append(ex, p.Name+"="+p.Value)
			}
			fmt.Fprintf(w, "  extra parameters: %s\n", strings.Join(ex, " "))
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if r.denial != nil {
			meaning, _ := oauthflow.OAuthError{Code: r.denial.Code, Description: r.denial.Description}.Explain()
			fmt.Fprintf(w, "  means: %s\n  fix: %s\n", meaning, r.Fix)
		}
	}
	// Step lines: one per HTTP exchange of this run, each with its error.
	explained := r.denial != nil
	lastBody := ""
	for _, t := range r.Transcripts {
		if t.Inbound || t.Step == oauthflow.StepAuthorize {
			continue
		}
		status := "no answer"
		if t.Response != nil {
			status = fmt.Sprintf("%d %s in %s", t.Response.Status, t.Response.StatusText, human.Duration(t.Response.Duration))
		}
		fmt.Fprintf(w, "%s: %s %s -> %s\n", t.Title(), t.Request.Method, t.Request.URL, status)
		for _, n := range t.Notes {
			if !saidBelow(t, n) {
				fmt.Fprintf(w, "  note: %s\n", n)
			}
		}
		switch {
		case t.Step != oauthflow.StepCall || t.Response == nil || t.Response.Body == "":
		case t.Response.Body == lastBody:
			// --method all: the same answer three ways is shown once.
			fmt.Fprintln(w, "  (the same body as above)")
		default:
			// What the API answered: the point of a call.
			lastBody = t.Response.Body
			b := cmdutil.PrettyBody(env, []byte(t.Response.Body))
			if !bytes.HasSuffix(b, []byte("\n")) {
				b = append(b, '\n')
			}
			_, _ = w.Write(b)
			if t.Response.Truncated {
				fmt.Fprintf(w, "  (the first %s of the body)\n", plural.S(len(t.Response.Body), "byte"))
			}
		}
		if t.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", t.Error)
			if t.Fix != "" {
				fmt.Fprintf(w, "  fix: %s\n", t.Fix)
			}
			explained = explained || t.Error == r.Error
		}
	}
	if t := r.Token; t != nil {
		fmt.Fprintf(w, "Token: type %s, access %s, refresh %s, scope %v\n", t.TokenType, t.AccessToken, t.RefreshToken, t.Scope)
		if !t.ExpiresAt.IsZero() {
			fmt.Fprintf(w, "  obtained %s, expires %s (%s left)\n", t.ObtainedAt.Format(time.RFC3339), t.ExpiresAt.Format(time.RFC3339), human.Duration(t.TimeLeft(time.Now())))
		} else {
			fmt.Fprintf(w, "  obtained %s (the service gave no expires_in)\n", t.ObtainedAt.Format(time.RFC3339))
		}
		if len(r.TokenState.MissingScopes) > 0 {
			fmt.Fprintf(w, "  missing scopes: %v\n", r.TokenState.MissingScopes)
		}
		if r.Refresh != nil {
			fmt.Fprintf(w, "  %s\n", r.Refresh.Note)
		}
		switch {
		case r.saveFailed:
		case r.profileSaved:
			fmt.Fprintf(w, "  saved for profile %q in %s\n", r.Profile, r.Store)
		default:
			fmt.Fprintf(w, "  profile %q is not in the store: give later steps the same profile flags, or --save to keep it\n", r.Profile)
		}
	}
	if r.Error != "" && !explained {
		fmt.Fprintf(w, "Error: %s\n", r.Error)
		if r.Fix != "" {
			fmt.Fprintf(w, "Fix: %s\n", r.Fix)
		}
	}
}

// ProfilesOptions are `oauth profiles`' flags.
type ProfilesOptions struct {
	Env    *cmdutil.Env
	DBPath string
	JSON   bool
	Delete string
}

// NewProfilesCmd builds `hookscope oauth profiles`; runF replaces the
// listing in tests.
func NewProfilesCmd(env *cmdutil.Env, runF func(context.Context, *ProfilesOptions) error) *cobra.Command {
	o := &ProfilesOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "profiles [--delete NAME] [flags]",
		Short: "List saved profiles and their tokens (--delete NAME removes one)",
		Example: `  hookscope oauth profiles
  hookscope oauth profiles --json
  hookscope oauth profiles --delete demo`,
		Args: cmdutil.NoArgs,
		RunE: cmdutil.RunE(o, func([]string) error { return nil }, runF, runProfiles),
	}
	cmdutil.AddDBFlag(cmd.Flags(), &o.DBPath)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&o.Delete, "delete", "", "delete this profile and its token (its history stays)")
	_ = cmd.RegisterFlagCompletionFunc("delete", cmdutil.CompleteProfiles)
	return cmd
}

func runProfiles(ctx context.Context, o *ProfilesOptions) error {
	env := o.Env
	db, err := cmdutil.OpenExistingStore(env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.Delete != "" {
		if err := db.DeleteProfile(ctx, o.Delete); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "deleted profile %q\n", o.Delete)
		return nil
	}
	ps, err := db.ListProfiles(ctx)
	if err != nil {
		return err
	}
	type row struct {
		oauthflow.Profile
		HasSecret bool             `json:"has_client_secret"`
		Token     *oauthflow.Token `json:"token,omitempty"`
		TimeLeft  string           `json:"time_left,omitempty"`
	}
	rows := []row{}
	now := time.Now()
	for _, p := range ps {
		rw := row{Profile: p, HasSecret: p.ClientSecret != ""}
		rw.ClientSecret = ""
		if t, err := db.LoadToken(ctx, p.Name); err == nil {
			t = redactToken(t, false)
			rw.Token = &t
			if !t.ExpiresAt.IsZero() {
				rw.TimeLeft = human.Duration(t.TimeLeft(now))
			}
		}
		rows = append(rows, rw)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	if o.JSON {
		return cmdutil.PrintJSON(env, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(env.Stdout, "no profiles in %s; create one with 'hookscope oauth login --profile NAME --save …'\n", db.Path())
		return nil
	}
	for _, rw := range rows {
		tok := "no token"
		if rw.Token != nil {
			tok = "token " + orNone(rw.TimeLeft) + " left"
			if rw.Token.Expired(now) {
				tok = "token expired"
			}
		}
		fmt.Fprintf(env.Stdout, "%-16s %s  client %s  redirect %s  %s\n", rw.Name, rw.BaseURL, rw.ClientID, rw.RedirectURI, tok)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(lifetime unknown)"
	}
	return s
}

// HistoryOptions are `oauth history`' flags.
type HistoryOptions struct {
	Env     *cmdutil.Env
	DBPath  string
	Profile string
	Flow    string
	Format  string
	Limit   int
	Reveal  bool
}

// NewHistoryCmd builds `hookscope oauth history`; runF replaces the
// printing in tests.
func NewHistoryCmd(env *cmdutil.Env, runF func(context.Context, *HistoryOptions) error) *cobra.Command {
	o := &HistoryOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "history [--profile NAME] [--format md|har|json] [flags]",
		Short: "Print saved transcripts as Markdown, HAR or JSON",
		Example: `  hookscope oauth history --profile demo
  hookscope oauth history --profile demo --format har > flow.har
  hookscope oauth history --flow 3xYz... --format json --reveal`,
		Args: cmdutil.NoArgs,
		RunE: cmdutil.RunE(o, o.validate, runF, runHistory),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.StringVar(&o.Profile, "profile", "", "only this profile's transcripts")
	fs.StringVar(&o.Flow, "flow", "", "only this flow's transcripts")
	fs.StringVar(&o.Format, "format", "md", "md (Markdown report), har (HAR 1.2) or json")
	fs.IntVar(&o.Limit, "limit", 50, "at most this many (the latest)")
	fs.BoolVar(&o.Reveal, "reveal", false, "show secrets instead of REDACTED")
	_ = cmd.RegisterFlagCompletionFunc("profile", cmdutil.CompleteProfiles)
	_ = cmd.RegisterFlagCompletionFunc("format", cmdutil.CompleteFixed("md\tMarkdown report", "har\tHAR 1.2", "json\ttranscripts as JSON"))
	return cmd
}

func (o *HistoryOptions) validate([]string) error {
	if o.Format != "md" && o.Format != "har" && o.Format != "json" {
		return cmdutil.UsageErrorf("--format must be md, har or json, got %q", o.Format)
	}
	if o.Limit <= 0 {
		return cmdutil.UsageErrorf("--limit must be positive")
	}
	return nil
}

func runHistory(ctx context.Context, o *HistoryOptions) error {
	env := o.Env
	db, err := cmdutil.OpenExistingStore(env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	ts, err := db.ListTranscripts(ctx, o.Profile, o.Flow, o.Limit)
	if err != nil {
		return err
	}
	// Beyond redaction by name, hide every known secret value of the
	// profiles involved.
	var secrets []string
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.Profile] {
			continue
		}
		seen[t.Profile] = true
		if p, err := db.LoadProfile(ctx, t.Profile); err == nil {
			secrets = append(secrets, p.ClientSecret)
		}
		if tok, err := db.LoadToken(ctx, t.Profile); err == nil {
			secrets = append(secrets, tok.AccessToken, tok.RefreshToken)
		}
	}
	ro := oauthflow.RenderOptions{Reveal: o.Reveal, Secrets: secrets}
	switch o.Format {
	case "har":
		b, err := oauthflow.HAR(ts, env.Version, ro)
		if err != nil {
			return err
		}
		_, err = env.Stdout.Write(append(b, '\n'))
		return err
	case "json":
		if !o.Reveal {
			for i := range ts {
				ts[i] = oauthflow.Redact(ts[i], secrets...)
			}
		}
		if ts == nil {
			ts = []oauthflow.Transcript{}
		}
		return cmdutil.PrintJSON(env, ts)
	}
	fmt.Fprint(env.Stdout, oauthflow.Markdown("Hookscope OAuth history", ts, ro))
	return nil
}
