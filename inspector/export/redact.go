package export

import (
	"net/url"
	"strings"

	"github.com/hookscope/hookscope/inspector"
)

// Redacted replaces a credential's value in every export.
const Redacted = "[REDACTED]"

// IsCredentialHeader reports whether a header carries a credential and is
// redacted unless the user reveals it. X-Service-Signature is not one: an
// HMAC does not reveal its key, and a consumer needs it to verify.
func IsCredentialHeader(name string) bool {
	n := strings.ToLower(name)
	if n == strings.ToLower(inspector.SignatureHeader) {
		return false
	}
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey":
		return true
	}
	for _, w := range []string{"token", "secret", "password", "passwd", "api-key", "apikey", "api_key", "session", "credential", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// IsCredentialParam reports whether a query parameter carries a credential
// (the service's access_token and bearer_token, and their usual cousins).
func IsCredentialParam(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "code", "key", "sig", "signature":
		return true
	}
	for _, w := range []string{"token", "secret", "password", "api_key", "apikey", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactHeaders returns a copy of hs with credential values replaced.
func RedactHeaders(hs []inspector.Header) []inspector.Header {
	out := make([]inspector.Header, len(hs))
	for i, h := range hs {
		if IsCredentialHeader(h.Name) {
			h.Value = Redacted
		}
		out[i] = h
	}
	return out
}

// RedactQuery returns a raw query with credential parameter values
// replaced; everything else keeps its bytes and order.
func RedactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if hasValue && IsCredentialParam(name) {
			k, _, _ := strings.Cut(p, "=")
			parts[i] = k + "=" + url.QueryEscape(Redacted)
		}
	}
	return strings.Join(parts, "&")
}

// RedactURL hides the user info and credential query parameters of a URL.
// A string that does not parse is returned with its query dropped.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			return raw[:i]
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User(Redacted)
	}
	u.RawQuery = RedactQuery(u.RawQuery)
	return u.String()
}

// IsHopByHop reports whether a header describes one connection, not the
// message (RFC 9110 section 7.6.1): a replay or export never carries it over.
func IsHopByHop(name string) bool {
	switch strings.ToLower(name) {
	case "connection", "keep-alive", "proxy-connection", "proxy-authenticate",
		"proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// ConnectionTokens returns the lower-case header names listed in
// Connection headers: they are hop-by-hop too.
func ConnectionTokens(hs []inspector.Header) map[string]bool {
	out := map[string]bool{}
	for _, h := range hs {
		if !strings.EqualFold(h.Name, "Connection") {
			continue
		}
		for _, t := range strings.Split(h.Value, ",") {
			if t = strings.ToLower(strings.TrimSpace(t)); t != "" && t != "close" && t != "keep-alive" {
				out[t] = true
			}
		}
	}
	return out
}
