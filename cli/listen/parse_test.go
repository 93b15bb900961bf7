package listen

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/relay"
)

// testRelayConn is a connection string for alice with a key made for the
// test.
func testRelayConn(t *testing.T) string {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	return relay.ConnString{URL: "ws://127.0.0.1:1/nats", Name: "alice", Stream: "HOOKSCOPE", Seed: string(seed)}.String()
}

// TestParse checks flags -> Options, without listening.
func TestParse(t *testing.T) {
	// No saved settings: the default store is a fresh folder's.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	db := filepath.Join(t.TempDir(), "h.db")
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"S": "whsec", "TOK": "eyJ",
		"APP_URL": "https://u:pw@app.internal:8443/hooks", "APP_TOKEN": "Bearer t0k", "BAD": "a\nb", "RELAY": testRelayConn(t), "NOT_RELAY": "hookscope-relay-1:damaged"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		{Args: []string{}, Want: func(o *Options) bool {
			return o.Addr == DefaultAddr && o.Path == DefaultPath && o.MaxBody == inspector.DefaultMaxBody && len(o.rules.List()) == 0 && len(o.secrets) == 0 && o.using == nil
		}},
		{Args: []string{"--secret-env", "S", "--secret", "old", "--json", "--db", db, "--max-body", "1048576", "--answer", "500"}, Want: func(o *Options) bool {
			return len(o.secrets) == 2 && string(o.secrets[0]) == "old" && string(o.secrets[1]) == "whsec" && o.JSON && o.DBPath == db && o.MaxBody == 1<<20 &&
				slices.Equal(o.rules.Lines(), []string{"500"})
		}},
		{Args: []string{"--answer", "media.* => 500 x2 then 200", "--answer", `delivery.signature != "valid" => 401`, "--answer", "hang"}, Want: func(o *Options) bool {
			return len(o.rules.List()) == 3 && o.rules.List()[0].Cond == "media.*" && o.rules.Warning() == "answering 500 x2 then 200 to media.* (rule 1 of 3; 2 more rules answer other than 200)"
		}},
		{Args: []string{"--answer", "500", "--answer", `events.exists(e, e.tpye == "media.ready") => close`}, Err: "(rule 2): its condition is not valid"},
		{Args: []string{"--answer", `events.exists(e, e.dedupe == "first") => close`}, Err: "\n                    ^\ncolumn 19: event.dedupe is not known on arrival"},
		{Args: []string{"--answer", "4040"}, Err: "status 4040: give one from 200 to 599"},
		{Args: []string{"--answer", "500 then 200"}, Err: "answers every later attempt"},
		{Args: []string{"--forward-to", `where media.* => localhost:3000/m`, "--forward-to", `where delivery.path == "/a b" => localhost:4000/`}, Want: func(o *Options) bool {
			r := o.forward.Routes
			return len(r) == 2 && r[0].Where != nil && r[0].Name() == "where media.* => http://localhost:3000/m" && r[1].Where != nil
		}},
		{Args: []string{"--forward-to", `where delivery.pth == "/a" => localhost:3000/`}, Err: "\n                ^\ncolumn 15: undefined field 'pth'"},
		{Args: []string{"--addr", "0.0.0.0:8787", "--allow-remote"}, Want: func(o *Options) bool { return o.AllowRemote }},
		{Args: []string{"--tunnel", "--tunnel-token-env", "TOK", "--tunnel-hostname", "hooks.example.com"}, Want: func(o *Options) bool {
			return o.Tunnel.Enabled && o.Tunnel.TokenEnv == "TOK" && o.Tunnel.Hostname == "hooks.example.com"
		}},
		{Args: []string{"--forward-to", "http://localhost:3000/webhooks"}, Want: func(o *Options) bool {
			f := o.forward
			return f != nil && len(f.Routes) == 1 && f.Mode == forward.ModeAck && f.Policy.Timeout == forward.DefaultTimeout &&
				f.Policy.Retries == forward.DefaultRetries && f.ResignSecret == nil && !f.SkipMalformed
		}},
		{Args: []string{"--forward-to", "media.*=http://localhost:3000/media", "--forward-to", "http://localhost:4000/", "--forward-mode", "pass-through",
			"--forward-timeout", "5s", "--forward-retries", "0", "--forward-header", "X-Debug: 1", "--forward-resign-secret-env", "S", "--forward-skip-malformed"}, Want: func(o *Options) bool {
			f := o.forward
			return len(f.Routes) == 2 && f.Routes[0].Glob == "media.*" && f.Mode == forward.ModePassThrough && f.Policy.Timeout == 5*time.Second &&
				f.Policy.Retries == forward.NoRetries && len(f.Headers) == 1 && f.Headers[0].Name == "X-Debug" && string(f.ResignSecret) == "whsec" && f.SkipMalformed
		}},
		{Args: []string{}, Want: func(o *Options) bool { return o.forward == nil }},
		{Args: []string{"--forward-mode", "pass-through"}, Err: "--forward-mode needs --forward-to"},
		{Args: []string{"--forward-header", "X: 1"}, Err: "--forward-header needs --forward-to"},
		{Args: []string{"--forward-to", "localhost:3000/webhooks"}, Want: func(o *Options) bool {
			return o.forward.Routes[0].Name() == "http://localhost:3000/webhooks"
		}},
		{Args: []string{"--forward-to-env", "APP_URL", "--forward-header-env", "Authorization=APP_TOKEN", "--forward-ca", "parse_test.go", "--forward-insecure",
			"--forward-resign-secret-env", "S", "--forward-skip-unverified"}, Want: func(o *Options) bool {
			f := o.forward
			return len(f.Routes) == 1 && f.Routes[0].Target.Host == "app.internal:8443" && !strings.Contains(f.Routes[0].Name(), "pw") &&
				len(f.Headers) == 1 && f.Headers[0].Name == "Authorization" && f.Headers[0].Value == "Bearer t0k" &&
				f.CAFile == "parse_test.go" && f.Insecure && f.SkipUnverified
		}},
		{Args: []string{"--forward-to", "media.*"}, Err: "expected a URL such as"},
		{Args: []string{"--forward-to", "localhost:8787/webhooks"}, Err: "it is this receiver's own address"},
		{Args: []string{"--forward-to", "http://127.0.0.1:8787/x"}, Err: "it is this receiver's own address"},
		{Args: []string{"--forward-to-env", "NOPE"}, Err: "--forward-to-env NOPE: the environment variable is unset or empty"},
		{Args: []string{"--forward-to", "localhost:3000", "--forward-header-env", "Authorization"}, Err: "expected NAME=VAR"},
		{Args: []string{"--forward-to", "localhost:3000", "--forward-header-env", "X-Token=BAD"}, Err: "the value of BAD holds a line break"},
		{Args: []string{"--forward-to", "localhost:3000", "--forward-skip-unverified"}, Err: "needs --forward-resign-secret-env"},
		{Args: []string{"--forward-to", "localhost:3000", "--forward-ca", "/nope.pem"}, Err: "--forward-ca"},
		{Args: []string{"--forward-insecure"}, Err: "--forward-insecure needs --forward-to"},
		{Args: []string{"--forward-to", "media.[=http://localhost:3000/"}, Err: "is malformed"},
		{Args: []string{"--forward-to", "http://localhost:3000/", "--forward-mode", "sync"}, Err: "expected ack or pass-through"},
		{Args: []string{"--forward-to", "http://localhost:3000/", "--forward-timeout", "0s"}, Err: "--forward-timeout must be a positive duration"},
		{Args: []string{"--forward-to", "http://localhost:3000/", "--forward-retries", "-1"}, Err: "--forward-retries must be 0"},
		{Args: []string{"--forward-to", "http://localhost:3000/", "--forward-header", "Host: x"}, Err: "it cannot be added"},
		{Args: []string{"--forward-to", "http://localhost:3000/", "--forward-resign-secret-env", "NOPE"}, Err: "--forward-resign-secret-env NOPE: the environment variable is unset or empty"},
		{Args: []string{"--forward-to", "http://localhost:3000/", "--forward-mode", "pass-through", "--answer", "500"}, Want: func(o *Options) bool {
			return o.forward.Mode == forward.ModePassThrough && len(o.rules.List()) == 1
		}},
		{Args: []string{"--addr", "0.0.0.0:8787"}, Err: "--allow-remote"},
		{Args: []string{"--answer", "404"}, Want: func(o *Options) bool { return o.rules.List()[0].Action.Steps[0].Status == 404 }},
		{Args: []string{"--max-body", "0"}, Err: "--max-body"},
		{Args: []string{"--path", "webhooks"}, Err: "--path must start"},
		{Args: []string{"--pprof", "0.0.0.0:6060"}, Err: "not a loopback address"},
		{Args: []string{"--tunnel-hostname", "h.example.com"}, Err: "needs --tunnel"},
		{Args: []string{"extra"}, Err: "unexpected argument"},
		{Args: []string{"--relay-env", "RELAY"}, Want: func(o *Options) bool { return o.Relay.conn != nil && o.Relay.conn.Name == "alice" }},
		{Args: []string{"--relay-env", "NOPE"}, Err: "--relay-env NOPE: the environment variable is unset or empty"},
		{Args: []string{"--relay-env", "NOT_RELAY"}, Err: "--relay-env NOT_RELAY: the relay connection string is damaged"},
		{Args: []string{"--relay-env", "RELAY", "--relay-file", "x"}, Err: "not both"},
		{Args: []string{"--relay-file", "/nope.relay"}, Err: "--relay-file"},
		{Args: []string{"--relay-env", "RELAY", "--forward-to", "http://localhost:3000/", "--forward-mode", "pass-through"}, Err: "forward in ack mode with a relay"},
	})
}
