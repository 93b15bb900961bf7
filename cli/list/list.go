// Package list is `hookscope list`: the stored deliveries an expression
// selects, newest first, as lines or JSON.
package list

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # the 20 newest deliveries
  hookscope list

  # media.updated where the thumbnail changed, as JSON
  hookscope list --where 'events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))' --json

  # everything your app answered 500 to in the last two hours
  hookscope list --where 'delivery.received_at > now - duration("2h") && delivery.forward.exists(f, f.status == 500)'`

// DefaultLimit is how many deliveries list shows unless told.
const DefaultLimit = 20

// Options are list's flags.
type Options struct {
	Env    *cmdutil.Env
	DBPath string
	Where  string
	Limit  int
	JSON   bool

	expr *rules.Expr
}

// NewCmd builds `hookscope list`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "list [--where EXPR] [--limit N] [--json]",
		Short: "List stored deliveries, newest first, optionally those an expression selects",
		Long: `List stored deliveries, newest first. --where selects them with an expression
over delivery, events and now (docs/rules.md); the store checks what it can
with its indexes first, so a search over a large store stays fast.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.StringVar(&o.Where, "where", "", "only deliveries this `expression` is true of (docs/rules.md)")
	fs.IntVar(&o.Limit, "limit", DefaultLimit, "show at most this many (0: all)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per delivery")
	return cmd
}

func (o *Options) validate([]string) error {
	if o.Limit < 0 {
		return cmdutil.UsageErrorf("--limit must be 0 (all) or more, got %d", o.Limit)
	}
	var err error
	o.expr, err = readstore.Where(o.Where)
	return err
}

// Row is one delivery as list shows it.
type Row struct {
	ID         int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	// Status is Hookscope's answer, 0 when it gave none (Answer says why).
	Status     int      `json:"status"`
	Answer     string   `json:"answer,omitempty"`
	Signature  string   `json:"signature"`
	HookUUID   string   `json:"hook_uuid,omitempty"`
	Resend     bool     `json:"resend"`
	Types      []string `json:"types"`
	Summary    string   `json:"summary,omitempty"`
	Duplicates int      `json:"duplicates"`
	Divergent  bool     `json:"divergent"`
	Problems   int      `json:"problems"`
	Error      string   `json:"decode_error,omitempty"`
	// Source is where it came from (receiver, relay, import); RelaySeq
	// its relay stream sequence when relayed.
	Source   string `json:"source"`
	RelaySeq uint64 `json:"relay_seq,omitempty"`
}

// Result is a list: the rows, newest first, and how the search went.
type Result struct {
	Rows  []Row           `json:"deliveries"`
	Stats rules.FindStats `json:"-"`
}

// Find returns up to limit deliveries e selects (nil: all), newest first:
// what `hookscope list` prints and the agent interface's list tool
// returns.
func Find(ctx context.Context, db *storage.DB, e *rules.Expr, limit int, now time.Time) (*Result, error) {
	var ids []int64
	st, err := rules.Find(ctx, db, e, rules.FindOptions{Now: now, NewestFirst: true, Limit: limit}, func(in *rules.Input) error {
		ids = append(ids, in.Record.Delivery.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows, err := Rows(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	return &Result{Rows: rows, Stats: st}, nil
}

// Rows returns the list rows of ids, newest first.
func Rows(ctx context.Context, db *storage.DB, ids []int64) ([]Row, error) {
	out := []Row{}
	if len(ids) == 0 {
		return out, nil
	}
	sums, err := db.List(ctx, storage.Filter{IDs: ids}, len(ids))
	if err != nil {
		return nil, err
	}
	types, err := db.EventTypes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, s := range sums {
		sig := string(s.Signature)
		if !s.Analyzed {
			sig = "pending"
		}
		out = append(out, Row{ID: s.ID, ReceivedAt: s.ReceivedAt, Method: s.Method, Path: s.Path, Status: s.Status, Answer: s.Answer,
			Signature: sig, HookUUID: s.HookUUID, Resend: s.Resend, Types: append([]string{}, types[s.ID]...), Summary: s.FirstSummary,
			Duplicates: s.Duplicates, Divergent: s.Divergent, Problems: s.Problems, Error: s.DecodeError,
			Source: s.Source, RelaySeq: s.RelaySeq})
	}
	return out, nil
}

func run(ctx context.Context, o *Options) error {
	db, err := cmdutil.OpenExistingStore(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := Find(ctx, db, o.expr, o.Limit, time.Now())
	if err != nil {
		return err
	}
	out := cmdutil.NewSyncWriter(o.Env.Stdout)
	for _, r := range res.Rows {
		if o.JSON {
			out.PrintJSON(r)
		} else {
			out.Print(Line(r) + "\n")
		}
	}
	if !o.JSON {
		Footer(o.Env.Stderr, res, o.Limit)
	}
	return nil
}

// Line is one row as text: "42  2026-03-01 12:00:05  POST /webhooks  200  valid  media.ready +1  Intro is ready".
func Line(r Row) string {
	answer := fmt.Sprint(r.Status)
	if r.Status == 0 {
		answer = cmp.Or(r.Answer, "-")
	}
	what := "no event"
	if len(r.Types) > 0 {
		what = r.Types[0]
		if len(r.Types) > 1 {
			what += fmt.Sprintf(" +%d", len(r.Types)-1)
		}
	}
	if r.Error != "" {
		what = "not a message"
	}
	var marks []string
	if r.Resend {
		marks = append(marks, "re-send")
	}
	if r.Divergent {
		marks = append(marks, "divergent")
	} else if r.Duplicates > 0 {
		marks = append(marks, "duplicate")
	}
	if r.Problems > 0 {
		marks = append(marks, plural.S(r.Problems, "problem"))
	}
	if r.RelaySeq > 0 {
		marks = append(marks, fmt.Sprintf("via relay #%d", r.RelaySeq))
	}
	line := fmt.Sprintf("%d  %s  %s %s  %s  %s  %s", r.ID, r.ReceivedAt.Local().Format(time.DateTime), r.Method, r.Path, answer, r.Signature, what)
	if r.Summary != "" {
		line += "  " + r.Summary
	}
	if len(marks) > 0 {
		line += "  [" + strings.Join(marks, ", ") + "]"
	}
	return line
}

// Footer says on stderr what the search left out: a limit reached, and
// deliveries the expression failed on.
func Footer(w io.Writer, res *Result, limit int) {
	if len(res.Rows) == 0 {
		fmt.Fprintln(w, "no delivery matches")
	} else if limit > 0 && len(res.Rows) == limit {
		fmt.Fprintf(w, "showing the newest %d (--limit 0 shows all)\n", limit)
	}
	if res.Stats.Failed > 0 {
		fmt.Fprintf(w, "%d deliveries could not be checked and are left out (first: %v)\n", res.Stats.Failed, res.Stats.FirstFailure)
	}
}
