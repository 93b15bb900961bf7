// Package version is `hookscope version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
)

// NewCmd builds `hookscope version`.
func NewCmd(env *cmdutil.Env) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the Hookscope version",
		Example: "  hookscope version\n  hookscope --version",
		Args:    cmdutil.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(env.Stdout, "hookscope %s\n", env.Version)
			return err
		},
	}
}
