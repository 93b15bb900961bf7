package oauthflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"mime"
	"slices"
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

// Explain says what the error means for this flow, in plain words, with
// the likely fix: the cause the service's description names when it names
// a known one, else what the code means and that the cause is not known.
func (e OAuthError) Explain() (meaning, fix string) { return e.explain("") }

// explain is Explain for an error answered at step ("" for any step).
func (e OAuthError) explain(step Step) (meaning, fix string) {
	c := e.cause(step)
	return c.meaning, c.fix
}

// cause returns the row of the explanation table that matches e at step:
// one whose words the description contains, else the code's fallback (no
// words), else a row for a code the table does not know.
func (e OAuthError) cause(step Step) oauthCause {
	d := strings.ToLower(e.Description)
	for _, c := range oauthCauses() {
		if c.code != e.Code || c.step != "" && c.step != step {
			continue
		}
		if len(c.words) == 0 {
			return c
		}
		for _, w := range c.words {
			if strings.Contains(d, w) {
				return c
			}
		}
	}
	return oauthCause{code: e.Code, meaning: "the service answered with the non-standard error " + strconv.Quote(e.Code), fix: "read error_description for details"}
}

// oauthCause is one known reason behind an OAuth error code. A row matches
// an error of its code (at its step, when it names one) whose description
// contains one of its words; a row without words is the code's fallback,
// used when the description names no cause of the rows above it. So an
// explanation says the cause that happened, or says that it is not known,
// never every possible one as if it were the one.
type oauthCause struct {
	code         string
	step         Step
	words        []string
	meaning, fix string
}

// oauthCauses is the explanation table, most specific rows first.
func oauthCauses() []oauthCause {
	const (
		again    = "authorize again for a fresh code and exchange it at once, exactly once (login does both)"
		rerun    = "run the flow again (login): a new authorization gives a new refresh token"
		notSaid  = "; the service did not say why"
		unknownC = "the service does not know this authorization code (it never issued it, or it was mistyped)"
	)
	return []oauthCause{
		{code: "access_denied", words: []string{"manager", "owner"},
			meaning: "the user who logged in may not authorize applications: only account managers and owners can (spec 5.1)",
			fix:     "log in as a manager or owner of the account and authorize again"},
		{code: "access_denied", words: []string{"not enabled", "disabled"},
			meaning: "OAuth is not enabled for the account; it must be enabled before applications can be authorized (spec 1)",
			fix:     "enable OAuth for the account in its settings, then authorize again"},
		{code: "access_denied", words: []string{"denied", "deny", "declined", "rejected"},
			meaning: "the user denied the application access on the service's authorization page",
			fix:     "authorize again and approve"},
		{code: "access_denied",
			meaning: "the authorization was not granted" + notSaid,
			fix:     "read error_description, if any; the spec names three reasons: the user denied it, the user is not an account manager or owner, or OAuth is not enabled for the account"},

		{code: "invalid_grant", step: StepExchange, words: []string{"already used", "been used", "was used", "reuse", "redeemed"},
			meaning: "the service says this code was already used: an authorization code can be exchanged once", fix: again},
		{code: "invalid_grant", step: StepExchange, words: []string{"expired"},
			meaning: "the service says this code expired before it was exchanged: codes are short-lived", fix: again},
		{code: "invalid_grant", step: StepRefresh, words: []string{"expired"},
			meaning: "the service says the refresh token expired", fix: rerun},
		{code: "invalid_grant", words: []string{"redirect"},
			meaning: "the redirect_uri sent differs from the one in the authorize URL; the service wants them identical",
			fix:     "send exactly the redirect_uri of the authorize URL"},
		{code: "invalid_grant", words: []string{"verifier", "challenge", "pkce"},
			meaning: "the PKCE code_verifier is missing or does not match the code_challenge of the authorize URL",
			fix:     "exchange the code in the flow that built its authorize URL (the flow state keeps the verifier)"},
		{code: "invalid_grant", words: []string{"another application", "another client", "different client", "other client"},
			meaning: "the grant was issued to another application (client_id)",
			fix:     "use the client ID and secret of the application that was authorized"},
		{code: "invalid_grant", words: []string{"revoked"},
			meaning: "the user revoked the application's access", fix: rerun},
		{code: "invalid_grant", step: StepExchange, words: []string{"unknown", "not found", "never issued", "does not exist"},
			meaning: unknownC, fix: again},
		{code: "invalid_grant", step: StepRefresh, words: []string{"unknown", "not found", "never issued", "does not exist"},
			meaning: "the service does not know this refresh token (it never issued it, or replaced it)", fix: rerun},
		{code: "invalid_grant", step: StepExchange,
			meaning: "the service refused the authorization code" + notSaid,
			fix:     again + "; a code is refused once expired or used, when issued to another application, or with another redirect_uri or code_verifier"},
		{code: "invalid_grant", step: StepRefresh,
			meaning: "the service refused the refresh token" + notSaid,
			fix:     rerun + "; a refresh token is refused once revoked or replaced by a new authorization, or when issued to another application"},
		{code: "invalid_grant",
			meaning: "the service refused the grant (the authorization code or the refresh token)" + notSaid,
			fix:     "authorize again for a fresh code"},

		{code: "invalid_client", words: []string{"secret"},
			meaning: "the client secret is wrong for this application",
			fix:     "copy the client secret again from the application's page"},
		{code: "invalid_client", words: []string{"client_id", "client id", "no application", "unknown client"},
			meaning: "the service does not know this client ID",
			fix:     "copy the client ID again from the application's page"},
		{code: "invalid_client",
			meaning: "the service did not accept the client credentials" + notSaid,
			fix:     "copy the client ID and secret again from the application's page"},

		{code: "invalid_request", words: []string{"missing"},
			meaning: "a required parameter is missing",
			fix:     "send client_id, client_secret, grant_type, code (or refresh_token) and redirect_uri; this service reads them from the URL query (spec 4.2)"},
		{code: "invalid_request",
			meaning: "the service found the request malformed (a parameter missing, repeated or invalid)",
			fix:     "send client_id, client_secret, grant_type, code (or refresh_token) and redirect_uri once each; this service reads them from the URL query (spec 4.2)"},

		{code: "invalid_token", words: []string{"expired"},
			meaning: "the service says the access token expired", fix: "refresh it (hookscope oauth refresh)"},
		{code: "invalid_token", words: []string{"revoked"},
			meaning: "the service says the user revoked the application's access", fix: "authorize again"},
		{code: "invalid_token", words: []string{"unknown", "not found", "never issued"},
			meaning: "the service does not know this access token", fix: "use the token of the last exchange or refresh; authorize again if it is lost"},
		{code: "invalid_token",
			meaning: "the service refused the access token" + notSaid, fix: "refresh the token; if that fails, authorize again"},

		{code: "unauthorized_client", meaning: "this client may not use this grant type", fix: "check the application's settings in the service"},
		{code: "unsupported_grant_type", meaning: "the service does not know this grant_type", fix: "use grant_type=authorization_code for a code or refresh_token to refresh"},
		{code: "invalid_scope", meaning: "the requested scope is unknown or exceeds what the application may have", fix: "edit the application's permissions in the service, then authorize again"},
		{code: "unsupported_response_type", meaning: "the authorize URL asked for a response_type the service does not support", fix: "use response_type=code"},
		{code: "server_error", meaning: "the service failed while handling the request", fix: "try again later; if it persists, report it to the service"},
		{code: "temporarily_unavailable", meaning: "the service is overloaded or in maintenance", fix: "wait and try again"},
		{code: "insufficient_scope", meaning: "the token lacks the scope this request needs", fix: "add the scope to the application's permissions and authorize again"},
	}
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
		r.Problem = fmt.Sprintf("HTTP %d: the JSON body has no access_token (fields: %s)", status, strings.Join(slices.Sorted(maps.Keys(raw)), ", "))
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
