package replay

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
	const u = "http://127.0.0.1:3000/webhooks"
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"DEV": "dev-secret"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		// The form: ids as arguments, flags after them.
		{Args: []string{"42", "43", "--to", u}, Want: func(o *Options) bool {
			return reflect.DeepEqual(o.filter.IDs, []int64{42, 43}) && o.To == u && o.Times == 1 && !o.chaos
		}},
		{Args: []string{"--id", "7,8", "--to", u}, Want: func(o *Options) bool { return reflect.DeepEqual(o.filter.IDs, []int64{7, 8}) }},
		{Args: []string{"9", "--id", "7", "--to", u}, Want: func(o *Options) bool { return reflect.DeepEqual(o.filter.IDs, []int64{7, 9}) }},
		{Args: []string{"--type", "media.ready", "--since", "1h", "--times", "3", "--shuffle", "--to", u}, Want: func(o *Options) bool {
			return reflect.DeepEqual(o.filter.Types, []string{"media.ready"}) && !o.filter.Since.IsZero() && o.Times == 3 && o.Shuffle && o.chaos
		}},
		{Args: []string{"7", "8", "--split", "--delay", "200ms", "--resign-secret-env", "DEV", "--to", u}, Want: func(o *Options) bool {
			return o.Split && o.Delay == 200*time.Millisecond && string(o.secret) == "dev-secret"
		}},
		{Args: []string{"42", "--body", "edited.json", "--stale-signature"}, Want: func(o *Options) bool { return o.BodyFile == "edited.json" && o.StaleSignature && o.To == "" }},
		{Args: []string{"--to", u}, Err: "choose what to replay"},
		{Args: []string{"abc", "--to", u}, Err: `"abc" is not a delivery id`},
		{Args: []string{"1", "--split", "--merge", "--resign-secret", "s"}, Err: "exclude each other"},
		{Args: []string{"1", "--merge"}, Err: "must be signed"},
		{Args: []string{"1", "--body", "b.json", "--times", "2", "--resign-secret", "s"}, Err: "does not combine"},
		{Args: []string{"1", "--to", "ftp://x"}, Err: "--to"},
	})
}
