// Package replay is `hookscope replay`: send stored deliveries again,
// byte-exact, re-signed, edited, or as a chaos run.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # send delivery 42 again, byte for byte, to your local consumer
  hookscope replay 42 --to http://127.0.0.1:3000/webhooks

  # re-sign with your development secret (the service's secret stays out of it)
  DEV_SECRET=... hookscope replay 42 --to http://127.0.0.1:3000/webhooks --resign-secret-env DEV_SECRET

  # edit the body first (it must be JSON; it is re-signed)
  hookscope replay 42 --body edited.json --resign-secret-env DEV_SECRET --to http://127.0.0.1:3000/webhooks

  # idempotency: every media.* delivery of the last hour three times, shuffled
  hookscope replay --since 1h --times 3 --shuffle --to http://127.0.0.1:3000/webhooks

  # split batches into one-event messages (new hook uuids, re-signed), 200 ms apart
  hookscope replay 7 8 --split --delay 200ms --resign-secret-env DEV_SECRET --to http://127.0.0.1:3000/webhooks`

// Options are replay's arguments and flags.
type Options struct {
	Env            *cmdutil.Env
	DBPath         string
	Selection      *cmdutil.SelectionFlags
	To             string
	ResignSecret   string
	ResignEnv      string
	BodyFile       string
	StaleSignature bool
	Times          int
	Shuffle        bool
	Split          bool
	Merge          bool
	Events         []string
	Delay          time.Duration
	Seed           int64
	Max            int
	Timeout        time.Duration
	JSON           bool
	Where          string

	expr   *rules.Expr
	secret []byte
	body   []byte
	chaos  bool
	filter storage.Filter
}

// NewCmd builds `hookscope replay`; runF replaces the sending in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "replay [ID...] [--type T | --since D | ...] --to URL [flags]",
		Short: "Send stored deliveries again: byte-exact, re-signed, edited, or as a chaos run",
		Long: `Send stored deliveries to a URL again: byte for byte, re-signed with your
development secret, with an edited body, or as a chaos run (repeated,
shuffled, split or merged). Choose deliveries by id (arguments or --id) or by
--type, --since, --signature, --duplicates, or an expression (--where). Every send is recorded with its
delivery.`,
		Example:           examples,
		ValidArgsFunction: cmdutil.CompleteDeliveryIDs,
		RunE:              cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	o.Selection = cmdutil.AddSelectionFlags(fs)
	fs.StringVar(&o.To, "to", "", "URL to send to (http or https); default: the last target used with this store")
	fs.StringVar(&o.ResignSecret, "resign-secret", "", "re-sign with this secret (prefer --resign-secret-env)")
	fs.StringVar(&o.ResignEnv, "resign-secret-env", "", "name of an environment variable holding the secret to re-sign with")
	fs.StringVar(&o.BodyFile, "body", "", "replace the body with this file's bytes (- for standard input); one delivery only; must be JSON")
	fs.BoolVar(&o.StaleSignature, "stale-signature", false, "with --body: keep the original signature, to see your consumer refuse it")
	fs.IntVar(&o.Times, "times", 1, "send every message this many times (a re-send: same bytes, same hook uuid)")
	fs.BoolVar(&o.Shuffle, "shuffle", false, "mix the order of all sends")
	fs.BoolVar(&o.Split, "split", false, "send each event of a batch as its own message (new hook uuid, re-signed)")
	fs.BoolVar(&o.Merge, "merge", false, "send all selected events as one message (new hook uuid, re-signed)")
	fs.StringArrayVar(&o.Events, "event", nil, "with --split or --merge: only this event `uuid` of the selected deliveries (repeatable)")
	fs.DurationVar(&o.Delay, "delay", 0, "wait this long between sends")
	fs.Int64Var(&o.Seed, "seed", 0, "seed for --shuffle and new hook uuids (0: random)")
	fs.IntVar(&o.Max, "max", 1000, "refuse to replay a selection larger than this")
	fs.DurationVar(&o.Timeout, "timeout", replay.DefaultTimeout, "give up on one answer after this long")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per send")
	fs.StringVar(&o.Where, "where", "", readstore.WhereUsage)
	cmdutil.RegisterSelectionCompletion(cmd)
	_ = cmd.MarkFlagFilename("body", "json")
	return cmd
}

// validate checks the flags, resolves the re-signing secret and reads an
// edited body.
func (o *Options) validate(args []string) error {
	env := o.Env
	o.Selection.IDs = append(o.Selection.IDs, args...)
	if !o.Selection.Set() && o.Where == "" {
		return cmdutil.UsageErrorf("choose what to replay: delivery ids, --id, --type, --since, --signature, --duplicates or --where")
	}
	var err error
	if o.expr, err = readstore.Where(o.Where); err != nil {
		return err
	}
	if o.filter, err = o.Selection.Filter(time.Now()); err != nil {
		return err
	}
	if o.To != "" {
		if _, err := replay.ParseTarget(o.To); err != nil {
			return cmdutil.UsageErrorf("--to: %v", err)
		}
	}
	if o.Split && o.Merge {
		return cmdutil.UsageErrorf("--split and --merge exclude each other: split sends one event per message, merge sends all events in one")
	}
	if o.Times < 1 {
		return cmdutil.UsageErrorf("--times must be 1 or more, got %d", o.Times)
	}
	if o.Delay < 0 || o.Timeout <= 0 || o.Max < 1 {
		return cmdutil.UsageErrorf("--delay must not be negative, --timeout and --max must be positive")
	}
	if o.ResignSecret != "" && o.ResignEnv != "" {
		return cmdutil.UsageErrorf("give --resign-secret or --resign-secret-env, not both")
	}
	switch {
	case o.ResignSecret != "":
		o.secret = []byte(o.ResignSecret)
	case o.ResignEnv != "":
		v := env.Getenv(o.ResignEnv)
		if v == "" {
			return cmdutil.UsageErrorf("--resign-secret-env %s: the environment variable is unset or empty", o.ResignEnv)
		}
		o.secret = []byte(v)
	}
	o.chaos = o.Times > 1 || o.Shuffle || o.Split || o.Merge || o.Delay > 0
	if len(o.Events) > 0 && !o.Split && !o.Merge {
		return cmdutil.UsageErrorf("--event picks events to split or merge; add --split or --merge")
	}
	if (o.Split || o.Merge) && o.secret == nil {
		return cmdutil.UsageErrorf("--split and --merge build new messages, which must be signed: add --resign-secret-env VAR")
	}
	if o.BodyFile == "" {
		if o.StaleSignature {
			return cmdutil.UsageErrorf("--stale-signature only makes sense with --body")
		}
		return nil
	}
	if o.chaos {
		return cmdutil.UsageErrorf("--body replays one delivery as edited; it does not combine with --times, --shuffle, --split, --merge or --delay")
	}
	if o.secret == nil && !o.StaleSignature {
		return cmdutil.UsageErrorf("--body needs a secret to re-sign the edited body (--resign-secret-env VAR), or --stale-signature to keep the old one on purpose")
	}
	return nil
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	var err error
	if o.BodyFile != "" {
		if o.BodyFile == "-" {
			o.body, err = io.ReadAll(env.Stdin)
		} else {
			o.body, err = os.ReadFile(o.BodyFile)
		}
		if err != nil {
			return fmt.Errorf("read --body: %w", err)
		}
		if err := replay.ValidateJSON(o.body); err != nil {
			return fmt.Errorf("--body %s: %w", o.BodyFile, err)
		}
	}
	db, err := cmdutil.OpenExistingStore(env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.To == "" {
		last, err := replay.LastTarget(ctx, db)
		if err != nil {
			return err
		}
		if last == "" {
			return cmdutil.UsageErrorf("--to is required: the URL to send to (no earlier target is remembered in this store)")
		}
		o.To = last
		fmt.Fprintf(env.Stderr, "sending to %s (the last target used)\n", last)
	} else if _, err := replay.RememberTarget(ctx, db, o.To); err != nil {
		return err
	}
	var ds []*inspector.Delivery
	errTooMany := errors.New("too many")
	st, err := db.EachWhere(ctx, o.filter, o.expr, time.Now(), func(r *inspector.Record) error {
		if len(ds) == o.Max {
			return errTooMany
		}
		ds = append(ds, r.Delivery)
		return nil
	})
	readstore.Failed(env.Stderr, st)
	switch {
	case errors.Is(err, errTooMany):
		return fmt.Errorf("the selection has more than %d deliveries; narrow it or raise --max", o.Max)
	case err != nil:
		return err
	case len(ds) == 0:
		return errors.New("no stored delivery matches the selection")
	case o.body != nil && len(ds) != 1:
		return fmt.Errorf("--body replaces one delivery's body, but the selection has %d deliveries; pick one by its id", len(ds))
	}

	out := cmdutil.NewSyncWriter(env.Stdout)
	print := func(r *replay.Result) {
		if o.JSON {
			out.PrintJSON(r)
		} else {
			out.Print(r.Line() + "\n")
		}
	}
	r := replay.New(db)
	r.Timeout = o.Timeout
	var results []*replay.Result
	if o.chaos {
		rep, err := r.Chaos(ctx, ds, replay.ChaosOptions{Target: o.To, Times: o.Times, Shuffle: o.Shuffle, Split: o.Split, Merge: o.Merge, EventUUIDs: o.Events,
			Delay: o.Delay, Secret: o.secret, Seed: o.Seed, OnResult: func(done, total int, res *replay.Result) { print(res) }})
		if rep != nil {
			results = rep.Results
		}
		if err != nil {
			return err
		}
	} else {
		for _, d := range ds {
			if err := ctx.Err(); err != nil {
				return err
			}
			res, err := r.Replay(ctx, d, replay.Options{Target: o.To, Secret: o.secret, Body: o.body, StaleSignature: o.StaleSignature})
			if err != nil {
				return err
			}
			print(res)
			results = append(results, res)
		}
	}
	bad := 0
	for _, res := range results {
		if !res.OK() {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %s not answered 2xx", bad, plural.Count(len(results), "send was", "sends were"))
	}
	if !o.JSON {
		all := "all answered 2xx"
		if len(results) == 1 {
			all = "answered 2xx"
		}
		fmt.Fprintf(env.Stderr, "%s, %s; recorded with their deliveries in %s\n", plural.S(len(results), "send"), all, db.Path())
	}
	return nil
}
