package oauthflow

import (
	"net/http"
	"sync"
)

// CallbackHub lets a server that is not the flow's own listener (the
// webhook receiver serving /oauth/callback on its tunnel URL) hand
// redirected requests to whichever flow is waiting for them. Requests are
// matched by the flow's state parameter inside redirect_uri; with a single
// waiting flow and no match, that flow gets the request and refuses it as
// forged.
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

// ServeHTTP routes a callback request to its flow.
func (h *CallbackHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	h.mu.Lock()
	var target, only *Flow
	for f := range h.flows {
		only = f
		f.mu.Lock()
		want, param := f.state.RedirectState, f.opts.StateParam
		f.mu.Unlock()
		if want != "" && q.Get(param) == want {
			target = f
		}
	}
	if target == nil && len(h.flows) == 1 {
		target = only
	}
	h.mu.Unlock()
	if target == nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		writePage(w, http.StatusNotFound, pageData{Title: "No authorization waiting", Class: "bad", Lines: []string{
			"Hookscope received an OAuth callback, but no authorization started in Hookscope is waiting for it (or its state value matches none).",
			"Start the authorization from Hookscope's OAuth tab, then approve again."}})
		return
	}
	target.HandleCallback(w, r)
}
