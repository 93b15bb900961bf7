package resends_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/cli/resends"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/storage"
)

func newCmd(env *cmdutil.Env) *cobra.Command { return resends.NewCmd(env, nil) }

// seed stores messages re-sent on a known schedule: each answered 500,
// then sent again 60 s later and answered 200.
func seed(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "hooks.db")
	db, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range 4 {
		hook := fmt.Sprint("hook-", i)
		typ := "media.ready"
		if i == 3 {
			typ = "media.failed"
		}
		body := []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[{"uuid":"e%d","type":%q,"generated_at":"2026-03-01T09:00:00Z","metadata":{"account_id":"a"},"payload":{}}]}`, hook, i, typ))
		for n, status := range []int{500, 200} {
			id, err := db.InsertDelivery(ctx, &inspector.Delivery{ReceivedAt: t0.Add(time.Duration(i)*time.Second + time.Duration(n)*time.Minute), Method: "POST", Path: "/", Body: body, BodyLength: int64(len(body)), Status: status})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SaveAnalysis(ctx, &inspector.Analysis{DeliveryID: id, HookUUID: hook, Events: []inspector.EventAnalysis{{UUID: fmt.Sprint("e", i), Type: typ}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

func TestResends(t *testing.T) {
	db := seed(t)
	res := clitest.Run(t, newCmd, nil, "resends", "--db", db, "--json")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	var rep struct {
		Timelines []struct {
			HookUUID string `json:"hook_uuid"`
			Attempts []struct {
				Status int   `json:"status"`
				Gap    int64 `json:"gap_ns"`
			} `json:"attempts"`
		} `json:"timelines"`
		Schedule struct {
			Messages  int `json:"messages"`
			SettledOK int `json:"settled_ok"`
		} `json:"schedule"`
		Sentence string `json:"sentence"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, res.Stdout)
	}
	if len(rep.Timelines) != 4 || rep.Schedule.Messages != 4 || rep.Schedule.SettledOK != 4 || rep.Timelines[0].Attempts[1].Gap != int64(time.Minute) {
		t.Errorf("JSON: %+v", rep)
	}
	if rep.Sentence != "after a failed answer the service re-sent after ~1 min (n=4); nothing after a 2xx (n=4)" {
		t.Errorf("sentence: %s", rep.Sentence)
	}
	text := clitest.Run(t, newCmd, nil, "resends", "--db", db, "--where", `events.exists(e, e.type == "media.failed")`)
	if text.Code != 0 || !strings.Contains(text.Stdout, "Message hook-3: 2 attempts") || strings.Contains(text.Stdout, "hook-0") ||
		!strings.Contains(text.Stdout, "re-send 1: after ~1 min (n=1") {
		t.Errorf("--where text:\n%s%s", text.Stdout, text.Stderr)
	}
	csv := clitest.Run(t, newCmd, nil, "resends", "--db", db, "--hook", "hook-1", "--csv")
	if lines := strings.Split(strings.TrimSpace(csv.Stdout), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "hook-1,2,") || !strings.HasSuffix(lines[2], ",200,200,hookscope,true,60") {
		t.Errorf("csv:\n%s", csv.Stdout)
	}
	if r := clitest.Run(t, newCmd, nil, "resends", "--db", db, "--json", "--csv"); r.Code != 2 {
		t.Errorf("--json --csv: exit %d", r.Code)
	}
}
