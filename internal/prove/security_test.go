package prove

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/cli"
	"github.com/hookscope/hookscope/oauthflow"
	"github.com/hookscope/hookscope/sandbox"
	"github.com/hookscope/hookscope/storage"
)

// outBuf is a goroutine-safe output buffer.
type outBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *outBuf) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

func (o *outBuf) wait(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(o.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %q:\n%s", want, o.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leakCheck runs CLI commands in-process and keeps every output for the
// final grep.
type leakCheck struct {
	t       *testing.T
	env     map[string]string
	outputs map[string]string // label -> text
	mu      sync.Mutex
}

func (l *leakCheck) getenv(k string) string {
	if v, ok := l.env[k]; ok {
		return v
	}
	return os.Getenv(k)
}

// run runs one command to completion.
func (l *leakCheck) run(ctx context.Context, stdin io.Reader, args ...string) (int, string, string) {
	out, errOut := &outBuf{}, &outBuf{}
	code := cli.Run(ctx, &cli.Env{Stdin: stdin, Stdout: out, Stderr: errOut, Getenv: l.getenv}, args)
	l.keep(strings.Join(args, " "), out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// start runs a long-running command until the returned stop is called.
func (l *leakCheck) start(args ...string) (out, errOut *outBuf, stop func() int) {
	out, errOut = &outBuf{}, &outBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- cli.Run(ctx, &cli.Env{Stdout: out, Stderr: errOut, Getenv: l.getenv}, args)
	}()
	return out, errOut, func() int {
		cancel()
		select {
		case c := <-code:
			l.keep(strings.Join(args, " "), out.String(), errOut.String())
			return c
		case <-time.After(30 * time.Second):
			l.t.Fatalf("%v did not stop", args)
			return -1
		}
	}
}

func (l *leakCheck) keep(label, stdout, stderr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outputs["stdout of "+label] = stdout
	l.outputs["stderr of "+label] = stderr
}

// TestNoSecretLeaks sets known secrets, runs every flow that handles them
// (listen with --secret, send, sandbox + oauth login/refresh/call/history/
// profiles, export in every format, replay with --resign-secret, listen
// with a named tunnel's token through the fake cloudflared) and greps every
// output and every file written for them. A revealed history is the
// positive control: the grep must find the client secret there.
func TestNoSecretLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every flow")
	}
	const (
		webhookSecret = "whsec-PROVE-4f1c9a77"
		clientSecret  = "cs-PROVE-88d1e2b0"
		tunnelToken   = "tt-PROVE-tunnel-token-5521"
	)
	dir := t.TempDir()
	work := filepath.Join(dir, "out") // every file the flows write
	os.MkdirAll(work, 0o700)
	db := filepath.Join(dir, "store.db")
	l := &leakCheck{t: t, outputs: map[string]string{}, env: map[string]string{
		"WH_SECRET": webhookSecret, "CLIENT_SECRET": clientSecret, "TT": tunnelToken,
	}}
	ctx := context.Background()

	// --- OAuth against the sandbox, with a callback listener on loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/callback"
	ln.Close()
	app := sandbox.DefaultApp()
	app.ClientSecret = clientSecret
	app.RedirectURI = redirect
	sbLog := &outBuf{}
	sb, err := sandbox.New(sandbox.Config{Apps: []sandbox.App{app}, Logf: func(f string, a ...any) { io.WriteString(sbLog, f+"\n") }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sb.Handler())
	defer func() { srv.Close(); sb.Close() }()
	profile := []string{"--profile", "p", "--base-url", srv.URL, "--client-id", app.ClientID, "--client-secret-env", "CLIENT_SECRET", "--redirect-uri", redirect, "--db", db}

	var code string
	loginOut, loginErr, stopLogin := l.start(append([]string{"oauth", "login", "--no-browser", "--save", "--timeout", "20s"}, profile...)...)
	func() {
		deadline := time.Now().Add(20 * time.Second)
		var u string
		for u == "" {
			if time.Now().After(deadline) {
				t.Fatalf("no authorize URL printed:\n%s\n%s", loginOut.String(), loginErr.String())
			}
			for _, f := range strings.Fields(loginOut.String() + " " + loginErr.String()) {
				if strings.Contains(f, "/oauth/authorize?") {
					u = f
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		b := sandbox.NewBrowser("owner@example.com", "owner")
		b.AccountID = "741302"
		loc, err := b.Authorize(ctx, u)
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		code = loc.Query().Get("code")
		resp, err := http.Get(loc.String())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}()
	loginOut.wait(t, "saved for profile")
	if c := stopLogin(); c != 0 {
		t.Fatalf("oauth login exit %d:\n%s\n%s", c, loginOut.String(), loginErr.String())
	}
	if code == "" {
		t.Fatal("no authorization code seen")
	}
	st, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.LoadToken(ctx, "p")
	st.Close()
	if err != nil || first.AccessToken == "" {
		t.Fatalf("saved token: %+v, %v", first, err)
	}

	for _, args := range [][]string{
		{"oauth", "refresh", "--profile", "p", "--db", db},
		{"oauth", "refresh", "--profile", "p", "--db", db, "--json"},
		{"oauth", "call", "--profile", "p", "--db", db, "--media", sb.Medias()[0].HashedID, "--method", "all"},
		{"oauth", "call", "--profile", "p", "--db", db, "--media", sb.Medias()[0].HashedID, "--method", "all", "--json"},
		{"oauth", "exchange", "--profile", "p", "--db", db}, // the spent code: refused
		{"oauth", "exchange", "--profile", "p", "--db", db, "--force"},
		{"oauth", "history", "--profile", "p", "--db", db, "--format", "md"},
		{"oauth", "history", "--profile", "p", "--db", db, "--format", "har"},
		{"oauth", "history", "--profile", "p", "--db", db, "--format", "json"},
		{"oauth", "profiles", "--db", db},
		{"oauth", "profiles", "--db", db, "--json"},
	} {
		l.run(ctx, nil, args...)
	}
	st, err = storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	last, err := st.LoadToken(ctx, "p")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Positive control: revealed on request, so the grep can find secrets.
	if _, out, _ := l.run(ctx, nil, "oauth", "history", "--profile", "p", "--db", db, "--format", "json", "--reveal"); !strings.Contains(out, clientSecret) {
		t.Fatal("a revealed history lacks the client secret: the grep below could not find a leak either")
	}
	delete(l.outputs, "stdout of oauth history --profile p --db "+db+" --format json --reveal")

	// --- Webhooks: listen with --secret, send, export, replay re-signed.
	lOut, lErr, stopListen := l.start("listen", "--json", "--addr", "127.0.0.1:0", "--db", db, "--secret", webhookSecret)
	lOut.wait(t, `"listening"`)
	var hello struct {
		Listening string `json:"listening"`
	}
	json.Unmarshal([]byte(strings.SplitN(lOut.String(), "\n", 2)[0]), &hello)
	if c, out, errOut := l.run(ctx, nil, "send", "--to", hello.Listening, "--secret-env", "WH_SECRET", "--all-types", "--duplicates", "1"); c != 0 {
		t.Fatalf("send exit %d: %s %s", c, out, errOut)
	}
	lOut.wait(t, `"signature":"valid"`)
	// The listener answers once a delivery is in its inbox and moves it
	// into the store a moment later; the commands below read the store.
	waitStored(t, db, 34)
	for _, f := range []struct{ format, out string }{
		{"json", "json"}, {"fixtures", "fixtures"}, {"curl", "curl"}, {"har", "export.har"}, {"ndjson", "export.ndjson"},
	} {
		args := []string{"export", "--db", db, "--format", f.format, "--out", filepath.Join(work, f.out)}
		if f.format == "fixtures" {
			// Fixtures are re-signed for the consumer's tests.
			args = append(args, "--secret-env", "WH_SECRET")
		}
		if c, out, errOut := l.run(ctx, nil, args...); c != 0 {
			t.Errorf("export %s exit %d: %s %s", f.format, c, out, errOut)
		}
	}
	l.run(ctx, nil, "export", "--db", db, "--format", "ndjson", "--out", "-")
	if c, out, errOut := l.run(ctx, nil, "replay", "--db", db, "--id", "1", "--to", hello.Listening, "--resign-secret", webhookSecret); c != 0 {
		t.Errorf("replay exit %d: %s %s", c, out, errOut)
	}
	if c, out, errOut := l.run(ctx, nil, "replay", "--db", db, "--id", "2", "--to", hello.Listening, "--resign-secret-env", "WH_SECRET", "--json"); c != 0 {
		t.Errorf("replay --json exit %d: %s %s", c, out, errOut)
	}
	// A wrong secret makes "invalid" verdicts, whose reasons must not
	// quote the configured secret either.
	l.run(ctx, nil, "reverify", "--db", db, "--secret", "another-"+webhookSecret)
	if c := stopListen(); c != 0 {
		t.Errorf("listen exit %d: %s", c, lErr.String())
	}

	// --- A named tunnel: the token reaches cloudflared through its
	// environment, never its command line, and never Hookscope's output.
	fake := filepath.Join(dir, "cloudflared")
	root, _ := ModuleRoot()
	if out, err := exec.Command("go", "build", "-o", fake, filepath.Join(root, "tunnel/internal/fakecloudflared")).CombinedOutput(); err != nil {
		t.Fatalf("build fake cloudflared: %v\n%s", err, out)
	}
	argsFile := filepath.Join(dir, "cf-args.json")
	t.Setenv("FAKECF_ARGS_FILE", argsFile)
	tOut, tErr, stopTunnel := l.start("listen", "--json", "--addr", "127.0.0.1:0", "--db", db, "--secret-env", "WH_SECRET",
		"--tunnel", "--cloudflared", fake, "--tunnel-token-env", "TT", "--tunnel-hostname", "hooks.example.com")
	tOut.wait(t, `"tunnel_url"`)
	if c := stopTunnel(); c != 0 {
		t.Errorf("listen --tunnel exit %d: %s", c, tErr.String())
	}
	var cf struct {
		Args  []string `json:"args"`
		Token string   `json:"tunnel_token"`
	}
	if b, err := os.ReadFile(argsFile); err != nil || json.Unmarshal(b, &cf) != nil {
		t.Fatalf("fake cloudflared args: %v", err)
	}
	if cf.Token != tunnelToken {
		t.Errorf("cloudflared got TUNNEL_TOKEN %q, want the configured token", cf.Token)
	}
	if strings.Contains(strings.Join(cf.Args, " "), tunnelToken) {
		t.Error("the tunnel token is on cloudflared's command line (visible to every user in ps)")
	}

	// --- The grep.
	secrets := map[string]string{
		"webhook secret": webhookSecret, "client secret": clientSecret, "tunnel token": tunnelToken,
		"authorization code": code, "access token": first.AccessToken, "refresh token": first.RefreshToken,
		"refreshed access token": last.AccessToken, "refreshed refresh token": last.RefreshToken,
	}
	l.outputs["sandbox log"] = sbLog.String()
	files := 0
	filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		l.outputs["file "+strings.TrimPrefix(p, work)] = string(b)
		return nil
	})
	if files < 5 {
		t.Fatalf("only %d export files written", files)
	}
	checked := 0
	for label, text := range l.outputs {
		for name, s := range secrets {
			if s == "" {
				continue
			}
			if strings.Contains(text, s) {
				t.Errorf("the %s appears in %s", name, label)
			}
		}
		checked += len(text)
	}
	t.Logf("grepped %d outputs (%d bytes, %d files) for %d secrets", len(l.outputs), checked, files, len(secrets))
}

// TestLoopbackByDefault: the receiver and the sandbox refuse a
// non-loopback address without --allow-remote (exit 2) and warn with it;
// the OAuth callback listener only ever binds loopback redirect URIs.
func TestLoopbackByDefault(t *testing.T) {
	if cli.DefaultListenAddr != "127.0.0.1:8787" || sandbox.DefaultAddr != "127.0.0.1:8790" {
		t.Fatalf("default addresses changed: %s, %s", cli.DefaultListenAddr, sandbox.DefaultAddr)
	}
	db := filepath.Join(t.TempDir(), "s.db")
	for _, tc := range []struct {
		name   string
		args   []string
		ready  string // stdout once serving
		warned string // stderr with --allow-remote
	}{
		{"listen", []string{"listen", "--db", db, "--json"}, "listening", "warning: listening on 0.0.0.0"},
		{"sandbox", []string{"sandbox", "--json", "--quiet"}, "{", "warning: serving the sandbox on 0.0.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut := &outBuf{}, &outBuf{}
			code := cli.Run(context.Background(), &cli.Env{Stdout: out, Stderr: errOut, Getenv: os.Getenv}, append(tc.args, "--addr", "0.0.0.0:0"))
			if code != 2 || !strings.Contains(errOut.String(), "--allow-remote") {
				t.Fatalf("non-loopback without the flag: exit %d, stderr %q", code, errOut.String())
			}
			out, errOut = &outBuf{}, &outBuf{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() {
				done <- cli.Run(ctx, &cli.Env{Stdout: out, Stderr: errOut, Getenv: os.Getenv}, append(tc.args, "--addr", "0.0.0.0:0", "--allow-remote"))
			}()
			out.wait(t, tc.ready)
			cancel()
			if c := <-done; c != 0 {
				t.Errorf("exit %d: %s", c, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.warned) {
				t.Errorf("no warning with --allow-remote; stderr %q", errOut.String())
			}
		})
	}
	t.Run("oauth callback", func(t *testing.T) {
		for uri, local := range map[string]bool{
			"http://127.0.0.1:8765/callback":   true,
			"http://localhost:8765/callback":   true,
			"http://[::1]:8765/callback":       true,
			"http://0.0.0.0:8765/callback":     false,
			"http://192.168.1.5:8765/callback": false,
			"https://127.0.0.1:8765/callback":  false,
			"http://example.com/callback":      false,
		} {
			if _, _, _, ok := (oauthflow.Profile{RedirectURI: uri}).LocalRedirect(); ok != local {
				t.Errorf("%s: served locally = %v, want %v", uri, ok, local)
			}
		}
	})
}

// TestStoreFilesPrivate: the store, its analysis file and their WAL side
// files are 0600 once listen has written to them, whatever the umask.
func TestStoreFilesPrivate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	out, errOut := &outBuf{}, &outBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, &cli.Env{Stdout: out, Stderr: errOut, Getenv: os.Getenv}, []string{"listen", "--json", "--addr", "127.0.0.1:0", "--db", db})
	}()
	out.wait(t, "listening")
	var hello struct {
		Listening string `json:"listening"`
	}
	json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &hello)
	resp, err := http.Post(hello.Listening, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out.wait(t, "delivery_id")
	// Nothing but the store, its analysis file and their WAL side files
	// is written beside it.
	files, _ := filepath.Glob(db + "*")
	slices.Sort(files)
	if want := []string{db, db + "-analysis", db + "-analysis-shm", db + "-analysis-wal", db + "-shm", db + "-wal"}; !slices.Equal(files, want) {
		t.Errorf("files beside the store: %v, want %v", files, want)
	}
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	cancel()
	if c := <-done; c != 0 {
		t.Errorf("listen exit %d: %s", c, errOut.String())
	}
}

// waitStored waits until the store at path holds at least n deliveries.
func waitStored(t *testing.T, path string, n int64) {
	t.Helper()
	st, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := st.Count(context.Background(), storage.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d deliveries after 10 s, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
