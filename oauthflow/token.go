package oauthflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Token is a token response turned into state: what was granted and when
// it runs out.
type Token struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token,omitempty"`
	// ExpiresIn is the lifetime in seconds as the response gave it (0 when
	// absent).
	ExpiresIn int64    `json:"expires_in,omitempty"`
	Scope     []string `json:"scope,omitempty"`
	// ObtainedAt is when the response arrived; ExpiresAt is ObtainedAt +
	// ExpiresIn (zero when the lifetime is unknown).
	ObtainedAt time.Time `json:"obtained_at"`
	ExpiresAt  time.Time `json:"expires_at,omitempty"`
}

// TimeLeft is how long the access token stays valid at now (negative once
// expired; 0 when the lifetime is unknown).
func (t Token) TimeLeft(now time.Time) time.Duration {
	if t.ExpiresAt.IsZero() {
		return 0
	}
	return t.ExpiresAt.Sub(now)
}

// Expired reports whether the access token has run out at now.
func (t Token) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// MissingScopes returns the wanted scopes the token was not granted.
// all:all covers everything and all:read covers the read scopes, as the
// spec's scope table describes.
func (t Token) MissingScopes(wanted []string) []string {
	granted := map[string]bool{}
	for _, s := range t.Scope {
		granted[s] = true
	}
	var out []string
	for _, w := range wanted {
		if granted[w] || granted["all:all"] || (granted["all:read"] && strings.HasSuffix(w, ":read")) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// OAuthError is an `{error, error_description}` body from the service.
type OAuthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// Explain says what a standard OAuth error code means for this flow, in
// plain words, with the likely fix.
func (e OAuthError) Explain() (meaning, fix string) {
	switch e.Code {
	case "invalid_request":
		return "the request is missing a required parameter or has one twice or malformed",
			"send client_id, client_secret, grant_type, code (or refresh_token) and redirect_uri; this service reads them from the URL query, not the body"
	case "invalid_client":
		return "the service did not accept the client credentials (unknown client_id or wrong client_secret)",
			"copy the client ID and secret again from the application's page; check where they are sent (the service expects the URL query)"
	case "invalid_grant":
		return "the code or refresh token is invalid, expired, already used, issued to another client, or the redirect_uri differs from the one used to authorize",
			"authorize again to get a fresh code and exchange it at once, exactly once, with the same redirect_uri"
	case "unauthorized_client":
		return "this client may not use this grant type", "check the application's settings in the service"
	case "unsupported_grant_type":
		return "the service does not know this grant_type", "use grant_type=authorization_code for a code or refresh_token to refresh"
	case "invalid_scope":
		return "the requested scope is unknown or exceeds what the application may have", "edit the application's permissions in the service, then authorize again"
	case "access_denied":
		return "the user or the service refused the authorization",
			"only account managers and owners can authorize an application, and OAuth must be enabled for the account; try again with such a user and approve"
	case "unsupported_response_type":
		return "the authorize URL asked for a response_type the service does not support", "use response_type=code"
	case "server_error":
		return "the service failed while handling the request", "try again later; if it persists, report it to the service"
	case "temporarily_unavailable":
		return "the service is overloaded or in maintenance", "wait and try again"
	case "invalid_token":
		return "the access token is unknown, revoked or expired", "refresh the token, or authorize again"
	case "insufficient_scope":
		return "the token lacks the scope this request needs", "add the scope to the application's permissions and authorize again"
	}
	return "the service answered with the non-standard error " + strconv.Quote(e.Code), "read error_description for details"
}

// Error is the code, the description and its meaning.
func (e OAuthError) Error() string {
	meaning, _ := e.Explain()
	if e.Description != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Description, meaning)
	}
	return fmt.Sprintf("%s (%s)", e.Code, meaning)
}

// TokenResponse is the lenient reading of a token endpoint answer.
type TokenResponse struct {
	Status int `json:"status"`
	// Token is set when the body carried an access token.
	Token *Token `json:"token,omitempty"`
	// Err is set when the body was an OAuth error object.
	Err *OAuthError `json:"error,omitempty"`
	// Deviations list where the body differs from the spec (section 2.2)
	// but was accepted anyway.
	Deviations []string `json:"deviations,omitempty"`
	// Problem says why nothing usable was found (not JSON, no token...).
	Problem string `json:"problem,omitempty"`
}

// ParseTokenResponse reads a token endpoint answer leniently: scope as an
// array (the spec) or a space- or comma-separated string, token_type in
// any case, expires_in as a number or a string. Error bodies come back in
// Err; bodies that are not JSON come back with Problem set. It never fails
// on input: every outcome is described in the result.
func ParseTokenResponse(status int, contentType string, body []byte, obtainedAt time.Time) TokenResponse {
	r := TokenResponse{Status: status}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		r.Problem = fmt.Sprintf("HTTP %d with an empty body: the service sent no token", status)
		return r
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || raw == nil {
		r.Problem = fmt.Sprintf("HTTP %d with a body that is not a JSON object (%s): shown raw", status, describeBody(trimmed))
		return r
	}
	if mt, _, err := mime.ParseMediaType(contentType); contentType != "" && (err != nil || mt != "application/json") {
		r.Deviations = append(r.Deviations, fmt.Sprintf("Content-Type is %q, not application/json; the body was read as JSON anyway", contentType))
	}
	str := func(k string) (string, bool) {
		v, ok := raw[k]
		if !ok {
			return "", false
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			r.Deviations = append(r.Deviations, fmt.Sprintf("%s is %s, not a string; converted", k, jsonKind(v)))
			return strings.Trim(string(v), `"`), true
		}
		return s, true
	}
	if code, ok := str("error"); ok {
		desc, _ := str("error_description")
		r.Err = &OAuthError{Code: code, Description: desc}
		if status < 400 {
			r.Deviations = append(r.Deviations, fmt.Sprintf("an error body arrived with HTTP %d; errors should use 400 or 401", status))
		}
		return r
	}
	access, ok := str("access_token")
	if !ok || access == "" {
		r.Problem = fmt.Sprintf("HTTP %d: the JSON body has no access_token (fields: %s)", status, strings.Join(keys(raw), ", "))
		return r
	}
	t := &Token{AccessToken: access, ObtainedAt: obtainedAt}
	if status != 200 {
		r.Deviations = append(r.Deviations, fmt.Sprintf("a token arrived with HTTP %d instead of 200", status))
	}
	if tt, ok := str("token_type"); ok {
		t.TokenType = tt
		if tt != "bearer" {
			if strings.EqualFold(tt, "bearer") {
				r.Deviations = append(r.Deviations, fmt.Sprintf("token_type is %q; the spec says \"bearer\" (case ignored)", tt))
			} else {
				r.Deviations = append(r.Deviations, fmt.Sprintf("token_type is %q; the spec says it is always \"bearer\"", tt))
			}
		}
	} else {
		r.Deviations = append(r.Deviations, "token_type is missing; assumed bearer")
		t.TokenType = "bearer"
	}
	if rt, ok := str("refresh_token"); ok && rt != "" {
		t.RefreshToken = rt
	} else {
		r.Deviations = append(r.Deviations, "refresh_token is missing; the spec returns one with every access token")
	}
	if v, ok := raw["expires_in"]; ok {
		secs, dev := parseExpiresIn(v)
		if dev != "" {
			r.Deviations = append(r.Deviations, dev)
		}
		if secs > 0 {
			t.ExpiresIn = secs
			t.ExpiresAt = obtainedAt.Add(time.Duration(secs) * time.Second)
		}
	} else {
		r.Deviations = append(r.Deviations, "expires_in is missing; the token's lifetime is unknown")
	}
	if v, ok := raw["scope"]; ok {
		scopes, dev := parseScope(v)
		if dev != "" {
			r.Deviations = append(r.Deviations, dev)
		}
		t.Scope = scopes
	} else {
		r.Deviations = append(r.Deviations, "scope is missing; the granted scopes are unknown")
	}
	r.Token = t
	return r
}

// maxLifetime keeps ExpiresAt arithmetic away from overflow.
const maxLifetime = int64(100 * 365 * 24 * 3600)

func parseExpiresIn(v json.RawMessage) (int64, string) {
	var n json.Number
	// json.Number also accepts a quoted number; the string case below
	// must see those to report the deviation.
	if jsonKind(v) == "a number" && json.Unmarshal(v, &n) == nil {
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsNaN(f) || f < 0 {
			return 0, fmt.Sprintf("expires_in %s is not a usable number of seconds; lifetime unknown", n)
		}
		if f > float64(maxLifetime) {
			return maxLifetime, fmt.Sprintf("expires_in %s is implausibly large; capped at 100 years", n)
		}
		if f != math.Trunc(f) {
			return int64(f), fmt.Sprintf("expires_in %s is not a whole number; rounded down", n)
		}
		return int64(f), ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		secs, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || secs < 0 {
			return 0, fmt.Sprintf("expires_in %q is a string that is not a number of seconds; lifetime unknown", s)
		}
		if secs > maxLifetime {
			secs = maxLifetime
		}
		return secs, fmt.Sprintf("expires_in is the string %q; the spec says integer (accepted)", s)
	}
	return 0, fmt.Sprintf("expires_in is %s, not a number; lifetime unknown", jsonKind(v))
}

func parseScope(v json.RawMessage) ([]string, string) {
	var arr []string
	if err := json.Unmarshal(v, &arr); err == nil {
		return arr, ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		sep := " "
		if strings.Contains(s, ",") {
			sep = ","
		}
		var out []string
		for _, p := range strings.Split(s, sep) {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		word := "space"
		if sep == "," {
			word = "comma"
		}
		return out, fmt.Sprintf("scope is a %s-separated string; the spec says an array of strings (accepted)", word)
	}
	var mixed []any
	if err := json.Unmarshal(v, &mixed); err == nil {
		var out []string
		for _, m := range mixed {
			if s, ok := m.(string); ok {
				out = append(out, s)
			}
		}
		return out, "scope is an array with non-string items; only the strings were kept"
	}
	return nil, fmt.Sprintf("scope is %s; the spec says an array of strings; ignored", jsonKind(v))
}

func jsonKind(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describeBody names what a non-JSON body looks like without quoting it
// (it may hold anything).
func describeBody(b []byte) string {
	switch {
	case !utf8.Valid(b):
		return fmt.Sprintf("%d bytes of binary data", len(b))
	case bytes.HasPrefix(bytes.ToLower(b), []byte("<!doctype html")) || bytes.HasPrefix(bytes.ToLower(b), []byte("<html")):
		return "an HTML page, often a proxy, login or error page rather than the token endpoint"
	}
	return fmt.Sprintf("%d bytes of text", len(b))
}
