package pull

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/relay"
)

// intoBatch is how many deliveries one commit into the store carries.
const intoBatch = 500

// intoSummary is what `pull --into` did.
type intoSummary struct {
	Read     int    `json:"read"`
	Stored   int    `json:"stored"`
	Already  int    `json:"already_there"`
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	Store    string `json:"store"`
}

// runInto imports what the relay holds into a store: in batches, each
// delivery once (the store skips a stream sequence it has), then analyses
// what it stored as the receiver's deliveries are.
func runInto(ctx context.Context, o *Options) error {
	env := o.Env
	db, err := cmdutil.OpenStore(o.Into)
	if err != nil {
		return err
	}
	defer db.Close()
	logf := func(f string, a ...any) { fmt.Fprintf(env.Stderr, f+"\n", a...) }
	eng := inspector.NewEngine(db, inspector.Options{Secrets: o.secrets, Logf: logf})
	sum := intoSummary{Store: db.Path()}
	var batch []*relay.Relayed
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := db.InsertRelayed(ctx, batch); err != nil {
			return err
		}
		for _, r := range batch {
			if r.Duplicate {
				sum.Already++
			} else {
				sum.Stored++
			}
		}
		batch = batch[:0]
		return nil
	}
	ps, err := relay.Pull(ctx, relay.PullOptions{
		Conn: o.conn, Since: o.since, FromSeq: o.FromSeq, Durable: o.Durable,
		Each: func(r *relay.Relayed) error {
			if len(o.Types) > 0 && !matches(eng.Analyze(ctx, r.Delivery), o.Types) {
				return nil
			}
			batch = append(batch, r)
			if len(batch) < intoBatch {
				return nil
			}
			return flush()
		},
	})
	if err == nil {
		err = flush()
	}
	// Analyse what was stored even when the pull stopped part way.
	if derr := eng.Drain(context.WithoutCancel(ctx)); derr != nil {
		logf("analyse pulled deliveries: %v", derr)
	}
	if err != nil {
		return pullError(err)
	}
	sum.Read, sum.FirstSeq, sum.LastSeq = ps.Deliveries, ps.FirstSeq, ps.LastSeq
	if o.JSON {
		b, _ := json.Marshal(sum)
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return nil
	}
	if sum.Read == 0 {
		fmt.Fprintf(env.Stdout, "The relay holds no delivery for this selection; %s is unchanged.\n", sum.Store)
		return nil
	}
	fmt.Fprintf(env.Stdout, "Pulled %s from the relay (sequences %d-%d) into %s: %s new",
		plural.Count(sum.Read, "delivery", "deliveries"), sum.FirstSeq, sum.LastSeq, sum.Store, plural.Count(sum.Stored, "delivery", "deliveries"))
	if sum.Already > 0 {
		fmt.Fprintf(env.Stdout, ", %d already there", sum.Already)
	}
	if skipped := sum.Read - sum.Stored - sum.Already; skipped > 0 {
		fmt.Fprintf(env.Stdout, ", %d not of --type", skipped)
	}
	fmt.Fprintln(env.Stdout, ".")
	return nil
}
