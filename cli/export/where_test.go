package export

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
)

// TestExportWhere: --where selects what is exported, with the other
// selection flags (AND); a bad expression is a usage error with a caret.
func TestExportWhere(t *testing.T) {
	db := clitest.SeedStore(t)
	newCmd := func(env *cmdutil.Env) *cobra.Command { return NewCmd(env, nil) }
	res := clitest.Run(t, newCmd, nil, "export", "-", "--format", "ndjson", "--db", db, "--where", `events.exists(e, e.type.startsWith("media."))`)
	if res.Code != 0 || strings.Count(res.Stdout, "\n") != 2 || !strings.Contains(res.Stdout, "media.ready") || strings.Contains(res.Stdout, "live_event") {
		t.Errorf("--where: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	res = clitest.Run(t, newCmd, nil, "export", "-", "--format", "ndjson", "--db", db, "--where", `events.exists(e, e.type.startsWith("media."))`, "--type", "media.ready")
	if res.Code != 0 || strings.Count(res.Stdout, "\n") != 1 {
		t.Errorf("--where and --type: exit %d\n%s", res.Code, res.Stdout)
	}
	res = clitest.Run(t, newCmd, nil, "export", filepath.Join(t.TempDir(), "x.har"), "--db", db, "--where", `delivery.signature == "unsigned"`)
	if res.Code != 2 || !strings.Contains(res.Stderr, `did you mean "missing"?`) || !strings.Contains(res.Stderr, "^") {
		t.Errorf("bad --where: exit %d %s", res.Code, res.Stderr)
	}
}
