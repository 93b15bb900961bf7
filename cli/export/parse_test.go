package export

import (
	"context"
	"io"
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector/export"
)

// TestParse checks arguments and flags -> Options, without writing.
func TestParse(t *testing.T) {
	env := &cmdutil.Env{Stderr: io.Discard, Getenv: clitest.Getenv(map[string]string{"T": "test-secret"})}
	clitest.ParseTable(t, func(runF func(context.Context, *Options) error) *cobra.Command { return NewCmd(env, runF) }, []clitest.ParseCase[Options]{
		// The format comes from the extension unless --format.
		{Args: []string{"capture.har"}, Want: func(o *Options) bool { return o.Out == "capture.har" && o.format == export.HAR }},
		{Args: []string{"hooks.NDJSON"}, Want: func(o *Options) bool { return o.format == export.NDJSON }},
		{Args: []string{"hooks.jsonl", "--type", "media.ready"}, Want: func(o *Options) bool {
			return o.format == export.NDJSON && reflect.DeepEqual(o.filter.Types, []string{"media.ready"})
		}},
		{Args: []string{"capture.har", "--format", "ndjson"}, Want: func(o *Options) bool { return o.format == export.NDJSON }},
		{Args: []string{"--format", "har", "--out", "hooks.har"}, Want: func(o *Options) bool { return o.Out == "hooks.har" && o.format == export.HAR }},
		{Args: []string{"picked", "--format", "json", "--id", "12,15"}, Want: func(o *Options) bool {
			return o.format == export.JSON && reflect.DeepEqual(o.filter.IDs, []int64{12, 15})
		}},
		{Args: []string{"testdata/webhooks", "--format", "fixtures", "--secret-env", "T"}, Want: func(o *Options) bool {
			return o.format == export.Fixtures && string(o.secret) == "test-secret"
		}},
		{Args: []string{"-", "--format", "ndjson", "--duplicates", "--reveal"}, Want: func(o *Options) bool { return o.Out == "-" && o.filter.DuplicatesOnly && o.Reveal }},
		{Args: []string{"picked"}, Err: "cannot tell the format"},
		{Args: []string{"-"}, Err: "--format is required with -"},
		{Args: []string{}, Err: "give the file or folder to write"},
		{Args: []string{"a.har", "--out", "b.har"}, Err: "disagree"},
		{Args: []string{"x.har", "--format", "xml"}, Err: "unknown export format"},
		{Args: []string{"-", "--format", "json"}, Err: "writes a folder"},
		{Args: []string{"x", "--format", "fixtures"}, Err: "needs --secret"},
		{Args: []string{"x.har", "--secret", "s"}, Err: "only used by --format fixtures"},
	})
}
