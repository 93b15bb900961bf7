// Package replay sends captured deliveries again: byte-exact, re-signed or
// with an edited body, one at a time or as a chaos run that tests a
// consumer's idempotency, and runs the standard consumer check. Every
// replay's outcome is a Result the UI shows inline and a Recorder keeps
// with the delivery. Secrets used to re-sign are never kept in a Result.
package replay

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/redact"
)

// Mode says how a replayed request relates to the delivery it came from.
type Mode string

// The replay modes.
const (
	ModeRaw      Mode = "raw"      // the captured bytes, Host rewritten
	ModeResigned Mode = "resigned" // same body, signature recomputed
	ModeEdited   Mode = "edited"   // edited body, re-signed
	ModeSplit    Mode = "split"    // chaos: one event of a batch, new hook uuid
	ModeMerged   Mode = "merged"   // chaos: several deliveries' events in one message
)

// Result is one replay: what was sent where and how the target answered.
type Result struct {
	// ID is assigned by the Recorder; zero when not recorded.
	ID int64 `json:"id,omitempty"`
	// DeliveryID is the delivery replayed (the first one for a merge).
	DeliveryID int64 `json:"delivery_id"`
	// Sources lists every delivery whose events the request carried.
	Sources []int64 `json:"sources,omitempty"`
	// Target is the URL with credentials redacted.
	Target string `json:"target"`
	Mode   Mode   `json:"mode"`
	// Copy numbers repeated sends of one message in a chaos run (1-based)
	// out of Copies (the run's --times).
	Copy   int `json:"copy,omitempty"`
	Copies int `json:"copies,omitempty"`
	// Part numbers the messages a split makes of one delivery (1-based),
	// one per event, out of Parts.
	Part     int       `json:"part,omitempty"`
	Parts    int       `json:"parts,omitempty"`
	HookUUID string    `json:"hook_uuid,omitempty"`
	Events   []string  `json:"events,omitempty"`
	BodySize int       `json:"body_size"`
	SentAt   time.Time `json:"sent_at"`
	// Status is 0 when no answer arrived (see Error).
	Status            int                `json:"status"`
	StatusText        string             `json:"status_text,omitempty"`
	ResponseHeaders   []inspector.Header `json:"response_headers,omitempty"`
	ResponseBody      []byte             `json:"response_body,omitempty"`
	ResponseTruncated bool               `json:"response_truncated,omitempty"`
	Latency           time.Duration      `json:"latency_ns"`
	// Error says why no whole answer arrived, in plain words with a fix
	// (internal/networds): "nothing is listening on 127.0.0.1:3000
	// (connection refused); start it, or check the port in the URL".
	Error string `json:"error,omitempty"`
}

// OK reports a 2xx answer.
func (r *Result) OK() bool { return r.Error == "" && r.Status >= 200 && r.Status < 300 }

// Recorder keeps replays with their delivery. storage.DB implements it.
type Recorder interface {
	SaveReplay(ctx context.Context, r *Result) (int64, error)
}

// History lists the replays of a delivery, newest first, for the UI.
// storage.DB implements it.
type History interface {
	Replays(ctx context.Context, deliveryID int64, limit int) ([]*Result, error)
}

// Options chooses what one replay sends.
type Options struct {
	// Target is the URL to POST to.
	Target string
	// Secret, when set, re-signs the body: X-Service-Signature is
	// recomputed (and added if the delivery had none).
	Secret []byte
	// Body, when non-nil, replaces the delivery's body. It must be JSON and
	// needs Secret unless StaleSignature is set.
	Body []byte
	// StaleSignature sends an edited body with the original signature on
	// purpose, to see the consumer refuse it.
	StaleSignature bool
}

// Replayer sends replays and records them. The zero value sends with the
// defaults and records nothing. It is safe for concurrent use when its
// Recorder is.
type Replayer struct {
	// Timeout bounds one send, from dialling to the end of the answer;
	// zero means DefaultTimeout. The consumer check sets its own.
	Timeout time.Duration
	// MaxResponse caps the answer body kept; zero means
	// DefaultMaxResponse.
	MaxResponse int64
	// TLSConfig is used for https targets; nil means the system roots.
	TLSConfig *tls.Config
	// Recorder, when set, keeps every replay.
	Recorder Recorder
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// New returns a replayer recording to rec (nil records nothing).
func New(rec Recorder) *Replayer { return &Replayer{Recorder: rec} }

func (r *Replayer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// JSONError is an edited body that is not JSON, with where it breaks.
type JSONError struct {
	Offset int64
	Line   int
	Column int
	Reason string
}

// Error says what is wrong and where, in words and numbers.
func (e *JSONError) Error() string {
	return fmt.Sprintf("the body is not valid JSON: %s at byte offset %d (line %d, column %d)", e.Reason, e.Offset, e.Line, e.Column)
}

// ValidateJSON checks an edited body, returning a *JSONError that points at
// the first problem. The UI calls it as the user types.
func ValidateJSON(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return &JSONError{Reason: "it is empty", Line: 1, Column: 1}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	// Numbers stay text: a valid body with a number beyond float64's range
	// (which a consumer may well read as a big integer) is not an error.
	dec.UseNumber()
	err := dec.Decode(&v)
	if err == nil {
		end := dec.InputOffset()
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			off := end + int64(len(body[end:])-len(bytes.TrimLeft(body[end:], " \t\r\n")))
			line, col := lineCol(body, off)
			return &JSONError{Offset: off, Line: line, Column: col, Reason: "unexpected data after the JSON value"}
		}
		return nil
	}
	var se *json.SyntaxError
	var off int64
	reason := err.Error()
	switch {
	case errors.As(err, &se):
		// Offset counts the bad byte as read; point at it instead.
		off = max(se.Offset-1, 0)
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(body))
		reason = "the JSON ends early"
	default:
		off = dec.InputOffset()
	}
	line, col := lineCol(body, off)
	return &JSONError{Offset: off, Line: line, Column: col, Reason: reason}
}

func lineCol(b []byte, off int64) (int, int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// BuildRequest turns a delivery into the request a replay sends: the
// captured headers in their order and case, hop-by-hop headers dropped,
// Host left for the sender to rewrite, Content-Length recomputed only
// when the body changed, and the signature recomputed when secret is set.
// body nil means the delivery's own body.
func BuildRequest(d *inspector.Delivery, body, secret []byte) Request {
	changed := body != nil && !bytes.Equal(body, d.Body)
	if body == nil {
		body = d.Body
	}
	req := Request{Method: d.Method, HostIndex: -1, Body: body}
	hop := export.ConnectionTokens(d.Headers)
	sawLength, sawSig := false, false
	for _, h := range d.Headers {
		switch {
		case strings.EqualFold(h.Name, "Host"):
			if req.HostIndex < 0 {
				req.HostIndex, req.HostName = len(req.Headers), h.Name
			}
			continue
		case export.IsHopByHop(h.Name) || hop[strings.ToLower(h.Name)]:
			continue
		case strings.EqualFold(h.Name, "Content-Length"):
			if sawLength {
				continue
			}
			sawLength = true
			if changed || h.Value != strconv.Itoa(len(body)) {
				h.Value = strconv.Itoa(len(body))
			}
		case strings.EqualFold(h.Name, inspector.SignatureHeader) && len(secret) > 0:
			if sawSig {
				continue
			}
			sawSig = true
			h.Value = inspector.Sign(secret, body)
		}
		req.Headers = append(req.Headers, h)
	}
	if len(secret) > 0 && !sawSig {
		req.Headers = append(req.Headers, inspector.Header{Name: inspector.SignatureHeader, Value: inspector.Sign(secret, body)})
	}
	if !sawLength {
		// The original came chunked (or had no body framing): the replay
		// always frames with Content-Length.
		req.Headers = append(req.Headers, inspector.Header{Name: "Content-Length", Value: strconv.Itoa(len(body))})
	}
	return req
}

// Replay sends one delivery to opts.Target, byte-exact (headers in their
// captured order and case, internal/rawsend), and records the outcome. A
// network failure or an error answer is not an error: it is in the
// Result. Errors are for bad input (target, body) and recording failures.
func (r *Replayer) Replay(ctx context.Context, d *inspector.Delivery, opts Options) (*Result, error) {
	target, err := ParseTarget(opts.Target)
	if err != nil {
		return nil, err
	}
	if d.Truncated {
		return nil, fmt.Errorf("delivery %d was cut at the body cap (%d of %d+ bytes): replaying it would send a different body", d.ID, len(d.Body), d.BodyLength)
	}
	mode := ModeRaw
	if len(opts.Secret) > 0 {
		mode = ModeResigned
	}
	if opts.Body != nil {
		if err := ValidateJSON(opts.Body); err != nil {
			return nil, fmt.Errorf("edited body of delivery %d: %w", d.ID, err)
		}
		if len(opts.Secret) == 0 && !opts.StaleSignature {
			return nil, errors.New("an edited body needs a secret to be re-signed (or send it with the stale signature on purpose)")
		}
		if !bytes.Equal(opts.Body, d.Body) {
			mode = ModeEdited
		}
	}
	req := BuildRequest(d, opts.Body, opts.Secret)
	res := &Result{DeliveryID: d.ID, Sources: []int64{d.ID}, Mode: mode}
	describeBody(res, req.Body)
	res.Target, res.SentAt = RedactURL(target.String()), r.now().UTC()
	a, err := r.sendExact(ctx, target, req)
	return r.record(ctx, target, res, a, err)
}

func describeBody(res *Result, body []byte) {
	res.BodySize = len(body)
	if m, err := inspector.DecodeMessage(body); err == nil {
		res.HookUUID = m.HookUUID
		for _, e := range m.Events {
			res.Events = append(res.Events, e.UUID)
		}
	}
}

// record fills res with what came of a send and records it.
func (r *Replayer) record(ctx context.Context, target *url.URL, res *Result, a *answer, err error) (*Result, error) {
	if err != nil {
		res.Error = failure(err, target)
	}
	if a != nil {
		res.Status, res.StatusText, res.Latency = a.status, a.statusText, a.latency
		res.ResponseHeaders = a.headers
		res.ResponseBody, res.ResponseTruncated = a.body, a.truncated
	}
	if r.Recorder != nil {
		id, err := r.Recorder.SaveReplay(context.WithoutCancel(ctx), res)
		if err != nil {
			return res, fmt.Errorf("record replay of delivery %d: %w", res.DeliveryID, err)
		}
		res.ID = id
	}
	return res, nil
}

// RedactURL hides credentials in a URL (user info, token query
// parameters) so it can be shown, logged and stored.
func RedactURL(raw string) string { return redact.URL(raw) }
