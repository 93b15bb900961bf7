package tunnel

import (
	"cmp"
	"regexp"
	"strconv"
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
	// Failure is set when the line reports why cloudflared cannot make a
	// tunnel: the quick-tunnel request failed (rate limit, captive portal,
	// timeout, DNS, refused), edge discovery failed, or the token was
	// refused. Lines cloudflared logs on every offline start and then
	// carries on from (its feature lookup, its DNS resolver) are not.
	Failure Cause
	// EdgeDial is set when a connection attempt to Cloudflare's edge
	// failed (cloudflared keeps trying); Detail holds its error.
	EdgeDial bool
	// Detail is cloudflared's own words for Failure or EdgeDial: the
	// error text, or the host a DNS lookup failed for.
	Detail string
	// Precheck names a connectivity pre-check component ("UDP
	// Connectivity", "TCP Connectivity", ...) when the line reports its
	// result; PrecheckFailed says it failed.
	Precheck       string
	PrecheckFailed bool
	// OriginUnreachable is set when cloudflared could not reach the local
	// receiver (the tunnel itself is fine).
	OriginUnreachable bool
}

var (
	// The URL row of the creation box: "|  https://a-b-c.trycloudflare.com   |".
	boxURLRE = regexp.MustCompile(`\|\s+(https://[A-Za-z0-9.-]+)/?\s+\|`)
	levelRE  = regexp.MustCompile(`^\S+Z\s+(DBG|INF|WRN|ERR|FTL|PNC)\s`)
	// The structured line logged for each pre-check result.
	precheckRE = regexp.MustCompile(`\bprecheck component="([^"]+)".*\bstatus=(\w+)`)
	// The host of a failed DNS lookup: "lookup api.trycloudflare.com on …".
	lookupRE = regexp.MustCompile(`lookup ([A-Za-z0-9._-]+)`)
	// An error="…" field of a log line.
	errFieldRE = regexp.MustCompile(`error="((?:[^"\\]|\\.)*)"`)
)

// ParseLogLine classifies one line of cloudflared's output (its zerolog
// lines and the plain line it prints when it exits on an error). It never
// fails: lines it does not recognise give a zero LogInfo.
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
	if m := precheckRE.FindStringSubmatch(line); m != nil {
		li.Precheck, li.PrecheckFailed = m[1], strings.EqualFold(m[2], "fail")
		return li
	}
	if strings.Contains(lower, "registered tunnel connection") ||
		(strings.Contains(lower, "connection ") && strings.Contains(lower, " registered") && strings.Contains(lower, "connindex=")) {
		li.Registered = true
		return li
	}
	if strings.Contains(lower, "origin") && (strings.Contains(lower, "connection refused") || strings.Contains(lower, "unable to reach")) {
		li.OriginUnreachable = true
		return li
	}
	li.Failure, li.Detail = failure(line, lower)
	if li.Failure == CauseNone {
		for _, s := range []string{"failed to dial to edge", "failed to dial a quic connection",
			"unable to establish connection with cloudflare edge", "tls handshake with edge"} {
			if strings.Contains(lower, s) {
				li.EdgeDial, li.Detail = true, errorField(line)
				break
			}
		}
	}
	return li
}

// failure recognises the lines that say why cloudflared cannot make a
// tunnel, as cloudflared 2026.8 writes them (the tests hold real samples).
func failure(line, lower string) (Cause, string) {
	quickAnswer := strings.Contains(lower, "unmarshal") && strings.Contains(lower, "quick")
	quickRequest := strings.Contains(lower, "failed to request quick tunnel")
	switch {
	case strings.Contains(lower, "provided tunnel token is not valid"):
		return CauseBadToken, strings.TrimSpace(line)
	case strings.Contains(lower, "error code: 1015") || strings.Contains(lower, `status_code="429`) ||
		strings.Contains(lower, "429 too many requests"):
		return CauseRateLimited, ""
	case quickAnswer && (strings.Contains(lower, "invalid character '<'") || strings.Contains(lower, "response: <")):
		return CauseCaptivePortal, ""
	case quickAnswer:
		return CauseBadAnswer, strings.TrimSpace(line)
	case quickRequest && (strings.Contains(lower, "timeout") || strings.Contains(lower, "deadline exceeded")):
		return CauseAPITimeout, ""
	case quickRequest && isDNSFailure(lower):
		return CauseDNS, lookupHost(line, "api.trycloudflare.com")
	case quickRequest:
		return CauseAPIUnreachable, line[strings.Index(lower, "failed to request quick tunnel"):]
	case strings.Contains(lower, "could not lookup srv records"):
		return CauseDNS, "_v2-origintunneld._tcp.argotunnel.com"
	case strings.Contains(lower, "unauthorized") || strings.Contains(lower, "invalid tunnel secret"):
		return CauseTokenRejected, cmp.Or(errorField(line), strings.TrimSpace(line))
	}
	return CauseNone, ""
}

func isDNSFailure(lower string) bool {
	for _, s := range []string{"no such host", "server misbehaving", "temporary failure in name resolution", "lookup "} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// lookupHost is the host of a failed DNS lookup in line, else def.
func lookupHost(line, def string) string {
	if m := lookupRE.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return def
}

// errorField is the error="…" of a log line, "" when it has none.
func errorField(line string) string {
	m := errFieldRE.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	if s, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
		return s
	}
	return m[1]
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
