package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/har"
	"github.com/hookscope/hookscope/internal/redact"
)

// HARExtra carries what HAR has no field for, so an import restores the
// delivery as it was.
type HARExtra struct {
	ID                   int64            `json:"id"`
	Source               string           `json:"source,omitempty"`
	RemoteAddr           string           `json:"remote_addr,omitempty"`
	BodyLength           int64            `json:"body_length"`
	Truncated            bool             `json:"truncated,omitempty"`
	Rejected             bool             `json:"rejected,omitempty"`
	HeadersReconstructed bool             `json:"headers_reconstructed,omitempty"`
	Redacted             bool             `json:"redacted,omitempty"`
	Analysis             *AnalysisSummary `json:"analysis,omitempty"`
}

// buildHAR turns records into a HAR document.
func buildHAR(recs []*inspector.Record, opts Options, version string) (har.File, error) {
	h := har.New("Hookscope", version, "Webhook deliveries captured by Hookscope; the responses are the receiver's answers.")
	for _, r := range recs {
		e, err := harEntry(r, opts)
		if err != nil {
			return har.File{}, fmt.Errorf("delivery %d: %w", r.Delivery.ID, err)
		}
		h.Log.Entries = append(h.Log.Entries, e)
	}
	return h, nil
}

func harEntry(r *inspector.Record, opts Options) (har.Entry, error) {
	d := r.Delivery
	hs := HeadersFor(d, opts.Reveal)
	query := QueryFor(d, opts.Reveal)
	redacted := !opts.Reveal && (query != d.Query || !sameHeaders(hs, d.Headers))

	host := "localhost"
	scheme := "http"
	if v, ok := d.Header("Host"); ok && v != "" {
		host = v
	}
	if v, ok := d.Header("X-Forwarded-Proto"); ok && (v == "https" || v == "http") {
		scheme = v
	}
	path := d.Path
	if path == "" {
		path = "/"
	}
	u := scheme + "://" + host + path
	if query != "" {
		u += "?" + query
	}
	req := har.Request{Method: d.Method, URL: u, HTTPVersion: "HTTP/1.1", Cookies: []har.NameValue{},
		Headers: []har.NameValue{}, QueryString: []har.NameValue{}, BodySize: int64(len(d.Body))}
	size := len(d.Method) + 1 + len(path) + len(" HTTP/1.1\r\n") + 2
	if query != "" {
		size += 1 + len(query)
	}
	for _, x := range hs {
		req.Headers = append(req.Headers, har.NameValue{Name: x.Name, Value: x.Value})
		size += len(x.Name) + 2 + len(x.Value) + 2
	}
	// Cookies come from the original header: their names are no secret,
	// their values are redacted like the header.
	for _, x := range d.Headers {
		if !strings.EqualFold(x.Name, "Cookie") {
			continue
		}
		for _, c := range strings.Split(x.Value, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(c), "=")
			if name == "" {
				continue
			}
			if !opts.Reveal {
				value = redact.Placeholder
			}
			req.Cookies = append(req.Cookies, har.NameValue{Name: name, Value: value})
		}
	}
	req.HeadersSize = int64(size)
	if d.HeadersReconstructed {
		req.HeadersSize = -1
	}
	req.QueryString = har.Query(query)
	if d.Method != http.MethodGet || len(d.Body) > 0 {
		mime, _ := d.Header("Content-Type")
		if mime == "" {
			mime = "application/octet-stream"
		}
		pd := &har.PostData{MimeType: mime}
		if utf8.Valid(d.Body) {
			pd.Text = string(d.Body)
		} else {
			pd.Text, pd.Encoding = base64.StdEncoding.EncodeToString(d.Body), "base64"
		}
		req.PostData = pd
	}
	resp := har.Response{Status: d.Status, StatusText: http.StatusText(d.Status), HTTPVersion: "HTTP/1.1",
		Cookies: []har.NameValue{}, Headers: []har.NameValue{}, Content: har.Content{Size: 0, MimeType: "text/plain"},
		RedirectURL: "", HeadersSize: -1, BodySize: -1}
	if d.Status == 0 {
		resp.StatusText = "no answer (" + d.Answer + ")"
	}
	extra, err := json.Marshal(HARExtra{ID: d.ID, Source: d.Source, RemoteAddr: d.RemoteAddr, BodyLength: d.BodyLength,
		Truncated: d.Truncated, Rejected: d.Rejected, HeadersReconstructed: d.HeadersReconstructed,
		Redacted: redacted, Analysis: Summarize(r.Analysis)})
	if err != nil {
		return har.Entry{}, fmt.Errorf("encode _hookscope: %w", err)
	}
	e := har.Entry{StartedDateTime: d.ReceivedAt.UTC().Format(time.RFC3339Nano), Request: req, Response: resp, Hookscope: extra}
	if r.Analysis != nil && len(r.Analysis.Events) > 0 {
		types := make([]string, len(r.Analysis.Events))
		for i, ev := range r.Analysis.Events {
			types[i] = ev.Type
		}
		e.Comment = fmt.Sprintf("delivery %d: %s (signature %s)", d.ID, strings.Join(types, ", "), r.Analysis.Signature.Status)
	}
	return e, nil
}

func sameHeaders(a, b []inspector.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// WriteHAR writes records as a HAR 1.2 document.
func WriteHAR(w io.Writer, recs []*inspector.Record, opts Options) error {
	h, err := buildHAR(recs, opts, opts.Version)
	if err != nil {
		return fmt.Errorf("build HAR: %w", err)
	}
	b, err := marshalPretty(h)
	if err != nil {
		return fmt.Errorf("encode HAR: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// readHAR takes the POST entries of a HAR file (Hookscope's or a
// browser's) as deliveries.
func readHAR(data []byte) ([]*inspector.Delivery, []string, error) {
	var h har.File
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, nil, fmt.Errorf("not a HAR file: %w", err)
	}
	if h.Log.Entries == nil {
		return nil, nil, errors.New("not a HAR file: no log.entries")
	}
	var out []*inspector.Delivery
	var skipped []string
	for i, e := range h.Log.Entries {
		if !strings.EqualFold(e.Request.Method, http.MethodPost) {
			skipped = append(skipped, fmt.Sprintf("entry %d: %s %s is not a POST", i, e.Request.Method, redact.URL(e.Request.URL)))
			continue
		}
		u, err := url.Parse(e.Request.URL)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("entry %d: bad URL: %v", i, err))
			continue
		}
		d := &inspector.Delivery{Method: http.MethodPost, Path: u.EscapedPath(), Query: u.RawQuery, Status: e.Response.Status,
			Headers: []inspector.Header{}, RemoteAddr: "import"}
		if d.Path == "" {
			d.Path = "/"
		}
		if t, err := time.Parse(time.RFC3339Nano, e.StartedDateTime); err == nil {
			d.ReceivedAt = t.UTC()
		}
		hasHost := false
		for _, x := range e.Request.Headers {
			// HTTP/2 captures list pseudo-headers (":authority"); they
			// are not headers of an HTTP/1.1 delivery.
			if strings.HasPrefix(x.Name, ":") {
				continue
			}
			hasHost = hasHost || strings.EqualFold(x.Name, "Host")
			d.Headers = append(d.Headers, inspector.Header{Name: x.Name, Value: x.Value})
		}
		if !hasHost && u.Host != "" {
			d.Headers = append([]inspector.Header{{Name: "Host", Value: u.Host}}, d.Headers...)
		}
		if pd := e.Request.PostData; pd != nil {
			if pd.Encoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(pd.Text)
				if err != nil {
					skipped = append(skipped, fmt.Sprintf("entry %d: postData is not valid base64: %v", i, err))
					continue
				}
				d.Body = b
			} else {
				d.Body = []byte(pd.Text)
			}
		}
		if d.Body == nil {
			d.Body = []byte{}
		}
		d.BodyLength = int64(len(d.Body))
		var x HARExtra
		if len(e.Hookscope) > 0 && json.Unmarshal(e.Hookscope, &x) == nil {
			d.RemoteAddr = x.RemoteAddr
			d.Truncated, d.Rejected, d.HeadersReconstructed = x.Truncated, x.Rejected, x.HeadersReconstructed
			d.BodyLength = max(x.BodyLength, d.BodyLength)
		}
		out = append(out, d)
	}
	return out, skipped, nil
}

// isHAR tells a HAR document from NDJSON by its top-level "log" object.
// HAR files start with it, so the first key decides without parsing the
// whole document twice; a HAR that puts "log" later is caught by a full
// probe when the file does not parse as NDJSON either (see Read).
func isHAR(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	k, err := dec.Token()
	return err == nil && k == "log"
}

// hasLog is the full probe for a top-level "log" object.
func hasLog(data []byte) bool {
	var probe struct {
		Log json.RawMessage `json:"log"`
	}
	return json.Unmarshal(data, &probe) == nil && len(probe.Log) > 0
}
