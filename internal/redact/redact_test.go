package redact

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "cookie": true, "Set-Cookie": true, "X-Auth-Token": true, "X-Api-Key": true,
		"access_token": true, "bearer_token": true, "refresh_token": true, "id_token": true, "client_secret": true,
		"code": true, "code_verifier": true, "password": true, "key": true, "sig": true, "--token": true, "TUNNEL_TOKEN": true,
		"X-Service-Signature": false, "token_type": false, "WWW-Authenticate": false, "Content-Type": false,
		"User-Agent": false, "client_id": false, "grant_type": false, "code_challenge": false, "state": false,
		"redirect_uri": false, "--client-secret-env": false, "WEBHOOK_SECRET_ENV": false, "": false,
	} {
		if IsSecretName(name) != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestURLAndQuery(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://u:p@x.example/a?access_token=abc&bearer_token=def&keep=1", "https://%5BREDACTED%5D@x.example/a?access_token=%5BREDACTED%5D&bearer_token=%5BREDACTED%5D&keep=1"},
		{"http://127.0.0.1:8787/webhooks", "http://127.0.0.1:8787/webhooks"},
		{"http://x/h?token_type=bearer&code=c0de", "http://x/h?token_type=bearer&code=%5BREDACTED%5D"},
		{"http://x/%zz?token=abc", "http://x/%zz"}, // does not parse: no query
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Query("a=1&client%5Fsecret=s&flag"); got != "a=1&client%5Fsecret=%5BREDACTED%5D&flag" {
		t.Errorf("Query: %q", got)
	}
}

func TestError(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "http://u:pw@127.0.0.1:1/h?token=hush-hush", Err: errors.New("connection refused")}
	got := Error(err)
	if strings.Contains(got, "hush-hush") || strings.Contains(got, "pw@") || !strings.Contains(got, "connection refused") || !strings.Contains(got, "127.0.0.1:1/h?token=%5BREDACTED%5D") {
		t.Errorf("Error: %q", got)
	}
	if Error(nil) != "" || Error(errors.New("plain")) != "plain" {
		t.Error("Error of a nil or plain error")
	}
}

func TestText(t *testing.T) {
	r := New("a-long-secret-value-0123", "short")
	for _, tc := range []struct{ in, want string }{
		{"send ?access_token=<ACCESS_TOKEN> or client_secret=&code=abc123", "send ?access_token=<ACCESS_TOKEN> or client_secret=&code=" + Placeholder},
		{`{"access_token": "tok", "token_type": "bearer", "scope": "all"}`, `{"access_token": "` + Placeholder + `", "token_type": "bearer", "scope": "all"}`},
		{"echoed: a-long-secret-value-0123!", "echoed: " + Placeholder + "!"},
		{"echoed: " + url.QueryEscape("a-long-secret-value-0123"), "echoed: " + Placeholder},
		{"a short word stays", "a short word stays"},
		{"cloudflared --token=abc TUNNEL_TOKEN=def --secret-env=VAR", "cloudflared --token=" + Placeholder + " TUNNEL_TOKEN=" + Placeholder + " --secret-env=VAR"},
		{"token eyJhIjoiYWJjZGVmIiwidCI6IjEyMzQ1Njc4OSJ9 seen", "token " + Placeholder + " seen"},
		{"grant_type=authorization_code&state=xyz", "grant_type=authorization_code&state=xyz"},
		{"cloudflared tunnel run --token abc --url http://x --secret-env VAR", "cloudflared tunnel run --token " + Placeholder + " --url http://x --secret-env VAR"},
		{"--token --no-autoupdate", "--token --no-autoupdate"},
	} {
		if got := r.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if again := r.Text(r.Text(tc.in)); again != r.Text(tc.in) {
			t.Errorf("Text is not idempotent on %q: %q", tc.in, again)
		}
	}
}

func TestHTTPHeader(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer tok"}, "Cookie": {"sid=abc123; theme=dark"}, "Set-Cookie": {"sid=xyz789; Path=/; HttpOnly"},
		"X-Api-Key": {"k"}, "Www-Authenticate": {`Bearer error="invalid_token"`}, "Location": {"http://x/cb?code=c"}}
	got := New().HTTPHeader(h)
	want := http.Header{"Authorization": {"Bearer " + Placeholder}, "Cookie": {"sid=" + Placeholder + "; theme=" + Placeholder},
		"Set-Cookie": {"sid=" + Placeholder + "; Path=/; HttpOnly"}, "X-Api-Key": {Placeholder},
		"Www-Authenticate": {`Bearer error="invalid_token"`}, "Location": {"http://x/cb?code=" + Placeholder}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HTTPHeader:\n got %v\nwant %v", got, want)
	}
	if h.Get("Authorization") != "Bearer tok" {
		t.Error("HTTPHeader changed its input")
	}
	if New().HTTPHeader(nil) != nil {
		t.Error("nil header")
	}
}

// FuzzText checks that a known secret never survives, whatever text
// surrounds it.
func FuzzText(f *testing.F) {
	f.Add("tok-abc-def-123", "https://x/?access_token=", "&y=1", `{"error":"bad code `)
	f.Add("s3cr3tvalue-0123", "", "", "")
	f.Add("with space+plus", "Authorization: Bearer ", "", "client_secret=")
	f.Fuzz(func(t *testing.T, secret, pre, post, body string) {
		esc := url.QueryEscape(secret)
		// Too short to redact by value, or able to overlap the marker itself.
		if len(secret) < MinValueLen || strings.ContainsAny(secret, "[REDACT]") {
			t.Skip()
		}
		for _, s := range []string{pre, post, body} {
			if strings.Contains(s, secret) || strings.Contains(s, esc) {
				t.Skip() // the surrounding text brings its own copy
			}
		}
		r := New(secret)
		hs := r.HTTPHeader(http.Header{"X-Thing": {pre + secret}})
		for _, field := range []string{r.Text(pre + secret + post), r.Text(body + esc + post), r.Text(secret), hs.Get("X-Thing")} {
			if strings.Contains(field, secret) || strings.Contains(field, esc) {
				t.Fatalf("secret %q survives in %q", secret, field)
			}
		}
	})
}

// FuzzTextByPosition checks the other half of the rule: a value shorter
// than MinValueLen, or a secret the text does not contain, changes nothing
// beyond what the by-name rules change, so no ordinary word is ever
// blanked out.
func FuzzTextByPosition(f *testing.F) {
	f.Add("callback refused: it was forged; its code was not used", "forged")
	f.Add("the user denied access", "user")
	f.Add("https://x/cb?code=abc&state=forged", "abc")
	f.Add("nothing secret here", "a-long-secret-value-0123")
	f.Fuzz(func(t *testing.T, text, value string) {
		if len(value) >= MinValueLen {
			for _, v := range []string{value, url.QueryEscape(value), url.PathEscape(value), html.EscapeString(value)} {
				if strings.Contains(text, v) {
					t.Skip() // a long secret in the text: FuzzText's case
				}
			}
		}
		if byName, got := New().Text(text), New(value).Text(text); got != byName {
			t.Fatalf("value %q changed more than the by-name rules in %q:\n got %q\nwant %q", value, text, got, byName)
		}
	})
}
