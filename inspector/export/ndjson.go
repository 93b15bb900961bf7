package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// deliveryFacts are what the per-delivery formats (json, NDJSON) say about
// a delivery besides its body, one struct so the formats cannot drift apart.
type deliveryFacts struct {
	ID                   int64              `json:"id"`
	ReceivedAt           time.Time          `json:"received_at"`
	Source               string             `json:"source,omitempty"`
	Method               string             `json:"method"`
	Path                 string             `json:"path"`
	Query                string             `json:"query,omitempty"`
	RemoteAddr           string             `json:"remote_addr,omitempty"`
	Status               int                `json:"status"`
	Rejected             bool               `json:"rejected,omitempty"`
	Truncated            bool               `json:"truncated,omitempty"`
	ReadError            string             `json:"read_error,omitempty"`
	HeadersReconstructed bool               `json:"headers_reconstructed,omitempty"`
	Headers              []inspector.Header `json:"headers"`
	BodyLength           int64              `json:"body_length"`
}

// factsFor takes a delivery's facts, with credentials in the query and
// headers redacted unless reveal.
func factsFor(d *inspector.Delivery, reveal bool) deliveryFacts {
	return deliveryFacts{ID: d.ID, ReceivedAt: d.ReceivedAt.UTC(), Source: d.Source, Method: d.Method, Path: d.Path,
		Query: QueryFor(d, reveal), RemoteAddr: d.RemoteAddr, Status: d.Status, Rejected: d.Rejected,
		Truncated: d.Truncated, ReadError: d.ReadError, HeadersReconstructed: d.HeadersReconstructed,
		Headers: HeadersFor(d, reveal), BodyLength: d.BodyLength}
}

// delivery is the delivery these facts describe, with body: what import
// stores (the id is the store's to give).
func (f deliveryFacts) delivery(body []byte) *inspector.Delivery {
	d := &inspector.Delivery{ReceivedAt: f.ReceivedAt, Method: f.Method, Path: f.Path, Query: f.Query,
		Headers: f.Headers, HeadersReconstructed: f.HeadersReconstructed, Body: body, BodyLength: max(f.BodyLength, int64(len(body))),
		RemoteAddr: f.RemoteAddr, Status: f.Status, Rejected: f.Rejected, Truncated: f.Truncated, ReadError: f.ReadError}
	if d.Headers == nil {
		d.Headers = []inspector.Header{}
	}
	return d
}

// Line is one NDJSON line: a delivery byte-exact (body in base64) with its
// analysis summary. Import reads it back.
type Line struct {
	deliveryFacts
	// Body is base64 in JSON ([]byte), so any bytes survive.
	Body     []byte           `json:"body"`
	Analysis *AnalysisSummary `json:"analysis,omitempty"`
}

// WriteNDJSON writes one Line per record.
func WriteNDJSON(w io.Writer, recs []*inspector.Record, opts Options) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		d := r.Delivery
		l := Line{deliveryFacts: factsFor(d, opts.Reveal), Body: d.Body, Analysis: Summarize(r.Analysis)}
		if l.Body == nil {
			l.Body = []byte{}
		}
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("export delivery %d: %w", d.ID, err)
		}
	}
	return bw.Flush()
}

// readNDJSON parses NDJSON lines back into deliveries. Blank lines are
// skipped; any other line that is not a delivery is an error naming it.
func readNDJSON(data []byte) ([]*inspector.Delivery, error) {
	var out []*inspector.Delivery
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		if l.Method == "" {
			return nil, fmt.Errorf("line %d: not a Hookscope delivery (no method)", n+1)
		}
		out = append(out, l.delivery(l.Body))
	}
	return out, nil
}
