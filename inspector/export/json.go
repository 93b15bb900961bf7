package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// AnalysisSummary is the part of an analysis an export carries: enough to
// see at a glance what the delivery was, without the full problem detail.
type AnalysisSummary struct {
	Signature    inspector.SignatureStatus `json:"signature"`
	SignatureWhy string                    `json:"signature_reason,omitempty"`
	HookUUID     string                    `json:"hook_uuid,omitempty"`
	Resend       bool                      `json:"resend,omitempty"`
	ResendOf     int64                     `json:"resend_of,omitempty"`
	Error        string                    `json:"error,omitempty"`
	Problems     int                       `json:"problems"`
	Events       []EventSummary            `json:"events"`
}

// EventSummary is one event of an AnalysisSummary.
type EventSummary struct {
	UUID        string `json:"uuid"`
	Type        string `json:"type"`
	GeneratedAt string `json:"generated_at"`
	Duplicate   bool   `json:"duplicate,omitempty"`
	Divergent   bool   `json:"divergent,omitempty"`
	OutOfOrder  bool   `json:"out_of_order,omitempty"`
	Summary     string `json:"summary,omitempty"`
	Problems    int    `json:"problems,omitempty"`
}

// Summarize condenses an analysis; nil stays nil (not analyzed yet).
func Summarize(a *inspector.Analysis) *AnalysisSummary {
	if a == nil {
		return nil
	}
	s := &AnalysisSummary{Signature: a.Signature.Status, SignatureWhy: a.Signature.Reason, HookUUID: a.HookUUID,
		Resend: a.Resend, ResendOf: a.ResendOf, Problems: a.ProblemCount(), Events: []EventSummary{}}
	if a.Error != nil {
		s.Error = a.Error.Reason
	}
	for _, e := range a.Events {
		s.Events = append(s.Events, EventSummary{UUID: e.UUID, Type: e.Type, GeneratedAt: e.GeneratedRaw,
			Duplicate: e.Duplicate, Divergent: e.Divergent, OutOfOrder: e.OutOfOrder, Summary: e.Summary, Problems: len(e.Problems)})
	}
	return s
}

// prettyDelivery is one file of the json export.
type prettyDelivery struct {
	deliveryFacts
	BodySHA256 string `json:"body_sha256"`
	// Body is a JSON body, pretty-printed for reading; compacting it gives
	// back the exact bytes when they were compact JSON, as the service
	// sends them. Any other body is in BodyText (UTF-8) or BodyBase64,
	// exactly — a JSON body that was not compact in both Body and one of
	// them — so import reads every body back byte for byte (checked
	// against BodySHA256).
	Body       json.RawMessage  `json:"body,omitempty"`
	BodyText   *string          `json:"body_text,omitempty"`
	BodyBase64 string           `json:"body_base64,omitempty"`
	Analysis   *AnalysisSummary `json:"analysis,omitempty"`
}

func writeJSONFolder(opts Options, recs []*inspector.Record, sum *Summary) error {
	for _, r := range recs {
		d := r.Delivery
		sha := sha256.Sum256(d.Body)
		p := prettyDelivery{deliveryFacts: factsFor(d, opts.Reveal), BodySHA256: hex.EncodeToString(sha[:]), Analysis: Summarize(r.Analysis)}
		if json.Valid(d.Body) {
			p.Body = json.RawMessage(d.Body)
		}
		if p.Body == nil || !isCompactJSON(d.Body) {
			if utf8.Valid(d.Body) {
				s := string(d.Body)
				p.BodyText = &s
			} else {
				p.BodyBase64 = base64.StdEncoding.EncodeToString(d.Body)
			}
		}
		b, err := marshalPretty(p)
		if err != nil {
			return fmt.Errorf("export delivery %d: %w", d.ID, err)
		}
		if err := writeInto(sum, opts.Out, fmt.Sprintf("delivery-%06d.json", d.ID), b, fileMode); err != nil {
			return err
		}
	}
	return nil
}

// marshalPretty writes v as JSON for people, laid out by catalog.Pretty
// like every pretty JSON Hookscope shows. &, < and > are left as they are
// (encoding/json would escape them, which makes bodies harder to read).
func marshalPretty(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return catalog.Pretty(b.Bytes()), nil
}

// isCompactJSON reports whether compacting the JSON b gives b back, so a
// pretty-printed copy of it can be compacted back to the same bytes.
func isCompactJSON(b []byte) bool {
	var c bytes.Buffer
	return json.Compact(&c, b) == nil && bytes.Equal(c.Bytes(), b)
}

// readJSONDelivery reads one file of the json export back; ok is false
// when data is not one (the caller says why it skipped the file).
func readJSONDelivery(data []byte) (_ *inspector.Delivery, ok bool, err error) {
	var p prettyDelivery
	if json.Unmarshal(data, &p) != nil || p.Method == "" || p.BodySHA256 == "" || p.Headers == nil {
		return nil, false, nil
	}
	var body []byte
	switch {
	case p.BodyBase64 != "":
		if body, err = base64.StdEncoding.DecodeString(p.BodyBase64); err != nil {
			return nil, true, fmt.Errorf("body_base64: %w", err)
		}
	case p.BodyText != nil:
		body = []byte(*p.BodyText)
	case p.Body != nil:
		var c bytes.Buffer
		if err := json.Compact(&c, p.Body); err != nil {
			return nil, true, fmt.Errorf("body: %w", err)
		}
		body = c.Bytes()
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != p.BodySHA256 {
		return nil, true, errors.New("the body read back does not match body_sha256 (an export from before bodies were kept exactly, of a JSON body that was not compact)")
	}
	return p.delivery(body), true, nil
}
