// Package redact hides secrets in everything Hookscope shows, logs or
// exports: one list of secret names, one placeholder, and the rules for
// headers, URLs and free text. Exports, OAuth transcripts, the sandbox's
// logs and pages and cloudflared's log all go through it, so a credential
// is hidden the same way wherever it would appear.
package redact

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Placeholder replaces every hidden value. In a URL's query it appears
// percent-encoded (%5BREDACTED%5D), as net/url writes it.
const Placeholder = "[REDACTED]"

// MinValueLen is the shortest known secret value hidden wherever it appears
// in text. Shorter ones would blank out ordinary words ("forged", "user");
// codes, tokens and client secrets worth the name are longer, and a value
// under a secret name is hidden whatever its length.
const MinValueLen = 12

// secretNames are names that are secret as a whole word only: "code" is an
// authorization code, "code_challenge" is public.
func secretNames() []string {
	return []string{"authorization", "proxy-authorization", "cookie", "set-cookie",
		"code", "key", "sig", "signature", "auth"}
}

// secretParts make any name that contains them secret: "X-Auth-Token",
// "client_secret", "id_token", "code_verifier", "X-Api-Key".
func secretParts() []string {
	return []string{"token", "secret", "password", "passwd", "api-key", "apikey", "api_key",
		"session", "credential", "verifier", "auth"}
}

// publicNames look like secrets but carry none: the service's signature
// header (an HMAC does not reveal its key, and a consumer needs it to
// verify), the kind of a token, and a server's authentication challenge
// (it explains a refusal).
func publicNames() []string {
	return []string{"x-service-signature", "token_type", "token_type_hint", "www-authenticate"}
}

// IsSecretName reports whether a header, query or form parameter, JSON
// field or command-line flag called name carries a secret. Case and
// leading dashes do not matter; a name ending in -env or _env names an
// environment variable, not a secret.
func IsSecretName(name string) bool {
	n := strings.ToLower(strings.TrimLeft(name, "-"))
	if n == "" || slices.Contains(publicNames(), n) || strings.HasSuffix(n, "-env") || strings.HasSuffix(n, "_env") {
		return false
	}
	if slices.Contains(secretNames(), n) {
		return true
	}
	return slices.ContainsFunc(secretParts(), func(p string) bool { return strings.Contains(n, p) })
}

// Header returns the value to show for a header called name: the
// Placeholder when the name is a secret one, the value otherwise. Exports
// use it; transcripts keep a little more (see Redactor.HTTPHeader).
func Header(name, value string) string {
	if IsSecretName(name) {
		return Placeholder
	}
	return value
}

// Query returns a raw query with the values of secret parameters replaced;
// everything else keeps its bytes and order.
func Query(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		name := k
		if n, err := url.QueryUnescape(k); err == nil {
			name = n
		}
		if hasValue && IsSecretName(name) {
			parts[i] = k + "=" + url.QueryEscape(Placeholder)
		}
	}
	return strings.Join(parts, "&")
}

// URL hides a URL's user info and the values of its secret query
// parameters. A string that does not parse comes back without its query
// and fragment.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			return raw[:i]
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User(Placeholder)
	}
	u.RawQuery = Query(u.RawQuery)
	return u.String()
}

// Error is err's message with the URL of a *url.Error (what net/http's
// client returns) redacted where it stands, rather than searched for in
// the text.
func Error(err error) string {
	if err == nil {
		return ""
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		c := *ue
		c.URL = URL(ue.URL)
		return c.Error()
	}
	return err.Error()
}

// Redactor hides secrets in free text (logs, error messages, bodies,
// transcripts): the known secret values given to New wherever they appear,
// the values of secret names written as name=value or as a JSON field
// ("name": "value") or as a command-line flag (--name value), and values
// shaped like a JWT or base64 JSON (eyJ…).
// Empty values and placeholders such as <ACCESS_TOKEN> stay visible. It is
// safe for concurrent use.
type Redactor struct {
	values                []string
	pair, flag, json, jwt *regexp.Regexp
}

// New returns a Redactor that also hides each of values (of at least
// MinValueLen characters) wherever it appears, as written or URL-, path-
// or HTML-escaped.
func New(values ...string) *Redactor {
	r := &Redactor{
		// name=value after the start of the text, a query or form
		// separator, a quote or a space.
		pair: regexp.MustCompile(`(?:^|[?&;\s"'#])([\w.\-]+)=([^&#\s"'<>\\]+)`),
		// a command line's --name VALUE (cloudflared's --token VALUE).
		flag: regexp.MustCompile(`(?:^|\s)(--[\w.\-]+)\s+([^\s"'<>\-][^\s"'<>]*)`),
		json: regexp.MustCompile(`"([^"\\]+)"\s*:\s*("(?:[^"\\]|\\.)*")`),
		jwt:  regexp.MustCompile(`eyJ[A-Za-z0-9_\-+/=.]{20,}`),
	}
	seen := map[string]bool{}
	for _, s := range values {
		if len(s) < MinValueLen {
			continue
		}
		for _, v := range []string{s, url.QueryEscape(s), url.PathEscape(s), html.EscapeString(s)} {
			if !seen[v] {
				seen[v] = true
				r.values = append(r.values, v)
			}
		}
	}
	// Longest first, so a secret that contains another is hidden whole.
	slices.SortStableFunc(r.values, func(a, b string) int { return len(b) - len(a) })
	return r
}

// Text hides every secret in s that the Redactor knows of.
func Text(s string, values ...string) string { return New(values...).Text(s) }

// Text returns s with its secrets replaced by the Placeholder.
func (r *Redactor) Text(s string) string {
	if s == "" {
		return s
	}
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, Placeholder)
	}
	s = r.jwt.ReplaceAllString(s, Placeholder)
	s = replaceNamed(r.pair, s, Placeholder)
	s = replaceNamed(r.flag, s, Placeholder)
	return replaceNamed(r.json, s, `"`+Placeholder+`"`)
}

// replaceNamed replaces submatch 2 of each match of re whose submatch 1 is
// a secret name.
func replaceNamed(re *regexp.Regexp, s, with string) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if !IsSecretName(s[m[2]:m[3]]) {
			continue
		}
		b.WriteString(s[last:m[4]])
		b.WriteString(with)
		last = m[5]
	}
	b.WriteString(s[last:])
	return b.String()
}

// HTTPHeader returns a copy of h with its secrets hidden, for a transcript
// that teaches: Authorization keeps its scheme ("Bearer [REDACTED]"),
// cookies keep their names and attributes, another secret-named header
// loses its value, and every other value goes through Text.
func (r *Redactor) HTTPHeader(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		nv := make([]string, len(vs))
		for i, v := range vs {
			switch n := strings.ToLower(k); {
			case n == "authorization" || n == "proxy-authorization":
				if scheme, _, found := strings.Cut(v, " "); found {
					nv[i] = scheme + " " + Placeholder
				} else {
					nv[i] = Placeholder
				}
			case n == "cookie" || n == "set-cookie":
				nv[i] = cookie(v)
			case IsSecretName(k):
				nv[i] = Placeholder
			default:
				nv[i] = r.Text(v)
			}
		}
		out[k] = nv
	}
	return out
}

// cookie keeps cookie names and attributes but hides values: a browser
// sends a local callback its cookies for the host, which may be other
// local apps' sessions.
func cookie(v string) string {
	parts := strings.Split(v, ";")
	for i, p := range parts {
		name, _, found := strings.Cut(p, "=")
		attr := strings.ToLower(strings.TrimSpace(name))
		if !found || (i > 0 && (attr == "path" || attr == "domain" || attr == "expires" || attr == "max-age" || attr == "samesite")) {
			continue
		}
		parts[i] = name + "=" + Placeholder
	}
	return strings.Join(parts, ";")
}
