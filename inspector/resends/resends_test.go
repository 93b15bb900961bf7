package resends_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/resends"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// service is a sender that re-sends a message after a failed answer on a
// known schedule, with injected times (no sleeping).
type service struct {
	t       *testing.T
	db      *storage.DB
	rules   *rules.Rules
	retries []time.Duration
	// app answers pass-through messages: their status per attempt.
	app map[string][]int
	// k spreads the service's jitter (-2 s, 0, +2 s) over its re-sends.
	k int
}

// send delivers one message until it is answered 2xx or the schedule
// runs out, each attempt answered by the answer rules (or by the app in
// pass-through), and stores every attempt as the receiver would.
func (s *service) send(ctx context.Context, hook, typ string, at time.Time) {
	body := []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[{"uuid":"%s-e","type":%q,"generated_at":"2026-03-01T09:00:00Z","metadata":{"account_id":"a"},"payload":{"media":{"id":"m"}}}]}`, hook, hook, typ))
	for n := 0; ; n++ {
		d := &inspector.Delivery{ReceivedAt: at, Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)), Source: "receiver"}
		var relayed int
		if statuses, ok := s.app[hook]; ok {
			d.Answer, relayed = inspector.AnswerPassThrough, statuses[min(n, len(statuses)-1)]
		} else {
			d.SetReply(s.rules.Answer(d, nil))
		}
		id, err := s.db.InsertDelivery(ctx, d)
		if err != nil {
			s.t.Fatal(err)
		}
		if err := s.db.SaveAnalysis(ctx, &inspector.Analysis{DeliveryID: id, HookUUID: hook, Resend: n > 0, Signature: inspector.SignatureResult{Status: inspector.SignatureUnverified}}); err != nil {
			s.t.Fatal(err)
		}
		st := d.Reply().ServiceStatus()
		ok := st >= 200 && st < 300
		if relayed > 0 {
			a := &forward.Attempt{DeliveryID: id, Route: "http://localhost:3000", Number: 1, Kind: forward.KindPassThrough, StartedAt: at,
				Status: relayed, Outcome: forward.Rejected, Final: true, Relayed: relayed}
			if relayed < 300 {
				a.Outcome = forward.Delivered
			}
			if err := s.db.SaveForwards(ctx, []*forward.Attempt{a}, nil); err != nil {
				s.t.Fatal(err)
			}
			ok = relayed < 300
		}
		if ok || n >= len(s.retries) {
			return
		}
		// The service's own jitter: a few seconds either way.
		s.k++
		at = at.Add(s.retries[n] + time.Duration(s.k%3-1)*2*time.Second)
	}
}

// TestLearnsKnownSchedule: a service that re-sends after 60 s, 5 min and
// 30 min, provoked by answer rules, is learned back from the store.
func TestLearnsKnownSchedule(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := rules.NewRules([]string{
		`events.exists(e, e.type == "media.ready") => 500 x2 then 200`,
		`events.exists(e, e.type == "media.failed") => 503`,
		`events.exists(e, e.type == "media.deleted") => close x1`,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := &service{t: t, db: db, rules: rs, retries: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute},
		app: map[string][]int{"pass-1": {502, 200}}}
	at := t0
	for i := range 10 {
		svc.send(ctx, fmt.Sprint("ready-", i), "media.ready", at) // 500, 500, 200
		at = at.Add(time.Second)
	}
	for i := range 5 {
		svc.send(ctx, fmt.Sprint("ok-", i), "media.created", at) // 200 at once
		at = at.Add(time.Second)
	}
	svc.send(ctx, "failed-1", "media.failed", at)   // 503 four times: the schedule runs out
	svc.send(ctx, "deleted-1", "media.deleted", at) // closed, then 200
	svc.send(ctx, "pass-1", "media.created", at)    // the app's 502, then its 200

	tls, err := resends.Timelines(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := resends.Learn(tls)
	if s.Messages != 18 || s.Resent != 13 || s.SettledOK != 17 || s.Waiting != 1 {
		t.Errorf("counts: %+v", s)
	}
	// After a failure: 60 s (10 ready + failed + deleted + pass), 5 min
	// (10 ready + failed), 30 min (failed).
	var bars []string
	for _, b := range s.AfterFailure {
		bars = append(bars, fmt.Sprintf("%s n=%d", b.Label(), b.N))
	}
	if got := strings.Join(bars, ", "); got != "~1 min n=13, ~5 min n=11, ~30 min n=1" {
		t.Errorf("after failure: %s", got)
	}
	if len(s.AfterSuccess) != 0 {
		t.Errorf("re-sent after a 2xx: %+v", s.AfterSuccess)
	}
	if len(s.Retries) != 3 || s.Retries[0].N != 13 || s.Retries[1].N != 11 || s.Retries[2].Median != 30*time.Minute+2*time.Second {
		t.Errorf("retries: %+v", s.Retries)
	}
	if got, want := s.Sentence(), "after a failed answer the service re-sent after ~1 min (n=13), ~5 min (n=11), ~30 min (n=1); nothing after a 2xx (n=17)"; got != want {
		t.Errorf("sentence:\n got %s\nwant %s", got, want)
	}

	// One message's timeline: answers, who gave them, gaps.
	one, err := resends.Timelines(ctx, db, []string{"ready-3"})
	if err != nil || len(one) != 1 {
		t.Fatal(one, err)
	}
	var line []string
	for _, a := range one[0].Attempts {
		line = append(line, fmt.Sprintf("#%d %s by %s +%s ok=%v", a.Number, a.Answer, a.By, a.Gap, a.OK))
	}
	if got, want := strings.Join(line, "; "), "#1 500 by hookscope +0s ok=false; #2 500 by hookscope +1m0s ok=false; #3 200 by hookscope +5m2s ok=true"; got != want {
		t.Errorf("timeline:\n got %s\nwant %s", got, want)
	}
	pass, _ := resends.Timelines(ctx, db, []string{"pass-1", "deleted-1"})
	if len(pass) != 2 || pass[0].Attempts[0].Answer != "closed unanswered" || pass[1].Attempts[0].Answer != "502 (from the app)" || pass[1].Attempts[0].By != "app" || !pass[1].Attempts[1].OK {
		t.Errorf("closed and pass-through: %+v", pass)
	}
}

// TestHeldAnswers: a hold past the service's 10 s is a failure to it,
// whatever status followed; a shorter one is the status it held.
func TestHeldAnswers(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := rules.NewRules([]string{`media.updated => 200 after 12s x1`, `media.created => 202 after 3s`, `media.deleted => close after 2s x1`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := &service{t: t, db: db, rules: rs, retries: []time.Duration{time.Minute}}
	svc.send(ctx, "upd", "media.updated", t0)
	svc.send(ctx, "new", "media.created", t0)
	svc.send(ctx, "del", "media.deleted", t0)
	tls, err := resends.Timelines(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range tls {
		for _, a := range tl.Attempts {
			got = append(got, fmt.Sprintf("%s #%d %s status=%d ok=%v", tl.HookUUID, a.Number, a.Answer, a.Status, a.OK))
		}
	}
	want := []string{
		"del #1 closed unanswered after 2 s status=0 ok=false", "del #2 200 status=200 ok=true",
		"new #1 202 after 3 s status=202 ok=true",
		"upd #1 held 12 s (past 10 s) status=0 ok=false", "upd #2 200 status=200 ok=true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("timelines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestScheduleDetails: a re-send seen once gives one gap, not "5 s to
// 5 s"; the waiting line agrees in number.
func TestScheduleDetails(t *testing.T) {
	s := resends.Schedule{Messages: 1200, Resent: 2, Waiting: 1, Retries: []resends.Retry{
		{Number: 1, N: 2, Median: 61 * time.Second, Min: 58 * time.Second, Max: 62 * time.Second},
		{Number: 2, N: 1, Median: 5 * time.Minute, Min: 5 * time.Minute, Max: 5 * time.Minute},
	}}
	want := []string{
		"re-send 1: after ~1 min 1 s (n=2, 58 s to 1 min 2 s)",
		"re-send 2: after ~5 min (n=1, 5 min)",
		"1 message had a failed answer last and was not sent again (yet)",
	}
	if got := s.Details(); !slices.Equal(got, want) {
		t.Errorf("details:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.Waiting = 2
	if got := s.Details()[2]; got != "2 messages had a failed answer last and were not sent again (yet)" {
		t.Errorf("waiting: %s", got)
	}
	if got := s.Summary(); !strings.HasPrefix(got, "Learned from 1,200 messages (2 re-sent): ") {
		t.Errorf("summary: %s", got)
	}
}
