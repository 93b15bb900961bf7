package oauthflow

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/internal/networds"
	"github.com/hookscope/hookscope/internal/redact"
)

// Placement is where the token call puts the client credentials and
// grant parameters.
type Placement string

// Placements. The spec's is PlacementQuery; the others are for services
// that moved to the usual OAuth forms.
const (
	// PlacementQuery sends every parameter in the URL query with an empty
	// body, as section 4.2 of the spec says.
	PlacementQuery Placement = "query"
	// PlacementBody sends them as an application/x-www-form-urlencoded body.
	PlacementBody Placement = "body"
	// PlacementBasic sends client_id and client_secret as HTTP Basic
	// credentials and the rest in a form body (RFC 6749 2.3.1).
	PlacementBasic Placement = "basic"
)

// ParsePlacement reads a placement name.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(strings.ToLower(strings.TrimSpace(s))); p {
	case PlacementQuery, PlacementBody, PlacementBasic:
		return p, nil
	case "":
		return PlacementQuery, nil
	}
	return "", fmt.Errorf("placement %q: use query, body or basic", s)
}

// DefaultStateParam is the extra redirect_uri parameter that carries the
// flow's anti-forgery value.
const DefaultStateParam = "hs_state"

// Options tune a flow. The zero value follows the spec and protects the
// callback with a state value inside redirect_uri.
type Options struct {
	// HTTPClient sends the token and API calls; nil means a client with a
	// 30 second time-out. Redirects are never followed, so they show.
	HTTPClient *http.Client
	// NoRedirectState turns off the random state carried as an extra
	// query parameter inside redirect_uri (on by default).
	NoRedirectState bool
	// StateParam names that parameter (default hs_state).
	StateParam string
	// StandardState adds the standard OAuth state parameter.
	StandardState bool
	// PKCE adds an S256 code challenge and sends the verifier.
	PKCE bool
	// Placement is where token calls put their parameters.
	Placement Placement
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Recorder persists transcripts, the flow's state and tokens; nil
	// keeps everything in memory.
	Recorder Recorder
	// OnTranscript is called after each step with the raw (unredacted)
	// transcript; a display must redact it (see RenderOptions).
	OnTranscript func(Transcript)
	// OnCallbackRefused is called, on the receiving server's goroutine,
	// for each request to the callback address that was refused (forged,
	// stale, unreadable) while the flow goes on waiting; see
	// CallbackRefusal. A pasted URL that is refused is returned to the
	// caller instead.
	OnCallbackRefused func(CallbackRefusal)
	// UserAgent is sent on token and API calls.
	UserAgent string
}

// State is what a flow must remember between its steps, possibly across
// processes (the CLI's authorize and exchange run separately).
type State struct {
	ID      string    `json:"id"`
	Profile string    `json:"profile"`
	Started time.Time `json:"started"`
	// RedirectURI is redirect_uri exactly as sent in the authorize URL
	// (with the state parameter); the exchange sends the same value.
	RedirectURI string `json:"redirect_uri,omitempty"`
	// AuthorizeURL is the last authorize URL built.
	AuthorizeURL string `json:"authorize_url,omitempty"`
	// RedirectState, StandardState and Verifier are the anti-forgery and
	// PKCE values of the last authorize URL.
	RedirectState string `json:"redirect_state,omitempty"`
	StandardState string `json:"standard_state,omitempty"`
	Verifier      string `json:"verifier,omitempty"`
	// Callback is the accepted callback, if any: its parameters, the code
	// among them (a later exchange, or a forced one, sends it), without the
	// redirected URL.
	Callback *CallbackResult `json:"callback,omitempty"`
	// Codes records every authorization code sent to the token endpoint,
	// keyed by the hex SHA-256 of the code, with what is known about it
	// (a code given with --code is not kept in the state otherwise).
	Codes map[string]CodeUse `json:"codes,omitempty"`
}

// CodeOutcome is what one send of a code to the token endpoint showed.
type CodeOutcome string

// The outcomes of a send. The zero value means the answer is not known:
// awaited, or the send was recorded by an older Hookscope.
const (
	// OutcomeExchanged: the service answered with a token.
	OutcomeExchanged CodeOutcome = "exchanged"
	// OutcomeRefused: the service answered with an error.
	OutcomeRefused CodeOutcome = "refused"
	// OutcomeNoAnswer: no answer arrived (the service may or may not
	// have used the code).
	OutcomeNoAnswer CodeOutcome = "no-answer"
)

// CodeUse is what is known about one code sent to the token endpoint.
type CodeUse struct {
	// SentAt is when it was last sent.
	SentAt time.Time `json:"sent_at"`
	// Outcome is what that send showed.
	Outcome CodeOutcome `json:"outcome,omitempty"`
	// Status, Error and Description are the HTTP status and the OAuth
	// error of a refusal, as the service gave them.
	Status      int    `json:"status,omitempty"`
	Error       string `json:"error,omitempty"`
	Description string `json:"error_description,omitempty"`
}

// Spent reports whether the code is known to be used up: it was exchanged
// for a token (codes are single-use), or the service refused it as a grant
// (invalid_grant). Any other refusal, or no answer, says nothing about the
// code itself.
func (u CodeUse) Spent() bool {
	return u.Outcome == OutcomeExchanged || u.Outcome == OutcomeRefused && u.Error == "invalid_grant"
}

// Known says what is known about the code in one sentence, starting with
// "this code was".
func (u CodeUse) Known() string {
	at := u.SentAt.Format(time.RFC3339)
	switch u.Outcome {
	case OutcomeExchanged:
		return fmt.Sprintf("this code was already sent and exchanged for a token at %s; an authorization code is single-use (RFC 6749 section 4.1.2): a service refuses a second exchange and may revoke the tokens issued for the first", at)
	case OutcomeRefused:
		said := ""
		if u.Description != "" {
			said = " (" + u.Description + ")"
		}
		if u.Error == "" {
			return fmt.Sprintf("this code was sent at %s and refused with HTTP %d without an OAuth error; that answer does not say the code is used up", at, u.Status)
		}
		if u.Spent() {
			return fmt.Sprintf("this code was already sent at %s and the service refused it with invalid_grant%s", at, said)
		}
		return fmt.Sprintf("this code was sent at %s and refused with %s (HTTP %d)%s; that answer does not say the code is used up", at, u.Error, u.Status, said)
	case OutcomeNoAnswer:
		return fmt.Sprintf("this code was sent at %s and no answer arrived; the service may or may not have used it", at)
	}
	return fmt.Sprintf("this code was sent at %s; what the service answered is not known", at)
}

// Recorder is what a flow needs from persistence.
type Recorder interface {
	// SaveTranscript stores t and returns its id.
	SaveTranscript(ctx context.Context, t Transcript) (int64, error)
	// SaveFlowState stores (or replaces) a flow's state.
	SaveFlowState(ctx context.Context, s State) error
	// SaveToken stores the current token of a profile.
	SaveToken(ctx context.Context, profile string, t Token) error
}

// Flow is one walk through the OAuth flow for one profile. Its methods
// are safe for concurrent use; each step can be called on its own.
type Flow struct {
	profile Profile
	opts    Options
	client  *http.Client

	// saveMu makes taking a state snapshot and writing it one step, so an
	// older snapshot never overwrites a newer one.
	saveMu      sync.Mutex
	mu          sync.Mutex
	state       State
	token       *Token
	transcripts []Transcript
	// callbacks receives the callback that settled the flow: one that
	// carries this attempt's state value, with a code or an error.
	callbacks chan callbackOutcome
	settled   bool
	// refused counts the requests to the callback that this attempt
	// refused; lastRefusal says why the last one was.
	refused     int
	lastRefusal error
	// recordErr remembers the first persistence failure; steps go on.
	recordErr error
}

type callbackOutcome struct {
	res *CallbackResult
	err error
}

// New starts a flow for p.
func New(p Profile, o Options) (*Flow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if o.Placement == "" {
		o.Placement = PlacementQuery
	}
	if _, err := ParsePlacement(string(o.Placement)); err != nil {
		return nil, err
	}
	if o.StateParam == "" {
		o.StateParam = DefaultStateParam
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.UserAgent == "" {
		o.UserAgent = "Hookscope"
	}
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{Timeout: 30 * time.Second}
	}
	// A copy, so not following redirects does not change the caller's client.
	client := *base
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	f := &Flow{profile: p, opts: o, client: &client, callbacks: make(chan callbackOutcome, 1)}
	f.state = State{ID: randomToken(8), Profile: p.Name, Started: o.Now().UTC(), Codes: map[string]CodeUse{}}
	return f, nil
}

// Resume continues a flow from saved state (for example the CLI's exchange
// after a separate authorize), with tok as the current token if known.
func Resume(p Profile, s State, tok *Token, o Options) (*Flow, error) {
	f, err := New(p, o)
	if err != nil {
		return nil, err
	}
	if s.ID != "" {
		if s.Codes == nil {
			s.Codes = map[string]CodeUse{}
		}
		f.state = s
	}
	if tok != nil {
		t := *tok
		f.token = &t
	}
	return f, nil
}

// ID identifies the flow in the store.
func (f *Flow) ID() string { return f.state.ID }

// Profile returns the flow's profile.
func (f *Flow) Profile() Profile { return f.profile }

// State returns a copy of the flow's state.
func (f *Flow) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state
	s.Codes = make(map[string]CodeUse, len(f.state.Codes))
	for k, v := range f.state.Codes {
		s.Codes[k] = v
	}
	return s
}

// Token returns the current token, if any.
func (f *Flow) Token() (Token, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token == nil {
		return Token{}, false
	}
	return *f.token, true
}

// SetToken installs a token (for example one loaded from the store).
func (f *Flow) SetToken(t Token) {
	f.mu.Lock()
	f.token = &t
	f.mu.Unlock()
}

// RecordErr returns the first error the Recorder returned, if any: steps
// carry on when persistence fails, and the caller decides how loud to be.
func (f *Flow) RecordErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recordErr
}

// Secrets returns the flow's own secret values (client secret, PKCE
// verifier, the accepted callback's code, codes and tokens it sent, its
// tokens) for redaction by value. Values taken from requests the flow
// received and refused are not among them: anyone can put any word in a
// forged callback.
func (f *Flow) Secrets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []string{f.profile.ClientSecret, f.state.Verifier}
	if f.state.Callback != nil {
		out = append(out, f.state.Callback.Code)
	}
	if f.token != nil {
		out = append(out, f.token.AccessToken, f.token.RefreshToken)
	}
	for _, t := range f.transcripts {
		if t.Inbound {
			continue
		}
		out = append(out, sentSecrets(t.Request)...)
	}
	return out
}

// sentSecrets returns the values of the secret parameters a request sent,
// in its URL query or its form body.
func sentSecrets(r Request) []string {
	var qs []string
	if u, err := url.Parse(r.URL); err == nil {
		qs = append(qs, u.RawQuery)
	}
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		qs = append(qs, r.Body)
	}
	var out []string
	for _, q := range qs {
		vs, _ := url.ParseQuery(q)
		for name, v := range vs {
			if redact.IsSecretName(name) {
				out = append(out, v...)
			}
		}
	}
	return out
}

// Transcripts returns the flow's transcripts in order, redacted unless
// reveal.
func (f *Flow) Transcripts(reveal bool) []Transcript {
	secrets := f.Secrets()
	f.mu.Lock()
	out := append([]Transcript(nil), f.transcripts...)
	f.mu.Unlock()
	if !reveal {
		return RedactAll(out, secrets...)
	}
	return out
}

// RenderOptions returns options for Curl, Markdown and HAR that redact
// this flow's secrets unless reveal.
func (f *Flow) RenderOptions(reveal bool) RenderOptions {
	return RenderOptions{Reveal: reveal, Secrets: f.Secrets()}
}

// record appends a transcript, persists it and tells the listener.
func (f *Flow) record(ctx context.Context, t Transcript) Transcript {
	t.FlowID = f.state.ID
	t.Profile = f.profile.Name
	if rec := f.opts.Recorder; rec != nil {
		id, err := rec.SaveTranscript(context.WithoutCancel(ctx), t)
		if err != nil {
			f.noteRecordErr(fmt.Errorf("save %s transcript: %w", t.Step, err))
		} else {
			t.ID = id
		}
	}
	f.mu.Lock()
	f.transcripts = append(f.transcripts, t)
	f.mu.Unlock()
	if f.opts.OnTranscript != nil {
		f.opts.OnTranscript(t)
	}
	return t
}

func (f *Flow) noteRecordErr(err error) {
	f.mu.Lock()
	if f.recordErr == nil {
		f.recordErr = err
	}
	f.mu.Unlock()
}

func (f *Flow) saveState(ctx context.Context) {
	if f.opts.Recorder == nil {
		return
	}
	f.saveMu.Lock()
	defer f.saveMu.Unlock()
	if err := f.opts.Recorder.SaveFlowState(context.WithoutCancel(ctx), f.State()); err != nil {
		f.noteRecordErr(fmt.Errorf("save flow state: %w", err))
	}
}

func (f *Flow) saveToken(ctx context.Context, t Token) {
	if f.opts.Recorder == nil {
		return
	}
	if err := f.opts.Recorder.SaveToken(context.WithoutCancel(ctx), f.profile.Name, t); err != nil {
		f.noteRecordErr(fmt.Errorf("save token: %w", err))
	}
}

// randomToken returns n random bytes, base64url without padding.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

func codeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// AuthorizeURL builds a fresh authorize URL (step 1): new state values and
// PKCE verifier each time, so an older browser tab's callback is refused.
func (f *Flow) AuthorizeURL(ctx context.Context) (string, error) {
	redirect := f.profile.RedirectURI
	f.mu.Lock()
	f.state.RedirectState, f.state.StandardState, f.state.Verifier = "", "", ""
	if !f.opts.NoRedirectState {
		f.state.RedirectState = randomToken(16)
		u, err := url.Parse(redirect)
		if err != nil {
			f.mu.Unlock()
			return "", fmt.Errorf("authorize: redirect URI: %w", err)
		}
		// Appended to the raw query so the registered part stays byte-exact.
		extra := url.QueryEscape(f.opts.StateParam) + "=" + url.QueryEscape(f.state.RedirectState)
		if u.RawQuery == "" {
			redirect = strings.TrimSuffix(redirect, "?") + "?" + extra
		} else {
			redirect += "&" + extra
		}
	}
	q := url.Values{}
	q.Set("client_id", f.profile.ClientID)
	q.Set("redirect_uri", redirect)
	q.Set("response_type", "code")
	if f.opts.StandardState {
		f.state.StandardState = randomToken(16)
		q.Set("state", f.state.StandardState)
	}
	if f.opts.PKCE {
		f.state.Verifier = randomToken(32)
		sum := sha256.Sum256([]byte(f.state.Verifier))
		q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
		q.Set("code_challenge_method", "S256")
	}
	// client_id, redirect_uri, response_type first, as the spec lists them.
	enc := "client_id=" + url.QueryEscape(f.profile.ClientID) + "&redirect_uri=" + url.QueryEscape(redirect) + "&response_type=code"
	for _, k := range []string{"state", "code_challenge", "code_challenge_method"} {
		if v := q.Get(k); v != "" {
			enc += "&" + k + "=" + url.QueryEscape(v)
		}
	}
	full := f.profile.authBase() + "/oauth/authorize?" + enc
	f.state.RedirectURI = redirect
	f.state.AuthorizeURL = full
	f.state.Callback = nil
	f.settled, f.refused, f.lastRefusal = false, 0, nil
	// Drain an unread outcome of an earlier attempt.
	select {
	case <-f.callbacks:
	default:
	}
	f.mu.Unlock()
	t := Transcript{Step: StepAuthorize, Time: f.opts.Now().UTC(), Request: Request{Method: http.MethodGet, URL: full}}
	t.Notes = append(t.Notes, "open this URL in the browser; the service redirects to "+f.profile.RedirectURI+" with code and account parameters (or error)")
	if !f.opts.NoRedirectState {
		t.Notes = append(t.Notes, fmt.Sprintf("redirect_uri carries the extra parameter %s (a random value) which the service passes back; a callback without it is refused as forged", f.opts.StateParam))
	}
	f.record(ctx, t)
	f.saveState(ctx)
	return full, nil
}

// RedirectURISent returns redirect_uri as the authorize URL sent it (the
// profile's when no authorize URL was built).
func (f *Flow) RedirectURISent() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state.RedirectURI != "" {
		return f.state.RedirectURI
	}
	return f.profile.RedirectURI
}

// StepError is a failed step, in plain words.
type StepError struct {
	Step Step
	// Msg says what happened; Fix what to do about it.
	Msg string
	Fix string
	// Status is the HTTP status, when a response arrived.
	Status int
	// OAuth is the service's error body, when it sent one.
	OAuth *OAuthError
	// Err is the underlying cause (a sentinel such as ErrCodeSpent, or a
	// transport error).
	Err error
}

// Error is the message with the fix.
func (e *StepError) Error() string {
	s := string(e.Step) + ": " + e.Msg
	if e.Fix != "" {
		s += ". Fix: " + e.Fix
	}
	return s
}

// Unwrap exposes the cause.
func (e *StepError) Unwrap() error { return e.Err }

// Sentinel causes of StepErrors.
var (
	// ErrCodeSpent: the code is known to be used up (CodeUse.Spent); a
	// second send is refused until forced.
	ErrCodeSpent = errors.New("authorization code already used up")
	// ErrNoCode: there is no code to exchange.
	ErrNoCode = errors.New("no authorization code")
	// ErrNoToken: there is no token to refresh or call with.
	ErrNoToken = errors.New("no token")
	// ErrRefused: the service answered with an error.
	ErrRefused = errors.New("refused by the service")
	// ErrTransport: no answer arrived.
	ErrTransport = errors.New("no answer from the service")
)

// send performs one HTTP exchange and records it in full.
func (f *Flow) send(ctx context.Context, step Step, label, method, rawURL string, header http.Header, body string) (Transcript, error) {
	t := Transcript{Step: step, Label: label, Time: f.opts.Now().UTC(), Request: Request{Method: method, URL: rawURL, Header: header.Clone(), Body: body}}
	var rd io.Reader
	if body != "" || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		rd = strings.NewReader(body)
	}
	ctx, stage := networds.Traced(ctx)
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		t.Error = fmt.Sprintf("cannot build the request: %v", err)
		t.Fix = "check the base URL and path"
		return t, &StepError{Step: step, Msg: t.Error, Fix: t.Fix, Err: err}
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", f.opts.UserAgent)
	}
	// Identity, so the raw body recorded is the one on the wire.
	req.Header.Set("Accept-Encoding", "identity")
	t.Request.Header = req.Header.Clone()
	t.Request.Header.Set("Host", req.URL.Host)
	if rd != nil {
		t.Request.Header.Set("Content-Length", fmt.Sprint(len(body)))
	}
	start := time.Now()
	resp, err := f.client.Do(req)
	if err != nil {
		// *url.Error quotes the whole URL, secrets in the query included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		w := networds.Explain(&networds.Error{Stage: stage(), Budget: f.client.Timeout, Err: err}, req.URL.Host)
		t.Error, t.Fix = w.What, w.Fix
		return t, &StepError{Step: step, Msg: t.Error, Fix: t.Fix, Err: fmt.Errorf("%w: %w", ErrTransport, err)}
	}
	defer resp.Body.Close()
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxRecordedBody+1))
	dur := time.Since(start)
	r := &Response{Status: resp.StatusCode, StatusText: strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode))), Proto: resp.Proto, Header: resp.Header.Clone(), Duration: dur}
	if len(raw) > maxRecordedBody {
		raw = raw[:maxRecordedBody]
		r.Truncated = true
	}
	r.Body = string(raw)
	t.Response = r
	if rerr != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("the response body broke off after %d bytes: %v", len(raw), rerr))
	}
	for k, vs := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-") && strings.HasSuffix(strings.ToLower(k), "-note") {
			for _, v := range vs {
				t.Notes = append(t.Notes, "the service notes: "+v)
			}
		}
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 {
		t.Notes = append(t.Notes, "the service redirected to "+loc+" (not followed); check the base URL, e.g. http vs https or a missing path prefix")
	}
	return t, nil
}
