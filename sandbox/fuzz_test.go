package sandbox

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzAuthorize feeds arbitrary query strings to /oauth/authorize. Whatever
// arrives, the sandbox must not panic or fail with a 5xx, and must never
// redirect anywhere but the registered Redirect URI (spec 7).
func FuzzAuthorize(f *testing.F) {
	app := DefaultApp()
	f.Add("client_id=" + app.ClientID + "&redirect_uri=" + url.QueryEscape(app.RedirectURI) + "&response_type=code")
	f.Add("client_id=" + app.ClientID + "&redirect_uri=" + url.QueryEscape(app.RedirectURI+"?x=1&y=%zz") + "&response_type=code&state=s")
	f.Add("client_id=" + app.ClientID + "&redirect_uri=" + url.QueryEscape("http://127.0.0.1:8765/callback/../evil") + "&response_type=code")
	f.Add("client_id=" + app.ClientID + "&redirect_uri=" + url.QueryEscape(app.RedirectURI) + "&response_type=code&code_challenge=abc&code_challenge_method=S256")
	f.Add("redirect_uri=http%3A%2F%2Fevil.example%2F&client_id=" + app.ClientID)
	f.Add("%zz&&==;")
	s, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req := httptest.NewRequest("GET", "http://127.0.0.1:8790/oauth/authorize", nil)
		req.URL.RawQuery = rawQuery
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q", rec.Code, rawQuery)
		}
		if loc := rec.Header().Get("Location"); loc != "" {
			if !strings.HasPrefix(loc, app.RedirectURI+"?") {
				t.Fatalf("redirect to %q for %q", loc, rawQuery)
			}
			if rec.Code != http.StatusFound {
				t.Fatalf("Location with status %d", rec.Code)
			}
		}
	})
}

// FuzzToken feeds arbitrary queries and bodies to /oauth/token: the answer
// is always a JSON error or token, never a 5xx.
func FuzzToken(f *testing.F) {
	f.Add("grant_type=authorization_code&client_id=sandbox-demo-client&client_secret=sandbox-demo-secret&code=x&redirect_uri=y", "")
	f.Add("grant_type=refresh_token&client_id=sandbox-demo-client&client_secret=sandbox-demo-secret&refresh_token=x", "")
	f.Add("", "grant_type=authorization_code&code=%zz")
	f.Add("client_id=a&client_id=b", "client_secret=c")
	s, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	f.Fuzz(func(t *testing.T, rawQuery, body string) {
		req := httptest.NewRequest("POST", "http://127.0.0.1:8790/oauth/token", strings.NewReader(body))
		req.URL.RawQuery = rawQuery
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	})
}
