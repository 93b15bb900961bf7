package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/internal/testport"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/sandbox"
	"github.com/hookscope/hookscope/storage"
)

// watchWriter collects output and hands out the first authorize URL.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	urls chan string
	sent bool
}

var authorizeURLRe = regexp.MustCompile(`https?://\S+/oauth/authorize\?\S+`)

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if u := authorizeURLRe.FindString(w.buf.String()); u != "" {
			w.sent = true
			w.urls <- u
		}
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

type oauthCLIEnv struct {
	base, redirect, db string
	// terminal makes the command's output a terminal.
	terminal bool
	sb       *sandbox.Server
	app      sandbox.App
}

func newOAuthCLIEnv(t *testing.T, redirect string) *oauthCLIEnv {
	t.Helper()
	if redirect == "" {
		redirect = "http://127.0.0.1:" + strconv.Itoa(testport.Free(t)) + "/callback"
	}
	app := sandbox.DefaultApp()
	app.RedirectURI = redirect
	sb, err := sandbox.New(sandbox.Config{Apps: []sandbox.App{app}, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(func() { srv.Close(); sb.Close() })
	return &oauthCLIEnv{base: srv.URL, redirect: redirect, db: filepath.Join(t.TempDir(), "hs.db"), sb: sb, app: app}
}

// run runs the CLI in-process; browse, when set, plays the browser on the
// printed authorize URL and returns the redirected URL.
func (e *oauthCLIEnv) run(t *testing.T, stdin io.Reader, browse func(u string) string, args ...string) (int, string, string) {
	t.Helper()
	out := &watchWriter{urls: make(chan string, 1)}
	errOut := &watchWriter{urls: make(chan string, 1)}
	env := &cmdutil.Env{Stdin: stdin, Stdout: out, Stderr: errOut, IsTerminal: e.terminal, Getenv: func(k string) string {
		if k == "SECRET" {
			return e.app.ClientSecret
		}
		return ""
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	if browse != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case u := <-out.urls:
				browse(u)
			case u := <-errOut.urls:
				browse(u)
			case <-ctx.Done():
			}
		}()
	}
	code := cmdutil.RunCommand(ctx, env, func(e *cmdutil.Env) *cobra.Command { return NewCmd(e) }, append(args, "--db", e.db))
	cancel()
	wg.Wait()
	return code, out.String(), errOut.String()
}

// playLocal plays the owner approving, then follows the redirect to the
// CLI's callback listener.
func playLocal(t *testing.T) func(string) string {
	return func(u string) string {
		b := sandbox.NewBrowser("owner@example.com", "owner")
		b.AccountID = "741302"
		loc, err := b.Authorize(context.Background(), u)
		if err != nil {
			t.Errorf("browser: %v", err)
			return ""
		}
		resp, err := http.Get(loc.String())
		if err != nil {
			t.Errorf("callback: %v", err)
			return ""
		}
		resp.Body.Close()
		return loc.String()
	}
}

func (e *oauthCLIEnv) profileFlags() []string {
	return []string{"--profile", "t", "--base-url", e.base, "--client-id", e.app.ClientID, "--client-secret-env", "SECRET", "--redirect-uri", e.redirect}
}

func TestOAuthLoginNoBrowserThenRefreshCallHistory(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	args := append([]string{"oauth", "login", "--no-browser", "--save", "--timeout", "20s"}, e.profileFlags()...)
	code, out, errOut := e.run(t, nil, playLocal(t), args...)
	if code != 0 {
		t.Fatalf("login exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Listening for the callback on " + e.redirect, "account 741302 \"Acme Studio\"", "exchange (query): POST", "-> 200", "Token: type bearer, access [REDACTED], refresh [REDACTED]", "saved for profile \"t\""} {
		if !strings.Contains(out, want) {
			t.Errorf("login output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, e.app.ClientSecret) {
		t.Fatal("the client secret was printed")
	}

	// refresh with the saved profile only
	code, out, errOut = e.run(t, nil, nil, "oauth", "refresh", "--profile", "t", "--json")
	if code != 0 {
		t.Fatalf("refresh exit %d: %s %s", code, out, errOut)
	}
	var rep struct {
		Refresh struct {
			Changed bool   `json:"refresh_token_changed"`
			Note    string `json:"note"`
		} `json:"refresh"`
		Token struct {
			AccessToken string `json:"access_token"`
		} `json:"token"`
		Transcripts []json.RawMessage `json:"transcripts"`
		Curl        []string          `json:"curl"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("refresh JSON: %v\n%s", err, out)
	}
	if rep.Refresh.Changed || !strings.Contains(rep.Refresh.Note, "stayed the same") || rep.Token.AccessToken != oauthflow.Redacted || len(rep.Transcripts) != 1 || len(rep.Curl) != 1 {
		t.Fatalf("refresh report: %+v", rep)
	}

	// call, three ways
	media := e.sb.Medias()[0].HashedID
	code, out, _ = e.run(t, nil, nil, "oauth", "call", "--profile", "t", "--media", media, "--method", "all", "--json")
	var callRep struct {
		Calls []struct {
			Method string `json:"method"`
			Status int    `json:"status"`
		} `json:"calls"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &callRep) != nil || len(callRep.Calls) != 3 {
		t.Fatalf("call exit %d: %s", code, out)
	}
	for _, c := range callRep.Calls {
		if c.Status != 200 {
			t.Errorf("%s: %d", c.Method, c.Status)
		}
	}

	// the spent code is refused before sending
	// Explained once, on stdout; stderr only says the command failed.
	code, out, errOut = e.run(t, nil, nil, "oauth", "exchange", "--profile", "t")
	if code != 1 || strings.Count(out, "already sent") != 1 || strings.Contains(errOut, "already sent") || !strings.Contains(errOut, "failed (exit 1)") {
		t.Fatalf("second exchange: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = e.run(t, nil, nil, "oauth", "exchange", "--profile", "t", "--force")
	if code != 1 || strings.Count(out, "invalid_grant") != 1 || strings.Contains(out, "Error:") {
		t.Fatalf("forced exchange: the refusal must be explained once, in its step: exit %d\n%s", code, out)
	}

	// history exports, redacted
	for _, format := range []string{"md", "har", "json"} {
		code, out, errOut = e.run(t, nil, nil, "oauth", "history", "--profile", "t", "--format", format)
		if code != 0 || !strings.Contains(out, "REDACTED") || strings.Contains(out, e.app.ClientSecret) {
			t.Fatalf("history %s: exit %d %s\n%s", format, code, errOut, out)
		}
		if format != "md" && !json.Valid([]byte(out)) {
			t.Fatalf("history %s is not JSON", format)
		}
	}
	code, out, _ = e.run(t, nil, nil, "oauth", "history", "--profile", "t", "--format", "json", "--reveal")
	if code != 0 || !strings.Contains(out, e.app.ClientSecret) {
		t.Fatalf("revealed history lacks the secret: exit %d", code)
	}

	code, out, _ = e.run(t, nil, nil, "oauth", "profiles", "--json")
	if code != 0 || !strings.Contains(out, `"has_client_secret": true`) || strings.Contains(out, e.app.ClientSecret) || !strings.Contains(out, "REDACTED") {
		t.Fatalf("profiles: exit %d\n%s", code, out)
	}
}

// TestOAuthTextSaysEachThingOnce: call prints what the API answered
// (pretty and coloured on a terminal, as received when piped); refresh
// says the refresh token's fate and the times once each; an exchange for
// a profile that is not saved does not say it was saved for it.
func TestOAuthTextSaysEachThingOnce(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	args := append([]string{"oauth", "login", "--no-browser", "--save", "--timeout", "20s"}, e.profileFlags()...)
	if code, out, errOut := e.run(t, nil, playLocal(t), args...); code != 0 {
		t.Fatalf("login exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := e.run(t, nil, nil, "oauth", "refresh", "--profile", "t")
	if code != 0 || strings.Count(out, "stayed the same") != 1 || strings.Count(out, "expires") != 1 || !strings.Contains(out, " h left)") {
		t.Errorf("refresh: exit %d\n%s\n%s", code, out, errOut)
	}
	media := e.sb.Medias()[0]
	for _, terminal := range []bool{false, true} {
		e.terminal = terminal
		code, out, errOut = e.run(t, nil, nil, "oauth", "call", media.HashedID, "--profile", "t")
		if code != 0 || !strings.Contains(out, "-> 200 OK") || strings.Contains(out, "\x1b[") != terminal {
			t.Errorf("call (terminal %v): exit %d\n%s\n%s", terminal, code, out, errOut)
		}
		body := stripColour(out[strings.Index(out, "\n")+1:])
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil || m["hashed_id"] != media.HashedID || m["name"] != media.Name {
			t.Errorf("call (terminal %v): the body is not the media: %v\n%s", terminal, err, body)
		}
	}
	e.terminal = false
	// The three token methods get the same answer: shown once.
	code, out, _ = e.run(t, nil, nil, "oauth", "call", media.HashedID, "--profile", "t", "--method", "all")
	if code != 0 || strings.Count(out, `"hashed_id"`) != 1 || strings.Count(out, "(the same body as above)") != 2 {
		t.Errorf("call --method all: exit %d\n%s", code, out)
	}
	// A profile given by flags only: its token is not saved for it.
	flags := append([]string{"--profile", "flagsonly"}, e.profileFlags()[2:]...)
	if code, out, errOut := e.run(t, nil, playLocal(t), append([]string{"oauth", "authorize", "--no-browser", "--timeout", "20s"}, flags...)...); code != 0 {
		t.Fatalf("authorize: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = e.run(t, nil, nil, append([]string{"oauth", "exchange"}, flags...)...)
	if code != 0 || !strings.Contains(out, "Token: type bearer") || strings.Contains(out, "saved for profile") || !strings.Contains(out, `profile "flagsonly" is not in the store`) {
		t.Errorf("exchange without --save: exit %d\n%s\n%s", code, out, errOut)
	}
}

// stripColour removes ANSI colour sequences.
func stripColour(s string) string {
	return regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(s, "")
}

func TestOAuthAuthorizeThenExchange(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	args := append([]string{"oauth", "authorize", "--no-browser", "--pkce", "--save"}, e.profileFlags()...)
	code, out, errOut := e.run(t, nil, playLocal(t), args...)
	if code != 0 || !strings.Contains(out, "Callback: code [REDACTED]") || strings.Contains(out, "Token:") {
		t.Fatalf("authorize: exit %d\n%s\n%s", code, out, errOut)
	}
	// A separate process run: the code, redirect_uri (with hs_state) and
	// PKCE verifier come from the store.
	code, out, errOut = e.run(t, nil, nil, "oauth", "exchange", "--profile", "t", "--placement", "basic")
	if code != 0 || !strings.Contains(out, "exchange (basic): POST") || !strings.Contains(out, "Token: type bearer") {
		t.Fatalf("exchange: exit %d\n%s\n%s", code, out, errOut)
	}
}

// pasteApproved plays a manager approving in the browser, and pastes what
// before holds, then the address the browser landed on, into pw.
func pasteApproved(t *testing.T, pw *io.PipeWriter, before string) func(string) string {
	return func(u string) string {
		_, _ = io.WriteString(pw, before)
		b := sandbox.NewBrowser("manager@example.com", "manager")
		loc, err := b.Authorize(context.Background(), u)
		if err != nil {
			t.Errorf("browser: %v", err)
			pw.Close()
			return ""
		}
		_, _ = io.WriteString(pw, loc.String()+"\n")
		return loc.String()
	}
}

func TestOAuthLoginPaste(t *testing.T) {
	e := newOAuthCLIEnv(t, "https://tunnel.example.com/oauth/callback")
	pr, pw := io.Pipe()
	defer pw.Close()
	browse := pasteApproved(t, pw, "\n")
	args := append([]string{"oauth", "login", "--paste", "--json"}, e.profileFlags()...)
	code, out, errOut := e.run(t, pr, browse, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep struct {
		Callback struct {
			Code        string `json:"code"`
			ContactName string `json:"contact_name"`
		} `json:"callback"`
		Token struct {
			TokenType string `json:"token_type"`
		} `json:"token"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Callback.Code != oauthflow.Redacted || rep.Callback.ContactName != "Manny Manager" || rep.Token.TokenType != "bearer" {
		t.Fatalf("report %+v, %v\n%s", rep, err, out)
	}
}

func TestOAuthLoginDenied(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	browse := func(u string) string {
		b := sandbox.NewBrowser("viewer@example.com", "viewer")
		loc, err := b.Authorize(context.Background(), u)
		if err != nil {
			t.Errorf("browser: %v", err)
			return ""
		}
		resp, err := http.Get(loc.String())
		if err == nil {
			resp.Body.Close()
		}
		return loc.String()
	}
	args := append([]string{"oauth", "login", "--no-browser"}, e.profileFlags()...)
	code, out, errOut := e.run(t, nil, browse, args...)
	// The denial explained once, in the callback's block: what it means
	// and the fix; no Error: line repeating it, no repeat on stderr.
	if code != 1 || !strings.Contains(out, "Callback: error=access_denied") || strings.Count(out, "\n  means: ") != 1 ||
		strings.Count(out, "log in as a manager or owner") != 1 || strings.Contains(out, "Error:") || strings.Contains(errOut, "managers") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestOAuthBadFlags(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	for _, args := range [][]string{
		{"oauth"},
		{"oauth", "bogus"},
		append([]string{"oauth", "login", "--placement", "nowhere"}, e.profileFlags()...),
		append([]string{"oauth", "call", "--method", "carrier-pigeon", "--media", "x"}, e.profileFlags()...),
		append([]string{"oauth", "call"}, e.profileFlags()...),
		{"oauth", "login", "--save", "--base-url", e.base},
		{"oauth", "login", "--profile", "x", "--client-secret-env", "UNSET_VAR", "--base-url", e.base, "--client-id", "c", "--redirect-uri", e.redirect},
		{"oauth", "history", "--format", "pdf"},
		{"oauth", "login", "stray"},
	} {
		code, _, errOut := e.run(t, nil, nil, args...)
		if code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// A profile that is not saved: no store yet (exit 1), then a store
	// without it (a usage error).
	if code, _, errOut := e.run(t, nil, nil, "oauth", "refresh", "--profile", "nobody"); code != 1 || !strings.Contains(errOut, "no store at") {
		t.Errorf("refresh without a store: exit %d, stderr %q", code, errOut)
	}
	db, err := storage.Open(e.db)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if code, _, errOut := e.run(t, nil, nil, "oauth", "refresh", "--profile", "nobody"); code != 2 || !strings.Contains(errOut, `profile "nobody" is not in the store`) {
		t.Errorf("refresh of an unknown profile: exit %d, stderr %q", code, errOut)
	}
	code, out, _ := e.run(t, nil, nil, "oauth", "login", "--help")
	if code != 0 {
		t.Errorf("--help exit %d", code)
	}
	_ = out
}

// TestOAuthRefusalsPrintedWhileWaiting: a forged request to the callback
// address is printed with its reason as it arrives (stderr with --json),
// and the real callback that follows still completes the login.
func TestOAuthRefusalsPrintedWhileWaiting(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		e := newOAuthCLIEnv(t, "")
		real := playLocal(t)
		browse := func(u string) string {
			resp, err := http.Get(e.redirect + "?hs_state=guessed&code=forged-code")
			if err != nil {
				t.Errorf("forged callback: %v", err)
				return ""
			}
			resp.Body.Close()
			return real(u)
		}
		args := append([]string{"oauth", "login", "--no-browser", "--timeout", "20s"}, e.profileFlags()...)
		if jsonOut {
			args = append(args, "--json")
		}
		code, out, errOut := e.run(t, nil, browse, args...)
		where := out
		if jsonOut {
			where = errOut
			if !json.Valid([]byte(out)) {
				t.Errorf("--json: stdout is not one JSON report:\n%s", out)
			}
		}
		if code != 0 || !strings.Contains(where, "Callback refused (answered 403): ") || !strings.Contains(where, "still waiting for the real callback") {
			t.Fatalf("json %v: exit %d\nstdout:\n%s\nstderr:\n%s", jsonOut, code, out, errOut)
		}
		if strings.Contains(out+errOut, "forged-code") {
			t.Errorf("the forged request's code was printed")
		}
	}
}

// TestOAuthPasteRetries: a refused paste is explained and another line is
// read; only --timeout ends the wait.
func TestOAuthPasteRetries(t *testing.T) {
	e := newOAuthCLIEnv(t, "https://tunnel.example.com/oauth/callback")
	pr, pw := io.Pipe()
	defer pw.Close()
	browse := pasteApproved(t, pw, "not a URL at all\n"+e.redirect+"?code=stale&hs_state=old-attempt\n")
	args := append([]string{"oauth", "login", "--paste", "--timeout", "20s"}, e.profileFlags()...)
	code, out, errOut := e.run(t, pr, browse, args...)
	if code != 0 || strings.Count(out, "That address was refused: ") != 2 || !strings.Contains(out, "Token: type bearer") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// Only refused pastes, stdin left open: the time-out ends it, exit 1.
	pr2, pw2 := io.Pipe()
	defer pw2.Close()
	go io.WriteString(pw2, e.redirect+"?code=stale&hs_state=old-attempt\n")
	args = append([]string{"oauth", "login", "--paste", "--timeout", "500ms"}, e.profileFlags()...)
	code, out, errOut = e.run(t, pr2, nil, args...)
	if code != 1 || !strings.Contains(out, "no accepted address was pasted within 500 ms; 1 pasted address was refused") {
		t.Fatalf("time-out: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// failingRecorder keeps nothing: every save fails, as on a full disk.
type failingRecorder struct{}

func (failingRecorder) SaveTranscript(context.Context, oauthflow.Transcript) (int64, error) {
	return 0, errors.New("disk full")
}
func (failingRecorder) SaveFlowState(context.Context, oauthflow.State) error {
	return errors.New("disk full")
}
func (failingRecorder) SaveToken(context.Context, string, oauthflow.Token) error {
	return errors.New("disk full")
}

// TestOAuthSaveFailureFails: a step whose outcome cannot be saved exits 1
// and does not claim the token was saved.
func TestOAuthSaveFailureFails(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	args := append([]string{"oauth", "login", "--no-browser", "--timeout", "20s"}, e.profileFlags()...)
	out := &watchWriter{urls: make(chan string, 1)}
	env := &cmdutil.Env{Stdout: out, Stderr: io.Discard, Getenv: func(k string) string { return map[string]string{"SECRET": e.app.ClientSecret}[k] }}
	go func() { playLocal(t)(<-out.urls) }()
	code := cmdutil.RunCommand(context.Background(), env, func(env *cmdutil.Env) *cobra.Command {
		return NewStepCmd(env, "login", func(ctx context.Context, o *StepOptions) error {
			o.recorder = func(oauthflow.Recorder) oauthflow.Recorder { return failingRecorder{} }
			return runStep(ctx, o)
		})
	}, append(args, "--db", e.db)[1:])
	got := out.String()
	if code != 1 || strings.Contains(got, "saved for profile") || !strings.Contains(got, "saving it to the store") || !strings.Contains(got, "disk full") {
		t.Fatalf("exit %d:\n%s", code, got)
	}
}

// TestOAuthHelpAndCallErrors: every oauth command's help states the exit
// codes; a failed call carries its error and fix in the JSON report.
func TestOAuthHelpAndCallErrors(t *testing.T) {
	e := newOAuthCLIEnv(t, "")
	for _, sub := range []string{"login", "authorize", "exchange", "refresh", "call"} {
		code, out, _ := e.run(t, nil, nil, "oauth", sub, "--help")
		if code != 0 || !strings.Contains(out, "Exit codes: 0 success; 1 the step failed") {
			t.Errorf("oauth %s --help lacks the exit codes:\n%s", sub, out)
		}
	}
	if _, out, _ := e.run(t, nil, nil, "oauth", "call", "--help"); !strings.Contains(out, "With --method all, the command fails when any method gets no 2xx answer") {
		t.Errorf("call --help:\n%s", out)
	}
	if _, out, _ := e.run(t, nil, nil, "oauth", "exchange", "--help"); !strings.Contains(out, "send a code known to be used up (exchanged, or refused with invalid_grant)") {
		t.Errorf("exchange --help:\n%s", out)
	}
	args := append([]string{"oauth", "login", "--no-browser", "--save", "--timeout", "20s"}, e.profileFlags()...)
	if code, out, errOut := e.run(t, nil, playLocal(t), args...); code != 0 {
		t.Fatalf("login: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ := e.run(t, nil, nil, "oauth", "call", "--profile", "t", "--media", "nosuchmedia", "--json")
	var rep struct {
		Calls []struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
			Fix    string `json:"fix"`
		} `json:"calls"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Calls) != 1 || rep.Calls[0].Status != 404 || rep.Calls[0].Error == "" || rep.Calls[0].Fix == "" {
		t.Fatalf("call of a missing media: exit %d\n%s", code, out)
	}
}
