package tunnel

import (
	"fmt"
	"strings"
	"time"
)

// Cause classifies why a tunnel is not ready, so a face can act on it
// (and tests can check it) without reading the words of Status.Reason.
type Cause string

// The causes the supervisor tells apart. Each has its own words in
// Status.Reason, saying what is wrong and what to do.
const (
	CauseNone Cause = ""
	// CauseNotInstalled: no usable cloudflared (missing, not executable,
	// not cloudflared, too old); see NotInstalledError. Not retried.
	CauseNotInstalled Cause = "not-installed"
	// CauseCannotRun: starting cloudflared failed (exec format error,
	// permission denied). Not retried.
	CauseCannotRun Cause = "cannot-run"
	// CauseConfig: the configuration cannot work (a named tunnel without
	// its hostname, nothing to expose). Not retried.
	CauseConfig Cause = "config"
	// CauseBadToken: cloudflared refused the named tunnel's token itself,
	// without asking Cloudflare (it is not a token). Not retried.
	CauseBadToken Cause = "bad-token"
	// CauseTokenRejected: Cloudflare refused the named tunnel's token.
	// Not retried.
	CauseTokenRejected Cause = "token-rejected"
	// CauseRateLimited: Cloudflare refused a quick tunnel (HTTP 429,
	// error code 1015). Retried after Config.RateLimitWait at the earliest.
	CauseRateLimited Cause = "rate-limited"
	// CauseCaptivePortal: the quick-tunnel request got a web page back.
	CauseCaptivePortal Cause = "captive-portal"
	// CauseBadAnswer: the quick-tunnel request got something else that is
	// not a quick tunnel.
	CauseBadAnswer Cause = "bad-answer"
	// CauseAPITimeout: the quick-tunnel service did not answer in time.
	CauseAPITimeout Cause = "api-timeout"
	// CauseAPIUnreachable: the quick-tunnel service could not be reached
	// (refused, reset, unreachable).
	CauseAPIUnreachable Cause = "api-unreachable"
	// CauseDNS: a DNS lookup failed (the quick-tunnel service, or the SRV
	// records of Cloudflare's edge).
	CauseDNS Cause = "dns"
	// CauseEdgeBlocked: cloudflared runs but cannot connect to Cloudflare's
	// edge on port 7844 (a firewall). cloudflared keeps trying, and so
	// does the supervisor: this is reported while it runs.
	CauseEdgeBlocked Cause = "edge-blocked"
	// CauseAutoUpdate: cloudflared exited with code 11 after updating
	// itself.
	CauseAutoUpdate Cause = "auto-update"
	// CauseLostConnection: a ready tunnel lost its edge connection.
	CauseLostConnection Cause = "lost-connection"
	// CauseExited: cloudflared exited for a reason not recognised above;
	// the reason quotes its last error line.
	CauseExited Cause = "exited"
)

// Permanent reports causes that another run of the same cloudflared with
// the same configuration cannot fix: the supervisor gives up at once.
func (c Cause) Permanent() bool {
	switch c {
	case CauseNotInstalled, CauseCannotRun, CauseConfig, CauseBadToken, CauseTokenRejected:
		return true
	}
	return false
}

// describe says, in plain words, what c means and what to do. detail is
// what the log said (a host, an error text), "" when it said nothing more.
func describe(c Cause, detail string) string {
	switch c {
	case CauseBadToken:
		return "cloudflared refused the tunnel token before contacting Cloudflare (\"Provided Tunnel token is not valid.\"): " +
			"it is not a tunnel token. Copy it again from the Cloudflare dashboard (Networks → Tunnels → your tunnel: " +
			"the long eyJ… value in its install command)"
	case CauseTokenRejected:
		return fmt.Sprintf("Cloudflare rejected the tunnel token (%s): the tunnel was deleted or its token rotated. "+
			"Copy the current token from the Cloudflare dashboard (Networks → Tunnels)", detail)
	case CauseRateLimited:
		return "Cloudflare is rate-limiting quick tunnels from this network (429 Too Many Requests, error code 1015): " +
			"too many were requested recently. Hookscope waits before asking again; a named tunnel is not limited this way"
	case CauseCaptivePortal:
		return "the quick-tunnel request to Cloudflare got a web page back instead of a tunnel: the network probably " +
			"wants you to sign in first (hotel, café or guest Wi-Fi), or a proxy intercepts HTTPS. " +
			"Open any web page in a browser, sign in, and the next try will work"
	case CauseBadAnswer:
		return fmt.Sprintf("Cloudflare's quick-tunnel service gave an answer that is not a tunnel (%s): "+
			"a proxy or filter on this network may intercept it; try another network", truncate(detail, 200))
	case CauseAPITimeout:
		return "Cloudflare's quick-tunnel service (api.trycloudflare.com) did not answer in time: the network is " +
			"slow or drops the request (a firewall or proxy?). Check the connection"
	case CauseAPIUnreachable:
		return fmt.Sprintf("cannot reach Cloudflare's quick-tunnel service (%s): check the network connection, "+
			"firewall or proxy", truncate(detail, 200))
	case CauseDNS:
		if strings.Contains(detail, "argotunnel.com") {
			return fmt.Sprintf("cannot look up Cloudflare's edge servers (DNS SRV records %s): the DNS server fails "+
				"or blocks such lookups. Use another DNS server (for example 1.1.1.1) or another network", detail)
		}
		return fmt.Sprintf("cannot look up %s (DNS): this machine seems offline or its DNS server fails. "+
			"Check the network connection", detail)
	case CauseAutoUpdate:
		return "cloudflared exited with code 11: it tried to update itself (auto-update). " +
			"Hookscope passes --no-autoupdate, so this cloudflared may ignore it or be wrapped by a script; " +
			"update cloudflared with your package manager instead"
	case CauseLostConnection:
		return "cloudflared lost its connection to Cloudflare"
	}
	return detail
}

// exitReason turns how a cloudflared run ended, and what its log said,
// into a cause and plain words.
func exitReason(code int, signaled bool, h logHints) (Cause, string) {
	switch {
	case code == 11:
		return CauseAutoUpdate, describe(CauseAutoUpdate, "")
	case h.failure != CauseNone:
		return h.failure, describe(h.failure, h.failureDetail) + fmt.Sprintf(" (cloudflared exited with code %d)", code)
	case signaled:
		return CauseExited, "cloudflared was killed by a signal"
	case h.lastError != "":
		return CauseExited, fmt.Sprintf("cloudflared exited with code %d: %s", code, truncate(h.lastError, 300))
	}
	return CauseExited, fmt.Sprintf("cloudflared exited with code %d", code)
}

// edgeReason says why a running cloudflared has no edge connection and
// what to do: from what its connectivity pre-checks found or, without
// them, from its failed connection attempts (quoting the last; waited is
// how long they have failed: EdgeTimeout, a fixed figure, so the reason
// does not change with every poll). switching says Hookscope now tries
// HTTP/2.
func edgeReason(h logHints, protocol string, waited time.Duration, switching bool) string {
	udp, tcp := h.precheck["UDP Connectivity"], h.precheck["TCP Connectivity"]
	var b strings.Builder
	switch {
	case switching:
		b.WriteString("QUIC (UDP port 7844) to Cloudflare's edge is blocked, probably by a firewall: " +
			"restarting cloudflared with HTTP/2 over TCP port 7844 (--protocol http2)")
	case udp == precheckFailed && tcp == precheckFailed:
		b.WriteString("cloudflared cannot reach Cloudflare's edge: its pre-checks found UDP and TCP port 7844 blocked, " +
			"probably by a firewall. Allow outbound UDP and TCP port 7844, or use another network")
	case protocol == "http2":
		b.WriteString("cloudflared cannot reach Cloudflare's edge over HTTP/2 (TCP port 7844), probably blocked by a firewall. " +
			"Allow outbound TCP port 7844, or use another network")
	default:
		b.WriteString("cloudflared cannot reach Cloudflare's edge over QUIC (UDP port 7844), probably blocked by a firewall. " +
			"Allow outbound UDP port 7844, or use HTTP/2 over TCP port 7844 (--protocol http2)")
	}
	if len(h.precheck) == 0 && h.lastEdgeError != "" {
		fmt.Fprintf(&b, " (no connection in %s: %s)", waited, truncate(h.lastEdgeError, 120))
	}
	b.WriteString(".")
	if !switching {
		b.WriteString(" Still trying.")
	}
	return b.String()
}
