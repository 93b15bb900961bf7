package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/storage"
)

const oauthUsage = `Usage: hookscope oauth <subcommand> [flags]

Walk the service's OAuth 2.0 flow step by step, showing every request and
response byte (secrets redacted unless --reveal).

Subcommands:
  login      authorize in the browser, receive the callback and exchange the code
  authorize  build the authorize URL and receive the callback (no exchange)
  exchange   exchange the code of the last callback (or --code) for a token
  refresh    get a new access token with the saved refresh token
  call       call the API with the saved token (three ways side by side with --method all)
  profiles   list saved profiles and their tokens (--delete NAME removes one)
  history    print saved transcripts as Markdown, HAR or JSON

Run 'hookscope oauth <subcommand> --help' for flags and examples.
`

func runOAuth(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := env.Stdout
		if len(args) == 0 {
			w = env.Stderr
		}
		fmt.Fprint(w, oauthUsage)
		if len(args) == 0 {
			return usageError("missing subcommand (login, authorize, exchange, refresh, call, profiles, history)")
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "login", "authorize", "exchange", "refresh", "call":
		return runOAuthStep(ctx, env, sub, rest)
	case "profiles":
		return runOAuthProfiles(ctx, env, rest)
	case "history":
		return runOAuthHistory(ctx, env, rest)
	}
	return usageError("unknown subcommand %q (login, authorize, exchange, refresh, call, profiles, history)", sub)
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
  # send a spent code anyway to see the service's answer
  hookscope oauth exchange --profile demo --force --transcript`,
		"refresh": `  hookscope oauth refresh --profile demo
  hookscope oauth refresh --profile demo --json --reveal`,
		"call": `  # medias#show with the token in the Authorization header
  hookscope oauth call --profile demo --media k3j9x2m7pq
  # the three token methods side by side, with curl commands
  hookscope oauth call --profile demo --media k3j9x2m7pq --method all --curl
  # any path and HTTP method
  hookscope oauth call --profile demo --path /v1/medias/k3j9x2m7pq --http-method PUT \
    --data 'name=New title' --content-type application/x-www-form-urlencoded`,
	}[sub]
}

// oauthFlags are the flags every step shares.
type oauthFlags struct {
	profile, baseURL, authURL, clientID, secretEnv, redirectURI string
	scopes                                                      multiFlag
	save                                                        bool
	db                                                          string
	placement                                                   string
	jsonOut, reveal, transcript, curl                           bool
	timeout                                                     time.Duration
	noState, stdState, pkce                                     bool
	noBrowser, paste                                            bool
	code                                                        string
	force                                                       bool
	path, media, httpMethod, tokenMethod, data, contentType     string
}

func addOAuthFlags(fs *flag.FlagSet, sub string) *oauthFlags {
	o := &oauthFlags{}
	fs.StringVar(&o.profile, "profile", "", "profile name in the store (default \"default\"); flags given override its fields")
	fs.StringVar(&o.baseURL, "base-url", "", "the service's API base URL ({base_url}, serves /oauth/token and /v1/)")
	fs.StringVar(&o.authURL, "auth-url", "", "the service's web app URL serving /oauth/authorize (default: the base URL)")
	fs.StringVar(&o.clientID, "client-id", "", "the application's client ID")
	fs.StringVar(&o.secretEnv, "client-secret-env", "", "name of the environment variable holding the client secret (kept out of shell history)")
	fs.StringVar(&o.redirectURI, "redirect-uri", "", "the Redirect URI exactly as registered for the application")
	fs.Var(&o.scopes, "scope", "a scope you expect to be granted (repeatable or comma-separated); missing ones are reported")
	fs.BoolVar(&o.save, "save", false, "save the profile (with its client secret) in the store under --profile")
	fs.StringVar(&o.db, "db", "", "store file (default: the app's store in the user config directory)")
	fs.BoolVar(&o.jsonOut, "json", false, "print JSON (callback parameters, token fields, transcripts) instead of text")
	fs.BoolVar(&o.reveal, "reveal", false, "show client secret, codes and tokens instead of REDACTED")
	fs.BoolVar(&o.transcript, "transcript", false, "print the full transcript of this run as Markdown")
	fs.BoolVar(&o.curl, "curl", false, "print each request as a curl command")
	if sub == "login" || sub == "exchange" || sub == "refresh" {
		fs.StringVar(&o.placement, "placement", "query", "where token calls put client and grant parameters: query (the spec), body or basic")
	}
	if sub == "login" || sub == "authorize" {
		fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for the callback (0: until interrupted)")
		fs.BoolVar(&o.noState, "no-state", false, "do not carry the anti-forgery hs_state parameter inside redirect_uri")
		fs.BoolVar(&o.stdState, "standard-state", false, "also send the standard OAuth state parameter")
		fs.BoolVar(&o.pkce, "pkce", false, "use PKCE (S256)")
		fs.BoolVar(&o.noBrowser, "no-browser", false, "print the URL instead of opening a browser (still listens for the callback)")
		fs.BoolVar(&o.paste, "paste", false, "read the redirected URL from stdin instead of listening (for non-local redirect URIs)")
	}
	if sub == "exchange" {
		fs.StringVar(&o.code, "code", "", "the authorization code (default: the code of the last callback of this profile)")
		fs.BoolVar(&o.force, "force", false, "send a code that was already sent (to see the service's answer)")
	}
	if sub == "call" {
		fs.StringVar(&o.path, "path", "", "path under the base URL, or a full URL (default /v1/medias/<--media>)")
		fs.StringVar(&o.media, "media", "", "hashed id for the default path /v1/medias/<hashed_id>")
		fs.StringVar(&o.httpMethod, "http-method", "GET", "HTTP method: GET, PUT, POST, DELETE…")
		fs.StringVar(&o.tokenMethod, "method", "header", "how to pass the token: access_token, bearer_token, header or all (side by side)")
		fs.StringVar(&o.data, "data", "", "request body")
		fs.StringVar(&o.contentType, "content-type", "", "Content-Type of --data")
	}
	return o
}

func runOAuthStep(ctx context.Context, env *Env, sub string, args []string) error {
	fs := newFlagSet(env, "oauth "+sub, "[flags]", oauthExamples(sub))
	o := addOAuthFlags(fs, sub)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	placement, err := oauthflow.ParsePlacement(o.placement)
	if err != nil {
		return usageError("--placement: %v", err)
	}
	var methods []oauthflow.TokenMethod
	if sub == "call" {
		if methods, err = oauthflow.ParseTokenMethods(o.tokenMethod); err != nil {
			return usageError("--method: %v", err)
		}
		if o.path == "" && o.media == "" {
			return usageError("give --media <hashed_id> (for /v1/medias/<hashed_id>) or --path")
		}
	}
	if o.timeout < 0 {
		return usageError("--timeout must not be negative")
	}
	if o.save && o.profile == "" {
		return usageError("--save needs --profile NAME")
	}
	db, err := openStore(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := o.resolveProfile(ctx, env, db)
	if err != nil {
		return err
	}
	if o.save {
		if err := db.SaveProfile(ctx, p); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "saved profile %q in %s\n", p.Name, db.Path())
	}
	opts := oauthflow.Options{Placement: placement, NoRedirectState: o.noState, StandardState: o.stdState, PKCE: o.pkce,
		Recorder: db, UserAgent: "Hookscope/" + Version}
	var flow *oauthflow.Flow
	var tok *oauthflow.Token
	if t, err := db.LoadToken(ctx, p.Name); err == nil {
		tok = &t
	} else if !errors.Is(err, oauthflow.ErrNotFound) {
		return err
	}
	if sub == "exchange" {
		st, err := db.LatestFlowState(ctx, p.Name)
		if err != nil && !errors.Is(err, oauthflow.ErrNotFound) {
			return err
		}
		flow, err = oauthflow.Resume(p, st, tok, opts)
		if err != nil {
			return usageError("%v", err)
		}
	} else {
		flow, err = oauthflow.Resume(p, oauthflow.State{}, tok, opts)
		if err != nil {
			return usageError("%v", err)
		}
	}
	r := &oauthReport{Profile: p.Name, Store: db.Path()}
	var stepErr error
	switch sub {
	case "login", "authorize":
		stepErr = o.authorize(ctx, env, flow, r, sub == "login")
	case "exchange":
		var t *oauthflow.Token
		t, stepErr = flow.Exchange(ctx, o.code, o.force)
		r.Token = t
	case "refresh":
		res, err := flow.Refresh(ctx)
		stepErr = err
		if res != nil {
			r.Token = &res.Token
			r.Refresh = res
		}
	case "call":
		path := o.path
		if path == "" {
			path = oauthflow.DefaultCallPath(o.media)
		}
		res, err := flow.Call(ctx, oauthflow.CallRequest{Method: o.httpMethod, Path: path, Body: o.data, ContentType: o.contentType, Methods: methods})
		stepErr = err
		r.Calls = res
	}
	if err := flow.RecordErr(); err != nil {
		fmt.Fprintf(env.Stderr, "warning: %v\n", err)
	}
	return o.finish(env, flow, r, stepErr)
}

// resolveProfile merges the stored profile (if any) with the flags.
func (o *oauthFlags) resolveProfile(ctx context.Context, env *Env, db *storage.DB) (oauthflow.Profile, error) {
	name := o.profile
	if name == "" {
		name = "default"
	}
	p, err := db.LoadProfile(ctx, name)
	stored := err == nil
	if err != nil && !errors.Is(err, oauthflow.ErrNotFound) {
		return p, err
	}
	p.Name = name
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.BaseURL, o.baseURL)
	set(&p.AuthURL, o.authURL)
	set(&p.ClientID, o.clientID)
	set(&p.RedirectURI, o.redirectURI)
	if o.secretEnv != "" {
		v := env.Getenv(o.secretEnv)
		if v == "" {
			return p, usageError("--client-secret-env %s: the environment variable is unset or empty", o.secretEnv)
		}
		p.ClientSecret = v
	}
	if len(o.scopes) > 0 {
		p.Scopes = nil
		for _, s := range o.scopes {
			for _, part := range strings.Split(s, ",") {
				if part = strings.TrimSpace(part); part != "" {
					p.Scopes = append(p.Scopes, part)
				}
			}
		}
	}
	if err := p.Validate(); err != nil {
		if !stored && o.profile != "" && o.baseURL == "" && o.clientID == "" {
			return p, usageError("profile %q is not in the store %s: create it with the profile flags and --save (see --help)", name, db.Path())
		}
		return p, usageError("%v (give the profile flags, or --profile NAME of a saved profile)", err)
	}
	return p, nil
}

// authorize runs step 1 and 2 (and 3 for login).
func (o *oauthFlags) authorize(ctx context.Context, env *Env, flow *oauthflow.Flow, r *oauthReport, exchange bool) error {
	p := flow.Profile()
	info := env.Stdout
	if o.jsonOut {
		info = env.Stderr
	}
	_, _, _, local := p.LocalRedirect()
	paste := o.paste || !local
	for _, w := range oauthflow.Preflight(p) {
		if paste && w.Code == "port-busy" {
			continue
		}
		if paste && w.Code == "remote-redirect" && o.paste {
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
		if o.noBrowser {
			fmt.Fprintf(info, "Open this URL in a browser:\n\n  %s\n\n", u)
		} else {
			fmt.Fprintf(info, "Opening the browser at:\n\n  %s\n\n", u)
			if err := oauthflow.SystemOpener(ctx, u); err != nil {
				fmt.Fprintf(env.Stderr, "warning: %v\n", err)
			}
		}
		fmt.Fprintf(info, "Waiting up to %s for the callback…\n", o.timeout)
	}
	var res *oauthflow.CallbackResult
	if paste {
		line, err := readPastedURL(ctx, env.Stdin)
		if err != nil {
			return err
		}
		res, err = flow.AcceptCallbackURL(ctx, line)
		r.Callback = res
		if err != nil {
			return err
		}
	} else {
		res, err = flow.AwaitCallback(ctx, o.timeout)
		r.Callback = res
		if err != nil {
			return err
		}
	}
	if !exchange {
		fmt.Fprintln(info, "The code is kept in the store; run 'hookscope oauth exchange' to trade it for a token (codes are short-lived).")
		return nil
	}
	tok, err := flow.Exchange(ctx, "", false)
	r.Token = tok
	return err
}

// readPastedURL reads the first non-empty line of stdin.
func readPastedURL(ctx context.Context, in io.Reader) (string, error) {
	if in == nil {
		return "", errors.New("--paste: no standard input to read the redirected URL from")
	}
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				ch <- result{line: l}
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		ch <- result{err: fmt.Errorf("read the redirected URL from stdin: %w", err)}
	}()
	select {
	case r := <-ch:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
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
	Calls        []oauthflow.CallResult    `json:"calls,omitempty"`
	Error        string                    `json:"error,omitempty"`
	Fix          string                    `json:"fix,omitempty"`
	Transcripts  []oauthflow.Transcript    `json:"transcripts"`
	Curl         []string                  `json:"curl,omitempty"`
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

func (o *oauthFlags) finish(env *Env, flow *oauthflow.Flow, r *oauthReport, stepErr error) error {
	ro := flow.RenderOptions(o.reveal)
	r.Transcripts = flow.Transcripts(o.reveal)
	if r.Callback != nil {
		c := *r.Callback
		if !o.reveal && c.Code != "" {
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
		t := redactToken(*r.Token, o.reveal)
		r.Token = &t
		r.TokenState = &tokenState{Expired: t.Expired(now), MissingScopes: t.MissingScopes(flow.Profile().Scopes)}
		if !t.ExpiresAt.IsZero() {
			r.TokenState.TimeLeft = t.TimeLeft(now).Round(time.Second).String()
		}
	}
	if r.Refresh != nil {
		rr := *r.Refresh
		rr.Token = redactToken(rr.Token, o.reveal)
		r.Refresh = &rr
	}
	for i := range r.Calls {
		r.Calls[i].Transcript = oauthflow.Transcript{}
	}
	for _, t := range flow.Transcripts(true) {
		if !t.Inbound && t.Step != oauthflow.StepAuthorize {
			r.Curl = append(r.Curl, t.Curl(ro))
		}
	}
	if stepErr != nil {
		var se *oauthflow.StepError
		if errors.As(stepErr, &se) {
			r.Error, r.Fix = se.Msg, se.Fix
		} else {
			r.Error = stepErr.Error()
		}
		r.Error = oauthflow.Redact(oauthflow.Transcript{Error: r.Error}, ro.Secrets...).Error
	}
	if o.jsonOut {
		if err := printJSON(env, r); err != nil {
			return err
		}
	} else {
		o.printText(env.Stdout, flow, r)
		if o.curl {
			for _, c := range r.Curl {
				fmt.Fprintf(env.Stdout, "\n%s\n", c)
			}
		}
		if o.transcript {
			fmt.Fprintf(env.Stdout, "\n%s", oauthflow.Markdown("hookscope oauth: profile "+r.Profile, flow.Transcripts(true), ro))
		}
	}
	if stepErr != nil {
		// Already explained above (text or JSON); a short line for the exit.
		return silentError{msg: r.Error}
	}
	return nil
}

// silentError carries a failure already explained on stdout; Run prints
// its short message.
type silentError struct{ msg string }

// Error is the short message.
func (e silentError) Error() string { return e.msg }

func (o *oauthFlags) printText(w io.Writer, flow *oauthflow.Flow, r *oauthReport) {
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
	}
	// Step lines: one per HTTP exchange of this run.
	for _, t := range r.Transcripts {
		if t.Inbound || t.Step == oauthflow.StepAuthorize {
			continue
		}
		status := "no answer"
		if t.Response != nil {
			status = fmt.Sprintf("%d %s in %s", t.Response.Status, t.Response.StatusText, t.Response.Duration.Round(time.Microsecond))
		}
		fmt.Fprintf(w, "%s: %s %s -> %s\n", t.Title(), t.Request.Method, t.Request.URL, status)
		for _, n := range t.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if t.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", t.Error)
			if t.Fix != "" {
				fmt.Fprintf(w, "  fix: %s\n", t.Fix)
			}
		}
	}
	if t := r.Token; t != nil {
		fmt.Fprintf(w, "Token: type %s, access %s, refresh %s, scope %v\n", t.TokenType, t.AccessToken, t.RefreshToken, t.Scope)
		if !t.ExpiresAt.IsZero() {
			fmt.Fprintf(w, "  obtained %s, expires %s (%s left)\n", t.ObtainedAt.Format(time.RFC3339), t.ExpiresAt.Format(time.RFC3339), r.TokenState.TimeLeft)
		}
		if len(r.TokenState.MissingScopes) > 0 {
			fmt.Fprintf(w, "  missing scopes: %v\n", r.TokenState.MissingScopes)
		}
		fmt.Fprintf(w, "  saved for profile %q in %s\n", r.Profile, r.Store)
	}
	if r.Refresh != nil {
		fmt.Fprintf(w, "Refresh token: %s\n", r.Refresh.Note)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "Error: %s\n", r.Error)
		if r.Fix != "" {
			fmt.Fprintf(w, "Fix: %s\n", r.Fix)
		}
	}
}

func runOAuthProfiles(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "oauth profiles", "[flags]", "  hookscope oauth profiles\n  hookscope oauth profiles --json\n  hookscope oauth profiles --delete demo")
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	jsonOut := fs.Bool("json", false, "print JSON")
	del := fs.String("delete", "", "delete this profile and its token (its history stays)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	db, err := openStore(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	if *del != "" {
		if err := db.DeleteProfile(ctx, *del); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "deleted profile %q\n", *del)
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
				rw.TimeLeft = t.TimeLeft(now).Round(time.Second).String()
			}
		}
		rows = append(rows, rw)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	if *jsonOut {
		return printJSON(env, rows)
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

func runOAuthHistory(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "oauth history", "[flags]", "  hookscope oauth history --profile demo\n  hookscope oauth history --profile demo --format har > flow.har\n  hookscope oauth history --flow 3xYz... --format json --reveal")
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	profile := fs.String("profile", "", "only this profile's transcripts")
	flowID := fs.String("flow", "", "only this flow's transcripts")
	format := fs.String("format", "md", "md (Markdown report), har (HAR 1.2) or json")
	limit := fs.Int("limit", 50, "at most this many (the latest)")
	reveal := fs.Bool("reveal", false, "show secrets instead of REDACTED")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *format != "md" && *format != "har" && *format != "json" {
		return usageError("--format must be md, har or json, got %q", *format)
	}
	if *limit <= 0 {
		return usageError("--limit must be positive")
	}
	db, err := openStore(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	ts, err := db.ListTranscripts(ctx, *profile, *flowID, *limit)
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
	ro := oauthflow.RenderOptions{Reveal: *reveal, Secrets: secrets}
	switch *format {
	case "har":
		b, err := oauthflow.HAR(ts, Version, ro)
		if err != nil {
			return err
		}
		_, err = env.Stdout.Write(append(b, '\n'))
		return err
	case "json":
		if !*reveal {
			for i := range ts {
				ts[i] = oauthflow.Redact(ts[i], secrets...)
			}
		}
		if ts == nil {
			ts = []oauthflow.Transcript{}
		}
		return printJSON(env, ts)
	}
	fmt.Fprint(env.Stdout, oauthflow.Markdown("Hookscope OAuth history", ts, ro))
	return nil
}
