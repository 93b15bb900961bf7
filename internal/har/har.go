// Package har is the HAR 1.2 document structure
// (http://www.softwareishard.com/blog/har-12-spec/) that Hookscope writes
// for captured deliveries and for OAuth flows, and reads back on import.
//
// Every field the spec marks required is always present, with -1 where the
// spec allows "unknown"; empty lists are written as [] because strict
// importers expect the keys. Hookscope's own facts ride in "_hookscope", a
// custom field as the spec allows (names starting with an underscore).
package har

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// File is a HAR document.
type File struct {
	Log Log `json:"log"`
}

// Log is the log object.
type Log struct {
	Version string  `json:"version"`
	Creator Creator `json:"creator"`
	// Pages is optional in HAR 1.2; an empty list keeps strict importers
	// that expect the key content.
	Pages   []struct{} `json:"pages"`
	Entries []Entry    `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

// Creator names the exporting application.
type Creator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Entry is one request/response pair.
type Entry struct {
	StartedDateTime string   `json:"startedDateTime"`
	Time            float64  `json:"time"`
	Request         Request  `json:"request"`
	Response        Response `json:"response"`
	Cache           struct{} `json:"cache"`
	Timings         Timings  `json:"timings"`
	Comment         string   `json:"comment,omitempty"`
	// Hookscope carries what HAR has no field for; its shape belongs to
	// the writer (a delivery's facts, so an import restores it as it was).
	Hookscope json.RawMessage `json:"_hookscope,omitempty"`
}

// NameValue is a header, query parameter or cookie.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Request is the request object.
type Request struct {
	Method      string      `json:"method"`
	URL         string      `json:"url"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []NameValue `json:"cookies"`
	Headers     []NameValue `json:"headers"`
	QueryString []NameValue `json:"queryString"`
	PostData    *PostData   `json:"postData,omitempty"`
	HeadersSize int64       `json:"headersSize"`
	BodySize    int64       `json:"bodySize"`
}

// PostData is a request body. Encoding "base64" (an extension HTTP
// Toolkit and others read) marks a body that is not UTF-8.
type PostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Encoding string `json:"encoding,omitempty"`
}

// Response is the response object.
type Response struct {
	Status      int         `json:"status"`
	StatusText  string      `json:"statusText"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []NameValue `json:"cookies"`
	Headers     []NameValue `json:"headers"`
	Content     Content     `json:"content"`
	RedirectURL string      `json:"redirectURL"`
	HeadersSize int64       `json:"headersSize"`
	BodySize    int64       `json:"bodySize"`
}

// Content is a response body.
type Content struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

// Timings are the phases of the exchange in milliseconds.
type Timings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// New starts a document with the required fields filled and no entries.
func New(creator, version, comment string) File {
	if version == "" {
		version = "dev"
	}
	return File{Log: Log{Version: "1.2", Creator: Creator{Name: creator, Version: version},
		Pages: []struct{}{}, Entries: []Entry{}, Comment: comment}}
}

// Query splits a raw query into name/value pairs in the order of the URL
// (not url.Values' map order), decoding what decodes and keeping the rest
// as written, so a capture shows exactly what was sent.
func Query(rawQuery string) []NameValue {
	out := []NameValue{}
	for _, part := range strings.FieldsFunc(rawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(part, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		if k == "" {
			continue
		}
		out = append(out, NameValue{Name: k, Value: v})
	}
	return out
}

// Headers lists an http.Header by sorted name, each value its own pair:
// the map has no order of its own, and a stable one makes exports diff.
func Headers(h http.Header) []NameValue {
	out := []NameValue{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			out = append(out, NameValue{Name: k, Value: v})
		}
	}
	return out
}
