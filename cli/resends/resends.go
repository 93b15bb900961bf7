// Package resends is `hookscope resends`: the re-send observatory. Each
// message's attempts and what they were answered, and the service's
// re-send schedule learned from them.
package resends

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # the learned schedule, and the messages that were sent more than once
  hookscope resends

  # one message's attempts
  hookscope resends --hook 6f1c2b9e0a3d4e5f

  # every attempt of the media.* messages as CSV
  hookscope resends --where 'events.exists(e, e.type.startsWith("media."))' --csv > attempts.csv`

// DefaultLimit is how many re-sent messages the text output shows.
const DefaultLimit = 20

// Options are resends' flags.
type Options struct {
	Env    *cmdutil.Env
	DBPath string
	Where  string
	Hooks  []string
	Limit  int
	JSON   bool
	CSV    bool

	expr *rules.Expr
}

// NewCmd builds `hookscope resends`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "resends [--where EXPR] [--hook UUID]... [--json | --csv]",
		Short: "Show each message's attempts and the service's re-send schedule learned from them",
		Long: `The re-send observatory. For each message (hook uuid) the service's attempts:
when each arrived, what it was answered (by Hookscope, or by your app in
pass-through) and the gap since the one before. Across all messages, the
schedule learned from them: how long after a failed answer the service
sent again, and whether it ever re-sent after a 2xx. --where keeps the
messages with at least one delivery the expression selects (with all their
attempts). --json prints the timelines and the schedule; --csv one row per
attempt. Answer rules (docs/rules.md) are the way to provoke re-sends.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.StringVar(&o.Where, "where", "", "only messages with a delivery this `expression` is true of (docs/rules.md)")
	fs.StringArrayVar(&o.Hooks, "hook", nil, "only this message's `uuid` (repeatable)")
	fs.IntVar(&o.Limit, "limit", DefaultLimit, "text output: show at most this many re-sent messages, the latest (0: all)")
	fs.BoolVar(&o.JSON, "json", false, "print the timelines and the schedule as JSON")
	fs.BoolVar(&o.CSV, "csv", false, "print one CSV row per attempt")
	return cmd
}

func (o *Options) validate([]string) error {
	if o.JSON && o.CSV {
		return cmdutil.UsageErrorf("--json and --csv exclude each other")
	}
	if o.Limit < 0 {
		return cmdutil.UsageErrorf("--limit must be 0 (all) or more, got %d", o.Limit)
	}
	var err error
	o.expr, err = readstore.Where(o.Where)
	return err
}

// Report is what resends prints and the agent interface's timeline tool
// returns (the domain's, inspector/resends).
type Report = resends.Report

// Observe is resends.Observe on the store.
func Observe(ctx context.Context, db *storage.DB, e *rules.Expr, hooks []string, now time.Time) (*Report, error) {
	return resends.Observe(ctx, db, e, hooks, now)
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	db, err := cmdutil.OpenExistingStore(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	hooks := o.Hooks
	if len(hooks) == 0 {
		hooks = nil
	}
	rep, err := Observe(ctx, db, o.expr, hooks, time.Now())
	if err != nil {
		return err
	}
	switch {
	case o.JSON:
		return cmdutil.PrintJSON(env, rep)
	case o.CSV:
		return resends.WriteCSV(env.Stdout, rep.Timelines)
	}
	if len(o.Hooks) > 0 && len(rep.Timelines) == 0 {
		return fmt.Errorf("no stored delivery carries hook uuid %v", o.Hooks)
	}
	shown := rep.Timelines
	if len(o.Hooks) == 0 {
		// Single attempts are the schedule's "nothing after a 2xx": the
		// timelines worth reading are the re-sent messages.
		shown = slices.DeleteFunc(slices.Clone(shown), func(t resends.Timeline) bool { return len(t.Attempts) < 2 })
		if o.Limit > 0 && len(shown) > o.Limit {
			fmt.Fprintf(env.Stdout, "(%d earlier re-sent messages not shown; --limit 0 shows all)\n", len(shown)-o.Limit)
			shown = shown[len(shown)-o.Limit:]
		}
	}
	for _, tl := range shown {
		fmt.Fprint(env.Stdout, TimelineText(tl))
	}
	s := rep.Schedule
	fmt.Fprintln(env.Stdout, s.Summary())
	for _, l := range s.Details() {
		fmt.Fprintln(env.Stdout, "  "+l)
	}
	return nil
}

// TimelineText is one message's attempts for people.
func TimelineText(tl resends.Timeline) string {
	out := fmt.Sprintf("Message %s: %s\n", tl.HookUUID, plural.S(len(tl.Attempts), "attempt"))
	gaps, width := make([]string, len(tl.Attempts)), 9
	for i, a := range tl.Attempts {
		if a.Number > 1 {
			gaps[i] = "+" + human.Duration(a.Gap)
			width = max(width, len(gaps[i]))
		}
	}
	for i, a := range tl.Attempts {
		out += fmt.Sprintf("  #%-2d %s  %-*s  %-28s delivery %d\n", a.Number, a.ReceivedAt.Local().Format(time.DateTime), width, gaps[i], a.Answer, a.DeliveryID)
	}
	return out
}
