// Package inspector is the webhook domain of Hookscope: it receives
// deliveries, stores them before answering, verifies their signatures,
// decodes their messages and keeps the dedupe ledger. It never imports Fyne;
// it reports through the Store it is given and the subscribers it notifies.
package inspector

import (
	"net/http"
	"strings"
	"time"
)

// Header is one request header exactly as it arrived: the name keeps its
// case and the slice keeps the order, because a developer comparing with the
// service's documentation wants to see what was on the wire, not Go's
// canonical form.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Delivery is one HTTP request received by the receiver, stored byte-exact.
type Delivery struct {
	// ID is assigned by the store; zero until stored.
	ID         int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	// Query is the raw query string, without the leading '?'.
	Query   string   `json:"query,omitempty"`
	Headers []Header `json:"headers"`
	// HeadersReconstructed is true when the raw header block could not be
	// captured and Headers was rebuilt from Go's parsed (canonical,
	// unordered) form.
	HeadersReconstructed bool   `json:"headers_reconstructed,omitempty"`
	Body                 []byte `json:"-"`
	// BodyLength is the length of the body the client sent as far as the
	// receiver read it; for a truncated body it is at least len(Body)+1.
	BodyLength int64  `json:"body_length"`
	RemoteAddr string `json:"remote_addr"`
	// Status is the HTTP status the receiver answered (0 when it answered
	// nothing, for example in a "close the connection" answer mode).
	Status int `json:"status"`
	// Rejected marks a request that was not a POST.
	Rejected bool `json:"rejected,omitempty"`
	// Truncated marks a body larger than the cap; Body holds its first cap bytes.
	Truncated bool `json:"truncated,omitempty"`
	// ReadError says why reading the request stopped early (client gone,
	// read timeout); the bytes that did arrive are kept.
	ReadError string `json:"read_error,omitempty"`
	// Answer is the receiver's answer mode when it was not a plain answer:
	// "hang" (held without answering), "close" (connection closed) or
	// "pass-through" (the developer's app answered: see its forward
	// attempt).
	Answer string `json:"answer,omitempty"`
	// Source tells where the delivery came from: "receiver" (default),
	// "relay" (a team relay received it; RelaySeq is its stream
	// sequence), "import" or "replay".
	Source string `json:"source,omitempty"`
	// RelaySeq is the relay's stream sequence of a delivery that came
	// through a relay (Source "relay"); zero otherwise.
	RelaySeq uint64 `json:"relay_seq,omitempty"`
	// Damaged says why the stored bytes cannot be trusted when the store
	// found its body changed since it was stored (a digest mismatch);
	// empty otherwise. The bytes are returned as read, never silently.
	Damaged string `json:"damaged,omitempty"`
}

// Header returns the first value of the named header, matched without regard
// to case, and whether it was present.
func (d *Delivery) Header(name string) (string, bool) {
	for _, h := range d.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// HTTPHeader returns the headers as a canonical http.Header for code that
// wants Go's form.
func (d *Delivery) HTTPHeader() http.Header {
	h := make(http.Header, len(d.Headers))
	for _, x := range d.Headers {
		h.Add(x.Name, x.Value)
	}
	return h
}
