package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
)

const importExamples = `  # a teammate's HAR capture (Hookscope's or a browser's: POST entries are taken)
  hookscope import capture.har

  # a fixtures folder or an NDJSON export, verifying signatures with your secret
  WEBHOOK_SECRET=... hookscope import --secret-env WEBHOOK_SECRET testdata/webhooks

  # into a separate store
  hookscope import --db /tmp/review.db hooks.ndjson`

func runImport(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "import", "[--db PATH] [--secret S...] PATH", importExamples)
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	secrets := addSecretFlags(fs)
	jsonOut := fs.Bool("json", false, "print the summary as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	switch fs.NArg() {
	case 0:
		return usageError("give the HAR file, NDJSON file or fixtures folder to import")
	case 1:
	default:
		return usageError("import takes one PATH, after the flags (got %q)", fs.Args())
	}
	path := fs.Arg(0)
	sec, err := secrets.resolve(env)
	if err != nil {
		return err
	}
	db, err := openStore(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	eng := inspector.NewEngine(db, inspector.Options{Secrets: sec, Logf: func(f string, a ...any) { fmt.Fprintf(env.Stderr, f+"\n", a...) }})
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
	rep, err := export.Import(ctx, path, export.IngestFunc(db.InsertDelivery))
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
	if *jsonOut {
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
	fmt.Fprintf(env.Stdout, "Imported %d deliveries from %s (%s)%s into %s: %d events, %d duplicates.\n",
		rep.Imported, path, rep.Format, span, db.Path(), events, dups)
	fmt.Fprintf(env.Stdout, "Signatures: %d valid, %d invalid, %d missing, %d unverified.\n",
		counts[inspector.SignatureValid], counts[inspector.SignatureInvalid], counts[inspector.SignatureMissing], counts[inspector.SignatureUnverified])
	for _, s := range rep.Skipped {
		fmt.Fprintf(env.Stdout, "  skipped: %s\n", s)
	}
	return nil
}
