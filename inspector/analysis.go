package inspector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

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

// Bounds on one delivery's analysis, whatever its body holds (a 3 MB
// message of a million empty events is a valid message): the events
// analyzed, the problems kept per event, the length of a summary or a
// problem's words, and the stored analysis as a whole. What is left out
// is said on the delivery, as a notice.
const (
	MaxEventsAnalyzed   = 1000
	maxProblemsPerEvent = 50
	maxSummaryLen       = 300
	maxProblemLen       = 500
	maxAnalysisBytes    = 4 << 20
)

// decodeForAnalysis decodes a body as a webhook message and every event in
// it (the first MaxEventsAnalyzed; total counts them all): typed,
// contract-checked, summarised, its subject named and its canonical hash
// taken for the ledger. It fails with DecodeMessage's precise reason when
// the body is not a webhook message. The envelope values are the
// catalogue's (the same as DecodeMessage's, FuzzAnalysisHashes), so the
// events are not decoded a second time for them.
func decodeForAnalysis(body []byte) (hook string, events []EventAnalysis, total int, err error) {
	capped, total := capEvents(body, MaxEventsAnalyzed)
	hook, raws, err := splitMessage(capped)
	if err != nil {
		if len(capped) != len(body) {
			// The cut must not hide the body's own error: say the body's.
			_, _, err = splitMessage(body)
		}
		return "", nil, 0, err
	}
	total = max(total, len(raws))
	events = make([]EventAnalysis, len(raws))
	for i, raw := range raws {
		cat := catalog.DecodeEvent(raw)
		problems := cat.Problems
		if n := len(problems); n > maxProblemsPerEvent {
			problems = append(problems[:maxProblemsPerEvent:maxProblemsPerEvent], catalog.Problem{Severity: catalog.SeverityNotice, Path: "",
				Message: fmt.Sprintf("%d more problems in this event are not listed (Hookscope keeps the first %d)", n-maxProblemsPerEvent, maxProblemsPerEvent)})
		}
		for j := range problems {
			problems[j].Message = shorten(problems[j].Message, maxProblemLen)
		}
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
			Summary:      shorten(cat.Summary, maxSummaryLen),
			Problems:     problems,
		}
	}
	return hook, events, total, nil
}

// capEvents returns body with its events array cut to its first max
// elements when it has more, and how many it has; body itself when it has
// max or fewer, or cannot be read as a JSON object (splitMessage says
// why). A body too short to hold more than max events is not scanned.
func capEvents(body []byte, max int) ([]byte, int) {
	if len(body) < 3*max {
		return body, 0
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return body, 0
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return body, 0
		}
		if name.String() != "events" || dec.PeekKind() != '[' {
			if dec.SkipValue() != nil {
				return body, 0
			}
			continue
		}
		dec.ReadToken() // '['
		n, cut := 0, int64(0)
		for dec.PeekKind() != ']' {
			if dec.SkipValue() != nil {
				return body, 0
			}
			if n++; n == max {
				cut = dec.InputOffset()
			}
		}
		if _, err := dec.ReadToken(); err != nil || n <= max {
			return body, n
		}
		end := dec.InputOffset() // just after ']'
		out := make([]byte, 0, int(cut)+1+len(body)-int(end))
		out = append(append(append(out, body[:cut]...), ']'), body[end:]...)
		return out, n
	}
	return body, 0
}

// shorten cuts s to about n bytes at a character boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + " …"
}

// bound keeps a's stored form within maxAnalysisBytes: past it, events
// are dropped from the end (their rows with them) until it fits, and the
// delivery says so. Each event is small once capped, so this is for
// what the caps above do not foresee.
func bound(a *Analysis) {
	size := 0
	for _, e := range a.Events {
		size += 300 + len(e.Summary) + len(e.UUID) + len(e.Type) + len(e.Subject) + len(e.GeneratedRaw) + len(e.AccountID)
		for _, p := range e.Problems {
			size += 64 + len(p.Path) + len(p.Message)
		}
	}
	if size < maxAnalysisBytes/2 {
		return
	}
	b, err := json.Marshal(a)
	if err != nil || len(b) <= maxAnalysisBytes || len(a.Events) == 0 {
		return
	}
	all := len(a.Events)
	keep := max(all*maxAnalysisBytes/len(b)*9/10, 0)
	for {
		a.Events = a.Events[:keep]
		if b, err = json.Marshal(a); err != nil || len(b) <= maxAnalysisBytes || keep == 0 {
			break
		}
		keep /= 2
	}
	a.Problems = append(a.Problems, catalog.Problem{Severity: catalog.SeverityNotice, Path: "events",
		Message: fmt.Sprintf("only the first %d of the %d events analyzed are kept: their analysis would take more than %d KiB to store", keep, all, maxAnalysisBytes>>10)})
}
