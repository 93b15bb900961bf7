package oauthflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/internal/testport"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/sandbox"
)

// testEnv is a sandbox on httptest with one app whose redirect URI is a
// free loopback port, and the matching profile.
type testEnv struct {
	sb      *sandbox.Server
	base    string
	app     sandbox.App
	profile oauthflow.Profile
}

func newEnv(t testing.TB, redirectURI string, mutate func(*sandbox.Config)) *testEnv {
	t.Helper()
	if redirectURI == "" {
		redirectURI = "http://127.0.0.1:" + strconv.Itoa(testport.Free(t)) + "/callback"
	}
	app := sandbox.DefaultApp()
	app.RedirectURI = redirectURI
	cfg := sandbox.Config{Apps: []sandbox.App{app}, Logf: func(string, ...any) {}}
	if mutate != nil {
		mutate(&cfg)
	}
	sb, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(func() { srv.Close(); sb.Close() })
	return &testEnv{sb: sb, base: srv.URL, app: app, profile: oauthflow.Profile{
		Name: "test", BaseURL: srv.URL, AuthURL: srv.URL, ClientID: app.ClientID, ClientSecret: app.ClientSecret,
		RedirectURI: redirectURI, Scopes: []string{"all:all"},
	}}
}

// memRecorder keeps what a flow persists.
type memRecorder struct {
	mu          sync.Mutex
	transcripts []oauthflow.Transcript
	states      []oauthflow.State
	tokens      map[string]oauthflow.Token
}

func (m *memRecorder) SaveTranscript(_ context.Context, t oauthflow.Transcript) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.transcripts = append(m.transcripts, t)
	return int64(len(m.transcripts)), nil
}

func (m *memRecorder) SaveFlowState(_ context.Context, s oauthflow.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states = append(m.states, s)
	return nil
}

func (m *memRecorder) SaveToken(_ context.Context, profile string, t oauthflow.Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]oauthflow.Token{}
	}
	m.tokens[profile] = t
	return nil
}

// browse plays the user: walk the sandbox's pages, then follow the final
// redirect to the callback (as a browser would) and return its status.
func browse(ctx context.Context, t *testing.T, b *sandbox.Browser, authorizeURL string) (int, error) {
	loc, err := b.Authorize(ctx, authorizeURL)
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// playBrowser returns an Opener that browses in the background and
// reports the outcome on the returned channel.
func playBrowser(t *testing.T, b *sandbox.Browser) (oauthflow.Opener, <-chan error) {
	done := make(chan error, 1)
	return func(ctx context.Context, u string) error {
		go func() {
			_, err := browse(ctx, t, b, u)
			done <- err
		}()
		return nil
	}, done
}

func login(t *testing.T, e *testEnv, o oauthflow.Options, b *sandbox.Browser) (*oauthflow.Flow, *oauthflow.CallbackResult, *oauthflow.Token) {
	t.Helper()
	f, err := oauthflow.New(e.profile, o)
	if err != nil {
		t.Fatal(err)
	}
	open, done := playBrowser(t, b)
	res, tok := runLogin(t, f, open, done)
	return f, res, tok
}

// runLogin runs f.Login with open as the browser, which reports on done.
func runLogin(t *testing.T, f *oauthflow.Flow, open oauthflow.Opener, done <-chan error) (*oauthflow.CallbackResult, *oauthflow.Token) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, tok, err := f.Login(ctx, oauthflow.LoginOptions{Open: open, Timeout: 15 * time.Second})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("browser: %v", err)
	}
	return res, tok
}

func owner() *sandbox.Browser {
	b := sandbox.NewBrowser("owner@example.com", "owner")
	b.AccountID = "741302"
	return b
}

func TestLoginSuccess(t *testing.T) {
	e := newEnv(t, "", nil)
	rec := &memRecorder{}
	f, res, tok := login(t, e, oauthflow.Options{Recorder: rec}, owner())
	if res.Code == "" || res.AccountID != "741302" || res.AccountName != "Acme Studio" || res.AccountURL == "" ||
		res.ContactID != "5001" || res.ContactName != "Olivia Owner" || res.ContactEmail != "owner@example.com" {
		t.Fatalf("callback = %+v", res)
	}
	if v, ok := res.Get(oauthflow.DefaultStateParam); !ok || v == "" {
		t.Fatalf("the service did not pass hs_state back: %+v", res.Params)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "bearer" || tok.ExpiresIn <= 0 ||
		len(tok.Scope) != 1 || tok.Scope[0] != "all:all" || tok.ExpiresAt.Sub(tok.ObtainedAt) != time.Duration(tok.ExpiresIn)*time.Second {
		t.Fatalf("token = %+v", tok)
	}
	if left := tok.TimeLeft(time.Now()); left <= 0 {
		t.Fatalf("time left %v", left)
	}
	ts := f.Transcripts(true)
	var steps []string
	for _, tr := range ts {
		steps = append(steps, string(tr.Step))
	}
	if got := strings.Join(steps, ","); got != "authorize,callback,exchange" {
		t.Fatalf("steps = %s", got)
	}
	ex := ts[2]
	if ex.Request.Method != "POST" || ex.Request.Body != "" || !strings.Contains(ex.Request.URL, "/oauth/token?client_id=") ||
		!strings.Contains(ex.Request.URL, "grant_type=authorization_code") || ex.Response.Status != 200 || ex.Response.Duration <= 0 {
		t.Fatalf("exchange transcript = %+v", ex)
	}
	if len(ex.Notes) == 0 {
		t.Fatalf("exchange has no token summary note")
	}
	for _, n := range ex.Notes {
		if strings.Contains(n, "deviation") {
			t.Errorf("sandbox answer reported as deviating: %s", n)
		}
	}
	cb := ts[1]
	if !cb.Inbound || cb.Response == nil || !strings.Contains(cb.Response.Body, "Authorization received") || !strings.Contains(cb.Response.Body, "close this window") {
		t.Fatalf("callback transcript = %+v", cb)
	}
	if len(rec.transcripts) != 3 || rec.tokens["test"].AccessToken != tok.AccessToken || len(rec.states) == 0 {
		t.Fatalf("recorder: %d transcripts, token %v, %d states", len(rec.transcripts), rec.tokens, len(rec.states))
	}
	last := rec.states[len(rec.states)-1]
	if last.Callback == nil || len(last.Codes) != 1 {
		t.Fatalf("saved state = %+v", last)
	}
	for _, u := range last.Codes {
		if u.Outcome != oauthflow.OutcomeExchanged || !u.Spent() {
			t.Fatalf("saved code use = %+v", u)
		}
	}
	// Issue 18: the state keeps the callback's parameters (a later
	// exchange needs the code), never the redirected URL.
	for i, st := range rec.states {
		js, _ := json.Marshal(st)
		if st.Callback != nil && st.Callback.URL != "" || strings.Contains(string(js), res.URL) || strings.Contains(string(js), `"url"`) {
			t.Fatalf("saved state %d keeps the callback URL: %s", i, js)
		}
	}
	if last.Callback.Code != res.Code || len(last.Callback.Params) != len(res.Params) {
		t.Fatalf("saved callback lost its parameters: %+v", last.Callback)
	}
	if err := f.RecordErr(); err != nil {
		t.Fatal(err)
	}
}

func TestLoginWithPKCEAndStandardState(t *testing.T) {
	e := newEnv(t, "", nil)
	f, res, tok := login(t, e, oauthflow.Options{PKCE: true, StandardState: true}, owner())
	if res.State == "" || tok.AccessToken == "" {
		t.Fatalf("state %q token %+v", res.State, tok)
	}
	ts := f.Transcripts(true)
	if !strings.Contains(ts[0].Request.URL, "code_challenge_method=S256") || !strings.Contains(ts[2].Request.URL, "code_verifier=") {
		t.Fatalf("PKCE not sent: %s / %s", ts[0].Request.URL, ts[2].Request.URL)
	}
}

func startAuth(t *testing.T, e *testEnv, o oauthflow.Options) (*oauthflow.Flow, string) {
	t.Helper()
	f, err := oauthflow.New(e.profile, o)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := f.ListenCallback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	u, err := f.AuthorizeURL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f, u
}

func TestDenialAndViewer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		browser *sandbox.Browser
		want    string
		// says and never are in the explanation: the cause that happened,
		// not every possible one (issue 18).
		says, never []string
	}{
		{"owner denies", func() *sandbox.Browser { b := owner(); b.Deny = true; return b }(), "denied",
			[]string{"the user denied", "authorize again and approve"}, []string{"managers", "owners", "enabled"}},
		{"viewer refused", sandbox.NewBrowser("viewer@example.com", "viewer"), "Only account managers and owners",
			[]string{"only account managers and owners can", "log in as a manager or owner"}, []string{"enabled", "denied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "", nil)
			f, u := startAuth(t, e, oauthflow.Options{})
			status, err := browse(context.Background(), t, tc.browser, u)
			if err != nil {
				t.Fatal(err)
			}
			// A denial is a well-formed callback: answered 200 with the
			// explanation.
			if status != http.StatusOK {
				t.Errorf("callback page status %d", status)
			}
			res, err := f.AwaitCallback(context.Background(), 5*time.Second)
			var de *oauthflow.DeniedError
			if !errors.As(err, &de) || de.Code != "access_denied" || !strings.Contains(de.Description, tc.want) {
				t.Fatalf("AwaitCallback = %+v, %v", res, err)
			}
			// What Hookscope adds after the service's own description.
			msg := err.Error()
			own := strings.ToLower(strings.NewReplacer(de.Description, "", "error="+de.Code, "").Replace(msg))
			for _, w := range tc.says {
				if !strings.Contains(own, w) {
					t.Errorf("explanation lacks %q: %s", w, msg)
				}
			}
			for _, w := range tc.never {
				if strings.Contains(own, w) {
					t.Errorf("explanation mentions %q, which did not happen: %s", w, msg)
				}
			}
			if _, err := f.Exchange(context.Background(), "", false); !errors.Is(err, oauthflow.ErrNoCode) {
				t.Errorf("exchange after denial: %v", err)
			}
		})
	}
}

func TestRedirectMismatch(t *testing.T) {
	e := newEnv(t, "", nil)
	p := e.profile
	p.RedirectURI = strings.Replace(p.RedirectURI, "127.0.0.1", "localhost", 1)
	var found bool
	for _, w := range oauthflow.Preflight(p) {
		if w.Code == "exact-match" && strings.Contains(w.Message, "exactly") {
			found = true
		}
	}
	if !found {
		t.Fatalf("pre-flight does not explain exact matching: %+v", oauthflow.Preflight(p))
	}
	f, err := oauthflow.New(p, oauthflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := f.AuthorizeURL(context.Background())
	_, err = owner().Authorize(context.Background(), u)
	var pe *sandbox.PageError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "exactly") {
		t.Fatalf("mismatched redirect_uri: %v", err)
	}
}

func TestCodeReuseWarnsThenServiceRefuses(t *testing.T) {
	e := newEnv(t, "", nil)
	f, res, _ := login(t, e, oauthflow.Options{}, owner())
	before := len(f.Transcripts(true))
	_, err := f.Exchange(context.Background(), "", false)
	if !errors.Is(err, oauthflow.ErrCodeSpent) || !strings.Contains(err.Error(), "single-use") {
		t.Fatalf("second exchange: %v", err)
	}
	if n := len(f.Transcripts(true)); n != before {
		t.Fatalf("the warning sent a request: %d transcripts, was %d", n, before)
	}
	_, err = f.Exchange(context.Background(), res.Code, true)
	var se *oauthflow.StepError
	if !errors.As(err, &se) || se.OAuth == nil || se.OAuth.Code != "invalid_grant" || se.Status != 400 {
		t.Fatalf("forced exchange: %v", err)
	}
	if strings.Contains(err.Error(), res.Code) {
		t.Fatalf("error message leaks the code: %s", err)
	}
}

func TestWrongSecret(t *testing.T) {
	e := newEnv(t, "", nil)
	e.profile.ClientSecret = "not-the-secret"
	f, u := startAuth(t, e, oauthflow.Options{})
	if _, err := browse(context.Background(), t, owner(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AwaitCallback(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := f.Exchange(context.Background(), "", false)
	var se *oauthflow.StepError
	if !errors.As(err, &se) || se.Status != 401 || se.OAuth == nil || se.OAuth.Code != "invalid_client" || !strings.Contains(se.Fix, "copy the client secret again") {
		t.Fatalf("wrong secret: %v", err)
	}
	if strings.Contains(err.Error(), "not-the-secret") {
		t.Fatal("error message leaks the secret")
	}
	ts := f.Transcripts(false)
	last := ts[len(ts)-1]
	if last.OK() || !strings.Contains(last.Error, "invalid_client") {
		t.Fatalf("transcript error = %q", last.Error)
	}
}

func TestRefreshKeepsRefreshToken(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _, tok := login(t, e, oauthflow.Options{}, owner())
	r, err := f.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.RefreshTokenChanged || r.Token.RefreshToken != tok.RefreshToken || r.Token.AccessToken == tok.AccessToken || !strings.Contains(r.Note, "stayed the same") {
		t.Fatalf("refresh = %+v", r)
	}
	cur, _ := f.Token()
	if cur.AccessToken != r.Token.AccessToken {
		t.Fatal("flow did not adopt the refreshed token")
	}
}

func TestCallEachTokenMethod(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _, _ := login(t, e, oauthflow.Options{}, owner())
	id := e.sb.Medias()[0].HashedID
	all, _ := oauthflow.ParseTokenMethods("all")
	results, err := f.Call(context.Background(), oauthflow.CallRequest{Path: oauthflow.DefaultCallPath(id), Methods: all})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		if !r.OK || r.Status != 200 || !strings.Contains(r.Transcript.Response.Body, id) {
			t.Errorf("%s: %d %s", r.Method, r.Status, r.Transcript.Error)
		}
	}
	if !strings.Contains(results[0].Transcript.Request.URL, "access_token=") || !strings.Contains(results[1].Transcript.Request.URL, "bearer_token=") ||
		!strings.HasPrefix(results[2].Transcript.Request.Header.Get("Authorization"), "Bearer ") {
		t.Fatal("token not placed as asked")
	}
	// PUT with a JSON body (a write; the app has all:all).
	results, err = f.Call(context.Background(), oauthflow.CallRequest{Method: "put", Path: oauthflow.DefaultCallPath(id),
		Body: `{"name":"Renamed by Hookscope"}`, ContentType: "application/json"})
	if err != nil || !results[0].OK || results[0].Transcript.Request.Method != "PUT" || !strings.Contains(results[0].Transcript.Response.Body, "Renamed by Hookscope") {
		t.Fatalf("PUT: %+v %v", results, err)
	}
	// A token that is not valid is explained.
	f.SetToken(oauthflow.Token{AccessToken: "bogus-token"})
	results, err = f.Call(context.Background(), oauthflow.CallRequest{Path: oauthflow.DefaultCallPath(id)})
	if !errors.Is(err, oauthflow.ErrRefused) || results[0].Status != 401 || !strings.Contains(results[0].Transcript.Error, "401") {
		t.Fatalf("bogus token: %+v, %v", results, err)
	}
}

func TestUploadAPIRefusesHeader(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _, _ := login(t, e, oauthflow.Options{}, owner())
	all, _ := oauthflow.ParseTokenMethods("all")
	results, err := f.Call(context.Background(), oauthflow.CallRequest{Method: "POST", Path: "/upload?name=clip", Body: "not really a video", ContentType: "video/mp4", Methods: all})
	if !errors.Is(err, oauthflow.ErrRefused) || len(results.Failed()) != 1 {
		t.Fatalf("the header call is the one failure: %v", err)
	}
	for _, r := range results {
		switch r.Method {
		case oauthflow.MethodHeader:
			if r.Status != 401 || !strings.Contains(r.Transcript.Fix, "access_token or bearer_token query") {
				t.Errorf("header on the Upload API: %d %q", r.Status, r.Transcript.Fix)
			}
		default:
			if !r.OK {
				t.Errorf("%s on the Upload API: %d %s %s", r.Method, r.Status, r.Transcript.Error, r.Transcript.Response.Body)
			}
		}
	}
}

func TestForgedCallbackRefused(t *testing.T) {
	e := newEnv(t, "", nil)
	var mu sync.Mutex
	var refusals []oauthflow.CallbackRefusal
	rec := &memRecorder{}
	f, u := startAuth(t, e, oauthflow.Options{Recorder: rec, OnCallbackRefused: func(r oauthflow.CallbackRefusal) {
		mu.Lock()
		refusals = append(refusals, r)
		mu.Unlock()
	}})
	forged := e.profile.RedirectURI + "?hs_state=guessed&code=attacker-code&account_id=1"
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, page := get(forged)
	if status != http.StatusForbidden || !strings.Contains(page, "does not match") || !strings.Contains(page, "goes on waiting") {
		t.Errorf("forged callback answered %d:\n%s", status, page)
	}
	// It is shown, and the wait goes on.
	_, err := f.AwaitCallback(context.Background(), 50*time.Millisecond)
	if !errors.Is(err, oauthflow.ErrCallbackTimeout) || !strings.Contains(err.Error(), "1 request was refused to it meanwhile") || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("after a forged callback: %v", err)
	}
	mu.Lock()
	if len(refusals) != 1 || refusals[0].Status != http.StatusForbidden || !errors.Is(refusals[0].Err, oauthflow.ErrStateMismatch) ||
		refusals[0].Transcript.ID == 0 || !strings.Contains(refusals[0].Transcript.Request.URL, "attacker-code") || refusals[0].Transcript.Error == "" {
		t.Fatalf("refusals %+v", refusals)
	}
	mu.Unlock()
	if n, last := f.Refused(); n != 1 || !errors.Is(last, oauthflow.ErrStateMismatch) {
		t.Fatalf("Refused() = %d, %v", n, last)
	}
	if _, err := f.Exchange(context.Background(), "", false); !errors.Is(err, oauthflow.ErrNoCode) {
		t.Fatalf("the forged code was kept: %v", err)
	}
	// The real callback still arrives and settles the flow.
	if status, err := browse(context.Background(), t, owner(), u); err != nil || status != http.StatusOK {
		t.Fatalf("the real callback after a forged one: %d %v", status, err)
	}
	res, err := f.AwaitCallback(context.Background(), 5*time.Second)
	if err != nil || res.Code == "" || res.Code == "attacker-code" {
		t.Fatalf("real callback: %+v %v", res, err)
	}
	// After it, a request changes nothing and is not recorded.
	before := len(rec.transcripts)
	if status, _ := get(forged); status != http.StatusConflict {
		t.Errorf("a callback after the real one answered %d", status)
	}
	if len(rec.transcripts) != before {
		t.Error("a request after the flow settled was recorded")
	}
	// Before any authorize URL exists.
	f2, _ := oauthflow.New(e.profile, oauthflow.Options{})
	if _, err := f2.AcceptCallbackURL(context.Background(), e.profile.RedirectURI+"?code=x&hs_state="); !errors.Is(err, oauthflow.ErrStateMismatch) || !strings.Contains(err.Error(), "not built an authorize URL") {
		t.Fatalf("callback before authorize: %v", err)
	}
	// Without hs_state at all.
	if _, err := f2.AuthorizeURL(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.AcceptCallbackURL(context.Background(), e.profile.RedirectURI+"?code=x"); !errors.Is(err, oauthflow.ErrStateMismatch) {
		t.Fatalf("callback without hs_state: %v", err)
	}
}

// A flood of forged requests is answered, but only the first few are
// recorded and reported one by one.
func TestRefusedCallbacksAreBounded(t *testing.T) {
	e := newEnv(t, "", nil)
	rec := &memRecorder{}
	var reports []oauthflow.CallbackRefusal
	var mu sync.Mutex
	f, _ := startAuth(t, e, oauthflow.Options{Recorder: rec, OnCallbackRefused: func(r oauthflow.CallbackRefusal) {
		mu.Lock()
		reports = append(reports, r)
		mu.Unlock()
	}})
	for i := 0; i < 25; i++ {
		resp, err := http.Get(e.profile.RedirectURI + "?code=x" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("request %d answered %d", i, resp.StatusCode)
		}
	}
	if n, _ := f.Refused(); n != 25 {
		t.Fatalf("counted %d", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 10 || !reports[9].Last || reports[8].Last || reports[9].Count != 10 {
		t.Fatalf("%d reports, last %+v", len(reports), reports[len(reports)-1])
	}
	if len(rec.transcripts) != 11 { // the authorize step and 10 refusals
		t.Fatalf("%d transcripts recorded", len(rec.transcripts))
	}
}

func TestBusyCallbackPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := newEnv(t, "http://127.0.0.1:"+strconv.Itoa(port)+"/callback", nil)
	var blocking *oauthflow.Warning
	for _, w := range oauthflow.Preflight(e.profile) {
		if w.Code == "port-busy" {
			w := w
			blocking = &w
		}
	}
	if blocking == nil || !blocking.Blocking || !strings.Contains(blocking.Message, strconv.Itoa(port)) {
		t.Fatalf("pre-flight: %+v", oauthflow.Preflight(e.profile))
	}
	f, _ := oauthflow.New(e.profile, oauthflow.Options{})
	_, err = f.ListenCallback()
	var pb *oauthflow.PortBusyError
	if !errors.As(err, &pb) || pb.Port != port {
		t.Fatalf("ListenCallback on a busy port: %v", err)
	}
	msg := err.Error()
	if strings.Contains(strings.ToLower(msg), "state") || !strings.Contains(msg, "already in use") || !strings.Contains(msg, "free port") {
		t.Fatalf("busy port message: %s", msg)
	}
	_, _, err = f.Login(context.Background(), oauthflow.LoginOptions{})
	if !errors.As(err, &pb) {
		t.Fatalf("Login on a busy port: %v", err)
	}
}

func TestPlacementBodyAndBasic(t *testing.T) {
	for _, pl := range []oauthflow.Placement{oauthflow.PlacementBody, oauthflow.PlacementBasic} {
		t.Run(string(pl), func(t *testing.T) {
			e := newEnv(t, "", nil)
			f, _, tok := login(t, e, oauthflow.Options{Placement: pl}, owner())
			if tok.AccessToken == "" {
				t.Fatal("no token")
			}
			ts := f.Transcripts(true)
			ex := ts[len(ts)-1]
			if strings.Contains(ex.Request.URL, "?") || !strings.Contains(ex.Request.Body, "grant_type=authorization_code") ||
				ex.Request.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
				t.Fatalf("request = %+v", ex.Request)
			}
			basic := strings.HasPrefix(ex.Request.Header.Get("Authorization"), "Basic ")
			if basic != (pl == oauthflow.PlacementBasic) || strings.Contains(ex.Request.Body, "client_secret") == basic {
				t.Fatalf("credentials placement wrong: %+v", ex.Request)
			}
			var noted bool
			for _, n := range ex.Notes {
				noted = noted || strings.Contains(n, "outside the URL query")
			}
			if !noted {
				t.Errorf("the sandbox's note about placement is not shown: %v", ex.Notes)
			}
		})
	}
	// In strict mode the sandbox refuses, and the fix points at the query.
	e := newEnv(t, "", func(c *sandbox.Config) { c.Strict = true })
	f, u := startAuth(t, e, oauthflow.Options{Placement: oauthflow.PlacementBody})
	if _, err := browse(context.Background(), t, owner(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AwaitCallback(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := f.Exchange(context.Background(), "", false)
	if err == nil || !strings.Contains(err.Error(), "placement query") {
		t.Fatalf("strict sandbox with body placement: %v", err)
	}
}

func TestPastedCallbackForRemoteRedirect(t *testing.T) {
	e := newEnv(t, "https://tunnel.example.com/oauth/callback", nil)
	f, err := oauthflow.New(e.profile, oauthflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ListenCallback(); !errors.Is(err, oauthflow.ErrNotLocal) {
		t.Fatalf("ListenCallback for a remote URI: %v", err)
	}
	u, _ := f.AuthorizeURL(context.Background())
	loc, err := owner().Authorize(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.AcceptCallbackURL(context.Background(), "  "+loc.String()+"\n")
	if err != nil || res.AccountID != "741302" {
		t.Fatalf("pasted: %+v, %v", res, err)
	}
	if _, err := f.Exchange(context.Background(), "", false); err != nil {
		t.Fatal(err)
	}
}

func TestHandleCallbackFromAnotherServer(t *testing.T) {
	// The webhook receiver serves /oauth/callback on its tunnel URL and
	// hands the request to the waiting flow.
	var f *oauthflow.Flow
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.HandleCallback(w, r) }))
	defer recv.Close()
	e := newEnv(t, recv.URL+"/oauth/callback", nil)
	var err error
	f, err = oauthflow.New(e.profile, oauthflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := f.AuthorizeURL(context.Background())
	if status, err := browse(context.Background(), t, owner(), u); err != nil || status != 200 {
		t.Fatalf("browse: %d %v", status, err)
	}
	res, err := f.AwaitCallback(context.Background(), 5*time.Second)
	if err != nil || res.Code == "" {
		t.Fatalf("AwaitCallback: %+v %v", res, err)
	}
}

func TestCallbackTimeout(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _ := startAuth(t, e, oauthflow.Options{})
	_, err := f.AwaitCallback(context.Background(), 20*time.Millisecond)
	if !errors.Is(err, oauthflow.ErrCallbackTimeout) || !strings.Contains(err.Error(), "no callback arrived") {
		t.Fatalf("timeout: %v", err)
	}
}

func TestAutoRefresh(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _, tok := login(t, e, oauthflow.Options{}, owner())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan *oauthflow.RefreshResult, 1)
	go f.AutoRefresh(ctx, 2*time.Duration(tok.ExpiresIn)*time.Second, func(r *oauthflow.RefreshResult, err error) {
		if err != nil {
			t.Errorf("auto-refresh: %v", err)
		}
		select {
		case got <- r:
		default:
		}
		cancel()
	})
	select {
	case r := <-got:
		if r == nil || r.Token.AccessToken == tok.AccessToken {
			t.Fatalf("auto-refresh result %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no auto-refresh")
	}
}

func TestRedactionEverywhere(t *testing.T) {
	e := newEnv(t, "", nil)
	f, res, _ := login(t, e, oauthflow.Options{PKCE: true}, owner())
	if _, err := f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	all, _ := oauthflow.ParseTokenMethods("all")
	if _, err := f.Call(context.Background(), oauthflow.CallRequest{Path: oauthflow.DefaultCallPath(e.sb.Medias()[0].HashedID), Methods: all}); err != nil {
		t.Fatal(err)
	}
	_, _ = f.Exchange(context.Background(), "", true) // a failed, forced exchange too
	tok, _ := f.Token()
	var oldAccess string
	for _, tr := range f.Transcripts(true) {
		if tr.Step == oauthflow.StepExchange && tr.Response != nil && tr.Response.Status == 200 {
			var body struct {
				AccessToken string `json:"access_token"`
			}
			_ = json.Unmarshal([]byte(tr.Response.Body), &body)
			oldAccess = body.AccessToken
		}
	}
	secrets := map[string]string{"client secret": e.app.ClientSecret, "code": res.Code, "access token": tok.AccessToken,
		"first access token": oldAccess, "refresh token": tok.RefreshToken, "verifier": f.State().Verifier}
	for name, s := range secrets {
		if s == "" {
			t.Fatalf("test setup: no %s", name)
		}
	}
	render := func(reveal bool) string {
		var b strings.Builder
		ts := f.Transcripts(reveal)
		js, _ := json.Marshal(ts)
		b.Write(js)
		o := f.RenderOptions(reveal)
		for _, tr := range f.Transcripts(true) {
			b.WriteString(tr.Curl(o))
		}
		har, err := oauthflow.HAR(f.Transcripts(true), "test", o)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(har)
		b.WriteString(oauthflow.Markdown("", f.Transcripts(true), o))
		// Structural redaction alone (a transcript loaded from the store
		// without the flow's secret list) still hides them.
		b.WriteString(oauthflow.Markdown("", f.Transcripts(true), oauthflow.RenderOptions{}))
		return b.String()
	}
	red := render(false)
	for name, s := range secrets {
		if strings.Contains(red, s) || strings.Contains(red, url.QueryEscape(s)) {
			t.Errorf("%s appears in a redacted rendering", name)
		}
	}
	if !strings.Contains(red, oauthflow.Redacted) || !strings.Contains(red, "741302") {
		t.Error("redacted rendering lost its content")
	}
	revealed := render(true)
	for name, s := range secrets {
		if !strings.Contains(revealed, s) && !strings.Contains(revealed, url.QueryEscape(s)) {
			t.Errorf("%s missing when revealed", name)
		}
	}
	var har struct {
		Log struct {
			Version string `json:"version"`
			Entries []struct {
				Request struct {
					Method string `json:"method"`
				} `json:"request"`
				Response struct {
					Status int `json:"status"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	b, _ := oauthflow.HAR(f.Transcripts(false), "test", oauthflow.RenderOptions{})
	if err := json.Unmarshal(b, &har); err != nil || har.Log.Version != "1.2" || len(har.Log.Entries) != 6 {
		t.Fatalf("HAR: %v, %+v", err, har)
	}
}

// newHubEnv is a receiver serving a CallbackHub, as the webhook receiver
// serves /oauth/callback on its tunnel URL, and a sandbox whose app
// redirects there.
func newHubEnv(t *testing.T) (*oauthflow.CallbackHub, *httptest.Server, *testEnv) {
	hub := &oauthflow.CallbackHub{}
	recv := httptest.NewServer(hub)
	t.Cleanup(recv.Close)
	return hub, recv, newEnv(t, recv.URL+"/oauth/callback", nil)
}

func TestCallbackHubRoutesByState(t *testing.T) {
	hub, recv, e := newHubEnv(t)
	resp, err := http.Get(recv.URL + "/oauth/callback?code=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("no flow waiting: %d", resp.StatusCode)
	}
	var flows []*oauthflow.Flow
	var urls []string
	for i := 0; i < 2; i++ {
		f, err := oauthflow.New(e.profile, oauthflow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer hub.Add(f)()
		u, _ := f.AuthorizeURL(context.Background())
		flows, urls = append(flows, f), append(urls, u)
	}
	if hub.Waiting() != 2 {
		t.Fatalf("waiting %d", hub.Waiting())
	}
	// The second flow's browser finishes first; it must reach flow 2.
	if status, err := browse(context.Background(), t, owner(), urls[1]); err != nil || status != 200 {
		t.Fatalf("browse: %d %v", status, err)
	}
	if res, err := flows[1].AwaitCallback(context.Background(), 5*time.Second); err != nil || res.Code == "" {
		t.Fatalf("flow 2: %+v %v", res, err)
	}
	if _, err := flows[0].AwaitCallback(context.Background(), 10*time.Millisecond); !errors.Is(err, oauthflow.ErrCallbackTimeout) {
		t.Fatalf("flow 1 got a callback: %v", err)
	}
}

func TestExpiredTokenExplainedThenRefreshed(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, "", func(c *sandbox.Config) { c.Now = clock; c.TokenTTL = time.Hour })
	f, _, tok := login(t, e, oauthflow.Options{Now: clock}, owner())
	if tok.ExpiresIn != 3600 {
		t.Fatalf("expires_in %d", tok.ExpiresIn)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	path := oauthflow.DefaultCallPath(e.sb.Medias()[0].HashedID)
	results, err := f.Call(context.Background(), oauthflow.CallRequest{Path: path})
	if !errors.Is(err, oauthflow.ErrRefused) || results[0].Status != 401 || !strings.Contains(results[0].Transcript.Error, "expired") || !strings.Contains(results[0].Transcript.Fix, "refresh") {
		t.Fatalf("expired call: %+v %v", results, err)
	}
	if _, err := f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	results, err = f.Call(context.Background(), oauthflow.CallRequest{Path: path})
	if err != nil || !results[0].OK {
		t.Fatalf("after refresh: %+v %v", results, err)
	}
}

// Issue 18: one forged or stale request to the loopback callback must not
// end the login: it is answered and recorded, and the real callback that
// follows still arrives.
func TestLoginSurvivesForgedAndStaleCallbacks(t *testing.T) {
	e := newEnv(t, "", nil)
	f, err := oauthflow.New(e.profile, oauthflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := owner()
	done := make(chan error, 1)
	var statuses []int
	open := func(ctx context.Context, u string) error {
		go func() {
			// Any web page can fire these at the registered port first.
			for _, q := range []string{"?hs_state=guessed&code=forged&account_id=1", "?code=stale-code", "?error=access_denied&hs_state=nope", ""} {
				resp, err := http.Get(e.profile.RedirectURI + q)
				if err != nil {
					done <- err
					return
				}
				resp.Body.Close()
				statuses = append(statuses, resp.StatusCode)
			}
			_, err := browse(ctx, t, b, u)
			done <- err
		}()
		return nil
	}
	res, tok := runLogin(t, f, open, done)
	if res.Code == "" || res.Code == "forged" || tok.AccessToken == "" {
		t.Fatalf("Login = %+v, %+v", res, tok)
	}
	if want := []int{403, 403, 403, 400}; fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("bad callbacks answered %v, want %v", statuses, want)
	}
}

// The receiver's /oauth/callback (tunnel redirect URIs) follows the same
// rule: a forged request is answered and shown, and the flows go on waiting.
func TestCallbackHubForgedRequestKeepsFlowsWaiting(t *testing.T) {
	hub, recv, e := newHubEnv(t)
	forge := func(q string) int {
		resp, err := http.Get(recv.URL + "/oauth/callback" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var flows []*oauthflow.Flow
	var urls []string
	for i := 0; i < 2; i++ {
		f, err := oauthflow.New(e.profile, oauthflow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		remove := hub.Add(f)
		defer remove()
		u, _ := f.AuthorizeURL(context.Background())
		flows, urls = append(flows, f), append(urls, u)
		// One flow waiting, then two: a guessed state is refused either way.
		if status := forge("?hs_state=guessed&code=forged"); status != http.StatusForbidden {
			t.Fatalf("%d flow(s) waiting: forged request answered %d", i+1, status)
		}
	}
	if n, _ := flows[0].Refused(); n != 2 {
		t.Fatalf("flow 1 refused %d", n)
	}
	if n, last := flows[1].Refused(); n != 1 || !errors.Is(last, oauthflow.ErrStateMismatch) {
		t.Fatalf("flow 2 refused %d (%v)", n, last)
	}
	for i, f := range flows {
		if status, err := browse(context.Background(), t, owner(), urls[i]); err != nil || status != http.StatusOK {
			t.Fatalf("flow %d: browse %d %v", i+1, status, err)
		}
		if res, err := f.AwaitCallback(context.Background(), 5*time.Second); err != nil || res.Code == "" || res.Code == "forged" {
			t.Fatalf("flow %d: %+v %v", i+1, res, err)
		}
	}
}

// Issue 18: a code is known spent only after a successful exchange or when
// the service refused it as a grant (invalid_grant). A 401 for a wrong
// client secret says nothing about the code: sending it again with the
// right secret is not refused, and is told what was known.
func TestCodeSpentOnlyWhenKnown(t *testing.T) {
	e := newEnv(t, "", nil)
	good := e.profile.ClientSecret
	e.profile.ClientSecret = "not-the-secret"
	rec := &memRecorder{}
	f, u := startAuth(t, e, oauthflow.Options{Recorder: rec})
	if _, err := browse(context.Background(), t, owner(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AwaitCallback(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Exchange(context.Background(), "", false); err == nil || errors.Is(err, oauthflow.ErrCodeSpent) {
		t.Fatalf("exchange with a wrong secret: %v", err)
	}
	// The next run, with the secret fixed, resumes from the saved state.
	rec.mu.Lock()
	saved := rec.states[len(rec.states)-1]
	rec.mu.Unlock()
	p := e.profile
	p.ClientSecret = good
	f2, err := oauthflow.Resume(p, saved, nil, oauthflow.Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f2.Exchange(context.Background(), "", false)
	if err != nil {
		t.Fatalf("the code refused for a wrong secret (401) was called spent: %v", err)
	}
	if tok.AccessToken == "" {
		t.Fatal("no token")
	}
	ts := f2.Transcripts(false)
	if notes := strings.Join(ts[len(ts)-1].Notes, "|"); !strings.Contains(notes, "refused with invalid_client (HTTP 401)") || !strings.Contains(notes, "does not say the code is used up") {
		t.Errorf("the resend does not say what was known: %s", notes)
	}
	// Exchanged: now it is known spent.
	_, err = f2.Exchange(context.Background(), "", false)
	if !errors.Is(err, oauthflow.ErrCodeSpent) || !strings.Contains(err.Error(), "exchanged for a token") {
		t.Fatalf("after a successful exchange: %v", err)
	}
	// Forced, the service refuses it: invalid_grant, and the next attempt
	// says what the service said.
	if _, err := f2.Exchange(context.Background(), "", true); err == nil {
		t.Fatal("the service exchanged a code twice")
	}
	_, err = f2.Exchange(context.Background(), "", false)
	if !errors.Is(err, oauthflow.ErrCodeSpent) || !strings.Contains(err.Error(), "refused it with invalid_grant") || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("after invalid_grant: %v", err)
	}
}

// No answer says nothing about the code either.
func TestCodeSentWithoutAnswerIsNotSpent(t *testing.T) {
	p := oauthflow.Profile{Name: "p", BaseURL: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s", RedirectURI: "https://t.example/cb"}
	f, err := oauthflow.New(p, oauthflow.Options{NoRedirectState: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Exchange(context.Background(), "the-code-0123", false); !errors.Is(err, oauthflow.ErrTransport) {
		t.Fatalf("first send: %v", err)
	}
	_, err = f.Exchange(context.Background(), "the-code-0123", false)
	if errors.Is(err, oauthflow.ErrCodeSpent) || !errors.Is(err, oauthflow.ErrTransport) {
		t.Fatalf("second send: %v", err)
	}
	ts := f.Transcripts(true)
	if notes := strings.Join(ts[len(ts)-1].Notes, "|"); !strings.Contains(notes, "no answer arrived") {
		t.Errorf("notes: %s", notes)
	}
	// Why, in the words every face uses (internal/networds).
	if tr := ts[len(ts)-1]; tr.Error != "nothing is listening on 127.0.0.1:1 (connection refused)" || tr.Fix != "start it, or check the port in the URL" {
		t.Errorf("error %q, fix %q", tr.Error, tr.Fix)
	}
}

// A service that accepts the connection and never answers is told apart
// from one that cannot be reached.
func TestTransportTimeoutInPlainWords(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	defer srv.Close()
	defer close(hold)
	p := oauthflow.Profile{Name: "p", BaseURL: srv.URL, ClientID: "c", ClientSecret: "s", RedirectURI: "https://t.example/cb"}
	f, err := oauthflow.New(p, oauthflow.Options{NoRedirectState: true, HTTPClient: &http.Client{Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Exchange(context.Background(), "the-code-0123", false)
	var se *oauthflow.StepError
	if !errors.As(err, &se) || !errors.Is(err, oauthflow.ErrTransport) || se.Msg != srv.Listener.Addr().String()+" accepted the connection but did not answer within 200ms" {
		t.Fatalf("%v (%#v)", err, se)
	}
}

// Issue 18: redaction by value turned the word "forged" in a message into
// REDACTED, because a forged callback's code=forged counted as a secret.
// Values from refused requests are not the flow's secrets, and free text is
// searched only for values long enough to be secrets; parameters, headers
// and fields are redacted where they stand.
func TestRedactionByPositionNotByWord(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _ := startAuth(t, e, oauthflow.Options{})
	resp, err := http.Get(e.profile.RedirectURI + "?hs_state=guessed&code=forged")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, s := range f.Secrets() {
		if s == "forged" {
			t.Fatal("the code of a refused callback counts as a secret")
		}
	}
	ts := f.Transcripts(false)
	cb := ts[len(ts)-1]
	if cb.Step != oauthflow.StepCallback || !strings.Contains(cb.Error, "was forged") || !strings.Contains(cb.Response.Body, "forged") {
		t.Fatalf("the message lost its words: %q", cb.Error)
	}
	if !strings.Contains(cb.Request.URL, "code="+oauthflow.Redacted) || strings.Contains(cb.Request.URL, "code=forged") {
		t.Fatalf("the code is not redacted where it stands: %s", cb.Request.URL)
	}
	// A short secret value does not blank out words of free text either.
	if got := oauthflow.Redact(oauthflow.Transcript{Error: "the user denied access"}, "user").Error; got != "the user denied access" {
		t.Fatalf("short value redacted in text: %q", got)
	}
}

// Issue 18: 'oauth call' exited 0 when every call failed (401 after
// expiry): Call returned no error. It now says which calls failed and why,
// so every face can fail the command.
func TestCallFailuresAreErrors(t *testing.T) {
	e := newEnv(t, "", nil)
	f, _, _ := login(t, e, oauthflow.Options{}, owner())
	path := oauthflow.DefaultCallPath(e.sb.Medias()[0].HashedID)
	all, _ := oauthflow.ParseTokenMethods("all")
	if res, err := f.Call(context.Background(), oauthflow.CallRequest{Path: path, Methods: all}); err != nil || len(res.Failed()) != 0 {
		t.Fatalf("three good calls: %v, %d failed", err, len(res.Failed()))
	}
	// Every call fails.
	f.SetToken(oauthflow.Token{AccessToken: "bogus-token-0123"})
	res, err := f.Call(context.Background(), oauthflow.CallRequest{Path: path, Methods: all})
	var se *oauthflow.StepError
	if !errors.As(err, &se) || !errors.Is(err, oauthflow.ErrRefused) || se.Step != oauthflow.StepCall || se.Status != 401 ||
		!strings.HasPrefix(se.Msg, "3 of 3 calls failed") || !strings.Contains(se.Msg, "access_token: HTTP 401") || se.Fix == "" {
		t.Fatalf("every call failed: %v", err)
	}
	if len(res) != 3 || len(res.Failed()) != 3 {
		t.Fatalf("results %+v", res)
	}
	// One of three fails (the Upload API refuses the header): still a
	// failure of what was asked, naming the one.
	f2, _, _ := login(t, e, oauthflow.Options{}, owner())
	res, err = f2.Call(context.Background(), oauthflow.CallRequest{Method: "POST", Path: "/upload?name=clip", Body: "x", ContentType: "video/mp4", Methods: all})
	if !errors.As(err, &se) || !strings.HasPrefix(se.Msg, "1 of 3 calls failed: header: HTTP 401") || len(res.Failed()) != 1 || res.Failed()[0].Method != oauthflow.MethodHeader {
		t.Fatalf("one call failed: %v", err)
	}
	// No answer at all is a failure too.
	f2.SetToken(oauthflow.Token{AccessToken: "whatever-token-0123"})
	res, err = f2.Call(context.Background(), oauthflow.CallRequest{Path: "http://127.0.0.1:1/v1/medias/x"})
	if !errors.Is(err, oauthflow.ErrTransport) || len(res.Failed()) != 1 || res[0].Status != 0 {
		t.Fatalf("no answer: %v %+v", err, res)
	}
}
