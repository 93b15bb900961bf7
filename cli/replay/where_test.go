package replay

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
)

// TestReplayWhere: --where alone is a selection; it picks what is sent.
func TestReplayWhere(t *testing.T) {
	db := clitest.SeedStore(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	newCmd := func(env *cmdutil.Env) *cobra.Command { return NewCmd(env, nil) }
	res := clitest.Run(t, newCmd, nil, "replay", "--db", db, "--to", srv.URL, "--where", `events.size() == 2`)
	if res.Code != 0 || n.Load() != 1 || !strings.Contains(res.Stdout, "delivery 1") {
		t.Errorf("exit %d, %d sends: %s %s", res.Code, n.Load(), res.Stdout, res.Stderr)
	}
}
