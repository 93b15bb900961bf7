package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

// export --salvage reads a store that no longer opens, writes what it can
// and lists what it could not read.
func TestExportSalvage(t *testing.T) {
	db := clitest.SeedStore(t)
	st, err := storage.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		body := []byte(`{"n":` + strings.Repeat("1", 1000) + `}`)
		if _, err := st.InsertDelivery(context.Background(), &inspector.Delivery{Method: "POST", Path: "/webhooks", Body: body,
			BodyLength: int64(len(body)), Status: 200, RemoteAddr: fmt.Sprintf("10.0.0.%d:1", i)}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	// Damage the page holding the newest delivery row: Open refuses the
	// store from then on.
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.LastIndex(b, []byte("10.0.0.99:1"))
	page := at / 4096 * 4096
	copy(b[page:], bytes.Repeat([]byte{0xee}, 12))
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "all.ndjson")
	if r := runFull(t, nil, "export", "--db", db, "--format", "ndjson", "--out", out); r.Code == 0 || !strings.Contains(r.Stderr, "--salvage --db") {
		t.Fatalf("export of a damaged store: %+v", r)
	}
	r := runFull(t, nil, "export", "--salvage", "--db", db, "--format", "ndjson", "--out", out)
	if r.Code != 0 || !strings.Contains(r.Stdout, "could not read: ") {
		t.Fatalf("export --salvage: %+v", r)
	}
	if r := runFull(t, nil, "export", "--salvage", "--id", "1", "--db", db, "--format", "ndjson", "--out", out, "--force"); r.Code != 2 {
		t.Fatalf("--salvage with a selection: %+v", r)
	}
}
