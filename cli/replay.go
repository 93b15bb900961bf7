package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
)

const replayExamples = `  # send delivery 42 again, byte for byte, to your local consumer
  hookscope replay --id 42 --to http://127.0.0.1:3000/webhooks

  # re-sign with your development secret (the service's secret stays out of it)
  DEV_SECRET=... hookscope replay --id 42 --to http://127.0.0.1:3000/webhooks --resign-secret-env DEV_SECRET

  # edit the body first (it must be JSON; it is re-signed)
  hookscope replay --id 42 --body edited.json --resign-secret-env DEV_SECRET --to http://127.0.0.1:3000/webhooks

  # idempotency: every media.* delivery of the last hour three times, shuffled
  hookscope replay --since 1h --times 3 --shuffle --to http://127.0.0.1:3000/webhooks

  # split batches into one-event messages (new hook uuids, re-signed), 200 ms apart
  hookscope replay --id 7,8 --split --delay 200ms --resign-secret-env DEV_SECRET --to http://127.0.0.1:3000/webhooks`

func runReplay(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "replay", "(--id ID... | --type T | --since D) --to URL [flags]", replayExamples)
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	sel := addSelectionFlags(fs)
	to := fs.String("to", "", "URL to send to (http or https); default: the last target used with this store")
	resign := fs.String("resign-secret", "", "re-sign with this secret (prefer --resign-secret-env)")
	resignEnv := fs.String("resign-secret-env", "", "name of an environment variable holding the secret to re-sign with")
	bodyFile := fs.String("body", "", "replace the body with this file's bytes (- for standard input); one delivery only; must be JSON")
	stale := fs.Bool("stale-signature", false, "with --body: keep the original signature, to see your consumer refuse it")
	times := fs.Int("times", 1, "send every message this many times (a re-send: same bytes, same hook uuid)")
	shuffle := fs.Bool("shuffle", false, "mix the order of all sends")
	split := fs.Bool("split", false, "send each event of a batch as its own message (new hook uuid, re-signed)")
	merge := fs.Bool("merge", false, "send all selected events as one message (new hook uuid, re-signed)")
	var events multiFlag
	fs.Var(&events, "event", "with --split or --merge: only this event uuid of the selected deliveries (repeatable)")
	delay := fs.Duration("delay", 0, "wait this long between sends")
	seed := fs.Int64("seed", 0, "seed for --shuffle and new hook uuids (0: random)")
	maxSel := fs.Int("max", 1000, "refuse to replay a selection larger than this")
	timeout := fs.Duration("timeout", replay.DefaultTimeout, "give up on one answer after this long")
	jsonOut := fs.Bool("json", false, "print one JSON object per send")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !sel.set() {
		return usageError("choose what to replay: --id, --type, --since, --signature or --duplicates")
	}
	if *to != "" {
		if _, err := replay.ParseTarget(*to); err != nil {
			return usageError("--to: %v", err)
		}
	}
	if *split && *merge {
		return usageError("--split and --merge exclude each other: split sends one event per message, merge sends all events in one")
	}
	if *times < 1 {
		return usageError("--times must be 1 or more, got %d", *times)
	}
	if *delay < 0 || *timeout <= 0 || *maxSel < 1 {
		return usageError("--delay must not be negative, --timeout and --max must be positive")
	}
	if *resign != "" && *resignEnv != "" {
		return usageError("give --resign-secret or --resign-secret-env, not both")
	}
	var secret []byte
	switch {
	case *resign != "":
		secret = []byte(*resign)
	case *resignEnv != "":
		v := env.Getenv(*resignEnv)
		if v == "" {
			return usageError("--resign-secret-env %s: the environment variable is unset or empty", *resignEnv)
		}
		secret = []byte(v)
	}
	chaos := *times > 1 || *shuffle || *split || *merge || *delay > 0
	if len(events) > 0 && !*split && !*merge {
		return usageError("--event picks events to split or merge; add --split or --merge")
	}
	if (*split || *merge) && secret == nil {
		return usageError("--split and --merge build new messages, which must be signed: add --resign-secret-env VAR")
	}
	var body []byte
	if *bodyFile != "" {
		if chaos {
			return usageError("--body replays one delivery as edited; it does not combine with --times, --shuffle, --split, --merge or --delay")
		}
		if secret == nil && !*stale {
			return usageError("--body needs a secret to re-sign the edited body (--resign-secret-env VAR), or --stale-signature to keep the old one on purpose")
		}
		var err error
		if *bodyFile == "-" {
			body, err = io.ReadAll(env.Stdin)
		} else {
			body, err = os.ReadFile(*bodyFile)
		}
		if err != nil {
			return fmt.Errorf("read --body: %w", err)
		}
		if err := replay.ValidateJSON(body); err != nil {
			return fmt.Errorf("--body %s: %w", *bodyFile, err)
		}
	} else if *stale {
		return usageError("--stale-signature only makes sense with --body")
	}
	filter, err := sel.filter(time.Now())
	if err != nil {
		return err
	}
	db, err := openStore(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	if *to == "" {
		last, err := replay.LastTarget(ctx, db)
		if err != nil {
			return err
		}
		if last == "" {
			return usageError("--to is required: the URL to send to (no earlier target is remembered in this store)")
		}
		*to = last
		fmt.Fprintf(env.Stderr, "sending to %s (the last target used)\n", last)
	} else if _, err := replay.RememberTarget(ctx, db, *to); err != nil {
		return err
	}
	var ds []*inspector.Delivery
	errTooMany := errors.New("too many")
	err = db.Each(ctx, filter, func(r *inspector.Record) error {
		if len(ds) == *maxSel {
			return errTooMany
		}
		ds = append(ds, r.Delivery)
		return nil
	})
	switch {
	case errors.Is(err, errTooMany):
		return fmt.Errorf("the selection has more than %d deliveries; narrow it or raise --max", *maxSel)
	case err != nil:
		return err
	case len(ds) == 0:
		return errors.New("no stored delivery matches the selection")
	case body != nil && len(ds) != 1:
		return fmt.Errorf("--body replaces one delivery's body, but the selection has %d deliveries; pick one with --id", len(ds))
	}

	out := &syncWriter{w: env.Stdout}
	print := func(r *replay.Result) {
		if *jsonOut {
			out.writeJSON(r)
		} else {
			out.write(r.Line() + "\n")
		}
	}
	r := replay.New(db)
	r.Sender.Timeout = *timeout
	var results []*replay.Result
	if chaos {
		rep, err := r.Chaos(ctx, ds, replay.ChaosOptions{Target: *to, Times: *times, Shuffle: *shuffle, Split: *split, Merge: *merge, EventUUIDs: events,
			Delay: *delay, Secret: secret, Seed: *seed, OnResult: func(done, total int, res *replay.Result) { print(res) }})
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
			res, err := r.Replay(ctx, d, replay.Options{Target: *to, Secret: secret, Body: body, StaleSignature: *stale})
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
		return fmt.Errorf("%d of %d sends were not answered 2xx", bad, len(results))
	}
	if !*jsonOut {
		fmt.Fprintf(env.Stderr, "%d sends, all answered 2xx; recorded with their deliveries in %s\n", len(results), db.Path())
	}
	return nil
}
