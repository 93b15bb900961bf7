// Package reverify is `hookscope reverify`: judge stored deliveries'
// signatures again with new secrets.
package reverify

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # judge every stored delivery again with the secret you just found
  WEBHOOK_SECRET=... hookscope reverify --secret-env WEBHOOK_SECRET

  # during a rotation: old and new secret
  hookscope reverify --secret-env OLD_SECRET --secret-env NEW_SECRET --db /tmp/hooks.db`

// Options are reverify's flags.
type Options struct {
	Env     *cmdutil.Env
	DBPath  string
	Secrets *cmdutil.SecretFlags
	Where   string

	expr    *rules.Expr
	secrets [][]byte
}

// NewCmd builds `hookscope reverify`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "reverify (--secret S | --secret-env VAR)... [flags]",
		Short: "Judge stored deliveries' signatures again with new secrets",
		Long: `Verify the signature of every stored delivery (or those --where selects)
again with the secrets given (several for a rotation) and store the new
verdicts.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	o.Secrets = cmdutil.AddSecretFlags(cmd.Flags())
	cmdutil.AddDBFlag(cmd.Flags(), &o.DBPath)
	cmd.Flags().StringVar(&o.Where, "where", "", readstore.WhereUsage)
	return cmd
}

// validate resolves the secrets: at least one.
func (o *Options) validate([]string) error {
	sec, err := o.Secrets.Resolve(o.Env)
	if err != nil {
		return err
	}
	if len(sec) == 0 {
		return cmdutil.UsageErrorf("give at least one --secret or --secret-env: re-verifying without a secret would mark every delivery unverified")
	}
	o.secrets = sec
	o.expr, err = readstore.Where(o.Where)
	return err
}

func run(ctx context.Context, o *Options) error {
	db, err := cmdutil.OpenExistingStore(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	eng := inspector.NewEngine(db, inspector.Options{Secrets: o.secrets})
	rep, err := eng.Reverify(ctx, storeRecords{db: db, expr: o.expr, stderr: o.Env.Stderr})
	if err != nil {
		return err
	}
	st, err := db.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprint(o.Env.Stdout, reverifyText(rep, len(o.secrets), st.InvalidSignatures))
	return nil
}

// reverifyText says what changed, and how, apart from what did not:
// "re-verified 3 deliveries with 2 secrets: 1 verdict changed (invalid ->
// valid with secret #2: 1); 2 unchanged; 0 invalid now".
func reverifyText(rep inspector.ReverifyReport, secrets int, invalid int64) string {
	changed := "no verdict changed"
	if rep.Changed > 0 {
		var how []string
		for _, k := range slices.Sorted(maps.Keys(rep.Transitions)) {
			how = append(how, fmt.Sprintf("%s: %d", k, rep.Transitions[k]))
		}
		changed = fmt.Sprintf("%s changed (%s)", plural.S(rep.Changed, "verdict"), strings.Join(how, ", "))
	}
	return fmt.Sprintf("re-verified %s with %s: %s; %d unchanged; %d invalid now\n",
		plural.Count(rep.Checked, "delivery", "deliveries"), plural.S(secrets, "secret"), changed, rep.Unchanged, invalid)
}

// storeRecords adapts the store to inspector.ReverifySource: every
// record, or those expr matches.
type storeRecords struct {
	db     *storage.DB
	expr   *rules.Expr
	stderr io.Writer
}

// EachRecord walks the records the expression selects (all without one).
func (s storeRecords) EachRecord(ctx context.Context, fn func(*inspector.Record) error) error {
	st, err := s.db.EachWhere(ctx, storage.Filter{}, s.expr, time.Now(), fn)
	readstore.Failed(s.stderr, st)
	return err
}

// UpdateSignature stores a new verdict.
func (s storeRecords) UpdateSignature(ctx context.Context, id int64, r inspector.SignatureResult) error {
	return s.db.UpdateSignature(ctx, id, r)
}
