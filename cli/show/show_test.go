package show_test

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
	"github.com/hookscope/hookscope/cli/show"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/storage"
)

func newCmd(env *cmdutil.Env) *cobra.Command { return show.NewCmd(env, nil) }

func TestShow(t *testing.T) {
	db := clitest.SeedStore(t)
	res := clitest.Run(t, newCmd, nil, "show", "1", "--db", db, "--json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var d struct {
		Delivery struct {
			ID      int64 `json:"id"`
			Headers []struct{ Name, Value string }
		} `json:"delivery"`
		Body     string `json:"body"`
		Analysis struct {
			Signature struct{ Status string } `json:"signature"`
			Events    []struct{ Type string } `json:"events"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &d); err != nil {
		t.Fatalf("%v:\n%s", err, res.Stdout)
	}
	if d.Delivery.ID != 1 || d.Analysis.Signature.Status != "valid" || len(d.Analysis.Events) != 2 || !strings.Contains(d.Body, `"events"`) {
		t.Errorf("JSON: %+v", d)
	}
	body := clitest.Run(t, newCmd, nil, "show", "1", "--db", db, "--body")
	if body.Code != 0 || body.Stdout != d.Body {
		t.Errorf("--body piped is the body as stored:\n%q\n%q", body.Stdout, d.Body)
	}
	hs := clitest.Run(t, newCmd, nil, "show", "1", "--db", db, "--headers")
	if !strings.HasPrefix(hs.Stdout, "Host: abc.trycloudflare.com\n") || !strings.Contains(hs.Stdout, "X-Service-Signature: ") {
		t.Errorf("--headers:\n%s", hs.Stdout)
	}
	evs := clitest.Run(t, newCmd, nil, "show", "2", "--db", db, "--events")
	var list []struct {
		Type  string          `json:"type"`
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal([]byte(evs.Stdout), &list); err != nil || len(list) != 1 || list[0].Type != "media.ready" || !strings.Contains(string(list[0].Event), `"payload"`) {
		t.Errorf("--events: %v\n%s", err, evs.Stdout)
	}
	text := clitest.Run(t, newCmd, nil, "show", "3", "--db", db)
	if !strings.Contains(text.Stdout, "signature valid") || !strings.Contains(text.Stdout, "live_event.registration") {
		t.Errorf("text:\n%s", text.Stdout)
	}
	for _, args := range [][]string{{"show"}, {"show", "x"}, {"show", "1", "--body", "--headers"}, {"show", "1", "--body", "--json"}} {
		if r := clitest.Run(t, newCmd, nil, append(args, "--db", db)...); r.Code != 2 {
			t.Errorf("%v: exit %d, want 2", args, r.Code)
		}
	}
	if r := clitest.Run(t, newCmd, nil, "show", "99", "--db", db); r.Code != 1 || !strings.Contains(r.Stderr, "not found") {
		t.Errorf("missing id: %d %s", r.Code, r.Stderr)
	}
}

// TestShowViaRelay: a delivery that came through a team relay says so,
// with its stream sequence, in text and in JSON.
func TestShowViaRelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "laptop.db")
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"hook":{"uuid":"h1"},"events":[]}`)
	err = db.InsertRelayed(context.Background(), []*relay.Relayed{{Origin: "HOOKSCOPE@1", Seq: 42, Delivery: &inspector.Delivery{
		ReceivedAt: time.Now(), Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)), Status: 200}}})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := clitest.Run(t, newCmd, nil, "show", "1", "--db", path)
	if !strings.Contains(text.Stdout, "source    via relay, stream sequence 42") {
		t.Errorf("text:\n%s%s", text.Stdout, text.Stderr)
	}
	js := clitest.Run(t, newCmd, nil, "show", "1", "--db", path, "--json")
	if !strings.Contains(js.Stdout, `"source": "relay",`) || !strings.Contains(js.Stdout, `"relay_seq": 42`) {
		t.Errorf("JSON:\n%s", js.Stdout)
	}
}
