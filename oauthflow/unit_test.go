package oauthflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/internal/testport"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func TestParseTokenResponse(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		status         int
		wantScope      []string
		wantExpires    int64
		wantDev        string // substring of a deviation ("" = none)
		wantErr        string // OAuth error code
		wantProblem    string
	}{
		{name: "spec", status: 200, ct: "application/json", body: `{"access_token":"a","token_type":"bearer","expires_in":3600,"refresh_token":"r","scope":["all:all","media:read"]}`, wantScope: []string{"all:all", "media:read"}, wantExpires: 3600},
		{name: "scope space string", status: 200, body: `{"access_token":"a","token_type":"bearer","expires_in":60,"refresh_token":"r","scope":"media:read stats:read"}`, wantScope: []string{"media:read", "stats:read"}, wantExpires: 60, wantDev: "space-separated"},
		{name: "scope comma string", status: 200, body: `{"access_token":"a","token_type":"bearer","expires_in":60,"refresh_token":"r","scope":"media:read, stats:read"}`, wantScope: []string{"media:read", "stats:read"}, wantExpires: 60, wantDev: "comma-separated"},
		{name: "token type case", status: 200, body: `{"access_token":"a","token_type":"Bearer","expires_in":60,"refresh_token":"r","scope":[]}`, wantScope: []string{}, wantExpires: 60, wantDev: "case ignored"},
		{name: "expires_in string", status: 200, body: `{"access_token":"a","token_type":"bearer","expires_in":"7200","refresh_token":"r","scope":["x"]}`, wantScope: []string{"x"}, wantExpires: 7200, wantDev: "string"},
		{name: "expires_in float", status: 200, body: `{"access_token":"a","token_type":"bearer","expires_in":10.5,"refresh_token":"r","scope":["x"]}`, wantScope: []string{"x"}, wantExpires: 10, wantDev: "rounded"},
		{name: "no refresh", status: 200, body: `{"access_token":"a","token_type":"bearer","expires_in":5,"scope":["x"]}`, wantScope: []string{"x"}, wantExpires: 5, wantDev: "refresh_token is missing"},
		{name: "content type", status: 200, ct: "text/plain", body: `{"access_token":"a","token_type":"bearer","expires_in":5,"refresh_token":"r","scope":["x"]}`, wantScope: []string{"x"}, wantExpires: 5, wantDev: "Content-Type"},
		{name: "error body", status: 400, body: `{"error":"invalid_grant","error_description":"code used"}`, wantErr: "invalid_grant"},
		{name: "error with 200", status: 200, body: `{"error":"server_error"}`, wantErr: "server_error", wantDev: "HTTP 200"},
		{name: "html", status: 502, body: `<html><body>Bad gateway</body></html>`, wantProblem: "HTML page"},
		{name: "empty", status: 204, body: ``, wantProblem: "empty body"},
		{name: "json without token", status: 200, body: `{"foo":1}`, wantProblem: "no access_token"},
		{name: "json array", status: 200, body: `[1,2]`, wantProblem: "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ParseTokenResponse(tc.status, tc.ct, []byte(tc.body), t0)
			devs := strings.Join(r.Deviations, "|")
			if tc.wantDev == "" && devs != "" {
				t.Errorf("unexpected deviations: %s", devs)
			}
			if tc.wantDev != "" && !strings.Contains(devs, tc.wantDev) {
				t.Errorf("deviations %q lack %q", devs, tc.wantDev)
			}
			switch {
			case tc.wantErr != "":
				if r.Err == nil || r.Err.Code != tc.wantErr || r.Token != nil {
					t.Fatalf("got %+v", r)
				}
			case tc.wantProblem != "":
				if !strings.Contains(r.Problem, tc.wantProblem) || r.Token != nil {
					t.Fatalf("problem %q, token %+v", r.Problem, r.Token)
				}
			default:
				if r.Token == nil {
					t.Fatalf("no token: %+v", r)
				}
				if strings.Join(r.Token.Scope, " ") != strings.Join(tc.wantScope, " ") || r.Token.ExpiresIn != tc.wantExpires ||
					!r.Token.ExpiresAt.Equal(t0.Add(time.Duration(tc.wantExpires)*time.Second)) {
					t.Fatalf("token %+v", r.Token)
				}
			}
		})
	}
}

func TestOAuthErrorExplanations(t *testing.T) {
	for _, code := range []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "access_denied", "server_error", "temporarily_unavailable", "unsupported_response_type"} {
		m, f := OAuthError{Code: code}.Explain()
		if m == "" || f == "" || strings.Contains(m, "non-standard") {
			t.Errorf("%s: %q / %q", code, m, f)
		}
	}
	if m, _ := (OAuthError{Code: "weird"}).Explain(); !strings.Contains(m, "non-standard") {
		t.Errorf("unknown code: %q", m)
	}
}

// Issue 18: explain the error that happened, as far as the service said
// which, not every possible one; when it did not say, say that.
func TestExplainSaysWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		code, desc  string
		step        Step
		says, never []string
	}{
		{"access_denied", "The user denied the application access to the account.", "", []string{"denied", "approve"}, []string{"manager", "owner", "enabled"}},
		{"access_denied", "Only account managers and owners can authorize an application; Vic is a viewer of Acme.", "", []string{"managers and owners"}, []string{"denied", "enabled"}},
		{"access_denied", "OAuth is not enabled for the account Acme.", "", []string{"not enabled"}, []string{"manager", "denied the"}},
		{"access_denied", "", "", []string{"did not say", "manager", "enabled"}, nil},
		{"invalid_grant", "the authorization code was already used; codes are single-use", StepExchange, []string{"already used"}, []string{"expired", "redirect_uri", "another application"}},
		{"invalid_grant", "the authorization code expired 3s ago", StepExchange, []string{"expired"}, []string{"already used", "redirect_uri"}},
		{"invalid_grant", `redirect_uri "x" is not the one used in the authorization request`, StepExchange, []string{"redirect_uri"}, []string{"expired", "already used"}},
		{"invalid_grant", "code_verifier does not match the code_challenge", StepExchange, []string{"code_verifier"}, []string{"expired", "already used"}},
		{"invalid_grant", "the user revoked this application's access", StepRefresh, []string{"revoked"}, []string{"code", "expired"}},
		{"invalid_grant", "the refresh token is unknown", StepRefresh, []string{"does not know this refresh token"}, []string{"code", "expired"}},
		{"invalid_grant", "", StepRefresh, []string{"refresh token", "did not say"}, []string{"authorization code"}},
		{"invalid_grant", "", StepExchange, []string{"authorization code", "did not say"}, []string{"refresh token"}},
		{"invalid_client", "client_secret is not the secret of application Demo", "", []string{"client secret"}, []string{"client id"}},
		{"invalid_client", "no application is registered with this client_id", "", []string{"client id"}, []string{"secret"}},
		{"invalid_token", "the access token expired 1h ago", "", []string{"expired"}, []string{"revoked", "unknown"}},
	} {
		m, fix := OAuthError{Code: tc.code, Description: tc.desc}.explain(tc.step)
		got := strings.ToLower(m + " | " + fix)
		for _, w := range tc.says {
			if !strings.Contains(got, strings.ToLower(w)) {
				t.Errorf("%s %q at %q: %q lacks %q", tc.code, tc.desc, tc.step, got, w)
			}
		}
		for _, w := range tc.never {
			if strings.Contains(got, strings.ToLower(w)) {
				t.Errorf("%s %q at %q: %q names %q, which did not happen", tc.code, tc.desc, tc.step, got, w)
			}
		}
	}
}

func TestExplainAPIStatusSaysWhatHappened(t *testing.T) {
	tok := Token{AccessToken: "a", Scope: []string{"media:read"}, ExpiresAt: t0.Add(time.Hour)}
	js := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		status      int
		body        string
		says, never []string
	}{
		{401, `{"error":"invalid_token","error_description":"the user revoked this application's access"}`, []string{"revoked"}, []string{"expired", "unknown"}},
		{401, `{"error":"invalid_token","error_description":"the access token is unknown"}`, []string{"does not know"}, []string{"expired", "revoked"}},
		{401, ``, []string{"refused the token"}, []string{"expired", "revoked", "unknown"}},
		{403, `{"error":"insufficient_scope","error_description":"needs media:read"}`, []string{"scope"}, nil},
		{403, `{"error":"forbidden","error_description":"the media belongs to another account"}`, []string{"refused this request", "another account"}, []string{"lacks the scope"}},
	} {
		m, fix := explainAPIStatus(&Response{Status: tc.status, Header: js, Body: tc.body}, MethodHeader, false, tok, t0)
		got := strings.ToLower(m + " | " + fix)
		for _, w := range tc.says {
			if !strings.Contains(got, w) {
				t.Errorf("%d %s: %q lacks %q", tc.status, tc.body, got, w)
			}
		}
		for _, w := range tc.never {
			if strings.Contains(got, w) {
				t.Errorf("%d %s: %q names %q, which did not happen", tc.status, tc.body, got, w)
			}
		}
	}
}

func TestTokenState(t *testing.T) {
	tok := Token{Scope: []string{"all:read"}, ObtainedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if got := tok.TimeLeft(t0.Add(15 * time.Minute)); got != 45*time.Minute {
		t.Errorf("time left %v", got)
	}
	if tok.Expired(t0) || !tok.Expired(t0.Add(time.Hour)) {
		t.Error("Expired wrong")
	}
	if m := tok.MissingScopes([]string{"media:read", "media:upload"}); len(m) != 1 || m[0] != "media:upload" {
		t.Errorf("missing %v", m)
	}
	if m := (Token{Scope: []string{"all:all"}}).MissingScopes([]string{"media:upload"}); len(m) != 0 {
		t.Errorf("all:all missing %v", m)
	}
}

func TestParseCallbackURL(t *testing.T) {
	for _, tc := range []struct {
		in      string
		code    string
		errCode string
		extra   string
		wantErr bool
		note    string
	}{
		{in: "http://127.0.0.1:8765/callback?hs_state=s1&code=abc&account_id=1&account_url=https%3A%2F%2Fa.example&account_name=Acme+Studio&contact_id=5&contact_name=O&contact_email=o%40e.x", code: "abc", extra: "hs_state=s1"},
		{in: "  ?code=abc&account_id=1&account_name=A&contact_id=5&contact_email=x  ", code: "abc"},
		{in: "code=abc&account_id=1&account_name=A&contact_id=5&contact_email=x", code: "abc"},
		{in: "https://t.example/cb?error=access_denied&error_description=No+way&x=1", errCode: "access_denied", extra: "x=1"},
		{in: "https://t.example/cb#code=abc&account_id=1&account_name=A&contact_id=5&contact_email=x", code: "abc", note: "fragment"},
		{in: "https://t.example/cb?code=abc&code=def&account_id=1&account_name=A&contact_id=5&contact_email=x", code: "abc", note: "more than once"},
		{in: "https://t.example/cb?code=abc", code: "abc", note: "account_id is missing"},
		{in: "https://t.example/cb?bad=%zz&code=a%2", code: "a%2", extra: "bad=%zz", note: "account_id is missing"},
		{in: "", wantErr: true},
		{in: "https://t.example/cb", wantErr: true},
		{in: "http://[::1", wantErr: true},
	} {
		r, err := ParseCallbackURL(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if r.Code != tc.code || r.Error != tc.errCode {
			t.Errorf("%q: code %q error %q", tc.in, r.Code, r.Error)
		}
		var extras []string
		for _, p := range r.Extra {
			extras = append(extras, p.Name+"="+p.Value)
		}
		if strings.Join(extras, "&") != tc.extra {
			t.Errorf("%q: extra %v", tc.in, extras)
		}
		if tc.note != "" && !strings.Contains(strings.Join(r.Notes, "|"), tc.note) {
			t.Errorf("%q: notes %v lack %q", tc.in, r.Notes, tc.note)
		}
		if tc.note == "" && len(r.Notes) > 0 {
			t.Errorf("%q: unexpected notes %v", tc.in, r.Notes)
		}
	}
}

func FuzzParseCallbackURL(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:8765/callback?hs_state=s1&code=abc&account_id=1",
		"?error=access_denied&error_description=x",
		"https://t.example/cb#code=a", "code=%zz", "", "://", "?&&=&", "http://[::1]:80/?code=1;state=2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseCallbackURL(s)
		if err == nil && r.Code == "" && r.Error == "" {
			t.Fatalf("accepted %q without code or error", s)
		}
		if r != nil {
			for _, p := range r.Params {
				if p.Name == "" {
					t.Fatalf("empty parameter name from %q", s)
				}
			}
		}
	})
}

func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"a","token_type":"bearer","expires_in":3600,"refresh_token":"r","scope":["all:all"]}`,
		`{"access_token":"a","expires_in":"1e400","scope":"a,b"}`,
		`{"access_token":"a","expires_in":-1,"scope":[1,"x"]}`,
		`{"access_token":"a","expires_in":1e300,"scope":{}}`,
		`{"error":"invalid_grant"}`, `<html>`, "", "null", `{"access_token":5}`, "\xff\xfe",
	} {
		f.Add(200, "application/json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, ct string, body []byte) {
		r := ParseTokenResponse(status, ct, body, t0)
		n := 0
		if r.Token != nil {
			n++
			if r.Token.AccessToken == "" || r.Token.ExpiresIn < 0 || (r.Token.ExpiresIn > 0 && r.Token.ExpiresAt.Before(t0)) {
				t.Fatalf("bad token %+v from %q", r.Token, body)
			}
		}
		if r.Err != nil {
			n++
		}
		if r.Problem != "" {
			n++
		}
		if n != 1 {
			t.Fatalf("outcomes %d (want exactly one) for %q: %+v", n, body, r)
		}
	})
}

func TestAuthorizeURLShape(t *testing.T) {
	p := Profile{Name: "p", BaseURL: "https://api.example", AuthURL: "https://app.example/", ClientID: "cid", ClientSecret: "sec", RedirectURI: "http://127.0.0.1:8765/callback"}
	f, err := New(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := f.AuthorizeURL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := f.State()
	want := "https://app.example/oauth/authorize?client_id=cid&redirect_uri=" + url.QueryEscape("http://127.0.0.1:8765/callback?hs_state="+st.RedirectState) + "&response_type=code"
	if u != want {
		t.Fatalf("\n got %s\nwant %s", u, want)
	}
	f2, _ := New(p, Options{NoRedirectState: true})
	u2, _ := f2.AuthorizeURL(context.Background())
	if u2 != "https://app.example/oauth/authorize?client_id=cid&redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2Fcallback&response_type=code" {
		t.Fatalf("without state: %s", u2)
	}
	// A registered URI with its own query keeps it byte for byte.
	p.RedirectURI = "http://127.0.0.1:8765/cb?app=1"
	f3, _ := New(p, Options{StandardState: true, PKCE: true})
	u3, _ := f3.AuthorizeURL(context.Background())
	pu, _ := url.Parse(u3)
	q := pu.Query()
	if !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:8765/cb?app=1&hs_state=") || q.Get("state") == "" || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 {
		t.Fatalf("options: %s", u3)
	}
}

func TestPreflight(t *testing.T) {
	codes := func(p Profile) string {
		var cs []string
		for _, w := range Preflight(p) {
			cs = append(cs, w.Code)
		}
		return strings.Join(cs, ",")
	}
	base := Profile{BaseURL: "https://api.example", ClientID: "c", ClientSecret: "s"}
	for _, tc := range []struct{ redirect, want string }{
		{"https://tunnel.example/oauth/callback", "remote-redirect"},
		{"https://127.0.0.1:1/cb", "https-loopback"},
		{"not a url", "invalid-profile"},
		{"http://localhost:1/cb/", "exact-match,localhost,trailing-slash"},
	} {
		p := base
		p.RedirectURI = tc.redirect
		got := codes(p)
		// The port may or may not be free on this machine; ignore it.
		got = strings.TrimSuffix(got, ",port-busy")
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.redirect, got, tc.want)
		}
	}
	noSecret := base
	noSecret.ClientSecret = ""
	noSecret.RedirectURI = "https://t.example/cb"
	if !strings.Contains(codes(noSecret), "no-secret") {
		t.Error("missing secret not warned")
	}
}

func TestRedactAndCurl(t *testing.T) {
	tr := Transcript{Step: StepExchange, Request: Request{Method: "POST",
		URL:    "https://api.example/oauth/token?client_id=cid&client_secret=s3cr3t-value&grant_type=authorization_code&code=the-code-123&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb",
		Header: http.Header{"Authorization": {"Basic Y2lkOnMzY3IzdA=="}, "Content-Length": {"0"}}},
		Response: &Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: `{"access_token": "tok-abc-123", "refresh_token":"ref-xyz-789","scope":["all:all"]}`}}
	r := Redact(tr, "unrelated-secret")
	all, _ := json.Marshal(r)
	for _, s := range []string{"s3cr3t-value", "the-code-123", "tok-abc-123", "ref-xyz-789", "Y2lkOnMzY3IzdA=="} {
		if strings.Contains(string(all), s) {
			t.Errorf("%s survives redaction: %s", s, all)
		}
	}
	if !strings.Contains(r.Request.URL, "client_id=cid") || !strings.Contains(r.Request.URL, "grant_type=authorization_code") || r.Request.Header.Get("Authorization") != "Basic "+Redacted {
		t.Errorf("redaction went too far: %+v", r.Request)
	}
	if tr.Request.Header.Get("Authorization") == "Basic "+Redacted {
		t.Error("Redact changed its input")
	}
	curl := tr.Curl(RenderOptions{})
	if strings.Contains(curl, "s3cr3t") || !strings.Contains(curl, "client_secret="+Redacted) || !strings.Contains(curl, "-X POST") || strings.Contains(curl, "Content-Length") || !strings.Contains(curl, "--data-binary ''") {
		t.Errorf("curl: %s", curl)
	}
	if c := tr.Curl(RenderOptions{Reveal: true}); !strings.Contains(c, "s3cr3t-value") {
		t.Errorf("revealed curl: %s", c)
	}
	q := Transcript{Request: Request{Method: "PUT", URL: "https://x/v1/m", Body: `it's`}}.Curl(RenderOptions{})
	if !strings.Contains(q, `'it'\''s'`) {
		t.Errorf("quoting: %s", q)
	}
	ck := Redact(Transcript{Request: Request{Header: http.Header{"Cookie": {"sid=abc123; theme=dark"}}}, Response: &Response{Header: http.Header{"Set-Cookie": {"sid=xyz789; Path=/; HttpOnly"}}}})
	if ck.Request.Header.Get("Cookie") != "sid="+Redacted+"; theme="+Redacted || ck.Response.Header.Get("Set-Cookie") != "sid="+Redacted+"; Path=/; HttpOnly" {
		t.Errorf("cookies: %q / %q", ck.Request.Header.Get("Cookie"), ck.Response.Header.Get("Set-Cookie"))
	}
	// Value-based redaction reaches free text, e.g. an echo in an error.
	tr2 := Transcript{Error: "the code the-code-123 was used", Response: &Response{Body: "seen the-code-123"}}
	if r := Redact(tr2, "the-code-123"); strings.Contains(r.Error+r.Response.Body, "the-code-123") {
		t.Errorf("value redaction: %+v", r)
	}
}

func TestMarkdownFencesAndHAR(t *testing.T) {
	tr := Transcript{Step: StepCall, Label: "header", Time: t0, Request: Request{Method: "GET", URL: "https://x/v1/medias/a?x=1&y=2"},
		Response: &Response{Status: 404, StatusText: "Not Found", Header: http.Header{"Content-Type": {"application/json"}}, Body: "```\n{}", Duration: 1500 * time.Microsecond},
		Error:    "HTTP 404", Fix: "check the id"}
	md := Markdown("Report", []Transcript{tr}, RenderOptions{})
	if !strings.Contains(md, "````\n") || !strings.Contains(md, "## 1. call (header) — failed") || !strings.Contains(md, "Likely fix: check the id") || !strings.Contains(md, "curl -sS -i") {
		t.Errorf("markdown:\n%s", md)
	}
	b, err := HAR([]Transcript{tr, {Step: StepCallback, Inbound: true, Response: &Response{Status: 200}}}, "1.0", RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	entries := doc["log"].(map[string]any)["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("entries %d", len(entries))
	}
	e := entries[0].(map[string]any)
	qs := e["request"].(map[string]any)["queryString"].([]any)
	if len(qs) != 2 || e["time"].(float64) != 1.5 {
		t.Errorf("HAR entry %v", e)
	}
}

// A fake token endpoint checks the exact request shape per placement.
func TestTokenRequestShapes(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1024)
		n, _ := r.Body.Read(b)
		body = string(b[:n])
		got = r
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"A1","token_type":"bearer","expires_in":"60","refresh_token":"R1","scope":"media:read"}`))
	}))
	defer srv.Close()
	p := Profile{Name: "p", BaseURL: srv.URL, ClientID: "c id", ClientSecret: "s&cret", RedirectURI: "https://t.example/cb", Scopes: []string{"media:read", "stats:read"}}
	for _, pl := range []Placement{PlacementQuery, PlacementBody, PlacementBasic} {
		f, _ := New(p, Options{Placement: pl, NoRedirectState: true})
		tok, err := f.Exchange(context.Background(), "CODE", false)
		if err != nil {
			t.Fatalf("%s: %v", pl, err)
		}
		if tok.ExpiresIn != 60 || tok.Scope[0] != "media:read" {
			t.Fatalf("%s: token %+v", pl, tok)
		}
		q := got.URL.Query()
		switch pl {
		case PlacementQuery:
			if q.Get("client_id") != "c id" || q.Get("client_secret") != "s&cret" || q.Get("code") != "CODE" || q.Get("redirect_uri") != "https://t.example/cb" || body != "" || got.Header.Get("Content-Type") != "" {
				t.Errorf("query: %s body %q", got.URL, body)
			}
		case PlacementBody:
			v, _ := url.ParseQuery(body)
			if got.URL.RawQuery != "" || v.Get("client_secret") != "s&cret" || v.Get("grant_type") != "authorization_code" {
				t.Errorf("body: %s body %q", got.URL, body)
			}
		case PlacementBasic:
			u, pw, ok := got.BasicAuth()
			v, _ := url.ParseQuery(body)
			if !ok || u != "c+id" || pw != "s%26cret" || v.Get("client_secret") != "" || v.Get("code") != "CODE" {
				t.Errorf("basic: %q %q %v body %q", u, pw, ok, body)
			}
		}
		ts := f.Transcripts(true)
		notes := strings.Join(ts[len(ts)-1].Notes, "|")
		if !strings.Contains(notes, "expires_in is the string") || !strings.Contains(notes, "space-separated") || !strings.Contains(notes, "stats:read") {
			t.Errorf("%s: deviations not noted: %s", pl, notes)
		}
	}
	if _, err := ParsePlacement("header"); err == nil {
		t.Error("bad placement accepted")
	}
}

func TestLocalhostListenerServesOnlyItsPath(t *testing.T) {
	port := testport.Free(t)
	p := Profile{Name: "p", BaseURL: "http://127.0.0.1:1", ClientID: "c", RedirectURI: fmt.Sprintf("http://localhost:%d/cb", port)}
	f, err := New(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := f.ListenCallback()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := f.AuthorizeURL(context.Background()); err != nil {
		t.Fatal(err)
	}
	get := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if s := get(base + "/favicon.ico"); s != http.StatusNotFound {
		t.Errorf("favicon: %d", s)
	}
	if s := get(base + "/cb"); s != http.StatusBadRequest {
		t.Errorf("no parameters: %d", s)
	}
	if s := get(base + "/cb?code=the-code&hs_state=" + url.QueryEscape(f.State().RedirectState)); s != http.StatusOK {
		t.Errorf("callback: %d", s)
	}
	res, err := f.AwaitCallback(context.Background(), 5*time.Second)
	if err != nil || res.Code != "the-code" {
		t.Fatalf("AwaitCallback: %+v %v", res, err)
	}
}

func TestRedactKeepsEmptyValuesAndPlaceholders(t *testing.T) {
	in := Transcript{Error: "send ?access_token=<ACCESS_TOKEN> or client_secret=&code=abc123"}
	got := Redact(in).Error
	if got != "send ?access_token=<ACCESS_TOKEN> or client_secret=&code="+Redacted {
		t.Fatalf("got %q", got)
	}
}
