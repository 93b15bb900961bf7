package export

import (
	"strings"

	"github.com/hookscope/hookscope/inspector"
)

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
