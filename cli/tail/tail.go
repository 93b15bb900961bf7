// Package tail is `hookscope tail`: follow a store another process (the
// window, listen) writes, printing each new delivery once, in id order.
package tail

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/cli/list"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # every delivery as it lands (while hookscope listen or the window receives)
  hookscope tail

  # only invalid signatures, as JSON lines for jq
  hookscope tail --where 'delivery.signature == "invalid"' --json`

// AnalysisWait is how long tail waits for a new delivery's analysis
// before printing it as it is: the receiver stores first and analyzes
// right after, and an expression about the verdict or the ledger needs
// the analysis; a store nobody analyzes (a bare import) is not waited on
// forever.
const AnalysisWait = 2 * time.Second

// Options are tail's flags.
type Options struct {
	Env    *cmdutil.Env
	DBPath string
	Where  string
	JSON   bool
	// Every is how often the store is looked at (storage.WatchEvery when 0).
	Every time.Duration

	expr *rules.Expr
}

// NewCmd builds `hookscope tail`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "tail [--where EXPR] [--json]",
		Short: "Print deliveries as another process stores them (Ctrl+C ends)",
		Long: `Follow the store that the window or hookscope listen writes: print each
delivery stored from now on once, in id order, after its analysis (so
--where can use the signature verdict and the dedupe ledger). Ctrl+C ends it.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.StringVar(&o.Where, "where", "", "only deliveries this `expression` is true of (docs/rules.md)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per delivery")
	return cmd
}

func (o *Options) validate([]string) error {
	var err error
	o.expr, err = readstore.Where(o.Where)
	return err
}

func run(ctx context.Context, o *Options) error {
	db, err := cmdutil.OpenExistingStore(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	last, err := db.NewestDeliveryID(ctx)
	if err != nil {
		return err
	}
	out := cmdutil.NewSyncWriter(o.Env.Stdout)
	f := &Follower{DB: db, Expr: o.expr, After: last, Print: func(r list.Row) {
		if o.JSON {
			out.PrintJSON(r)
		} else {
			out.Print(list.Line(r) + "\n")
		}
	}}
	return f.Follow(ctx, o.Every)
}

// Follower prints the deliveries stored after After, once each, in id
// order.
type Follower struct {
	DB    *storage.DB
	Expr  *rules.Expr
	After int64
	Print func(list.Row)
	// firstSeen is when the oldest unanalyzed delivery was first seen.
	firstSeen map[int64]time.Time
}

// Follow looks at the store each time another process writes it, until
// ctx ends (which is not an error).
func (f *Follower) Follow(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		every = storage.WatchEvery
	}
	changed := make(chan struct{}, 1)
	watch := make(chan error, 1)
	go func() {
		watch <- f.DB.Watch(ctx, every, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}()
	// A delivery waiting for its analysis is looked at again even when
	// nothing else is written.
	retry := time.NewTicker(every)
	defer retry.Stop()
	for {
		if err := f.Step(ctx, time.Now()); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			<-watch
			return nil
		case err := <-watch:
			return err
		case <-changed:
		case <-retry.C:
		}
	}
}

// Step prints what was stored since the last step: the deliveries after
// f.After in id order, stopping at one that is not analyzed yet (unless
// it has waited AnalysisWait), so each is printed once and in order.
func (f *Follower) Step(ctx context.Context, now time.Time) error {
	if f.firstSeen == nil {
		f.firstSeen = map[int64]time.Time{}
	}
	var needs rules.Needs
	if f.Expr != nil {
		needs = f.Expr.Needs()
	}
	var matched []int64
	stop := errStop{}
	err := f.DB.EachNarrowed(ctx, rules.Query{Narrowing: rules.Narrowing{MinID: f.After + 1}, Needs: needs}, func(in *rules.Input) error {
		id := in.Record.Delivery.ID
		if in.Record.Analysis == nil {
			seen, ok := f.firstSeen[id]
			if !ok {
				f.firstSeen[id] = now
				seen = now
			}
			if now.Sub(seen) < AnalysisWait {
				return stop
			}
		}
		delete(f.firstSeen, id)
		f.After = id
		if f.Expr != nil {
			in.Now = now
			if ok, err := f.Expr.Eval(*in); err != nil || !ok {
				return nil
			}
		}
		matched = append(matched, id)
		return nil
	})
	if err != nil && err != error(stop) {
		return err
	}
	if len(matched) == 0 {
		return nil
	}
	rows, err := list.Rows(ctx, f.DB, matched)
	if err != nil {
		return err
	}
	// Rows lists newest first; a tail prints in id order.
	for i := len(rows) - 1; i >= 0; i-- {
		f.Print(rows[i])
	}
	return nil
}

type errStop struct{}

func (errStop) Error() string { return "wait for the analysis" }
