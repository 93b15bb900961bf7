package send

import (
	"context"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
)

// TestParse checks arguments and flags -> Options, without sending.
func TestParse(t *testing.T) {
	const u = "http://127.0.0.1:8080/hooks"
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"K": "k-value"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		{Args: []string{u, "--all-types"}, Want: func(o *Options) bool { return o.To == u && o.AllTypes && o.Count == 1 && o.Timeout == 10*time.Second }},
		{Args: []string{"--to", u, "--all-types"}, Want: func(o *Options) bool { return o.To == u }},
		{Args: []string{"--all-types", u, "--to", u}, Want: func(o *Options) bool { return o.To == u }},
		{Args: []string{u, "--type", "media.ready", "--type", "media.deleted", "--count", "3", "--seed", "7"}, Want: func(o *Options) bool {
			return reflect.DeepEqual(o.Types, []string{"media.ready", "media.deleted"}) && o.Count == 3 && o.Seed == 7
		}},
		{Args: []string{u, "--scenario", "at-least-once", "--batch", "2", "--duplicates", "1", "--shuffle", "--json", "--ignore-status", "--timeout", "2s"}, Want: func(o *Options) bool {
			return o.Scenario == "at-least-once" && o.Batch == 2 && o.Duplicates == 1 && o.Shuffle && o.JSON && o.IgnoreStatus && o.Timeout == 2*time.Second
		}},
		{Args: []string{u, "--all-types", "--secret", "a,b", "--secret-env", "K"}, Want: func(o *Options) bool {
			return len(o.secrets) == 2 && string(o.secrets[0]) == "a,b" && string(o.secrets[1]) == "k-value"
		}},
		{Args: []string{u, "--to", "http://other/", "--all-types"}, Err: "disagree"},
		{Args: []string{u, u, "--all-types"}, Err: "too many arguments"},
		{Args: []string{"--all-types"}, Err: "the consumer URL is required"},
		{Args: []string{"ftp://x", "--all-types"}, Err: "not an http(s) URL"},
		{Args: []string{u}, Err: "choose what to send"},
		{Args: []string{u, "--all-types", "--count", "x"}, Err: `--count "x": want a whole number`},
	})
}
