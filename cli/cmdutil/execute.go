package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// NewRoot makes the bare "hookscope" command every command hangs from: its
// streams are env's, errors are printed once by Execute (never by cobra),
// an unknown subcommand or flag is a one-line usage error. The command
// line's root (cli.NewRootCmd) adds the description and the commands;
// tests hang a single command from it.
func NewRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:                        "hookscope",
		Args:                       Subcommands,
		SuggestionsMinimumDistance: 2,
		SilenceUsage:               true,
		SilenceErrors:              true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(FlagError)
	return root
}

// Execute runs args (without the program name) on root and returns the
// exit code: 0 success, 1 failure (or what an ExitCoder says), 2 wrong
// usage. It prints a failure as "hookscope <command>: <error>"; a usage
// error gets a second line pointing at the command's --help.
func Execute(ctx context.Context, env *Env, root *cobra.Command, args []string) int {
	args = singleDashLong(root, args)
	var cmd *cobra.Command
	var err error
	root.InitDefaultHelpCmd()
	// cobra adds its hidden __complete command when it runs; it is never mistyped.
	if c, rest, ferr := root.Find(args); ferr == nil && c.HasSubCommands() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && !strings.HasPrefix(rest[0], "__") {
		// A mistyped command followed by flags ("lisen --addr x"): cobra
		// would parse the flags against the parent and answer "unknown
		// flag"; name the command instead, as for the bare word.
		cmd, err = c, Subcommands(c, rest[:1])
	} else {
		root.SetArgs(args)
		cmd, err = root.ExecuteContextC(ctx)
	}
	if err == nil {
		return 0
	}
	if cmd == nil {
		cmd = root
	}
	path := cmd.CommandPath()
	if IsUsage(err) {
		fmt.Fprintf(env.Stderr, "%s: %v\n", path, err)
		fmt.Fprintf(env.Stderr, "Run '%s --help' for usage.\n", path)
		return 2
	}
	fmt.Fprintf(env.Stderr, "%s: %v\n", path, err)
	var ec ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// RunCommand runs `hookscope <args>` on a tree that holds only the command
// newCmd builds, as the binary would run it: how each command package's
// tests run their command in-process. Env defaults as in WithDefaults.
func RunCommand(ctx context.Context, env *Env, newCmd func(*Env) *cobra.Command, args []string) int {
	e := WithDefaults(env, "test")
	root := NewRoot(e)
	root.AddCommand(newCmd(e))
	return Execute(ctx, e, root, args)
}

// WithDefaults returns a copy of env whose nil Getenv reads nothing and
// whose empty Version is version.
func WithDefaults(env *Env, version string) *Env {
	e := *env
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	if e.Version == "" {
		e.Version = version
	}
	return &e
}

// singleDashLong rewrites "-name" and "-name=value" to their "--" form when
// name is a long flag of the command args select: Go's flag package, which
// the commands were first written on, accepted one dash, and scripts
// written then keep working.
func singleDashLong(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil {
			out[i] = "-" + a
		}
	}
	return out
}
