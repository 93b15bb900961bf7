package list_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/cli/list"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
)

func newCmd(env *cmdutil.Env) *cobra.Command { return list.NewCmd(env, nil) }

func rows(t *testing.T, out string) []list.Row {
	t.Helper()
	var rs []list.Row
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var r list.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestListJSON(t *testing.T) {
	db := clitest.SeedStore(t)
	res := clitest.Run(t, newCmd, nil, "list", "--db", db, "--json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	rs := rows(t, res.Stdout)
	if len(rs) != 3 || rs[0].ID != 3 || rs[2].ID != 1 {
		t.Fatalf("rows newest first: %+v", rs)
	}
	if r := rs[2]; r.Signature != "valid" || strings.Join(r.Types, ",") != "media.created,media.processing" || r.Status != 200 || r.HookUUID == "" || r.Method != "POST" {
		t.Errorf("row 1: %+v", r)
	}
	res = clitest.Run(t, newCmd, nil, "list", "--db", db, "--json", "--where", `events.exists(e, e.type == "media.ready")`)
	if rs := rows(t, res.Stdout); res.Code != 0 || len(rs) != 1 || rs[0].ID != 2 {
		t.Errorf("--where: exit %d %+v %s", res.Code, rs, res.Stderr)
	}
	res = clitest.Run(t, newCmd, nil, "list", "--db", db, "--limit", "1")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "3  ") || strings.Count(res.Stdout, "\n") != 1 || !strings.Contains(res.Stderr, "showing the newest 1") {
		t.Errorf("text: %q %q", res.Stdout, res.Stderr)
	}
}

func TestListErrors(t *testing.T) {
	db := clitest.SeedStore(t)
	res := clitest.Run(t, newCmd, nil, "list", "--db", db, "--where", `events.exists(e, e.tpye == "x")`)
	if res.Code != 2 || !strings.Contains(res.Stderr, "undefined field 'tpye'") || !strings.Contains(res.Stderr, "                  ^") {
		t.Errorf("bad expression: exit %d\n%s", res.Code, res.Stderr)
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	res = clitest.Run(t, newCmd, nil, "list", "--db", missing)
	if res.Code != 1 || !strings.Contains(res.Stderr, "no store at") {
		t.Errorf("missing store: exit %d %s", res.Code, res.Stderr)
	}
	if _, err := filepath.Glob(missing + "*"); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(missing + "*"); len(m) > 0 {
		t.Errorf("a read-only command created %v", m)
	}
}

// TestListViaRelay: a relayed delivery's row names its source and stream
// sequence, in JSON and in text; a direct one says receiver.
func TestListViaRelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "laptop.db")
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"hook":{"uuid":"h1"},"events":[]}`)
	ctx := context.Background()
	if _, err := db.InsertDelivery(ctx, &inspector.Delivery{ReceivedAt: time.Now(), Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)), Status: 200}); err != nil {
		t.Fatal(err)
	}
	err = db.InsertRelayed(ctx, []*relay.Relayed{{Origin: "HOOKSCOPE@1", Seq: 42, Delivery: &inspector.Delivery{
		ReceivedAt: time.Now(), Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)), Status: 200}}})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	js := clitest.Run(t, newCmd, nil, "list", "--db", path, "--json")
	rs := rows(t, js.Stdout)
	if len(rs) != 2 || rs[0].Source != "relay" || rs[0].RelaySeq != 42 || rs[1].Source != "receiver" || rs[1].RelaySeq != 0 {
		t.Errorf("JSON rows: %+v", rs)
	}
	text := clitest.Run(t, newCmd, nil, "list", "--db", path)
	lines := strings.Split(strings.TrimSpace(text.Stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "[via relay #42]") || strings.Contains(lines[1], "relay") {
		t.Errorf("text:\n%s", text.Stdout)
	}
}
