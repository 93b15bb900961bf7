package oauthflow

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// HAR 1.2 structures (http://www.softwareishard.com/blog/har-12-spec/),
// only the parts a flow fills.
type harLog struct {
	Log harBody `json:"log"`
}

type harBody struct {
	Version string     `json:"version"`
	Creator harCreator `json:"creator"`
	Entries []harEntry `json:"entries"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type harEntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         harRequest  `json:"request"`
	Response        harResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         harTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harPost struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

type harRequest struct {
	Method      string   `json:"method"`
	URL         string   `json:"url"`
	HTTPVersion string   `json:"httpVersion"`
	Cookies     []harNV  `json:"cookies"`
	Headers     []harNV  `json:"headers"`
	QueryString []harNV  `json:"queryString"`
	PostData    *harPost `json:"postData,omitempty"`
	HeadersSize int      `json:"headersSize"`
	BodySize    int      `json:"bodySize"`
}

type harContent struct {
	Size     int    `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

type harResponse struct {
	Status      int        `json:"status"`
	StatusText  string     `json:"statusText"`
	HTTPVersion string     `json:"httpVersion"`
	Cookies     []harNV    `json:"cookies"`
	Headers     []harNV    `json:"headers"`
	Content     harContent `json:"content"`
	RedirectURL string     `json:"redirectURL"`
	HeadersSize int        `json:"headersSize"`
	BodySize    int        `json:"bodySize"`
}

type harTimings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// HAR exports the HTTP requests the flow made (exchange, refresh, calls)
// as a HAR 1.2 document that browsers' devtools and HAR viewers open.
// Steps without an HTTP exchange of ours (the authorize URL, the received
// callback) are left out. Redacted unless o.Reveal.
func HAR(ts []Transcript, creatorVersion string, o RenderOptions) ([]byte, error) {
	doc := harLog{Log: harBody{Version: "1.2", Creator: harCreator{Name: "Hookscope", Version: orDefault(creatorVersion, "dev")}, Entries: []harEntry{}}}
	for _, t := range o.applyAll(ts) {
		if t.Inbound || t.Response == nil {
			continue
		}
		ms := float64(t.Response.Duration) / float64(time.Millisecond)
		e := harEntry{
			StartedDateTime: t.Time.UTC().Format(time.RFC3339Nano),
			Time:            ms,
			Request: harRequest{
				Method: t.Request.Method, URL: t.Request.URL, HTTPVersion: "HTTP/1.1",
				Cookies: []harNV{}, Headers: harHeaders(t.Request.Header), QueryString: harQuery(t.Request.URL),
				HeadersSize: -1, BodySize: len(t.Request.Body),
			},
			Response: harResponse{
				Status: t.Response.Status, StatusText: t.Response.StatusText, HTTPVersion: orDefault(t.Response.Proto, "HTTP/1.1"),
				Cookies: []harNV{}, Headers: harHeaders(t.Response.Header),
				Content:     harContent{Size: len(t.Response.Body), MimeType: orDefault(t.Response.Header.Get("Content-Type"), "x-unknown"), Text: t.Response.Body},
				RedirectURL: t.Response.Header.Get("Location"), HeadersSize: -1, BodySize: len(t.Response.Body),
			},
			Timings: harTimings{Send: 0, Wait: ms, Receive: 0},
			Comment: t.Title(),
		}
		if t.Request.Body != "" {
			e.Request.PostData = &harPost{MimeType: orDefault(t.Request.Header.Get("Content-Type"), "application/octet-stream"), Text: t.Request.Body}
		}
		if t.Error != "" {
			e.Comment += ": " + t.Error
		}
		doc.Log.Entries = append(doc.Log.Entries, e)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode HAR: %w", err)
	}
	return b, nil
}

func harHeaders(h http.Header) []harNV {
	out := []harNV{}
	for _, k := range sortedKeys(h) {
		for _, v := range h[k] {
			out = append(out, harNV{Name: k, Value: v})
		}
	}
	return out
}

func harQuery(raw string) []harNV {
	out := []harNV{}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	// Keep the order of the URL rather than url.Values' map order.
	for _, kv := range splitQuery(u.RawQuery) {
		out = append(out, harNV{Name: kv[0], Value: kv[1]})
	}
	return out
}
