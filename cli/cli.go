// Package cli holds Hookscope's headless commands. Every job the window can
// do has a command here, driving the same engines and the same store file.
// Each command lives in a package of its own (cli/listen, cli/oauth, …)
// with an Options struct, a NewCmd constructor and a run function; this
// package builds the cobra command tree from them and runs it.
package cli

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/checkconsumer"
	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/completion"
	"github.com/hookscope/hookscope/cli/export"
	"github.com/hookscope/hookscope/cli/forwardagain"
	"github.com/hookscope/hookscope/cli/importcmd"
	"github.com/hookscope/hookscope/cli/list"
	"github.com/hookscope/hookscope/cli/listen"
	"github.com/hookscope/hookscope/cli/mcp"
	"github.com/hookscope/hookscope/cli/oauth"
	"github.com/hookscope/hookscope/cli/pull"
	relaycmd "github.com/hookscope/hookscope/cli/relay"
	"github.com/hookscope/hookscope/cli/replay"
	"github.com/hookscope/hookscope/cli/resends"
	"github.com/hookscope/hookscope/cli/reverify"
	"github.com/hookscope/hookscope/cli/samples"
	"github.com/hookscope/hookscope/cli/sandbox"
	"github.com/hookscope/hookscope/cli/send"
	"github.com/hookscope/hookscope/cli/show"
	"github.com/hookscope/hookscope/cli/tail"
	"github.com/hookscope/hookscope/cli/version"
)

// Version is the Hookscope version; release builds override it with
// -ldflags "-X github.com/hookscope/hookscope/cli.Version=…".
var Version = "0.1.0-dev"

// Env is what a command gets from the process (see cmdutil.Env).
type Env = cmdutil.Env

// DefaultListenAddr is where `hookscope listen` listens unless told
// otherwise.
const DefaultListenAddr = listen.DefaultAddr

// Main runs the command line from the real process and returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, _ := os.Stdout.Stat()
	env := &Env{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Getenv:     os.Getenv,
		IsTerminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
	}
	return Run(ctx, env, args)
}

// Run executes args (without the program name) and returns the exit code:
// 0 success, 1 failure, 2 wrong usage. A nil Getenv reads nothing; an
// empty Version is this build's.
func Run(ctx context.Context, env *Env, args []string) int {
	e := cmdutil.WithDefaults(env, Version)
	return cmdutil.Execute(ctx, e, NewRootCmd(e), args)
}

// NewRootCmd builds the whole command tree on env. The man pages and the
// completion scripts are generated from it too.
func NewRootCmd(env *Env) *cobra.Command {
	root := cmdutil.NewRoot(env)
	root.Short = "Inspect the video service's webhooks and walk its OAuth flow"
	root.Long = `Hookscope: inspect the video service's webhooks and walk its OAuth flow.

Without arguments hookscope opens the desktop app; with a command it runs
headless. The window and the commands share one store file (--db overrides
it for a command, HOOKSCOPE_DB for the window).

Exit codes: 0 success, 1 failure, 2 wrong usage.`
	root.Example = `  hookscope listen --secret-env WEBHOOK_SECRET
  hookscope send http://127.0.0.1:8787/webhooks --all-types --secret-env WEBHOOK_SECRET
  hookscope replay 42 43 --to http://127.0.0.1:3000/webhooks
  hookscope export capture.har
  hookscope help listen
  source <(hookscope completion bash)`
	root.Version = env.Version
	root.SetVersionTemplate("hookscope {{.Version}}\n")
	root.AddCommand(
		listen.NewCmd(env, nil),
		reverify.NewCmd(env, nil),
		send.NewCmd(env, nil),
		samples.NewCmd(env, nil),
		replay.NewCmd(env, nil),
		checkconsumer.NewCmd(env, nil),
		export.NewCmd(env, nil),
		importcmd.NewCmd(env, nil),
		pull.NewCmd(env, nil),
		relaycmd.NewCmd(env),
		oauth.NewCmd(env),
		sandbox.NewCmd(env, nil),
		version.NewCmd(env),
		completion.NewCmd(env),
		list.NewCmd(env, nil),
		show.NewCmd(env, nil),
		tail.NewCmd(env, nil),
		forwardagain.NewCmd(env, nil),
		resends.NewCmd(env, nil),
		mcp.NewCmd(env, nil),
	)
	root.SetHelpCommand(newHelpCmd(root))
	return root
}

// newHelpCmd is `hookscope help [command]`: cobra's own answers an unknown
// topic with the whole usage and exit 0; this one with a usage error that
// names the nearest command.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Example: "  hookscope help listen\n  hookscope help oauth call",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					out = append(out, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cmd := root
			for _, a := range args {
				next := findSub(cmd, a)
				if next == nil {
					return cmdutil.UsageErrorf("no help topic %q: %v", strings.Join(args, " "), cmdutil.Subcommands(cmd, []string{a}))
				}
				cmd = next
			}
			return cmd.Help()
		},
	}
}

// findSub returns cmd's subcommand called name (or one of its aliases).
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}
