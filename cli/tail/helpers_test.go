package tail_test

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/cli/tail"
)

func clitestEnv(out *clitest.Buffer) *cmdutil.Env {
	return &cmdutil.Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: out}
}

func runTail(ctx context.Context, env *cmdutil.Env, args ...string) int {
	return cmdutil.RunCommand(ctx, env, func(e *cmdutil.Env) *cobra.Command { return tail.NewCmd(e, nil) }, args)
}
