package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is an injectable Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

// newTest starts a sandbox behind httptest and returns it with its base URL.
func newTest(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts.URL
}

// tokenCall posts to /oauth/token with params in the query, as the spec says.
func tokenCall(t *testing.T, base string, params url.Values) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.Post(base+"/oauth/token?"+params.Encode(), "", nil)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("token response is not JSON: %v", err)
	}
	return resp.StatusCode, body, resp.Header
}

func exchangeParams(app App, code string) url.Values {
	return url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret},
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {app.RedirectURI}}
}

// login runs the flow as user and returns the callback URL.
func login(t *testing.T, base, email, password string, app App, extra url.Values) *url.URL {
	t.Helper()
	b := NewBrowser(email, password)
	u, err := b.Authorize(context.Background(), AuthorizeURL(base, app, extra))
	if err != nil {
		t.Fatalf("authorize as %s: %v", email, err)
	}
	return u
}

func TestAuthorizeExchangeRefresh(t *testing.T) {
	_, base := newTest(t, Config{})
	app := DefaultApp()
	withExtras := app
	withExtras.RedirectURI = app.RedirectURI + "?hs_state=abc123&tab=2"
	cb := login(t, base, "manager@example.com", "manager", withExtras, url.Values{"state": {"xyz"}})

	if got := cb.Scheme + "://" + cb.Host + cb.Path; got != app.RedirectURI {
		t.Fatalf("redirected to %s, want %s", got, app.RedirectURI)
	}
	q := cb.Query()
	want := map[string]string{"account_id": "741302", "account_name": "Acme Studio", "account_url": "https://acme-studio.video.example",
		"contact_id": "5002", "contact_name": "Manny Manager", "contact_email": "manager@example.com",
		"hs_state": "abc123", "tab": "2", "state": "xyz"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("callback %s = %q, want %q", k, q.Get(k), v)
		}
	}
	code := q.Get("code")
	if code == "" {
		t.Fatalf("no code in callback %s", cb)
	}

	// The token request may repeat the redirect_uri with its extras.
	params := exchangeParams(app, code)
	params.Set("redirect_uri", withExtras.RedirectURI)
	status, tok, hdr := tokenCall(t, base, params)
	if status != 200 {
		t.Fatalf("exchange: %d %v", status, tok)
	}
	if tok["token_type"] != "bearer" || tok["access_token"] == "" || tok["refresh_token"] == "" || tok["expires_in"] != float64(6*3600) {
		t.Fatalf("token response %v", tok)
	}
	if sc, ok := tok["scope"].([]any); !ok || len(sc) != 1 || sc[0] != "all:all" {
		t.Fatalf("scope = %#v, want [all:all]", tok["scope"])
	}
	if hdr.Get("X-Sandbox-Note") != "" || hdr.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: note %q, cache-control %q", hdr.Get("X-Sandbox-Note"), hdr.Get("Cache-Control"))
	}

	// Codes are single-use.
	status, body, _ := tokenCall(t, base, exchangeParams(app, code))
	if status != 400 || body["error"] != "invalid_grant" || !strings.Contains(body["error_description"].(string), "already used") {
		t.Fatalf("reused code: %d %v", status, body)
	}

	// Refresh: new access token, same refresh token.
	for i := 0; i < 2; i++ {
		status, ref, _ := tokenCall(t, base, url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret},
			"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}})
		if status != 200 {
			t.Fatalf("refresh: %d %v", status, ref)
		}
		if ref["refresh_token"] != tok["refresh_token"] {
			t.Errorf("refresh token changed on refresh")
		}
		if ref["access_token"] == tok["access_token"] {
			t.Errorf("refresh returned the same access token")
		}
	}
}

func TestAuthorizeOutcomes(t *testing.T) {
	app := DefaultApp()
	tests := []struct {
		name         string
		email, pass  string
		account      string
		deny         bool
		authorizeURL func(base string) string
		wantError    string // error query parameter on the callback
		wantDescSub  string
		wantPage     string // substring of a *PageError message
		wantAccount  string
		wantPages    []string
	}{
		{name: "denial", email: "manager@example.com", pass: "manager", deny: true,
			wantError: "access_denied", wantDescSub: "denied", wantPages: []string{"login", "consent"}},
		{name: "viewer refused", email: "viewer@example.com", pass: "viewer",
			wantError: "access_denied", wantDescSub: "Only account managers and owners", wantPages: []string{"login"}},
		{name: "owner picks second account", email: "owner@example.com", pass: "owner", account: "741388",
			wantAccount: "741388", wantPages: []string{"login", "accounts", "consent"}},
		{name: "owner picks first account", email: "owner@example.com", pass: "owner",
			wantAccount: "741302", wantPages: []string{"login", "accounts", "consent"}},
		{name: "redirect mismatch localhost", email: "manager@example.com", pass: "manager",
			authorizeURL: func(base string) string {
				a := app
				a.RedirectURI = "http://localhost:8765/callback"
				return AuthorizeURL(base, a, nil)
			}, wantPage: "compares the two exactly"},
		{name: "redirect mismatch trailing slash", email: "manager@example.com", pass: "manager",
			authorizeURL: func(base string) string {
				a := app
				a.RedirectURI = app.RedirectURI + "/"
				return AuthorizeURL(base, a, nil)
			}, wantPage: "not the Redirect URI registered"},
		{name: "unknown client", email: "manager@example.com", pass: "manager",
			authorizeURL: func(base string) string {
				a := app
				a.ClientID = "nope"
				return AuthorizeURL(base, a, nil)
			}, wantPage: "No application is registered"},
		{name: "response_type token", email: "manager@example.com", pass: "manager",
			authorizeURL: func(base string) string {
				return AuthorizeURL(base, app, url.Values{"response_type": {"token"}})
			}, wantPage: "response_type=code"},
		{name: "pkce plain refused", email: "manager@example.com", pass: "manager",
			authorizeURL: func(base string) string {
				return AuthorizeURL(base, app, url.Values{"code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"plain"}})
			}, wantError: "invalid_request", wantDescSub: "S256"},
		{name: "wrong password", email: "manager@example.com", pass: "guess", wantPage: "login as manager@example.com failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, base := newTest(t, Config{})
			au := AuthorizeURL(base, app, nil)
			if tc.authorizeURL != nil {
				au = tc.authorizeURL(base)
			}
			b := NewBrowser(tc.email, tc.pass)
			b.AccountID, b.Deny = tc.account, tc.deny
			cb, err := b.Authorize(context.Background(), au)
			if tc.wantPage != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantPage) {
					t.Fatalf("err = %v, want one containing %q (callback %v)", err, tc.wantPage, cb)
				}
				var pe *PageError
				if strings.Contains(tc.name, "mismatch") && (!errors.As(err, &pe) || pe.Status != 400) {
					t.Fatalf("mismatch should be a 400 error page, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("authorize: %v", err)
			}
			if !strings.HasPrefix(cb.String(), app.RedirectURI+"?") {
				t.Fatalf("callback %s is not the registered redirect URI", cb)
			}
			q := cb.Query()
			if q.Get("error") != tc.wantError {
				t.Fatalf("error = %q, want %q (%s)", q.Get("error"), tc.wantError, cb)
			}
			if tc.wantError != "" {
				if q.Get("code") != "" || !strings.Contains(q.Get("error_description"), tc.wantDescSub) {
					t.Fatalf("error callback %s", cb)
				}
			} else if q.Get("code") == "" || q.Get("account_id") != tc.wantAccount {
				t.Fatalf("callback %s: want a code for account %s", cb, tc.wantAccount)
			}
			if tc.wantPages != nil && !slices.Equal(b.Pages, tc.wantPages) {
				t.Fatalf("pages = %v, want %v", b.Pages, tc.wantPages)
			}
		})
	}
}

func TestMismatchPageExplains(t *testing.T) {
	_, base := newTest(t, Config{})
	a := DefaultApp()
	a.RedirectURI = "http://localhost:8765/callback"
	resp, err := http.Get(AuthorizeURL(base, a, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	for _, want := range []string{"http://127.0.0.1:8765/callback", "http://localhost:8765/callback", "compares the two exactly", "different strings"} {
		if !strings.Contains(body, want) {
			t.Errorf("mismatch page lacks %q", want)
		}
	}
	if resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
		t.Errorf("status %d, Location %q: want 400 and no redirect", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestConsentSkippedWhenAlreadyAuthorized(t *testing.T) {
	_, base := newTest(t, Config{})
	app := DefaultApp()
	b := NewBrowser("owner@example.com", "owner")
	b.AccountID = "741388"
	if _, err := b.Authorize(context.Background(), AuthorizeURL(base, app, nil)); err != nil {
		t.Fatal(err)
	}
	cb, err := b.Authorize(context.Background(), AuthorizeURL(base, app, nil))
	if err != nil {
		t.Fatal(err)
	}
	// Logged in already, account still picked, consent skipped.
	if !slices.Equal(b.Pages, []string{"accounts"}) || cb.Query().Get("code") == "" {
		t.Fatalf("second pass pages %v, callback %s", b.Pages, cb)
	}
	// After /sandbox/logout the login page comes back.
	lo, err := b.client.Get(base + "/sandbox/logout")
	if err != nil {
		t.Fatal(err)
	}
	lo.Body.Close()
	if _, err := b.Authorize(context.Background(), AuthorizeURL(base, app, nil)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Pages, []string{"login", "accounts"}) {
		t.Fatalf("after logout pages %v", b.Pages)
	}
	// The other account was never approved: consent appears.
	b.AccountID = "741302"
	if _, err := b.Authorize(context.Background(), AuthorizeURL(base, app, nil)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Pages, []string{"accounts", "consent"}) {
		t.Fatalf("other account pages %v", b.Pages)
	}
}

func TestTokenErrors(t *testing.T) {
	clk := newClock()
	_, base := newTest(t, Config{Now: clk.Now})
	app := DefaultApp()
	code := func() string { return login(t, base, "manager@example.com", "manager", app, nil).Query().Get("code") }
	tests := []struct {
		name     string
		params   func() url.Values
		status   int
		errCode  string
		descPart string
	}{
		{"wrong secret", func() url.Values { p := exchangeParams(app, code()); p.Set("client_secret", "x"); return p }, 401, "invalid_client", "client_secret"},
		{"unknown client", func() url.Values { p := exchangeParams(app, code()); p.Set("client_id", "x"); return p }, 401, "invalid_client", "client_id"},
		{"unknown grant", func() url.Values { p := exchangeParams(app, code()); p.Set("grant_type", "password"); return p }, 400, "unsupported_grant_type", "password"},
		{"missing code", func() url.Values { p := exchangeParams(app, ""); p.Del("code"); return p }, 400, "invalid_request", "code"},
		{"missing grant_type", func() url.Values { p := exchangeParams(app, code()); p.Del("grant_type"); return p }, 400, "invalid_request", "grant_type"},
		{"unknown code", func() url.Values { return exchangeParams(app, "deadbeef") }, 400, "invalid_grant", "unknown"},
		{"redirect mismatch", func() url.Values {
			p := exchangeParams(app, code())
			p.Set("redirect_uri", "http://localhost:8765/callback")
			return p
		}, 400, "invalid_grant", "identical"},
		{"expired code", func() url.Values {
			c := code()
			clk.Advance(DefaultCodeTTL + time.Second)
			return exchangeParams(app, c)
		}, 400, "invalid_grant", "expired"},
		{"unknown refresh token", func() url.Values {
			return url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret}, "grant_type": {"refresh_token"}, "refresh_token": {"abc"}}
		}, 400, "invalid_grant", "refresh token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := tokenCall(t, base, tc.params())
			if status != tc.status || body["error"] != tc.errCode || !strings.Contains(body["error_description"].(string), tc.descPart) {
				t.Fatalf("got %d %v, want %d %s mentioning %q", status, body, tc.status, tc.errCode, tc.descPart)
			}
		})
	}
}

func TestTokenParamsOutsideQuery(t *testing.T) {
	app := DefaultApp()
	for _, strict := range []bool{false, true} {
		_, base := newTest(t, Config{Strict: strict})
		code := login(t, base, "manager@example.com", "manager", app, nil).Query().Get("code")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {app.RedirectURI}}
		req, _ := http.NewRequest("POST", base+"/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(app.ClientID, app.ClientSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		note := resp.Header.Get("X-Sandbox-Note")
		if strict {
			if resp.StatusCode != 400 || body["error"] != "invalid_request" || !strings.Contains(body["error_description"].(string), "strict") {
				t.Fatalf("strict: %d %v", resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != 200 || !strings.Contains(note, "code (form body)") || !strings.Contains(note, "client_secret (HTTP Basic)") {
			t.Fatalf("lenient: %d %v note %q", resp.StatusCode, body, note)
		}
		if strings.Contains(note, app.ClientSecret) || strings.Contains(note, code) {
			t.Fatalf("note leaks a secret: %q", note)
		}
	}
}

func TestPKCE(t *testing.T) {
	app := DefaultApp()
	verifier := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	tests := []struct {
		name     string
		verifier string
		status   int
	}{
		{"right verifier", verifier, 200},
		{"wrong verifier", strings.Repeat("x", 43), 400},
		{"missing verifier", "", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, base := newTest(t, Config{})
			cb := login(t, base, "manager@example.com", "manager", app, url.Values{"code_challenge": {challenge}, "code_challenge_method": {"S256"}})
			p := exchangeParams(app, cb.Query().Get("code"))
			if tc.verifier != "" {
				p.Set("code_verifier", tc.verifier)
			}
			status, body, _ := tokenCall(t, base, p)
			if status != tc.status || (status == 400 && body["error"] != "invalid_grant") {
				t.Fatalf("got %d %v, want %d", status, body, tc.status)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	bad := DefaultApp()
	bad.Scopes = []string{"media:write"}
	dup := []App{DefaultApp(), DefaultApp()}
	frag := DefaultApp()
	frag.RedirectURI += "#x"
	for _, cfg := range []Config{{Apps: []App{bad}}, {Apps: dup}, {Apps: []App{frag}}, {WebhookURL: "ftp://x"}} {
		if s, err := New(cfg); err == nil {
			s.Close()
			t.Errorf("New(%+v) accepted a bad config", cfg.Apps)
		}
	}
	if err := CheckLoopback("0.0.0.0:8790"); err == nil {
		t.Error("0.0.0.0 accepted as loopback")
	}
	for _, a := range []string{"127.0.0.1:1", "[::1]:2", "localhost:3"} {
		if err := CheckLoopback(a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

func TestRevokeAndOAuthDisabled(t *testing.T) {
	users := DefaultUsers()
	users[1].Memberships[0].Account.OAuthDisabled = true // the manager's Acme Studio
	_, base := newTest(t, Config{Users: users})
	app := DefaultApp()

	cb := login(t, base, "manager@example.com", "manager", app, nil)
	if cb.Query().Get("error") != "access_denied" || !strings.Contains(cb.Query().Get("error_description"), "OAuth is not enabled") {
		t.Fatalf("OAuth-disabled account: %s", cb)
	}

	b := NewBrowser("owner@example.com", "owner")
	b.AccountID = "741388"
	cb, err := b.Authorize(context.Background(), AuthorizeURL(base, app, nil))
	if err != nil {
		t.Fatal(err)
	}
	status, tok, _ := tokenCall(t, base, exchangeParams(app, cb.Query().Get("code")))
	if status != 200 {
		t.Fatalf("exchange %d %v", status, tok)
	}
	resp, err := http.Post(base+"/sandbox/revoke?client_id="+app.ClientID+"&account_id=741388", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/v1/medias/r2e5w8q1ma", nil)
	req.Header.Set("Authorization", "Bearer "+tok["access_token"].(string))
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 401 {
		t.Fatalf("revoked access token: %d", r2.StatusCode)
	}
	status, body, _ := tokenCall(t, base, url.Values{"client_id": {app.ClientID}, "client_secret": {app.ClientSecret},
		"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}})
	if status != 400 || !strings.Contains(body["error_description"].(string), "revoked") {
		t.Fatalf("revoked refresh: %d %v", status, body)
	}
	// Consent is asked again after revocation.
	if _, err := b.Authorize(context.Background(), AuthorizeURL(base, app, nil)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Pages, []string{"accounts", "consent"}) {
		t.Fatalf("pages after revoke %v", b.Pages)
	}
}

func TestViewerLoggedOutAfterRefusal(t *testing.T) {
	_, base := newTest(t, Config{})
	b := NewBrowser("viewer@example.com", "viewer")
	for i := 0; i < 2; i++ {
		cb, err := b.Authorize(context.Background(), AuthorizeURL(base, DefaultApp(), nil))
		if err != nil {
			t.Fatal(err)
		}
		// Each attempt starts at the login page, so a person can switch users.
		if cb.Query().Get("error") != "access_denied" || !slices.Equal(b.Pages, []string{"login"}) {
			t.Fatalf("attempt %d: %s, pages %v", i+1, cb, b.Pages)
		}
	}
}

func TestScopeParameterIgnoredWithNote(t *testing.T) {
	_, base := newTest(t, Config{})
	au := AuthorizeURL(base, DefaultApp(), url.Values{"scope": {"media:read"}})
	b := NewBrowser("owner@example.com", "owner")
	r0, err := b.client.Get(au)
	if err != nil {
		t.Fatal(err)
	}
	body0, _ := io.ReadAll(r0.Body)
	r0.Body.Close()
	form := url.Values{"action": {"login"}, "csrf": {firstMatch(csrfRe, string(body0))}, "email": {"owner@example.com"}, "password": {"owner"}}
	r1, err := b.client.PostForm(au, form)
	if err != nil {
		t.Fatal(err)
	}
	body1, _ := io.ReadAll(r1.Body)
	r1.Body.Close()
	pick := url.Values{"action": {"pick"}, "csrf": {firstMatch(csrfRe, string(body1))}, "account_id": {"741302"}}
	r2, err := b.client.PostForm(au, pick)
	if err != nil {
		t.Fatal(err)
	}
	body2, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.Header.Get(PageHeader) != "consent" || !strings.Contains(string(body2), "does not read it") || r2.Header.Get("X-Sandbox-Note") == "" {
		t.Fatalf("consent page (%s) without the scope note", r2.Header.Get(PageHeader))
	}
	// The token carries the registered scopes, not the requested one.
	cb, err := b.Authorize(context.Background(), au)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := tokenCall(t, base, exchangeParams(DefaultApp(), cb.Query().Get("code")))
	if sc, _ := tok["scope"].([]any); len(sc) != 1 || sc[0] != "all:all" {
		t.Fatalf("scope %v", tok["scope"])
	}
}
