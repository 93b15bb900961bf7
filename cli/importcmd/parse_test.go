package importcmd

import (
	"context"
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
)

// TestParse checks arguments and flags -> Options, without importing.
func TestParse(t *testing.T) {
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"S": "s3cret"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		{Args: []string{"capture.har"}, Want: func(o *Options) bool { return o.Path == "capture.har" && o.DBPath == "" }},
		{Args: []string{"--db", "/tmp/x.db", "hooks.ndjson", "--json"}, Want: func(o *Options) bool { return o.Path == "hooks.ndjson" && o.DBPath == "/tmp/x.db" && o.JSON }},
		{Args: []string{"testdata/webhooks", "--secret-env", "S"}, Want: func(o *Options) bool { return len(o.secrets) == 1 && string(o.secrets[0]) == "s3cret" }},
		{Args: []string{}, Err: "give the HAR file"},
		{Args: []string{"a", "b"}, Err: "one PATH"},
		{Args: []string{"a", "--secret-env", "UNSET"}, Err: "unset or empty"},
	})
}
