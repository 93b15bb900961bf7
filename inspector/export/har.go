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
)

// The HAR 1.2 structure (http://www.softwareishard.com/blog/har-12-spec/).
// Every field the spec marks required is always present, with -1 where the
// spec allows "unknown". Hookscope's own facts ride in "_hookscope", a custom
// field as the spec allows (names starting with an underscore).

// HARFile is a HAR document.
type HARFile struct {
	Log HARLog `json:"log"`
}

// HARLog is the log object.
type HARLog struct {
	Version string     `json:"version"`
	Creator HARCreator `json:"creator"`
	// Pages is optional in HAR 1.2; an empty list keeps strict importers
	// that expect the key content.
	Pages   []struct{} `json:"pages"`
	Entries []HAREntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

// HARCreator names the exporting application.
type HARCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// HAREntry is one request/response pair.
type HAREntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         HARRequest  `json:"request"`
	Response        HARResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         HARTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
	Hookscope       *HARExtra   `json:"_hookscope,omitempty"`
}

// HARNameValue is a header, query parameter or cookie.
type HARNameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HARRequest is the request object.
type HARRequest struct {
	Method      string         `json:"method"`
	URL         string         `json:"url"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARNameValue `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	QueryString []HARNameValue `json:"queryString"`
	PostData    *HARPostData   `json:"postData,omitempty"`
	HeadersSize int64          `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
}

// HARPostData is a request body. Encoding "base64" (an extension HTTP
// Toolkit and others read) marks a body that is not UTF-8.
type HARPostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Encoding string `json:"encoding,omitempty"`
}

// HARResponse is the response object: here, how Hookscope's receiver
// answered the delivery.
type HARResponse struct {
	Status      int            `json:"status"`
	StatusText  string         `json:"statusText"`
	HTTPVersion string         `json:"httpVersion"`
	Cookies     []HARNameValue `json:"cookies"`
	Headers     []HARNameValue `json:"headers"`
	Content     HARContent     `json:"content"`
	RedirectURL string         `json:"redirectURL"`
	HeadersSize int64          `json:"headersSize"`
	BodySize    int64          `json:"bodySize"`
}

// HARContent is a response body.
type HARContent struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

// HARTimings are the phases of the exchange in milliseconds.
type HARTimings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

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

// BuildHAR turns records into a HAR document.
func BuildHAR(recs []*inspector.Record, opts Options, version string) HARFile {
	h := HARFile{Log: HARLog{Version: "1.2", Creator: HARCreator{Name: "Hookscope", Version: version},
		Comment: "Webhook deliveries captured by Hookscope; the responses are the receiver's answers.", Pages: []struct{}{}, Entries: []HAREntry{}}}
	for _, r := range recs {
		h.Log.Entries = append(h.Log.Entries, harEntry(r, opts))
	}
	return h
}

func harEntry(r *inspector.Record, opts Options) HAREntry {
	d := r.Delivery
	hs := headersFor(d, opts.Reveal)
	query := queryFor(d, opts.Reveal)
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
	req := HARRequest{Method: d.Method, URL: u, HTTPVersion: "HTTP/1.1", Cookies: []HARNameValue{},
		Headers: []HARNameValue{}, QueryString: []HARNameValue{}, BodySize: int64(len(d.Body))}
	size := len(d.Method) + 1 + len(path) + len(" HTTP/1.1\r\n") + 2
	if query != "" {
		size += 1 + len(query)
	}
	for _, x := range hs {
		req.Headers = append(req.Headers, HARNameValue{x.Name, x.Value})
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
				value = Redacted
			}
			req.Cookies = append(req.Cookies, HARNameValue{name, value})
		}
	}
	req.HeadersSize = int64(size)
	if d.HeadersReconstructed {
		req.HeadersSize = -1
	}
	for _, p := range strings.Split(query, "&") {
		if p == "" {
			continue
		}
		name, value, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		req.QueryString = append(req.QueryString, HARNameValue{name, value})
	}
	if d.Method != http.MethodGet || len(d.Body) > 0 {
		mime, _ := d.Header("Content-Type")
		if mime == "" {
			mime = "application/octet-stream"
		}
		pd := &HARPostData{MimeType: mime}
		if utf8.Valid(d.Body) {
			pd.Text = string(d.Body)
		} else {
			pd.Text, pd.Encoding = base64.StdEncoding.EncodeToString(d.Body), "base64"
		}
		req.PostData = pd
	}
	resp := HARResponse{Status: d.Status, StatusText: http.StatusText(d.Status), HTTPVersion: "HTTP/1.1",
		Cookies: []HARNameValue{}, Headers: []HARNameValue{}, Content: HARContent{Size: 0, MimeType: "text/plain"},
		RedirectURL: "", HeadersSize: -1, BodySize: -1}
	if d.Status == 0 {
		resp.StatusText = "no answer (" + d.Answer + ")"
	}
	e := HAREntry{StartedDateTime: d.ReceivedAt.UTC().Format(time.RFC3339Nano), Request: req, Response: resp,
		Hookscope: &HARExtra{ID: d.ID, Source: d.Source, RemoteAddr: d.RemoteAddr, BodyLength: d.BodyLength,
			Truncated: d.Truncated, Rejected: d.Rejected, HeadersReconstructed: d.HeadersReconstructed,
			Redacted: redacted, Analysis: Summarize(r.Analysis)}}
	if r.Analysis != nil && len(r.Analysis.Events) > 0 {
		types := make([]string, len(r.Analysis.Events))
		for i, ev := range r.Analysis.Events {
			types[i] = ev.Type
		}
		e.Comment = fmt.Sprintf("delivery %d: %s (signature %s)", d.ID, strings.Join(types, ", "), r.Analysis.Signature.Status)
	}
	return e
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
	v := opts.Version
	if v == "" {
		v = "dev"
	}
	b, err := marshalPretty(BuildHAR(recs, opts, v))
	if err != nil {
		return fmt.Errorf("encode HAR: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// readHAR takes the POST entries of a HAR file (Hookscope's or a
// browser's) as deliveries.
func readHAR(data []byte) ([]*inspector.Delivery, []string, error) {
	var h HARFile
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
			skipped = append(skipped, fmt.Sprintf("entry %d: %s %s is not a POST", i, e.Request.Method, RedactURL(e.Request.URL)))
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
		if x := e.Hookscope; x != nil {
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
