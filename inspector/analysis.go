package inspector

import (
	"encoding/json"
	"time"

	"github.com/hookscope/hookscope/inspector/catalog"
)

// SignatureStatus is the verdict on a delivery's X-Service-Signature.
type SignatureStatus string

// The four signature verdicts.
const (
	SignatureValid      SignatureStatus = "valid"
	SignatureInvalid    SignatureStatus = "invalid"
	SignatureMissing    SignatureStatus = "missing"
	SignatureUnverified SignatureStatus = "unverified"
)

// SignatureResult explains a verdict well enough that a developer can see
// why a signature failed without re-deriving anything by hand.
type SignatureResult struct {
	Status SignatureStatus `json:"status"`
	// Received is the header value as sent (trimmed).
	Received string `json:"received,omitempty"`
	// SecretIndex is the index of the configured secret that matched, or -1.
	SecretIndex int `json:"secret_index"`
	// UpperCase notes a digest sent in upper-case hex: accepted, but the
	// service documents lower case.
	UpperCase bool `json:"upper_case,omitempty"`
	// Expected holds, per configured secret, the digest it would produce.
	// Digests are not secrets: an HMAC does not reveal its key.
	Expected []string `json:"expected,omitempty"`
	// Reason says in plain words why the verdict is what it is.
	Reason string `json:"reason,omitempty"`
}

// DecodeError says precisely why a body is not a webhook message.
type DecodeError struct {
	Reason string `json:"reason"`
	// Offset is the byte offset of a JSON syntax error, or -1.
	Offset int64 `json:"offset"`
}

func (e *DecodeError) Error() string { return e.Reason }

// EventAnalysis is one event of a delivery with everything Hookscope
// learned about it.
type EventAnalysis struct {
	Index        int             `json:"index"`
	UUID         string          `json:"uuid"`
	Type         string          `json:"type"`
	AccountID    string          `json:"account_id"`
	GeneratedRaw string          `json:"generated_at"`
	GeneratedAt  time.Time       `json:"-"`
	Raw          json.RawMessage `json:"-"`
	// Subject names what the event is about ("media:<id>",
	// "viewing_session:<id>", "live_event:<id>"), for ordering checks.
	Subject string `json:"subject,omitempty"`
	// Hash is the SHA-256 of the event's canonical JSON; copies of one event
	// must have equal hashes.
	Hash string `json:"hash"`

	Duplicate bool `json:"duplicate"`
	// Copies is how many copies of this uuid have arrived so far, this one included.
	Copies          int   `json:"copies"`
	FirstDeliveryID int64 `json:"first_delivery_id"`
	Divergent       bool  `json:"divergent"`
	OutOfOrder      bool  `json:"out_of_order"`
	// OrderNote explains an out-of-order mark (which later event came first).
	OrderNote string `json:"order_note,omitempty"`

	Summary  string            `json:"summary,omitempty"`
	Problems []catalog.Problem `json:"problems,omitempty"`
}

// Analysis is everything learned about one stored delivery after it was
// answered.
type Analysis struct {
	DeliveryID int64           `json:"delivery_id"`
	Signature  SignatureResult `json:"signature"`
	HookUUID   string          `json:"hook_uuid,omitempty"`
	// Resend is true when an earlier delivery carried the same hook uuid.
	Resend bool `json:"resend"`
	// ResendOf is the first delivery that carried the hook uuid.
	ResendOf int64           `json:"resend_of,omitempty"`
	Error    *DecodeError    `json:"error,omitempty"`
	Events   []EventAnalysis `json:"events"`
	// Problems are delivery-level contract problems (headers).
	Problems   []catalog.Problem `json:"problems,omitempty"`
	AnalyzedAt time.Time         `json:"analyzed_at"`
}

// Duplicates counts the events of a that are duplicates.
func (a *Analysis) Duplicates() int {
	n := 0
	for _, e := range a.Events {
		if e.Duplicate {
			n++
		}
	}
	return n
}

// Divergent reports whether any event of a is a divergent duplicate.
func (a *Analysis) Divergent() bool {
	for _, e := range a.Events {
		if e.Divergent {
			return true
		}
	}
	return false
}

// ProblemCount counts delivery and event problems.
func (a *Analysis) ProblemCount() int {
	n := len(a.Problems)
	for _, e := range a.Events {
		n += len(e.Problems)
	}
	return n
}

// Record is a stored delivery together with its analysis (nil while it is
// still waiting for analysis).
type Record struct {
	Delivery *Delivery `json:"delivery"`
	Analysis *Analysis `json:"analysis,omitempty"`
}

// decodeForAnalysis decodes a body as a webhook message and every event in
// it: typed, contract-checked, summarised, its subject named and its
// canonical hash taken for the ledger. It fails with DecodeMessage's
// precise reason when the body is not a webhook message. The envelope
// values are the catalogue's (the same as DecodeMessage's, FuzzAnalysisHashes),
// so the events are not decoded a second time for them.
func decodeForAnalysis(body []byte) (string, []EventAnalysis, error) {
	hook, raws, err := splitMessage(body)
	if err != nil {
		return "", nil, err
	}
	events := make([]EventAnalysis, len(raws))
	for i, raw := range raws {
		cat := catalog.DecodeEvent(raw)
		events[i] = EventAnalysis{
			Index:        i,
			UUID:         cat.UUID,
			Type:         cat.Type,
			AccountID:    cat.AccountID,
			GeneratedRaw: cat.GeneratedAt,
			GeneratedAt:  ParseTime(cat.GeneratedAt),
			Raw:          raw,
			Subject:      cat.Subject,
			Hash:         CanonicalHash(raw),
			Copies:       1,
			Summary:      cat.Summary,
			Problems:     cat.Problems,
		}
	}
	return hook, events, nil
}
