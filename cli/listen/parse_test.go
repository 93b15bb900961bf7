package listen

import (
	"context"
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
)

// TestParse checks flags -> Options, without listening.
func TestParse(t *testing.T) {
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"S": "whsec", "TOK": "eyJ"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		{Args: []string{}, Want: func(o *Options) bool {
			return o.Addr == DefaultAddr && o.Path == DefaultPath && o.MaxBody == inspector.DefaultMaxBody && o.mode == inspector.AnswerMode("200") && len(o.secrets) == 0
		}},
		{Args: []string{"--secret-env", "S", "--secret", "old", "--json", "--db", "/tmp/h.db", "--max-body", "1048576", "--answer", "500"}, Want: func(o *Options) bool {
			return len(o.secrets) == 2 && string(o.secrets[0]) == "old" && string(o.secrets[1]) == "whsec" && o.JSON && o.DBPath == "/tmp/h.db" && o.MaxBody == 1<<20 && o.mode == inspector.AnswerMode("500")
		}},
		{Args: []string{"--addr", "0.0.0.0:8787", "--allow-remote"}, Want: func(o *Options) bool { return o.AllowRemote }},
		{Args: []string{"--tunnel", "--tunnel-token-env", "TOK", "--tunnel-hostname", "hooks.example.com"}, Want: func(o *Options) bool {
			return o.Tunnel.Enabled && o.Tunnel.TokenEnv == "TOK" && o.Tunnel.Hostname == "hooks.example.com"
		}},
		{Args: []string{"--addr", "0.0.0.0:8787"}, Err: "--allow-remote"},
		{Args: []string{"--answer", "404"}, Err: "--answer"},
		{Args: []string{"--max-body", "0"}, Err: "--max-body"},
		{Args: []string{"--path", "webhooks"}, Err: "--path must start"},
		{Args: []string{"--pprof", "0.0.0.0:6060"}, Err: "not a loopback address"},
		{Args: []string{"--tunnel-hostname", "h.example.com"}, Err: "needs --tunnel"},
		{Args: []string{"extra"}, Err: "unexpected argument"},
	})
}
