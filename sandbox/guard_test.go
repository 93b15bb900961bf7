package sandbox

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// send makes one request to the sandbox at base with the given Host (the
// server's own when empty) and headers, and returns its status and body.
func send(t *testing.T, client *http.Client, method, base, path, host string, form url.Values, headers map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCrossSiteRequestsRefused: a page on another site cannot make the
// browser act on the sandbox (create medias, send events, revoke access,
// post its forms); programs that send no Origin (curl, Hookscope) and the
// sandbox's own pages can.
func TestCrossSiteRequestsRefused(t *testing.T) {
	s, base := newTest(t, Config{})
	app := DefaultApp()
	crossSite := map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
	for _, tc := range []struct {
		name, method, path string
		headers            map[string]string
		want               int
	}{
		{"lifecycle from another site", "POST", "/sandbox/lifecycle?name=Forged", crossSite, http.StatusForbidden},
		{"lifecycle with only an Origin", "POST", "/sandbox/lifecycle?name=Forged", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"lifecycle from an opaque origin", "POST", "/sandbox/lifecycle?name=Forged", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"lifecycle from a sibling site", "POST", "/sandbox/lifecycle?name=Forged", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"events from another site", "POST", "/sandbox/events?type=media.ready", crossSite, http.StatusForbidden},
		{"revoke from another site", "POST", "/sandbox/revoke?client_id=" + app.ClientID + "&account_id=741302", crossSite, http.StatusForbidden},
		{"login form from another site", "POST", "/oauth/authorize?" + url.Values{"client_id": {app.ClientID}, "redirect_uri": {app.RedirectURI}, "response_type": {"code"}}.Encode(), crossSite, http.StatusForbidden},
		{"lifecycle from curl", "POST", "/sandbox/lifecycle?name=Mine", nil, http.StatusAccepted},
		{"lifecycle from its own page", "POST", "/sandbox/lifecycle?name=Mine", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusAccepted},
		{"lifecycle typed by the user", "POST", "/sandbox/lifecycle?name=Mine", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusAccepted},
		{"overview from anywhere (a GET changes nothing)", "GET", "/", crossSite, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Medias())
			code, body := send(t, nil, tc.method, base, tc.path, "", nil, tc.headers)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %s", code, tc.want, body)
			}
			if tc.want == http.StatusForbidden {
				if !strings.Contains(body, "another site") {
					t.Errorf("the refusal does not say why: %s", body)
				}
				if len(s.Medias()) != before {
					t.Errorf("a refused request created a media")
				}
			}
		})
	}
}

// TestHostChecked: the sandbox answers only to loopback names and
// addresses and the hosts it was given, so a page that points a name of
// its own at 127.0.0.1 (DNS rebinding) cannot read its client secrets or
// use its endpoints.
func TestHostChecked(t *testing.T) {
	_, base := newTest(t, Config{Hosts: []string{"Sandbox.LAN"}})
	port := base[strings.LastIndex(base, ":")+1:]
	secret := DefaultApp().ClientSecret
	for _, tc := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"LOCALHOST.:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		{"127.0.0.2:" + port, http.StatusOK},
		{"app.localhost:" + port, http.StatusOK},
		{"sandbox.lan:" + port, http.StatusOK},
		{"rebind.evil.example:" + port, http.StatusMisdirectedRequest},
		{"rebind.evil.example", http.StatusMisdirectedRequest},
		{"192.168.1.20:" + port, http.StatusMisdirectedRequest},
		{"localhost.evil.example:" + port, http.StatusMisdirectedRequest},
	} {
		code, body := send(t, nil, "GET", base, "/", tc.host, nil, nil)
		if code != tc.want || strings.Contains(body, secret) != (tc.want == http.StatusOK) {
			t.Errorf("Host %s: status %d (want %d), client secret shown: %v", tc.host, code, tc.want, strings.Contains(body, secret))
		}
		if tc.want != http.StatusOK && !strings.Contains(body, "localhost, 127.0.0.1 and [::1]") {
			t.Errorf("Host %s: the refusal does not say which names work: %s", tc.host, body)
		}
	}
	// The token endpoint and the API too, not only the overview.
	if code, _ := send(t, nil, "POST", base, "/oauth/token?"+exchangeParams(DefaultApp(), "x").Encode(), "rebind.evil.example", nil, nil); code != http.StatusMisdirectedRequest {
		t.Errorf("token endpoint under a foreign Host: %d", code)
	}
}

// TestAllowedHostRemote: with remote access allowed, any IP address names
// the sandbox (no page can rebind an address), names still need Hosts.
func TestAllowedHostRemote(t *testing.T) {
	s, err := New(Config{AllowRemote: true, Hosts: []string{"[fd00::1]"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for host, want := range map[string]bool{"192.168.1.20:8790": true, "[fd00::1]:8790": true, "10.0.0.1": true, "laptop.lan:8790": false, "": true} {
		if s.allowedHost(host) != want {
			t.Errorf("allowedHost(%q) = %v", host, !want)
		}
	}
}

// TestLoginFormNeedsItsToken: the login form carries an anti-forgery
// token bound to a cookie of the browser that loaded it, so a page
// elsewhere cannot log the developer in as a user of its choosing; the
// logout form carries the session's.
func TestLoginFormNeedsItsToken(t *testing.T) {
	_, base := newTest(t, Config{})
	au := "/oauth/authorize?" + url.Values{"client_id": {DefaultApp().ClientID}, "redirect_uri": {DefaultApp().RedirectURI}, "response_type": {"code"}}.Encode()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login := url.Values{"action": {"login"}, "email": {"owner@example.com"}, "password": {"owner"}}
	// Without the page's token (a form posted from elsewhere, without
	// Origin, as old browsers send it): refused, not logged in.
	code, body := send(t, client, "POST", base, au, "", login, nil)
	if code != http.StatusForbidden || !strings.Contains(body, "anti-forgery") || !strings.Contains(body, `name="csrf"`) {
		t.Fatalf("login without a token: %d\n%s", code, body)
	}
	login.Set("csrf", "0123456789abcdef0123456789abcdef")
	if code, _ = send(t, client, "POST", base, au, "", login, nil); code != http.StatusForbidden {
		t.Fatalf("login with another token: %d", code)
	}
	// With the token of the page this browser loaded: logged in.
	_, page := send(t, client, "GET", base, au, "", nil, nil)
	login.Set("csrf", firstMatch(csrfRe, page))
	code, body = send(t, client, "POST", base, au, "", login, nil)
	if code != http.StatusOK || !strings.Contains(body, "Log out") {
		t.Fatalf("login with the page's token: %d\n%s", code, body)
	}
	// Logging out needs the session's token too.
	if code, _ = send(t, client, "POST", base, au, "", url.Values{"action": {"logout"}}, nil); code != http.StatusForbidden {
		t.Errorf("logout without a token: %d", code)
	}
	if code, body = send(t, client, "POST", base, au, "", url.Values{"action": {"logout"}, "csrf": {firstMatch(csrfRe, body)}}, nil); code != http.StatusOK || !strings.Contains(body, "Log in") {
		t.Errorf("logout with the token: %d", code)
	}
}
