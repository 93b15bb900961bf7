package reverify

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

const secret = "whsec_reverify_test"

func newCmd(e *cmdutil.Env) *cobra.Command { return NewCmd(e, nil) }

func TestReverifyCommand(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "hooks.db")
	db, err := storage.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	eng := inspector.NewEngine(db, inspector.Options{})
	body := []byte(`{"hook":{"uuid":"h1"},"events":[{"uuid":"0123456789abcdef","type":"media.ready","payload":{},"metadata":{"account_id":"a1"},"generated_at":"2026-01-01T00:00:01Z"}]}`)
	eng.Ingest(context.Background(), &inspector.Delivery{Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)),
		Headers: []inspector.Header{{Name: inspector.SignatureHeader, Value: inspector.Sign([]byte(secret), body)}}})
	if err := eng.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var out, stderr bytes.Buffer
	env := &cmdutil.Env{Stdout: &out, Stderr: &stderr}
	if code := cmdutil.RunCommand(context.Background(), env, newCmd, []string{"reverify", "--db", dbPath}); code != 2 {
		t.Fatalf("without secrets: exit %d", code)
	}
	if code := cmdutil.RunCommand(context.Background(), env, newCmd, []string{"reverify", "--db", dbPath, "--secret", "old", "--secret", secret}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "re-verified 1 delivery with 2 secrets: 1 verdict changed (unverified -> valid with secret #2: 1); 0 unchanged; 0 invalid now\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	// A third secret: every expected digest changes, the verdict does not,
	// and the count says so.
	out.Reset()
	if code := cmdutil.RunCommand(context.Background(), env, newCmd, []string{"reverify", "--db", dbPath, "--secret", "old", "--secret", secret, "--secret", "new"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "re-verified 1 delivery with 3 secrets: no verdict changed; 1 unchanged; 0 invalid now\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	db, _ = storage.Open(dbPath)
	defer db.Close()
	rec, _ := db.Get(context.Background(), 1)
	if rec.Analysis.Signature.Status != inspector.SignatureValid || rec.Analysis.Signature.SecretIndex != 1 {
		t.Fatalf("after reverify: %+v", rec.Analysis.Signature)
	}
}
