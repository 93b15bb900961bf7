package checkconsumer

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
)

// TestParse checks arguments and flags -> Options, without checking.
func TestParse(t *testing.T) {
	const u = "http://127.0.0.1:3000/webhooks"
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"S": "k"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		{Args: []string{u, "--secret-env", "S"}, Want: func(o *Options) bool { return o.To == u && string(o.secret) == "k" && o.Timeout == 10*time.Second }},
		{Args: []string{"--to", u, "--secret", "k", "--json", "--seed", "3", "--timeout", "2s"}, Want: func(o *Options) bool {
			return o.To == u && o.JSON && o.Seed == 3 && o.Timeout == 2*time.Second
		}},
		{Args: []string{u}, Err: "--secret or --secret-env is required"},
		{Args: []string{"--secret", "k"}, Err: "URL is required"},
		{Args: []string{u, "--secret", "a", "--secret", "b"}, Err: "give one secret"},
		{Args: []string{u, "--secret", "k", "--timeout", "0s"}, Err: "--timeout must be positive"},
	})
}
