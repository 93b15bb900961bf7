package cli

import (
	"context"
	"fmt"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

const reverifyExamples = `  # judge every stored delivery again with the secret you just found
  WEBHOOK_SECRET=... hookscope reverify --secret-env WEBHOOK_SECRET

  # during a rotation: old and new secret
  hookscope reverify --secret-env OLD_SECRET --secret-env NEW_SECRET --db /tmp/hooks.db`

func runReverify(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "reverify", "[flags]", reverifyExamples)
	secrets := addSecretFlags(fs)
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sec, err := secrets.resolve(env)
	if err != nil {
		return err
	}
	if len(sec) == 0 {
		return usageError("give at least one --secret or --secret-env: re-verifying without a secret would mark every delivery unverified")
	}
	db, err := openStore(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	eng := inspector.NewEngine(db, inspector.Options{Secrets: sec})
	n, err := eng.Reverify(ctx, storeRecords{db})
	if err != nil {
		return err
	}
	st, err := db.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "re-verified %d deliveries with %d secret(s): %d verdict(s) changed, %d invalid now\n", st.Deliveries, len(sec), n, st.InvalidSignatures)
	return nil
}

// storeRecords adapts the store to inspector.ReverifySource.
type storeRecords struct{ db *storage.DB }

func (s storeRecords) EachRecord(ctx context.Context, fn func(*inspector.Record) error) error {
	return s.db.Each(ctx, storage.Filter{}, fn)
}

func (s storeRecords) UpdateSignature(ctx context.Context, id int64, r inspector.SignatureResult) error {
	return s.db.UpdateSignature(ctx, id, r)
}
