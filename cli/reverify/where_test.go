package reverify

import (
	"context"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

// TestReverifyWhere: only the deliveries --where selects are judged again.
func TestReverifyWhere(t *testing.T) {
	path := clitest.SeedStore(t)
	res := clitest.Run(t, newCmd, nil, "reverify", "--db", path, "--secret", "another", "--where", `events.exists(e, e.type == "media.ready")`)
	if res.Code != 0 || !strings.Contains(res.Stdout, "re-verified 1 delivery") {
		t.Fatalf("exit %d: %s %s", res.Code, res.Stdout, res.Stderr)
	}
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[int64]inspector.SignatureStatus{1: inspector.SignatureValid, 2: inspector.SignatureInvalid, 3: inspector.SignatureValid} {
		if r, _ := db.Get(context.Background(), id); r.Analysis.Signature.Status != want {
			t.Errorf("delivery %d: %s, want %s", id, r.Analysis.Signature.Status, want)
		}
	}
}
