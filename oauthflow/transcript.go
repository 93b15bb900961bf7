package oauthflow

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/curlcmd"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/redact"
)

// Step names one stage of the flow.
type Step string

// The steps of the flow, in order.
const (
	StepAuthorize Step = "authorize"
	StepCallback  Step = "callback"
	StepExchange  Step = "exchange"
	StepRefresh   Step = "refresh"
	StepCall      Step = "call"
)

// maxRecordedBody caps a recorded body; larger bodies are cut and marked,
// because a transcript is for reading, not for archiving downloads.
const maxRecordedBody = 4 << 20

// Request is a request exactly as sent (or, for the callback, received).
type Request struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"headers,omitempty"`
	Body   string      `json:"body,omitempty"`
}

// Response is a response exactly as received (or, for the callback, sent).
type Response struct {
	Status int `json:"status"`
	// StatusText is the status line after the code, e.g. "Bad Request".
	StatusText string      `json:"status_text,omitempty"`
	Proto      string      `json:"proto,omitempty"`
	Header     http.Header `json:"headers,omitempty"`
	Body       string      `json:"body,omitempty"`
	// Truncated is true when Body holds only the first bytes.
	Truncated bool          `json:"truncated,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// Transcript is the record of one step: what went out, what came back,
// and what it means.
type Transcript struct {
	// ID is the store's id once saved (0 before).
	ID      int64  `json:"id,omitempty"`
	FlowID  string `json:"flow_id"`
	Profile string `json:"profile,omitempty"`
	Step    Step   `json:"step"`
	// Label tells side-by-side records apart, e.g. "header" for a call
	// that sent the token in the Authorization header.
	Label string `json:"label,omitempty"`
	// Inbound marks a request the flow received (the callback) rather
	// than sent.
	Inbound  bool      `json:"inbound,omitempty"`
	Time     time.Time `json:"time"`
	Request  Request   `json:"request"`
	Response *Response `json:"response,omitempty"`
	// Error says in plain words what went wrong; Fix the likely remedy.
	Error string `json:"error,omitempty"`
	Fix   string `json:"fix,omitempty"`
	// Notes are observations that are not failures: deviations from the
	// spec the parser forgave, warnings, hints.
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether the step succeeded.
func (t Transcript) OK() bool { return t.Error == "" }

// Title is a short heading for lists and reports.
func (t Transcript) Title() string {
	s := string(t.Step)
	if t.Label != "" {
		s += " (" + t.Label + ")"
	}
	return s
}

// Redacted is what replaces a secret in anything displayed or exported:
// the placeholder of package redact, which holds every redaction rule.
const Redacted = redact.Placeholder

// RenderOptions controls displays and exports. The zero value redacts.
type RenderOptions struct {
	// Reveal shows secrets as they are. Only on the user's explicit ask.
	Reveal bool
	// Secrets are the flow's own secret values (client secret, codes,
	// tokens) to hide wherever they appear in text, beyond the
	// parameters, fields and headers redacted by name. Values shorter
	// than redact.MinValueLen are left to the by-name rules.
	Secrets []string
}

// Redact returns a copy of t with secrets hidden where they stand, by the
// rules of package redact: values of secret-named parameters (client_secret,
// code, access_token, bearer_token, refresh_token, code_verifier… in URLs,
// form bodies and URLs quoted in text) and JSON fields, the credentials of
// Authorization headers, cookie values; and every occurrence of the given
// secret values of at least redact.MinValueLen characters (a service
// echoing a code in an error description).
func Redact(t Transcript, secrets ...string) Transcript {
	return redactTranscript(redact.New(secrets...), t)
}

// RedactAll redacts several transcripts, compiling the patterns once.
func RedactAll(ts []Transcript, secrets ...string) []Transcript {
	r := redact.New(secrets...)
	out := make([]Transcript, len(ts))
	for i, t := range ts {
		out[i] = redactTranscript(r, t)
	}
	return out
}

func redactTranscript(r *redact.Redactor, t Transcript) Transcript {
	out := t
	out.Request = Request{Method: t.Request.Method, URL: r.Text(t.Request.URL), Header: r.HTTPHeader(t.Request.Header), Body: r.Text(t.Request.Body)}
	if t.Response != nil {
		resp := *t.Response
		resp.Header = r.HTTPHeader(resp.Header)
		resp.Body = r.Text(resp.Body)
		out.Response = &resp
	}
	out.Error = r.Text(t.Error)
	out.Fix = r.Text(t.Fix)
	if t.Notes != nil {
		out.Notes = make([]string, len(t.Notes))
		for i, n := range t.Notes {
			out.Notes[i] = r.Text(n)
		}
	}
	return out
}

// applyAll redacts ts unless o.Reveal.
func (o RenderOptions) applyAll(ts []Transcript) []Transcript {
	if o.Reveal {
		return ts
	}
	return RedactAll(ts, o.Secrets...)
}

// curlSkipHeaders are set by curl itself.
var curlSkipHeaders = map[string]bool{"Content-Length": true, "Host": true}

// Curl renders the step's request as a curl command a developer can paste
// into a shell: redacted unless o.Reveal. Inbound steps (the callback) and
// the authorize URL render as a curl of the URL too, for completeness.
func (t Transcript) Curl(o RenderOptions) string {
	t = o.applyAll([]Transcript{t})[0]
	c := curlcmd.Command{Options: []string{"-sS", "-i"}, URL: t.Request.URL, Body: []byte(t.Request.Body)}
	if t.Request.Method != "" && t.Request.Method != http.MethodGet {
		c.Method = t.Request.Method
	}
	for _, k := range slices.Sorted(maps.Keys(t.Request.Header)) {
		if curlSkipHeaders[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range t.Request.Header[k] {
			c.Headers = append(c.Headers, curlcmd.Header{Name: k, Value: v})
		}
	}
	// An explicit empty body for POST and PUT, as the spec's token
	// endpoint expects.
	c.SendBody = t.Request.Body != "" || t.Request.Method == http.MethodPost || t.Request.Method == http.MethodPut
	return c.String()
}

// Markdown renders transcripts as a report: per step the request, the
// response, what went wrong and the fix, and the curl command. Redacted
// unless o.Reveal.
func Markdown(title string, ts []Transcript, o RenderOptions) string {
	var b strings.Builder
	if title == "" {
		title = "OAuth flow transcript"
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	if !o.Reveal {
		b.WriteString("Secrets (client secret, codes, access and refresh tokens) are shown as `" + Redacted + "`.\n\n")
	}
	for i, t := range o.applyAll(ts) {
		status := "ok"
		if !t.OK() {
			status = "failed"
		}
		fmt.Fprintf(&b, "## %d. %s — %s\n\n", i+1, t.Title(), status)
		fmt.Fprintf(&b, "- Time: %s\n", t.Time.UTC().Format(time.RFC3339Nano))
		if t.Response != nil {
			fmt.Fprintf(&b, "- Status: %d %s\n", t.Response.Status, t.Response.StatusText)
			if t.Response.Duration > 0 {
				fmt.Fprintf(&b, "- Duration: %s\n", human.Duration(t.Response.Duration))
			}
		}
		if t.Error != "" {
			fmt.Fprintf(&b, "- Error: %s\n", t.Error)
		}
		if t.Fix != "" {
			fmt.Fprintf(&b, "- Likely fix: %s\n", t.Fix)
		}
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "- Note: %s\n", n)
		}
		dir := "Request"
		if t.Inbound {
			dir = "Request (received)"
		}
		fmt.Fprintf(&b, "\n### %s\n\n", dir)
		b.WriteString(fence(httpText(t.Request.Method+" "+t.Request.URL, t.Request.Header, t.Request.Body)))
		if t.Response != nil {
			b.WriteString("\n### Response\n\n")
			body := t.Response.Body
			if t.Response.Truncated {
				body += "\n[… body truncated]"
			}
			b.WriteString(fence(httpText(fmt.Sprintf("%s %d %s", orDefault(t.Response.Proto, "HTTP/1.1"), t.Response.Status, t.Response.StatusText), t.Response.Header, body)))
		}
		if !t.Inbound && t.Step != StepAuthorize {
			b.WriteString("\n### curl\n\n")
			b.WriteString(fence(t.Curl(RenderOptions{Reveal: true}))) // already redacted above when asked
		}
		b.WriteString("\n")
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func httpText(first string, h http.Header, body string) string {
	var b strings.Builder
	b.WriteString(first + "\n")
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	if body != "" {
		b.WriteString("\n" + body + "\n")
	}
	return b.String()
}

// fence wraps text in a Markdown code fence long enough not to be closed
// by backticks inside it.
func fence(s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + "\n" + strings.TrimRight(s, "\n") + "\n" + f + "\n"
}

// basicAuth is the value of an HTTP Basic Authorization header.
func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(user)+":"+url.QueryEscape(pass)))
}
