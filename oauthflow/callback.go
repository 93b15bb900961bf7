package oauthflow

import (
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"strings"

	"github.com/hookscope/hookscope/internal/har"
)

// Param is one query parameter, in the order it arrived.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CallbackResult is everything the service put on the redirect (section
// 5.3 of the spec): either a code with the account and contact it was
// issued for, or an error; plus the extra parameters of redirect_uri.
type CallbackResult struct {
	// URL is the redirected URL as received or pasted (empty in a flow's
	// State, which keeps only the parameters).
	URL              string `json:"url,omitempty"`
	Code             string `json:"code,omitempty"`
	AccountID        string `json:"account_id,omitempty"`
	AccountURL       string `json:"account_url,omitempty"`
	AccountName      string `json:"account_name,omitempty"`
	ContactID        string `json:"contact_id,omitempty"`
	ContactName      string `json:"contact_name,omitempty"`
	ContactEmail     string `json:"contact_email,omitempty"`
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
	// State is the standard state parameter, when the service returned one.
	State string `json:"state,omitempty"`
	// Extra are the parameters not named above (those carried inside
	// redirect_uri, such as hs_state, and anything unexpected).
	Extra []Param `json:"extra,omitempty"`
	// Params are all parameters in arrival order.
	Params []Param `json:"params"`
	// Notes are observations about the URL (deviations, duplicates).
	Notes []string `json:"notes,omitempty"`
}

// Get returns the first value of a parameter.
func (c CallbackResult) Get(name string) (string, bool) {
	for _, p := range c.Params {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// Denied reports whether the redirect carried an error instead of a code.
func (c CallbackResult) Denied() bool { return c.Error != "" }

// ErrNoCallbackParams means a URL carried neither code nor error.
var ErrNoCallbackParams = errors.New("the URL carries neither code nor error")

// ParseCallbackURL reads a redirected URL the way the callback listener
// reads a request: the full URL from the browser's address bar, or just
// its query ("?code=…&account_id=…"). It never panics on any input.
func ParseCallbackURL(raw string) (*CallbackResult, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errors.New("parse callback URL: empty; copy the full address from the browser's address bar after approving")
	}
	var query, fragment string
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s, fragment = s[:i], s[i+1:]
	}
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("parse callback URL: %w; copy the full address from the browser's address bar", err)
		}
		query = u.RawQuery
	case strings.HasPrefix(s, "?"):
		query = s[1:]
	case strings.Contains(s, "?"):
		query = s[strings.IndexByte(s, '?')+1:]
	default:
		query = s
	}
	res := &CallbackResult{URL: strings.TrimSpace(raw), Params: []Param{}}
	if query == "" && strings.Contains(fragment, "=") {
		query = fragment
		res.Notes = append(res.Notes, "the parameters came after # (a fragment) rather than in the query; the service should use the query")
	}
	seen := map[string]bool{}
	for _, kv := range har.Query(query) {
		p := Param{Name: kv.Name, Value: kv.Value}
		res.Params = append(res.Params, p)
		if seen[p.Name] {
			res.Notes = append(res.Notes, fmt.Sprintf("parameter %q appears more than once; the first value is used", p.Name))
			continue
		}
		seen[p.Name] = true
		if dst := res.field(p.Name); dst != nil {
			*dst = p.Value
		} else {
			res.Extra = append(res.Extra, p)
		}
	}
	if res.Code == "" && res.Error == "" {
		return res, fmt.Errorf("parse callback URL: %w; copy the whole address from the browser's address bar after approving or denying (it contains code=… or error=…)", ErrNoCallbackParams)
	}
	if res.Code != "" && res.Error != "" {
		res.Notes = append(res.Notes, "the redirect carries both code and error; it is treated as an error")
	}
	if res.Code != "" && res.Error == "" {
		for _, f := range []struct{ name, v string }{{"account_id", res.AccountID}, {"account_name", res.AccountName}, {"contact_id", res.ContactID}, {"contact_email", res.ContactEmail}} {
			if f.v == "" {
				res.Notes = append(res.Notes, fmt.Sprintf("%s is missing; the spec sends it with every code", f.name))
			}
		}
	}
	return res, nil
}

func (c *CallbackResult) field(name string) *string {
	switch name {
	case "code":
		return &c.Code
	case "account_id":
		return &c.AccountID
	case "account_url":
		return &c.AccountURL
	case "account_name":
		return &c.AccountName
	case "contact_id":
		return &c.ContactID
	case "contact_name":
		return &c.ContactName
	case "contact_email":
		return &c.ContactEmail
	case "error":
		return &c.Error
	case "error_description":
		return &c.ErrorDescription
	case "state":
		return &c.State
	}
	return nil
}

// DeniedError is the service's refusal, explained.
type DeniedError struct {
	Code        string
	Description string
}

// Error explains the refusal and the likely fix.
func (e *DeniedError) Error() string {
	meaning, fix := OAuthError{Code: e.Code, Description: e.Description}.Explain()
	s := "the service redirected with error=" + e.Code
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s + ": " + meaning + ". " + fix
}

// StateMismatchError means a callback did not carry the state this flow
// put into the authorize URL: it is forged, or belongs to another attempt.
type StateMismatchError struct {
	Param   string
	Missing bool
	// NotStarted: the callback came before any authorize URL was built.
	NotStarted bool
	Expected   string
}

// Error says why the callback was refused.
func (e *StateMismatchError) Error() string { return "callback refused: " + e.Reason() }

// Reason says in one sentence why the callback does not belong to the
// authorization the flow started.
func (e *StateMismatchError) Reason() string {
	if e.NotStarted {
		return "Hookscope has not built an authorize URL yet, so this redirect cannot be one it started (forged, or from an earlier run); its code was not used"
	}
	if e.Missing {
		return fmt.Sprintf("it has no %s parameter, so Hookscope cannot tell it comes from the authorization it started (a forged or stale callback, or the service dropped the parameter); its code was not used", e.Param)
	}
	return fmt.Sprintf("its %s parameter does not match the one Hookscope sent, so it comes from another authorization attempt (an older browser tab) or was forged; its code was not used", e.Param)
}

// Is lets errors.Is(err, ErrStateMismatch) match.
func (e *StateMismatchError) Is(target error) bool { return target == ErrStateMismatch }

// ErrStateMismatch matches every StateMismatchError.
var ErrStateMismatch = errors.New("callback state mismatch")

// pageTmpl is what the browser shows after the redirect.
const pageTmpl = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hookscope: {{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}
h1{font-size:1.4em}.ok{color:#17692e}.bad{color:#a01c1c}p.small{color:#666;font-size:.9em}</style></head>
<body><h1 class="{{.Class}}">{{.Title}}</h1>{{range .Lines}}<p>{{.}}</p>{{end}}
<p class="small">You can close this window and return to Hookscope.</p></body></html>
`

type pageData struct {
	Title, Class string
	Lines        []string
}

func renderPage(d pageData) string {
	t := template.Must(template.New("page").Parse(pageTmpl))
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "Hookscope: " + d.Title
	}
	return b.String()
}
