// Package completion is `hookscope completion`: the shell completion
// scripts cobra generates from the command tree. The scripts ask the
// binary (its hidden __complete command) for candidates, so stored values
// — profile names, delivery ids — are completed from the store.
package completion

import (
	"slices"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
)

const long = `Print the shell completion script for bash, zsh, fish or PowerShell. Commands,
flags, event types, export formats, answer modes, OAuth profile names and
recent delivery ids are completed (the last two from the store --db names).

Bash (needs the bash-completion package):
  source <(hookscope completion bash)                 # this shell only
  hookscope completion bash > ~/.local/share/bash-completion/completions/hookscope

Zsh:
  hookscope completion zsh > "${fpath[1]}/_hookscope"  # then start a new shell
  # (compinit must be enabled: autoload -U compinit; compinit)

Fish:
  hookscope completion fish > ~/.config/fish/completions/hookscope.fish

PowerShell:
  hookscope completion powershell | Out-String | Invoke-Expression`

// NewCmd builds `hookscope completion`.
func NewCmd(env *cmdutil.Env) *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	return &cobra.Command{
		Use:       "completion bash|zsh|fish|powershell",
		Short:     "Print the shell completion script for bash, zsh, fish or PowerShell",
		Long:      long,
		Example:   "  source <(hookscope completion bash)\n  hookscope completion fish > ~/.config/fish/completions/hookscope.fish",
		ValidArgs: shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(shells, args[0]) {
				return cmdutil.UsageErrorf("name one shell: bash, zsh, fish or powershell (got %q)", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), env.Stdout
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			}
			return root.GenPowerShellCompletionWithDesc(out)
		},
	}
}
