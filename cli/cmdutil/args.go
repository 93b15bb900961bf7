package cmdutil

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// NoArgs refuses positional arguments: the command takes only flags.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("unexpected argument %q (this command takes only flags)", args[0])
	}
	return nil
}

// MaxArgs allows at most n positional arguments; what says what they are
// ("the consumer URL").
func MaxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return UsageErrorf("too many arguments %q: %s takes %s", args, cmd.Name(), what)
		}
		return nil
	}
}

// Subcommands is the Args check of a command that groups subcommands (the
// root, oauth): an unknown subcommand is a usage error that names the
// nearest one.
func Subcommands(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return &UsageError{msg: msg}
}

// ArgOrFlag merges a value that may be given as the first positional
// argument or as a flag (URL or --to URL): it returns whichever was given,
// and a usage error when both were, with different values.
func ArgOrFlag(args []string, flag, flagValue string) (string, error) {
	if len(args) == 0 {
		return flagValue, nil
	}
	if flagValue != "" && flagValue != args[0] {
		return "", UsageErrorf("the argument %q and %s %q disagree: give it once, as an argument or with %s", args[0], flag, flagValue, flag)
	}
	return args[0], nil
}

// RunE is the RunE of a command built the house's way: validate the
// arguments and flags into o (usage errors), then run runF — a test's
// stand-in that records o — or, when runF is nil, the command's run.
func RunE[O any](o *O, validate func(args []string) error, runF, run func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := validate(args); err != nil {
			return err
		}
		if runF != nil {
			return runF(cmd.Context(), o)
		}
		return run(cmd.Context(), o)
	}
}
