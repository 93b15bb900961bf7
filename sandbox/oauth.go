package sandbox

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/human"
)

// sessionCookie names the login session of the authorization pages.
const sessionCookie = "sandbox_session"

// sessionTTL bounds a login session; the service's is unknown, a working
// day is a friendly guess.
const sessionTTL = 12 * time.Hour

type session struct {
	contactID string
	csrf      string
	expires   time.Time
}

type authCode struct {
	clientID    string
	contactID   string
	account     Account
	redirectURI string // exactly as received at /oauth/authorize
	scopes      []string
	expires     time.Time
	used        bool
	challenge   string // PKCE S256 challenge, "" when none was sent
}

type accessToken struct {
	clientID  string
	contactID string
	accountID string
	scopes    []string
	expires   time.Time
	revoked   bool
}

type refreshToken struct {
	clientID  string
	contactID string
	accountID string
	scopes    []string
	revoked   bool
}

// authRequest is a validated authorization request. It travels in the URL
// of every page (forms post back to the same URL), so the server keeps no
// per-request state between pages.
type authRequest struct {
	app         App
	redirectURI string
	state       string
	hasState    bool
	challenge   string
	action      string // the URL the forms post to
	scopeParam  string // a scope parameter the client sent, which the service ignores
}

// pageError is an authorization request the sandbox refuses to honour with
// a redirect: it shows an error page instead.
type pageError struct {
	status  int
	title   string
	message string
	details [][2]string
	hints   []string
}

// parseAuthRequest checks client_id, redirect_uri and response_type in that
// order. Problems with them never redirect: a redirect_uri that is wrong
// must not receive anything (spec 7).
func (s *Server) parseAuthRequest(r *http.Request) (*authRequest, *pageError, url.Values) {
	q := r.URL.Query()
	clientID := q.Get("client_id")
	if clientID == "" {
		return nil, &pageError{status: 400, title: "Missing client_id",
			message: "The authorization link has no client_id parameter, so the service cannot tell which application is asking.",
			hints:   []string{"Use the application's Link to authorization code, or build {auth_url}/oauth/authorize?client_id=…&redirect_uri=…&response_type=code."}}, nil
	}
	app, ok := s.apps[clientID]
	if !ok {
		return nil, &pageError{status: 400, title: "Unknown application",
			message: "No application is registered with this client_id.",
			details: [][2]string{{"client_id received", clientID}, {"registered client_ids", strings.Join(s.clientIDs(), ", ")}},
			hints:   []string{"Copy the client ID from the application's settings; it is not the client secret."}}, nil
	}
	received, present := q["redirect_uri"]
	if !present || received[0] == "" {
		return nil, &pageError{status: 400, title: "Missing redirect_uri",
			message: "The authorization link has no redirect_uri. The service requires it and compares it exactly with the registered Redirect URI.",
			details: [][2]string{{"application", app.Name}, {"registered Redirect URI", app.RedirectURI}}}, nil
	}
	if perr := checkRedirect(app, received[0]); perr != nil {
		return nil, perr, nil
	}
	req := &authRequest{app: app, redirectURI: received[0], action: "/oauth/authorize?" + r.URL.RawQuery}
	if rt := q.Get("response_type"); rt != "code" {
		msg := fmt.Sprintf("response_type is %q; the service supports only the authorization code grant, response_type=code.", rt)
		if rt == "" {
			msg = "The authorization link has no response_type; it must be response_type=code."
		}
		return nil, &pageError{status: 400, title: "Unsupported response_type", message: msg,
			details: [][2]string{{"application", app.Name}, {"response_type received", rt}}}, nil
	}
	req.state, req.hasState = q.Get("state"), q.Has("state")
	req.scopeParam = q.Get("scope")
	// PKCE problems are reported through the (already verified) redirect
	// URI, as RFC 7636 4.4.1 asks.
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		return req, nil, url.Values{"error": {"invalid_request"}, "error_description": {"code_challenge_method was sent without code_challenge"}}
	case challenge == "":
	case method != "S256":
		return req, nil, url.Values{"error": {"invalid_request"}, "error_description": {fmt.Sprintf("code_challenge_method %q is not supported; send S256 (the plain method is refused)", method)}}
	case !validVerifierChars(challenge) || len(challenge) != 43:
		return req, nil, url.Values{"error": {"invalid_request"}, "error_description": {"code_challenge must be the 43-character base64url (no padding) SHA-256 of the code_verifier"}}
	default:
		req.challenge = challenge
	}
	return req, nil, nil
}

// checkRedirect compares a received redirect_uri with the registered one the
// way the service does: exactly, character for character, except that the
// received one may add query parameters of its own.
func checkRedirect(app App, received string) *pageError {
	regBase, regQuery, _ := strings.Cut(app.RedirectURI, "?")
	base, extra, _ := strings.Cut(received, "?")
	details := [][2]string{{"application", app.Name}, {"registered Redirect URI", app.RedirectURI}, {"redirect_uri received", received}}
	if strings.Contains(received, "#") {
		return &pageError{status: 400, title: "redirect_uri has a fragment", details: details,
			message: "The redirect_uri contains a #fragment. OAuth forbids fragments in redirect URIs, and the service compares the value exactly with the registered one."}
	}
	mismatch := func(hints ...string) *pageError {
		return &pageError{status: 400, title: "redirect_uri does not match", details: details, hints: hints,
			message: "The redirect_uri in the authorization link is not the Redirect URI registered for this application. The service compares the two exactly (scheme, host, port, path, trailing slash, case) and does not redirect anywhere else, so nothing was sent to the received address. Extra query parameters after the registered URI are allowed and are passed back."}
	}
	if base != regBase {
		return mismatch(redirectHints(regBase, base)...)
	}
	extras, err := url.ParseQuery(extra)
	if err != nil {
		return &pageError{status: 400, title: "redirect_uri has a malformed query", details: details,
			message: fmt.Sprintf("The query part of redirect_uri cannot be parsed (%v). Was redirect_uri URL-encoded once, as the service expects?", err)}
	}
	want, _ := url.ParseQuery(regQuery)
	for k, vs := range want {
		if !slices.Equal(extras[k], vs) {
			return mismatch(fmt.Sprintf("The registered Redirect URI carries the query parameter %s=%s; the received one must carry it unchanged.", k, strings.Join(vs, ",")))
		}
	}
	return nil
}

// redirectHints names the usual reasons two redirect URIs differ.
func redirectHints(registered, received string) []string {
	var hints []string
	ru, err1 := url.Parse(registered)
	gu, err2 := url.Parse(received)
	if err1 != nil || err2 != nil {
		return []string{"The received redirect_uri is not a valid URL; was it URL-encoded twice or not at all?"}
	}
	if strings.Contains(received, "%3A") || strings.Contains(received, "%2F") {
		hints = append(hints, "The received value still contains percent-encoded characters: it looks URL-encoded twice. Encode redirect_uri exactly once in the authorization link.")
	}
	if !strings.EqualFold(ru.Scheme, gu.Scheme) {
		hints = append(hints, fmt.Sprintf("Scheme differs: registered %s, received %s.", ru.Scheme, gu.Scheme))
	}
	if ru.Hostname() != gu.Hostname() {
		h := fmt.Sprintf("Host differs: registered %s, received %s.", ru.Hostname(), gu.Hostname())
		loop := func(h string) bool { return h == "localhost" || h == "127.0.0.1" || h == "::1" }
		if loop(ru.Hostname()) && loop(gu.Hostname()) {
			h += " localhost, 127.0.0.1 and [::1] reach the same machine but are different strings, and the service compares strings."
		}
		hints = append(hints, h)
	}
	if ru.Port() != gu.Port() {
		hints = append(hints, fmt.Sprintf("Port differs: registered %q, received %q.", ru.Port(), gu.Port()))
	}
	if ru.Path != gu.Path {
		switch {
		case strings.TrimSuffix(ru.Path, "/") == strings.TrimSuffix(gu.Path, "/"):
			hints = append(hints, "The paths differ only by a trailing slash; the service treats them as different.")
		case strings.EqualFold(ru.Path, gu.Path):
			hints = append(hints, "The paths differ only in letter case; the service treats them as different.")
		default:
			hints = append(hints, fmt.Sprintf("Path differs: registered %q, received %q.", ru.Path, gu.Path))
		}
	}
	if len(hints) == 0 && ru.Host != gu.Host {
		hints = append(hints, fmt.Sprintf("Host and port differ as written: registered %q, received %q.", ru.Host, gu.Host))
	}
	return hints
}

func (s *Server) clientIDs() []string {
	out := make([]string, 0, len(s.appList))
	for _, a := range s.appList {
		out = append(out, a.ClientID)
	}
	return out
}

// buildRedirect adds params to the received redirect URI, keeping its own
// extra query parameters (spec 4.1, 5.3).
func buildRedirect(received string, params url.Values) string {
	base, raw, _ := strings.Cut(received, "?")
	q, _ := url.ParseQuery(raw) // checked by checkRedirect
	for k, vs := range params {
		q[k] = vs
	}
	return base + "?" + q.Encode()
}

// redirectTo sends the browser back to the application.
func (s *Server) redirectTo(w http.ResponseWriter, req *authRequest, params url.Values) {
	if req.hasState {
		params.Set("state", req.state)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", buildRedirect(req.redirectURI, params))
	w.WriteHeader(http.StatusFound)
}

// handleAuthorize drives the authorization pages: login, account picker,
// consent, then the redirect (spec 5.3). Every form posts back to the same
// URL with an action field, so a test can drive it with plain form posts.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		s.renderError(w, &pageError{status: 405, title: "Method not allowed", message: "Open the authorization link with GET in a browser."})
		return
	}
	req, perr, redirectErr := s.parseAuthRequest(r)
	if perr != nil {
		s.renderError(w, perr)
		return
	}
	if redirectErr != nil {
		s.redirectTo(w, req, redirectErr)
		return
	}
	var form url.Values
	action := ""
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			s.renderError(w, &pageError{status: 400, title: "Unreadable form", message: "The form could not be read: " + err.Error()})
			return
		}
		form = r.PostForm
		action = form.Get("action")
	}
	now := s.cfg.Now()
	sess := s.sessionFor(r, now)
	switch action {
	case "login":
		if !loginTokenOK(r, form.Get("csrf")) {
			s.renderLogin(w, r, req, http.StatusForbidden, "This login form did not come from this browser's last visit (its anti-forgery token does not match). Log in again here.")
			return
		}
		u := s.userByEmail(form.Get("email"))
		if u == nil || subtle.ConstantTimeCompare([]byte(u.Password), []byte(form.Get("password"))) != 1 {
			s.renderLogin(w, r, req, http.StatusUnauthorized, "That email and password do not match a sandbox user. The demo users are listed below.")
			return
		}
		sess = s.newSession(w, u.ContactID, now)
	case "logout":
		if sess != nil && subtle.ConstantTimeCompare([]byte(sess.csrf), []byte(form.Get("csrf"))) != 1 {
			s.renderError(w, &pageError{status: 403, title: "Form expired",
				message: "The form's anti-forgery token does not match your session. Reload the authorization link and try again."})
			return
		}
		s.endSession(w, r)
		s.renderLogin(w, r, req, http.StatusOK, "")
		return
	case "pick", "approve", "deny":
		if sess == nil {
			s.renderLogin(w, r, req, http.StatusOK, "Your session has ended; log in again.")
			return
		}
		if subtle.ConstantTimeCompare([]byte(sess.csrf), []byte(form.Get("csrf"))) != 1 {
			s.renderError(w, &pageError{status: 403, title: "Form expired",
				message: "The form's anti-forgery token does not match your session. Reload the authorization link and try again."})
			return
		}
	case "":
	default:
		s.renderError(w, &pageError{status: 400, title: "Unknown action", message: fmt.Sprintf("The form action %q is not one of login, logout, pick, approve, deny.", action)})
		return
	}
	if sess == nil {
		s.renderLogin(w, r, req, http.StatusOK, "")
		return
	}
	user := s.userByContactID(sess.contactID)
	if user == nil {
		s.endSession(w, r)
		s.renderLogin(w, r, req, http.StatusOK, "")
		return
	}
	var m *Membership
	if len(user.Memberships) == 1 {
		m = &user.Memberships[0]
	} else if id := form.Get("account_id"); id != "" {
		for i := range user.Memberships {
			if user.Memberships[i].Account.ID == id {
				m = &user.Memberships[i]
			}
		}
		if m == nil {
			s.renderError(w, &pageError{status: 400, title: "Not your account",
				message: fmt.Sprintf("%s is not a member of account %s.", user.Name, id)})
			return
		}
	}
	if m == nil {
		s.renderAccounts(w, req, user, sess)
		return
	}
	if !m.Role.CanAuthorize() {
		// Spec 7: "the request is refused" redirects with error and
		// error_description, like a denial.
		s.cfg.Logf("authorize: %s refused: %s is a %s of account %s", req.app.Name, user.Email, m.Role, m.Account.ID)
		// Log the user out, so a real browser can try another demo user
		// instead of being refused again at once.
		s.endSession(w, r)
		s.redirectTo(w, req, url.Values{"error": {"access_denied"}, "error_description": {fmt.Sprintf(
			"Only account managers and owners can authorize an application; %s is a %s of %s.", user.Name, m.Role, m.Account.Name)}})
		return
	}
	if m.Account.OAuthDisabled {
		s.redirectTo(w, req, url.Values{"error": {"access_denied"}, "error_description": {fmt.Sprintf(
			"OAuth is not enabled for the account %s; it must be enabled for an account before applications can be authorized.", m.Account.Name)}})
		return
	}
	key := grantKey{user.ContactID, req.app.ClientID, m.Account.ID}
	switch action {
	case "deny":
		s.cfg.Logf("authorize: %s denied %s for account %s", user.Email, req.app.Name, m.Account.ID)
		s.redirectTo(w, req, url.Values{"error": {"access_denied"}, "error_description": {"The user denied the application access to the account."}})
		return
	case "approve":
		s.mu.Lock()
		s.grants[key] = append([]string(nil), req.app.Scopes...)
		s.mu.Unlock()
	default:
		s.mu.Lock()
		granted, ok := s.grants[key]
		s.mu.Unlock()
		// Changed app permissions need a new approval (spec 5.2).
		if !ok || !slices.Equal(granted, req.app.Scopes) {
			s.renderConsent(w, req, user, m, sess)
			return
		}
	}
	code := randomHex(20)
	s.mu.Lock()
	s.pruneLocked(now)
	s.codes[code] = &authCode{clientID: req.app.ClientID, contactID: user.ContactID, account: m.Account,
		redirectURI: req.redirectURI, scopes: append([]string(nil), req.app.Scopes...),
		expires: now.Add(s.cfg.CodeTTL), challenge: req.challenge}
	s.mu.Unlock()
	s.cfg.Logf("authorize: %s authorized %s for account %s; code issued", user.Email, req.app.Name, m.Account.ID)
	s.redirectTo(w, req, url.Values{
		"code":          {code},
		"account_id":    {m.Account.ID},
		"account_url":   {m.Account.URL},
		"account_name":  {m.Account.Name},
		"contact_id":    {user.ContactID},
		"contact_name":  {user.Name},
		"contact_email": {user.Email},
	})
}

func (s *Server) sessionFor(r *http.Request, now time.Time) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[c.Value]
	if sess == nil || now.After(sess.expires) {
		delete(s.sessions, c.Value)
		return nil
	}
	return sess
}

func (s *Server) newSession(w http.ResponseWriter, contactID string, now time.Time) *session {
	id := randomHex(24)
	sess := &session{contactID: contactID, csrf: randomHex(16), expires: now.Add(sessionTTL)}
	s.mu.Lock()
	s.sessions[id] = sess
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return sess
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

func (s *Server) userByEmail(email string) *User {
	for i := range s.users {
		if strings.EqualFold(s.users[i].Email, strings.TrimSpace(email)) {
			return &s.users[i]
		}
	}
	return nil
}

func (s *Server) userByContactID(id string) *User {
	for i := range s.users {
		if s.users[i].ContactID == id {
			return &s.users[i]
		}
	}
	return nil
}

// tokenError is the JSON error body of the token endpoint and the APIs.
type tokenError struct {
	status int
	code   string
	desc   string
}

func (s *Server) writeOAuthError(w http.ResponseWriter, e tokenError) {
	writeJSON(w, e.status, map[string]string{"error": e.code, "error_description": e.desc})
}

// tokenParams gathers the token endpoint's inputs. The spec says they come
// as URL query parameters; for the ones that arrive in the form body or in
// HTTP Basic instead, the names are returned in misplaced so the caller can
// warn (or, in strict mode, refuse).
func tokenParams(r *http.Request) (get func(string) string, misplaced []string, basic bool, err *tokenError) {
	q := r.URL.Query()
	var body url.Values
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		if perr := r.ParseForm(); perr != nil {
			return nil, nil, false, &tokenError{400, "invalid_request", "the form body cannot be parsed: " + perr.Error()}
		}
		body = r.PostForm
	}
	bu, bp, hasBasic := r.BasicAuth()
	if hasBasic {
		// RFC 6749 2.3.1 form-encodes Basic credentials; undo it leniently.
		if v, e := url.QueryUnescape(bu); e == nil {
			bu = v
		}
		if v, e := url.QueryUnescape(bp); e == nil {
			bp = v
		}
	}
	vals := map[string]string{}
	for _, name := range []string{"client_id", "client_secret", "grant_type", "code", "redirect_uri", "refresh_token", "code_verifier"} {
		if v := q.Get(name); v != "" {
			vals[name] = v
			switch {
			case name == "client_id" && hasBasic && bu != v:
				return nil, nil, false, &tokenError{400, "invalid_request", "client_id in the query differs from the one in the Authorization header"}
			case name == "client_secret" && hasBasic && bp != v:
				return nil, nil, false, &tokenError{400, "invalid_request", "client_secret in the query differs from the one in the Authorization header"}
			}
			continue
		}
		if v := body.Get(name); v != "" {
			vals[name] = v
			misplaced = append(misplaced, name+" (form body)")
			continue
		}
		if hasBasic && (name == "client_id" || name == "client_secret") {
			v := bu
			if name == "client_secret" {
				v = bp
			}
			if v != "" {
				vals[name] = v
				misplaced = append(misplaced, name+" (HTTP Basic)")
			}
		}
	}
	return func(n string) string { return vals[n] }, misplaced, hasBasic, nil
}

// handleToken is POST /oauth/token (spec 4.2, 5.4).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.writeOAuthError(w, tokenError{405, "invalid_request", "the token endpoint accepts only POST, with its inputs as URL query parameters"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	get, misplaced, basic, perr := tokenParams(r)
	if perr != nil {
		s.writeOAuthError(w, *perr)
		return
	}
	if len(misplaced) > 0 {
		note := fmt.Sprintf("%s arrived outside the URL query; the service reads token inputs from the query (spec 4.2)", strings.Join(misplaced, ", "))
		if s.cfg.Strict {
			s.writeOAuthError(w, tokenError{400, "invalid_request", note + ", and this sandbox runs in strict mode, so they were ignored"})
			return
		}
		w.Header().Set("X-Sandbox-Note", note+"; the sandbox accepted them anyway, the real service may not")
	}
	for _, p := range []string{"client_id", "client_secret", "grant_type"} {
		if get(p) == "" {
			desc := "missing required parameter " + p + "; send the token inputs as URL query parameters (spec 4.2)"
			if ct := strings.ToLower(r.Header.Get("Content-Type")); strings.Contains(ct, "json") {
				desc += "; a JSON body is not read"
			}
			s.writeOAuthError(w, tokenError{400, "invalid_request", desc})
			return
		}
	}
	app, ok := s.apps[get("client_id")]
	if !ok {
		if basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="sandbox"`)
		}
		s.writeOAuthError(w, tokenError{401, "invalid_client", "no application is registered with this client_id"})
		return
	}
	if subtle.ConstantTimeCompare([]byte(app.ClientSecret), []byte(get("client_secret"))) != 1 {
		if basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="sandbox"`)
		}
		s.writeOAuthError(w, tokenError{401, "invalid_client", "client_secret is not the secret of application " + app.Name})
		return
	}
	now := s.cfg.Now()
	switch gt := get("grant_type"); gt {
	case "authorization_code":
		s.exchangeCode(w, app, get, now)
	case "refresh_token":
		s.refreshAccess(w, app, get, now)
	default:
		s.writeOAuthError(w, tokenError{400, "unsupported_grant_type", fmt.Sprintf("grant_type %q is not supported; use authorization_code or refresh_token", gt)})
	}
}

func (s *Server) exchangeCode(w http.ResponseWriter, app App, get func(string) string, now time.Time) {
	for _, p := range []string{"code", "redirect_uri"} {
		if get(p) == "" {
			s.writeOAuthError(w, tokenError{400, "invalid_request", "missing required parameter " + p + " for grant_type=authorization_code"})
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.codes[get("code")]
	switch {
	case c == nil:
		s.writeOAuthError(w, tokenError{400, "invalid_grant", "the authorization code is unknown (this sandbox never issued it, or it was restarted since)"})
		return
	case c.clientID != app.ClientID:
		s.writeOAuthError(w, tokenError{400, "invalid_grant", "the authorization code was issued to another application"})
		return
	case c.used:
		s.writeOAuthError(w, tokenError{400, "invalid_grant", "the authorization code was already used; codes are single-use, so go through the authorization flow again"})
		return
	case now.After(c.expires):
		s.writeOAuthError(w, tokenError{400, "invalid_grant", fmt.Sprintf("the authorization code expired %s ago; codes can be exchanged for %s after the redirect", human.Duration(now.Sub(c.expires)), human.Duration(s.cfg.CodeTTL))})
		return
	}
	if ru := get("redirect_uri"); ru != c.redirectURI && ru != app.RedirectURI {
		s.writeOAuthError(w, tokenError{400, "invalid_grant", fmt.Sprintf("redirect_uri %q is not the one used in the authorization request (%q); they must be identical", ru, c.redirectURI)})
		return
	}
	if c.challenge != "" {
		v := get("code_verifier")
		if v == "" {
			s.writeOAuthError(w, tokenError{400, "invalid_grant", "the authorization request sent a PKCE code_challenge, so code_verifier is required"})
			return
		}
		sum := sha256.Sum256([]byte(v))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			s.writeOAuthError(w, tokenError{400, "invalid_grant", "code_verifier does not match the code_challenge (S256: base64url without padding of SHA-256 of the verifier)"})
			return
		}
	}
	c.used = true
	// A new pass through the flow is what changes the refresh token
	// (spec 2.2, 5.4).
	rt := randomHex(32)
	s.refresh[rt] = &refreshToken{clientID: app.ClientID, contactID: c.contactID, accountID: c.account.ID, scopes: c.scopes}
	s.issueAccessLocked(w, app.ClientID, c.contactID, c.account.ID, c.scopes, rt, now)
}

func (s *Server) refreshAccess(w http.ResponseWriter, app App, get func(string) string, now time.Time) {
	if get("refresh_token") == "" {
		s.writeOAuthError(w, tokenError{400, "invalid_request", "missing required parameter refresh_token for grant_type=refresh_token"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.refresh[get("refresh_token")]
	switch {
	case rt == nil:
		s.writeOAuthError(w, tokenError{400, "invalid_grant", "the refresh token is unknown (never issued here, or the sandbox was restarted)"})
		return
	case rt.clientID != app.ClientID:
		s.writeOAuthError(w, tokenError{400, "invalid_grant", "the refresh token was issued to another application"})
		return
	case rt.revoked:
		s.writeOAuthError(w, tokenError{400, "invalid_grant", "the user revoked this application's access in the account settings; go through the authorization flow again"})
		return
	}
	s.issueAccessLocked(w, app.ClientID, rt.contactID, rt.accountID, rt.scopes, get("refresh_token"), now)
}

// issueAccessLocked mints an access token and writes the token response
// (spec 2.2). s.mu is held.
func (s *Server) issueAccessLocked(w http.ResponseWriter, clientID, contactID, accountID string, scopes []string, refresh string, now time.Time) {
	at := randomHex(32)
	s.access[at] = &accessToken{clientID: clientID, contactID: contactID, accountID: accountID,
		scopes: scopes, expires: now.Add(s.cfg.TokenTTL)}
	s.cfg.Logf("token: access token issued to %s for account %s (scopes %s)", clientID, accountID, strings.Join(scopes, " "))
	writeJSON(w, http.StatusOK, struct {
		AccessToken  string   `json:"access_token"`
		TokenType    string   `json:"token_type"`
		ExpiresIn    int64    `json:"expires_in"`
		RefreshToken string   `json:"refresh_token"`
		Scope        []string `json:"scope"`
	}{at, "bearer", int64(s.cfg.TokenTTL / time.Second), refresh, scopes})
}

// validVerifierChars reports whether v uses only the PKCE unreserved
// characters.
func validVerifierChars(v string) bool {
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	return true
}

// pruneLocked forgets codes an hour past expiry (long enough to still say
// "expired" rather than "unknown") and ended sessions, so a sandbox left
// running does not grow without bound. s.mu is held.
func (s *Server) pruneLocked(now time.Time) {
	for k, c := range s.codes {
		if now.Sub(c.expires) > time.Hour {
			delete(s.codes, k)
		}
	}
	for k, sess := range s.sessions {
		if now.After(sess.expires) {
			delete(s.sessions, k)
		}
	}
}

// Revoke does what an end user does in the account settings screen (spec
// 5.7): it removes the application's authorization for the account, so its
// access and refresh tokens stop working and the next authorization asks
// for consent again. It reports how many tokens it revoked.
func (s *Server) Revoke(clientID, accountID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.grants {
		if k.clientID == clientID && k.accountID == accountID {
			delete(s.grants, k)
		}
	}
	for _, t := range s.access {
		if t.clientID == clientID && t.accountID == accountID && !t.revoked {
			t.revoked = true
			n++
		}
	}
	for _, t := range s.refresh {
		if t.clientID == clientID && t.accountID == accountID && !t.revoked {
			t.revoked = true
			n++
		}
	}
	s.cfg.Logf("revoke: %s lost access to account %s (%d tokens)", clientID, accountID, n)
	return n
}

// handleRevoke is POST /sandbox/revoke?client_id=…&account_id=…, standing
// for the revocation screen of the account settings.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	clientID, accountID := r.Form.Get("client_id"), r.Form.Get("account_id")
	if _, ok := s.apps[clientID]; !ok || !s.hasAccount(accountID) {
		apiError(w, http.StatusNotFound, "not_found", "give the client_id of a registered application and the account_id of a sandbox account")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revoked_tokens": s.Revoke(clientID, accountID)})
}

// handleLogout is /sandbox/logout: it ends the login session, for a browser
// whose next authorization would otherwise skip straight to the redirect.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	s.endSession(w, r)
	s.renderRaw(w, "logout", "Logged out", `<h1>Logged out</h1><p class="muted">The next authorization link asks for a login again.</p>`)
}
