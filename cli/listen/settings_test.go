package listen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"
	"github.com/zalando/go-keyring"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
)

// windowStore makes a store holding the window's saved settings and
// secrets in its vault (the keyring is the tests' mock, one for the
// process), and returns its path.
func windowStore(t *testing.T, set station.Settings, secrets ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.db")
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := station.SaveSettings(context.Background(), db, set); err != nil {
		t.Fatal(err)
	}
	if len(secrets) == 0 {
		return path
	}
	v, err := station.ChooseVault(db, path)
	if err != nil {
		t.Fatal(err)
	}
	var ss [][]byte
	for _, s := range secrets {
		ss = append(ss, []byte(s))
	}
	if err := v.Save(ss); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestParseWindowSettings: what no flag gives comes from the window's
// saved settings, each said once; a flag overrides; --no-settings and a
// store that does not exist give the defaults.
func TestParseWindowSettings(t *testing.T) {
	keyring.MockInit()
	set := station.DefaultSettings()
	set.ListenAddr, set.Path, set.Keep = "127.0.0.1:9123", "/hooks", 500
	set.AnswerRules = []string{"media.* => 500 x2 then 200", "close after 1s"}
	set.ForwardTo, set.ForwardOn, set.ForwardMode = "where media.* => localhost:3000/m localhost:4000/", true, "pass-through"
	db := windowStore(t, set, "whsec_window")
	off := set
	off.ForwardOn = false
	dbOff := windowStore(t, off)
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"S": "whsec_flag"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		{Args: []string{"--db", db}, Want: func(o *Options) bool {
			return o.Addr == "127.0.0.1:9123" && o.Path == "/hooks" && o.MaxDeliveries == 500 && slices.Equal(o.rules.Lines(), set.AnswerRules) &&
				len(o.forward.Routes) == 2 && o.forward.Mode == forward.ModePassThrough && len(o.secrets) == 1 && string(o.secrets[0]) == "whsec_window" &&
				strings.Join(o.using, ", ") == "address 127.0.0.1:9123, path /hooks, keeping 500 deliveries, 2 answer rules, 1 secret from the OS keyring, "+
					"forwarding to where media.* => http://localhost:3000/m, http://localhost:4000/ (pass-through)"
		}},
		{Args: []string{"--db", db, "--addr", "127.0.0.1:9999", "--answer", "503", "--secret-env", "S", "--forward-to", "localhost:5000/", "--max-deliveries", "0"}, Want: func(o *Options) bool {
			return o.Addr == "127.0.0.1:9999" && o.MaxDeliveries == 0 && slices.Equal(o.rules.Lines(), []string{"503"}) && string(o.secrets[0]) == "whsec_flag" &&
				len(o.forward.Routes) == 1 && o.forward.Mode == forward.ModeAck && strings.Join(o.using, ", ") == "path /hooks"
		}},
		{Args: []string{"--db", db, "--forward-mode", "ack"}, Want: func(o *Options) bool { return len(o.forward.Routes) == 2 && o.forward.Mode == forward.ModeAck }},
		{Args: []string{"--db", db, "--no-settings"}, Want: func(o *Options) bool {
			return o.Addr == DefaultAddr && len(o.rules.List()) == 0 && o.forward == nil && len(o.secrets) == 0 && o.using == nil
		}},
		{Args: []string{"--db", dbOff}, Want: func(o *Options) bool { return o.forward == nil && len(o.rules.List()) == 2 }},
		{Args: []string{"--db", dbOff, "--forward-mode", "ack"}, Err: "--forward-mode needs --forward-to"},
		{Args: []string{"--db", filepath.Join(t.TempDir(), "none.db")}, Want: func(o *Options) bool { return o.using == nil && o.Addr == DefaultAddr }},
	})
}

// TestListenOnWindowSettings: listen runs on the window's answer rules,
// forwarding and secret, and says so on start; --no-settings does not.
func TestListenOnWindowSettings(t *testing.T) {
	keyring.MockInit()
	var got atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		io.WriteString(w, "ok")
	}))
	defer app.Close()
	set := station.DefaultSettings()
	set.AnswerRules = []string{"media.* => 503"}
	set.ForwardTo, set.ForwardOn = app.URL+"/hooks", true
	db := windowStore(t, set, "whsec_window")

	for _, tc := range []struct {
		args   []string
		status int
		using  string
	}{
		{nil, 503, "Using the window's settings: 1 answer rule, 1 secret from the OS keyring, forwarding to " + app.URL + "/hooks (ack) (flags override them; --no-settings ignores them)."},
		{[]string{"--no-settings"}, 200, ""},
	} {
		out := &clitest.Buffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- runCLI(ctx, &cmdutil.Env{Stdout: out, Stderr: io.Discard, Getenv: func(string) string { return "" }},
				append([]string{"listen", "--addr", "127.0.0.1:0", "--db", db}, tc.args...))
		}()
		first := out.WaitLines(t, 1)[0]
		url := strings.Fields(strings.TrimPrefix(first, "Listening on "))[0]
		lines := out.WaitLines(t, 2)
		if has := strings.Contains(out.String(), "Using the window's settings"); has != (tc.using != "") || tc.using != "" && lines[1] != tc.using {
			t.Errorf("%v: start says\n%s", tc.args, out.String())
		}
		if tc.using != "" && !strings.Contains(out.String(), "Warning: answering 503 to media.* (the window's answer rules)") {
			t.Errorf("%v: no warning of the rules:\n%s", tc.args, out.String())
		}
		resp, err := http.Post(url, "application/json", strings.NewReader(msg("h1", ev("e1", "media.ready", "m1", "2026-01-01T00:00:01Z"))))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%v: answered %d, want %d", tc.args, resp.StatusCode, tc.status)
		}
		if tc.using != "" {
			out.WaitFor(t, "→ 200")
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
	}
	if got.Load() != 1 {
		t.Errorf("the app got %d deliveries, want the one sent on the window's settings", got.Load())
	}
}
