package oauthflow

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/hookscope/hookscope/internal/har"
)

// HAR exports the HTTP requests the flow made (exchange, refresh, calls)
// as a HAR 1.2 document that browsers' devtools and HAR viewers open.
// Steps without an HTTP exchange of ours (the authorize URL, the received
// callback) are left out. Redacted unless o.Reveal.
func HAR(ts []Transcript, creatorVersion string, o RenderOptions) ([]byte, error) {
	doc := har.New("Hookscope", creatorVersion, "")
	for _, t := range o.applyAll(ts) {
		if t.Inbound || t.Response == nil {
			continue
		}
		ms := float64(t.Response.Duration) / float64(time.Millisecond)
		e := har.Entry{
			StartedDateTime: t.Time.UTC().Format(time.RFC3339Nano),
			Time:            ms,
			Request: har.Request{
				Method: t.Request.Method, URL: t.Request.URL, HTTPVersion: "HTTP/1.1",
				Cookies: []har.NameValue{}, Headers: har.Headers(t.Request.Header), QueryString: harQuery(t.Request.URL),
				HeadersSize: -1, BodySize: int64(len(t.Request.Body)),
			},
			Response: har.Response{
				Status: t.Response.Status, StatusText: t.Response.StatusText, HTTPVersion: orDefault(t.Response.Proto, "HTTP/1.1"),
				Cookies: []har.NameValue{}, Headers: har.Headers(t.Response.Header),
				Content:     har.Content{Size: int64(len(t.Response.Body)), MimeType: orDefault(t.Response.Header.Get("Content-Type"), "x-unknown"), Text: t.Response.Body},
				RedirectURL: t.Response.Header.Get("Location"), HeadersSize: -1, BodySize: int64(len(t.Response.Body)),
			},
			Timings: har.Timings{Send: 0, Wait: ms, Receive: 0},
			Comment: t.Title(),
		}
		if t.Request.Body != "" {
			e.Request.PostData = &har.PostData{MimeType: orDefault(t.Request.Header.Get("Content-Type"), "application/octet-stream"), Text: t.Request.Body}
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

// harQuery lists a request URL's query parameters in the URL's order.
func harQuery(raw string) []har.NameValue {
	u, err := url.Parse(raw)
	if err != nil {
		return []har.NameValue{}
	}
	return har.Query(u.RawQuery)
}
