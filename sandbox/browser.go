package sandbox

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// Browser plays an end user's web browser against a sandbox's authorization
// pages, for tests in any package: it logs in, picks an account and
// approves or denies, and returns the URL the sandbox finally redirects to
// (the application's callback) without following it. It keeps cookies, so
// a second Authorize with the same Browser reuses the login session.
type Browser struct {
	// Email and Password log in; see DefaultUsers for the demo ones.
	Email, Password string
	// AccountID is picked when the user has several accounts; empty picks
	// the first one offered.
	AccountID string
	// Deny makes the browser press Deny instead of Authorize.
	Deny bool
	// Pages lists the pages seen during the last Authorize, in order
	// (login, accounts, consent), so a test can tell a skipped consent.
	Pages []string

	client *http.Client
}

// NewBrowser returns a Browser that logs in as email with password.
func NewBrowser(email, password string) *Browser {
	jar, _ := cookiejar.New(nil) // cookiejar.New with nil options never fails
	return &Browser{Email: email, Password: password, client: &http.Client{
		Jar: jar,
		// The redirect to the application's callback is the result, not
		// something to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// PageError is a sandbox error page (unknown client, redirect_uri mismatch,
// …) met by a Browser. Message is the page's explanation.
type PageError struct {
	Status  int
	Message string
}

// Error implements error.
func (e *PageError) Error() string {
	return fmt.Sprintf("sandbox error page (HTTP %d): %s", e.Status, e.Message)
}

var (
	csrfRe    = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
	accountRe = regexp.MustCompile(`name="account_id" value="([^"]*)"`)
	messageRe = regexp.MustCompile(`(?s)id="message">(.*?)</p>`)
)

// Authorize opens authorizeURL and walks the pages until the sandbox
// redirects, returning the redirect target. A sandbox error page returns a
// *PageError; a failed login returns an error too.
func (b *Browser) Authorize(ctx context.Context, authorizeURL string) (*url.URL, error) {
	b.Pages = nil
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizeURL, nil)
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	for step := 0; step < 8; step++ {
		resp, err := b.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("browser: %s %s: %w", req.Method, req.URL.Path, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("browser: read %s: %w", req.URL.Path, err)
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("browser: redirect without a usable Location: %w", err)
			}
			return loc, nil
		}
		page := resp.Header.Get(PageHeader)
		text := string(body)
		form := url.Values{}
		switch page {
		case "login":
			if len(b.Pages) > 0 && b.Pages[len(b.Pages)-1] == "login" {
				return nil, fmt.Errorf("browser: login as %s failed: %s", b.Email, pageMessage(text))
			}
			form.Set("action", "login")
			form.Set("csrf", firstMatch(csrfRe, text))
			form.Set("email", b.Email)
			form.Set("password", b.Password)
		case "accounts":
			form.Set("action", "pick")
			form.Set("csrf", firstMatch(csrfRe, text))
			id := b.AccountID
			if id == "" {
				id = firstMatch(accountRe, text)
			}
			form.Set("account_id", id)
		case "consent":
			form.Set("csrf", firstMatch(csrfRe, text))
			form.Set("account_id", firstMatch(accountRe, text))
			if b.Deny {
				form.Set("action", "deny")
			} else {
				form.Set("action", "approve")
			}
		case "error":
			return nil, &PageError{Status: resp.StatusCode, Message: pageMessage(text)}
		default:
			return nil, fmt.Errorf("browser: unexpected response HTTP %d without a %s header", resp.StatusCode, PageHeader)
		}
		b.Pages = append(b.Pages, page)
		// Forms post back to the authorization URL itself.
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, authorizeURL, strings.NewReader(form.Encode()))
		if err != nil {
			return nil, fmt.Errorf("browser: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return nil, errors.New("browser: too many pages without a redirect")
}

func firstMatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

func pageMessage(s string) string {
	return strings.TrimSpace(firstMatch(messageRe, s))
}

// AuthorizeURL builds {authURL}/oauth/authorize for app, with extra
// parameters (state, code_challenge, …) appended.
func AuthorizeURL(authURL string, app App, extra url.Values) string {
	q := url.Values{"client_id": {app.ClientID}, "redirect_uri": {app.RedirectURI}, "response_type": {"code"}}
	for k, vs := range extra {
		q[k] = vs
	}
	return strings.TrimRight(authURL, "/") + "/oauth/authorize?" + q.Encode()
}
