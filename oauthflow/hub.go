package oauthflow

import (
	"net/http"
	"sync"
)

// CallbackHub lets a server that is not the flow's own listener (the
// webhook receiver serving /oauth/callback on its tunnel URL) hand
// redirected requests to whichever flow is waiting for them. Requests are
// matched by the flow's state parameter inside redirect_uri; one that
// matches none is refused as forged or stale, and no flow stops waiting.
type CallbackHub struct {
	mu    sync.Mutex
	flows map[*Flow]struct{}
}

// Add registers a waiting flow; call remove once it has its callback.
func (h *CallbackHub) Add(f *Flow) (remove func()) {
	h.mu.Lock()
	if h.flows == nil {
		h.flows = map[*Flow]struct{}{}
	}
	h.flows[f] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.flows, f)
		h.mu.Unlock()
	}
}

// Waiting reports how many flows wait for a callback.
func (h *CallbackHub) Waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.flows)
}

// ServeHTTP routes a callback request to its flow. A request whose state
// value matches no waiting flow is forged or stale: with one flow waiting,
// that flow refuses it; with several, each records the refusal. Either way
// it is answered and every flow goes on waiting.
func (h *CallbackHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	h.mu.Lock()
	var target *Flow
	waiting := make([]*Flow, 0, len(h.flows))
	for f := range h.flows {
		waiting = append(waiting, f)
		f.mu.Lock()
		want, param := f.state.RedirectState, f.opts.StateParam
		f.mu.Unlock()
		if want != "" && q.Get(param) == want {
			target = f
		}
	}
	h.mu.Unlock()
	switch {
	case target != nil:
		target.HandleCallback(w, r)
	case len(waiting) == 1:
		waiting[0].HandleCallback(w, r)
	case len(waiting) == 0:
		writeHTML(w, http.StatusNotFound, renderPage(pageData{Title: "No authorization waiting", Class: "bad", Lines: []string{
			"Hookscope received an OAuth callback, but no authorization started in Hookscope is waiting for it.",
			"Start the authorization from Hookscope's OAuth tab, then approve again."}}))
	default:
		var status int
		var body string
		for _, f := range waiting {
			param := f.opts.StateParam
			status, body = f.refuse(r.Context(), f.inboundTranscript(r), nil, &StateMismatchError{Param: param, Missing: !q.Has(param)})
		}
		writeHTML(w, status, body)
	}
}
