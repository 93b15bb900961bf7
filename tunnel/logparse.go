package tunnel

import (
	"regexp"
	"strings"
)

// LogInfo is what one cloudflared log line tells the supervisor.
type LogInfo struct {
	// Level is the zerolog level word ("INF", "WRN", "ERR", ...) or "".
	Level string
	// URL is the quick tunnel's public URL when the line is the URL row of
	// the ASCII box cloudflared prints on creation.
	URL string
	// Registered is set when an edge connection was registered: the tunnel
	// can carry traffic.
	Registered bool
	// RateLimited is set when Cloudflare refused a quick tunnel for rate
	// limiting (error code 1015 / HTTP 429).
	RateLimited bool
	// NoNetwork is set when cloudflared could not reach Cloudflare.
	NoNetwork bool
	// BadToken is set when a named tunnel's token was rejected.
	BadToken bool
	// OriginUnreachable is set when cloudflared could not reach the local
	// receiver (the tunnel itself is fine).
	OriginUnreachable bool
}

var (
	// The URL row of the creation box: "|  https://a-b-c.trycloudflare.com   |".
	boxURLRE = regexp.MustCompile(`\|\s+(https://[A-Za-z0-9.-]+)/?\s+\|`)
	levelRE  = regexp.MustCompile(`^\S+Z\s+(DBG|INF|WRN|ERR|FTL|PNC)\s`)
)

// ParseLogLine classifies one line of cloudflared's stderr. It never fails:
// lines it does not recognise give a zero LogInfo.
func ParseLogLine(line string) LogInfo {
	var li LogInfo
	if m := levelRE.FindStringSubmatch(line); m != nil {
		li.Level = m[1]
	}
	// Only box rows hold the URL; skipping the regexp elsewhere keeps a
	// chatty cloudflared cheap to follow.
	if strings.Contains(line, "|") {
		li.URL = boxURL(line)
	}
	lower := strings.ToLower(line)
	if strings.Contains(lower, "registered tunnel connection") ||
		(strings.Contains(lower, "connection ") && strings.Contains(lower, " registered") && strings.Contains(lower, "connindex=")) {
		li.Registered = true
	}
	if strings.Contains(lower, "error code: 1015") || strings.Contains(lower, "429 too many requests") ||
		strings.Contains(lower, "status_code=\"429") || strings.Contains(lower, "rate limit") {
		li.RateLimited = true
	}
	if strings.Contains(lower, "origin") && (strings.Contains(lower, "connection refused") || strings.Contains(lower, "unable to reach")) {
		li.OriginUnreachable = true
		return li
	}
	for _, s := range []string{"no such host", "network is unreachable", "connection refused",
		"i/o timeout", "failed to dial to edge", "dial tcp", "temporary failure in name resolution",
		"no route to host", "tls handshake timeout"} {
		if strings.Contains(lower, s) {
			li.NoNetwork = true
			break
		}
	}
	for _, s := range []string{"unauthorized", "invalid tunnel secret", "token is not valid", "provided tunnel token"} {
		if strings.Contains(lower, s) {
			li.BadToken = true
			break
		}
	}
	return li
}

// boxURL returns the tunnel URL from a box row, or "".
func boxURL(line string) string {
	m := boxURLRE.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	host := strings.ToLower(strings.TrimPrefix(m[1], "https://"))
	// api.trycloudflare.com is the endpoint that creates quick tunnels;
	// it shows up in error lines and is never the tunnel's own URL.
	if host == "api.trycloudflare.com" || !strings.Contains(host, ".") || strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") {
		return ""
	}
	return "https://" + host
}

// tokenLikeRE matches cloudflared tunnel tokens (base64 JSON, so they start
// with "eyJ") and `--token VALUE` arguments, so a log line never carries a
// secret even when it is not the configured one.
var tokenLikeRE = regexp.MustCompile(`eyJ[A-Za-z0-9_\-+/=]{20,}|(--token[ =])\S+|(TUNNEL_TOKEN=)\S+`)

// minTokenLen is the shortest configured token redacted by value wherever
// it appears (the rule of oauthflow's redaction): a shorter value would
// blank out ordinary words of the log. Real tunnel tokens are base64 JSON,
// far longer, and a token shaped like one is redacted by tokenLikeRE, or
// by where it stands (--token VALUE, TUNNEL_TOKEN=VALUE).
const minTokenLen = 12

// redact removes secrets from a log line: the configured token wherever it
// appears (when it is long enough to be one), the values of --token and
// TUNNEL_TOKEN=, and anything shaped like a tunnel token.
func redact(line, token string) string {
	if len(token) >= minTokenLen {
		line = strings.ReplaceAll(line, token, "[redacted]")
	}
	return tokenLikeRE.ReplaceAllStringFunc(line, func(m string) string {
		switch {
		case strings.HasPrefix(m, "--token"):
			return m[:len("--token")+1] + "[redacted]"
		case strings.HasPrefix(m, "TUNNEL_TOKEN="):
			return "TUNNEL_TOKEN=[redacted]"
		}
		return "[redacted]"
	})
}
