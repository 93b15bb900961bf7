// Package importcmd is `hookscope import`: load what Hookscope (or a
// browser's HAR) wrote — a HAR or NDJSON file, a fixtures, json or curl
// export folder, a samples folder — as deliveries, analyzed like received
// ones. (The package is not called import: that is a Go keyword.)
package importcmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/plural"
)

const examples = `  # a teammate's HAR capture (Hookscope's or a browser's: POST entries are taken)
  hookscope import capture.har

  # a fixtures folder or an NDJSON export, verifying signatures with your secret
  WEBHOOK_SECRET=... hookscope import testdata/webhooks --secret-env WEBHOOK_SECRET

  # what 'hookscope samples' or 'hookscope export --format curl|json' wrote
  hookscope import ./samples
  hookscope import ./replay-ready

  # into a separate store
  hookscope import hooks.ndjson --db /tmp/review.db`

// Options are import's argument and flags.
type Options struct {
	Env     *cmdutil.Env
	Path    string
	DBPath  string
	Secrets *cmdutil.SecretFlags
	JSON    bool

	secrets [][]byte
}

// NewCmd builds `hookscope import`; runF replaces the import in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "import PATH [--db PATH] [--secret S...]",
		Short: "Load a HAR or NDJSON file, or an export or samples folder, as deliveries analyzed like received ones",
		Long: `Load deliveries from PATH into the store and analyze them like received ones
(signatures, events, dedupe ledger). PATH is a HAR file (Hookscope's or a
browser's: POST entries are taken), an NDJSON export, or a folder that
'hookscope export' (fixtures, json, curl) or 'hookscope samples' wrote:
whatever Hookscope writes, it reads back.`,
		Example: examples,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return cmdutil.UsageErrorf("give the HAR file, NDJSON file, or export or samples folder to import")
			case 1:
				return nil
			}
			return cmdutil.UsageErrorf("import takes one PATH (got %q)", args)
		},
		RunE: cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	o.Secrets = cmdutil.AddSecretFlags(fs)
	fs.BoolVar(&o.JSON, "json", false, "print the summary as JSON")
	return cmd
}

// validate takes the path and resolves the secrets.
func (o *Options) validate(args []string) error {
	o.Path = args[0]
	var err error
	o.secrets, err = o.Secrets.Resolve(o.Env)
	return err
}

func run(ctx context.Context, o *Options) error {
	env, path := o.Env, o.Path
	// Read (and refuse) the file before a store is opened or created.
	format, ds, skipped, err := export.Read(path)
	if err != nil {
		return err
	}
	db, err := cmdutil.OpenStore(o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	eng := inspector.NewEngine(db, inspector.Options{Secrets: o.secrets, Logf: func(f string, a ...any) { fmt.Fprintf(env.Stderr, f+"\n", a...) }})
	analyzed := map[int64]*inspector.Analysis{}
	cancel := eng.Subscribe(func(r *inspector.Record) {
		if r.Delivery.Source == "import" && r.Analysis != nil {
			analyzed[r.Delivery.ID] = r.Analysis
		}
	})
	defer cancel()
	// Store first, then analyze everything in one Drain. Engine.Ingest
	// would also queue each delivery, and Drain analyzes both what it finds
	// unanalyzed in the store and what is queued: twice, and the second pass
	// would see later deliveries' events as already there.
	rep, err := export.Ingest(ctx, path, format, ds, skipped, export.IngestFunc(db.InsertDelivery))
	// Analyze what was stored even when the import stopped part way.
	if derr := eng.Drain(context.WithoutCancel(ctx)); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	counts := map[inspector.SignatureStatus]int{}
	events, dups := 0, 0
	for _, id := range rep.IDs {
		if a := analyzed[id]; a != nil {
			counts[a.Signature.Status]++
			events += len(a.Events)
			dups += a.Duplicates()
		}
	}
	if o.JSON {
		b, _ := json.Marshal(struct {
			*export.ImportReport
			Events     int                               `json:"events"`
			Duplicates int                               `json:"duplicates"`
			Signatures map[inspector.SignatureStatus]int `json:"signatures"`
		}{rep, events, dups, counts})
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return nil
	}
	span := ""
	if n := len(rep.IDs); n > 0 {
		span = fmt.Sprintf(" (ids %d-%d)", rep.IDs[0], rep.IDs[n-1])
	}
	fmt.Fprintf(env.Stdout, "Imported %s from %s (%s)%s into %s: %s, %s.\n",
		plural.Count(rep.Imported, "delivery", "deliveries"), path, rep.Format, span, db.Path(), plural.S(events, "event"), plural.S(dups, "duplicate"))
	fmt.Fprintf(env.Stdout, "Signatures: %d valid, %d invalid, %d missing, %d unverified.\n",
		counts[inspector.SignatureValid], counts[inspector.SignatureInvalid], counts[inspector.SignatureMissing], counts[inspector.SignatureUnverified])
	for _, s := range rep.Skipped {
		fmt.Fprintf(env.Stdout, "  skipped: %s\n", s)
	}
	return nil
}
