package forward

import (
	"strings"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
)

// request is what goes to an app for d: the captured header block in its
// order and spelling and the body as stored (replay.BuildRequest: Host
// set for the target, hop-by-hop headers dropped, the body framed with
// its real length), re-signed when a secret is configured, with the added
// headers replacing captured ones of the same name.
func request(d *inspector.Delivery, secret []byte, added []inspector.Header) replay.Request {
	req := replay.BuildRequest(d, nil, secret)
	if len(added) == 0 {
		return req
	}
	hs := make([]inspector.Header, 0, len(req.Headers)+len(added))
	hostAt := req.HostIndex
	for i, h := range req.Headers {
		replaced := false
		for _, a := range added {
			if strings.EqualFold(a.Name, h.Name) {
				replaced = true
				break
			}
		}
		if replaced {
			if i < req.HostIndex {
				hostAt--
			}
			continue
		}
		hs = append(hs, h)
	}
	req.Headers = append(hs, added...)
	req.HostIndex = hostAt
	return req
}

// inspectDelivery reads what routing needs: the message's event types, or
// that the delivery is malformed (not a POST, cut, unreadable, not a
// webhook message), which sends it to catch-all routes only.
func inspectDelivery(d *inspector.Delivery) (types []string, malformed bool) {
	if d.Rejected || d.Truncated || d.ReadError != "" {
		return nil, true
	}
	m, err := inspector.DecodeMessage(d.Body)
	if err != nil {
		return nil, true
	}
	for _, e := range m.Events {
		types = append(types, e.Type)
	}
	return types, false
}
