package oauthflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/human"
)

// tokenRequest builds the token call for the flow's placement.
func (f *Flow) tokenRequest(params [][2]string) (rawURL string, header http.Header, body string) {
	endpoint := strings.TrimRight(f.profile.BaseURL, "/") + "/oauth/token"
	header = http.Header{}
	header.Set("Accept", "application/json")
	enc := func(ps [][2]string) string {
		parts := make([]string, 0, len(ps))
		for _, p := range ps {
			parts = append(parts, url.QueryEscape(p[0])+"="+url.QueryEscape(p[1]))
		}
		return strings.Join(parts, "&")
	}
	switch f.opts.Placement {
	case PlacementBody:
		header.Set("Content-Type", "application/x-www-form-urlencoded")
		return endpoint, header, enc(params)
	case PlacementBasic:
		header.Set("Authorization", basicAuth(f.profile.ClientID, f.profile.ClientSecret))
		header.Set("Content-Type", "application/x-www-form-urlencoded")
		var rest [][2]string
		for _, p := range params {
			if p[0] != "client_id" && p[0] != "client_secret" {
				rest = append(rest, p)
			}
		}
		return endpoint, header, enc(rest)
	}
	return endpoint + "?" + enc(params), header, ""
}

// tokenCall sends a token request and reads the answer.
func (f *Flow) tokenCall(ctx context.Context, step Step, params [][2]string) (*Token, Transcript, error) {
	rawURL, header, body := f.tokenRequest(params)
	t, err := f.send(ctx, step, string(f.opts.Placement), http.MethodPost, rawURL, header, body)
	if err != nil {
		return nil, t, err
	}
	resp := t.Response
	tr := ParseTokenResponse(resp.Status, resp.Header.Get("Content-Type"), []byte(resp.Body), f.opts.Now().UTC())
	for _, d := range tr.Deviations {
		t.Notes = append(t.Notes, "deviation from the spec: "+d)
	}
	switch {
	case tr.Err != nil:
		meaning, fix := tr.Err.explain(step)
		t.Error = fmt.Sprintf("HTTP %d %s: %s", resp.Status, tr.Err.Code, meaning)
		if tr.Err.Description != "" {
			t.Error += fmt.Sprintf(" (the service says: %s)", tr.Err.Description)
		}
		t.Fix = fix + f.hintFor(step, tr.Err)
		return nil, t, &StepError{Step: step, Msg: t.Error, Fix: t.Fix, Status: resp.Status, OAuth: tr.Err, Err: ErrRefused}
	case tr.Token == nil:
		t.Error = tr.Problem
		t.Fix = "look at the raw body below: check the base URL (it must be the API address serving /oauth/token) and the status"
		return nil, t, &StepError{Step: step, Msg: t.Error, Fix: t.Fix, Status: resp.Status, Err: ErrRefused}
	}
	tok := tr.Token
	if missing := tok.MissingScopes(f.profile.Scopes); len(missing) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("granted scope %v lacks the wanted %v: the service grants the application's registered permissions; edit them and authorize again", tok.Scope, missing))
	}
	return tok, t, nil
}

// hintFor adds context-specific hints to the service's error code.
func (f *Flow) hintFor(step Step, e *OAuthError) string {
	var hints []string
	d := strings.ToLower(e.Description)
	if strings.Contains(d, "redirect") {
		hints = append(hints, "the redirect_uri sent must be the same value used in the authorize URL: "+f.RedirectURISent())
	}
	// The placement is a likely cause only when the service did not name
	// another: a wrong secret was read, wherever it was sent.
	if f.opts.Placement != PlacementQuery && (e.Code == "invalid_request" || e.Code == "invalid_client" && len(e.cause(step).words) == 0) {
		hints = append(hints, "this service reads token inputs from the URL query; try placement query")
	}
	if len(hints) == 0 {
		return ""
	}
	return "; " + strings.Join(hints, "; ")
}

// Exchange trades an authorization code for a token (step 3). An empty
// code means the code of the accepted callback. A code known to be used up
// (CodeUse.Spent: exchanged, or refused as invalid_grant) is refused with
// ErrCodeSpent before anything is sent, unless force: a second send is how
// developers lose an hour, and a service may revoke the tokens issued for
// the first. A code sent before with another outcome is sent again, with a
// note saying what was known.
func (f *Flow) Exchange(ctx context.Context, code string, force bool) (*Token, error) {
	f.mu.Lock()
	if code == "" && f.state.Callback != nil {
		code = f.state.Callback.Code
	}
	verifier := f.state.Verifier
	h := codeHash(code)
	prev, sent := f.state.Codes[h]
	f.mu.Unlock()
	if code == "" {
		return nil, &StepError{Step: StepExchange, Msg: "there is no authorization code to exchange", Fix: "run the authorize step and approve in the browser first (or pass the code)", Err: ErrNoCode}
	}
	if prev.Spent() && !force {
		return nil, &StepError{Step: StepExchange, Err: ErrCodeSpent, Msg: prev.Known(),
			Fix: "authorize again for a fresh code; force the exchange only to see the service's answer"}
	}
	// Recorded before sending: if the process dies meanwhile, the next run
	// knows the code went out.
	use := CodeUse{SentAt: f.opts.Now().UTC()}
	f.setCodeUse(ctx, h, use)
	params := [][2]string{
		{"client_id", f.profile.ClientID},
		{"client_secret", f.profile.ClientSecret},
		{"grant_type", "authorization_code"},
		{"code", code},
		{"redirect_uri", f.RedirectURISent()},
	}
	if verifier != "" {
		params = append(params, [2]string{"code_verifier", verifier})
	}
	tok, t, err := f.tokenCall(ctx, StepExchange, params)
	switch {
	case prev.Spent():
		t.Notes = append(t.Notes, prev.Known()+"; the exchange was forced")
	case sent:
		t.Notes = append(t.Notes, prev.Known()+", so it was sent again")
	}
	var se *StepError
	switch {
	case err == nil:
		use.Outcome = OutcomeExchanged
	case errors.As(err, &se) && se.Status != 0:
		use.Outcome, use.Status = OutcomeRefused, se.Status
		if se.OAuth != nil {
			use.Error, use.Description = se.OAuth.Code, se.OAuth.Description
		}
	default:
		use.Outcome = OutcomeNoAnswer
	}
	f.setCodeUse(ctx, h, use)
	if err != nil {
		f.record(ctx, t)
		return nil, err
	}
	f.mu.Lock()
	f.token = tok
	f.mu.Unlock()
	t.Notes = append(t.Notes, tokenSummary(*tok, f.opts.Now()))
	f.record(ctx, t)
	f.saveToken(ctx, *tok)
	return tok, nil
}

// setCodeUse records what is known about a code and saves the state.
func (f *Flow) setCodeUse(ctx context.Context, hash string, u CodeUse) {
	f.mu.Lock()
	f.state.Codes[hash] = u
	f.mu.Unlock()
	f.saveState(ctx)
}

func tokenSummary(t Token, now time.Time) string {
	s := fmt.Sprintf("token obtained at %s, scope %v", t.ObtainedAt.Format(time.RFC3339), t.Scope)
	if !t.ExpiresAt.IsZero() {
		s += fmt.Sprintf(", expires at %s (%s left)", t.ExpiresAt.Format(time.RFC3339), human.Duration(t.TimeLeft(now)))
	}
	return s
}

// RefreshResult reports a refresh.
type RefreshResult struct {
	Token Token `json:"token"`
	// RefreshTokenChanged is true when the service returned a different
	// refresh token (the spec says it stays the same).
	RefreshTokenChanged bool `json:"refresh_token_changed"`
	// Note explains the refresh token outcome.
	Note string `json:"note"`
}

// Refresh gets a new access token with the refresh token (step 4).
func (f *Flow) Refresh(ctx context.Context) (*RefreshResult, error) {
	f.mu.Lock()
	var old Token
	if f.token != nil {
		old = *f.token
	}
	f.mu.Unlock()
	if old.RefreshToken == "" {
		return nil, &StepError{Step: StepRefresh, Msg: "there is no refresh token", Fix: "run login (or exchange) first; the service returns a refresh token with every access token", Err: ErrNoToken}
	}
	tok, t, err := f.tokenCall(ctx, StepRefresh, [][2]string{
		{"client_id", f.profile.ClientID},
		{"client_secret", f.profile.ClientSecret},
		{"grant_type", "refresh_token"},
		{"refresh_token", old.RefreshToken},
	})
	if err != nil {
		f.record(ctx, t)
		return nil, err
	}
	res := &RefreshResult{}
	switch {
	case tok.RefreshToken == "":
		tok.RefreshToken = old.RefreshToken
		res.Note = "the response carried no refresh token; the previous one is kept"
	case tok.RefreshToken != old.RefreshToken:
		res.RefreshTokenChanged = true
		res.Note = "the refresh token CHANGED; the spec says it stays the same until the user authorizes again. The new one is saved; the old one may no longer work"
	default:
		res.Note = "the refresh token stayed the same, as the spec says"
	}
	res.Token = *tok
	t.Notes = append(t.Notes, res.Note, tokenSummary(*tok, f.opts.Now()))
	f.mu.Lock()
	f.token = tok
	f.mu.Unlock()
	f.record(ctx, t)
	f.saveToken(ctx, *tok)
	return res, nil
}

// TokenMethod is one way of passing the access token (section 5.5).
type TokenMethod string

// The three token methods of the spec.
const (
	MethodAccessToken TokenMethod = "access_token"
	MethodBearerToken TokenMethod = "bearer_token"
	MethodHeader      TokenMethod = "header"
)

// ParseTokenMethods reads a method name; "all" gives all three.
func ParseTokenMethods(s string) ([]TokenMethod, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "header", "bearer", "authorization":
		return []TokenMethod{MethodHeader}, nil
	case "access_token", "query":
		return []TokenMethod{MethodAccessToken}, nil
	case "bearer_token":
		return []TokenMethod{MethodBearerToken}, nil
	case "all":
		return []TokenMethod{MethodAccessToken, MethodBearerToken, MethodHeader}, nil
	}
	return nil, fmt.Errorf("token method %q: use access_token, bearer_token, header or all", s)
}

// CallRequest is an API call (step 5).
type CallRequest struct {
	// Method is the HTTP method (GET when empty).
	Method string
	// Path is a path under the base URL ("/v1/medias/abc") or a full URL
	// (for an Upload API on another host).
	Path string
	// Body and ContentType are sent as they are.
	Body        string
	ContentType string
	// Methods are the token methods to try, one request each, side by
	// side (MethodHeader when empty).
	Methods []TokenMethod
}

// DefaultCallPath is medias#show, the spec's example call.
func DefaultCallPath(hashedID string) string { return "/v1/medias/" + url.PathEscape(hashedID) }

// CallResult is one API call made with one token method.
type CallResult struct {
	Method TokenMethod `json:"method"`
	// Status is the HTTP status, 0 when no answer arrived.
	Status int  `json:"status"`
	OK     bool `json:"ok"`
	// Transcript is the raw exchange; its Error and Fix say why a call
	// that is not OK failed.
	Transcript Transcript `json:"-"`
}

// Calls are the results of one Call, one per token method, in order.
type Calls []CallResult

// Failed returns the calls that did not get a 2xx answer.
func (cs Calls) Failed() []CallResult {
	var out []CallResult
	for _, c := range cs {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Err is nil when every call succeeded, else a *StepError saying which
// calls failed and why (ErrRefused when any got an answer, ErrTransport
// when none did), with the fixes.
func (cs Calls) Err() error {
	failed := cs.Failed()
	if len(failed) == 0 {
		return nil
	}
	se := &StepError{Step: StepCall, Err: ErrTransport}
	var why, fixes []string
	for _, c := range failed {
		w := c.Transcript.Error
		if len(cs) > 1 {
			w = string(c.Method) + ": " + w
		}
		why = append(why, w)
		if fx := c.Transcript.Fix; fx != "" && !slices.Contains(fixes, fx) {
			fixes = append(fixes, fx)
		}
		if c.Status != 0 && se.Status == 0 {
			se.Status, se.Err = c.Status, ErrRefused
		}
	}
	se.Msg = strings.Join(why, "; ")
	if len(cs) > 1 {
		se.Msg = fmt.Sprintf("%d of %d calls failed: %s", len(failed), len(cs), se.Msg)
	}
	se.Fix = strings.Join(fixes, "; ")
	return se
}

// Call makes the API call once per token method (step 5) and returns one
// result per method made. The error is Calls.Err when any call failed (no
// 2xx answer), or says why the calls could not be made (no token, a bad
// path, ctx ended).
func (f *Flow) Call(ctx context.Context, c CallRequest) (Calls, error) {
	tok, ok := f.Token()
	if !ok || tok.AccessToken == "" {
		return nil, &StepError{Step: StepCall, Msg: "there is no access token", Fix: "run login first (or exchange a code)", Err: ErrNoToken}
	}
	if c.Path == "" {
		return nil, &StepError{Step: StepCall, Msg: "no path to call", Fix: "give a path such as /v1/medias/<hashed_id>"}
	}
	method := strings.ToUpper(c.Method)
	if method == "" {
		method = http.MethodGet
	}
	target := c.Path
	if !strings.Contains(target, "://") {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		target = strings.TrimRight(f.profile.BaseURL, "/") + target
	}
	if _, err := url.Parse(target); err != nil {
		return nil, &StepError{Step: StepCall, Msg: fmt.Sprintf("the path %q is not a valid URL: %v", c.Path, err), Fix: "give a path such as /v1/medias/<hashed_id>", Err: err}
	}
	methods := c.Methods
	if len(methods) == 0 {
		methods = []TokenMethod{MethodHeader}
	}
	upload := strings.Contains(strings.ToLower(target), "upload")
	var out Calls
	for _, m := range methods {
		u, _ := url.Parse(target)
		header := http.Header{}
		header.Set("Accept", "application/json")
		if c.ContentType != "" {
			header.Set("Content-Type", c.ContentType)
		}
		switch m {
		case MethodAccessToken, MethodBearerToken:
			q := u.RawQuery
			if q != "" {
				q += "&"
			}
			u.RawQuery = q + string(m) + "=" + url.QueryEscape(tok.AccessToken)
		case MethodHeader:
			header.Set("Authorization", "Bearer "+tok.AccessToken)
		default:
			return out, &StepError{Step: StepCall, Msg: fmt.Sprintf("unknown token method %q", m), Fix: "use access_token, bearer_token or header"}
		}
		t, err := f.send(ctx, StepCall, string(m), method, u.String(), header, c.Body)
		if upload && m == MethodHeader {
			t.Notes = append(t.Notes, "the Upload API accepts only the access_token and bearer_token query parameters (spec 5.5), not the Authorization header")
		}
		if tok.Expired(f.opts.Now()) {
			t.Notes = append(t.Notes, fmt.Sprintf("the access token expired at %s; refresh it", tok.ExpiresAt.Format(time.RFC3339)))
		}
		res := CallResult{Method: m}
		if err == nil {
			res.Status = t.Response.Status
			res.OK = res.Status >= 200 && res.Status < 300
			if !res.OK {
				t.Error, t.Fix = explainAPIStatus(t.Response, m, upload, tok, f.opts.Now())
			}
		}
		res.Transcript = f.record(ctx, t)
		out = append(out, res)
		if err != nil && ctx.Err() != nil {
			return out, err
		}
	}
	return out, out.Err()
}

// explainAPIStatus says why an API call failed: what the status and the
// service's error body say, not every reason the status could have.
func explainAPIStatus(r *Response, m TokenMethod, upload bool, tok Token, now time.Time) (string, string) {
	detail := ""
	oe := ParseTokenResponse(r.Status, r.Header.Get("Content-Type"), []byte(r.Body), now).Err
	if oe != nil {
		detail = " (" + oe.Code
		if oe.Description != "" {
			detail += ": " + oe.Description
		}
		detail += ")"
	}
	switch r.Status {
	case http.StatusUnauthorized:
		switch {
		case upload && m == MethodHeader:
			return "HTTP 401: the Upload API refused the token in the Authorization header" + detail, "pass it as the access_token or bearer_token query parameter; the Upload API accepts only those"
		case tok.Expired(now):
			return "HTTP 401: the access token has expired" + detail, "refresh it (hookscope oauth refresh)"
		case oe != nil && oe.Code == "invalid_token":
			meaning, fix := oe.explain(StepCall)
			return "HTTP 401: " + meaning + detail, fix
		}
		return "HTTP 401: the service refused the token" + detail, "refresh the token; if that fails, authorize again"
	case http.StatusForbidden:
		if oe != nil && (oe.Code == "insufficient_scope" || strings.Contains(strings.ToLower(oe.Description), "scope")) {
			return "HTTP 403: the token lacks the scope for this request" + detail, fmt.Sprintf("the token has scope %v; add the needed permission (e.g. media:read, all:read or all:all) to the application and authorize again", tok.Scope)
		}
		return "HTTP 403: the service refused this request with this token" + detail, "read the response body below; if it names a permission, add it to the application and authorize again"
	case http.StatusNotFound:
		return "HTTP 404: nothing at this path" + detail, "check the hashed id and the /v1/ prefix, and that the media belongs to the authorized account"
	}
	return fmt.Sprintf("HTTP %d %s%s", r.Status, r.StatusText, detail), "read the response body below"
}

// AutoRefresh refreshes the token shortly (before) ahead of its expiry
// until ctx ends, reporting each attempt to report (which may be nil).
// A failed refresh is retried after a minute; a token without a known
// lifetime or refresh token stops the loop with a report.
func (f *Flow) AutoRefresh(ctx context.Context, before time.Duration, report func(*RefreshResult, error)) {
	if report == nil {
		report = func(*RefreshResult, error) {}
	}
	retry := time.Duration(0)
	for {
		tok, ok := f.Token()
		if !ok || tok.RefreshToken == "" || tok.ExpiresAt.IsZero() {
			report(nil, &StepError{Step: StepRefresh, Msg: "auto-refresh needs a token with a refresh token and a known lifetime", Fix: "run login first", Err: ErrNoToken})
			return
		}
		wait := tok.ExpiresAt.Add(-before).Sub(f.opts.Now())
		if retry > 0 {
			wait = retry
		}
		if wait < 0 {
			wait = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		res, err := f.Refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		report(res, err)
		retry = 0
		if err != nil {
			retry = time.Minute
		}
	}
}
