package resends_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

// TestObserve: the messages an expression selects a delivery of, or that
// hooks name, with all their attempts, and the schedule of those.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := rules.NewRules([]string{`events.exists(e, e.type == "media.ready") => 500 x1 then 200`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := &service{t: t, db: db, rules: rs, retries: []time.Duration{time.Minute}}
	for i := range 3 {
		svc.send(ctx, fmt.Sprint("ready-", i), "media.ready", t0.Add(time.Duration(i)*time.Second))
		svc.send(ctx, fmt.Sprint("ok-", i), "media.created", t0.Add(time.Duration(i)*time.Second))
	}
	e, err := rules.Compile(`delivery.hook_uuid.startsWith("ready") && delivery.status == 200`, rules.Stored)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		e      *rules.Expr
		hooks  []string
		want   string
		resent int
	}{
		{nil, nil, "ready-0 ok-0 ready-1 ok-1 ready-2 ok-2", 3},
		{e, nil, "ready-0 ready-1 ready-2", 3}, // the 200 selects the message: both attempts come
		{e, []string{"ready-1", "ok-1"}, "ready-1", 1},
		{nil, []string{"ok-2"}, "ok-2", 0},
	}
	for _, c := range cases {
		rep, err := resends.Observe(ctx, db, c.e, c.hooks, t0)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for i, tl := range rep.Timelines {
			if i > 0 {
				got += " "
			}
			got += tl.HookUUID
			if len(tl.Attempts) != map[bool]int{true: 2, false: 1}[tl.HookUUID[:2] == "re"] {
				t.Errorf("%s: %d attempts", tl.HookUUID, len(tl.Attempts))
			}
		}
		if got != c.want || rep.Schedule.Resent != c.resent || rep.Sentence != rep.Schedule.Sentence() {
			t.Errorf("%v %v: %s (%d re-sent), want %s (%d)", c.e != nil, c.hooks, got, rep.Schedule.Resent, c.want, c.resent)
		}
	}
}

func TestKind(t *testing.T) {
	for _, c := range []struct {
		a    resends.Attempt
		want resends.Kind
	}{
		{resends.Attempt{Status: 200, OK: true}, resends.KindOK},
		{resends.Attempt{Status: 500, Answer: "500"}, resends.KindStatus},
		{resends.Attempt{Status: 502, Answer: "502 (from the app)", By: "app"}, resends.KindStatus},
		{resends.Attempt{Answer: "closed unanswered"}, resends.KindClosed},
		{resends.Attempt{Answer: "held unanswered past 10 s"}, resends.KindHeld},
		{resends.Attempt{Answer: "no answer recorded (pass-through)", By: "app"}, resends.KindHeld},
	} {
		if got := c.a.Kind(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.a, got, c.want)
		}
	}
}
