package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/resends"
)

// resendT0 is when the test service sends its first message.
var resendT0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// answer is what one attempt was answered: a status, or "close"/"hang".
type answer struct {
	status int
	mode   string
}

// serviceSends stores a message's attempts as the receiver would: the
// service re-sends it after each failed answer on its schedule (60 s,
// 5 min, 30 min), the n-th attempt answered answers[n].
func serviceSends(t *testing.T, eng *inspector.Engine, hook, typ string, at time.Time, answers ...answer) {
	t.Helper()
	schedule := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}
	body := []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[{"uuid":"%s-e","type":%q,"generated_at":"2026-11-22T09:00:00Z","metadata":{"account_id":"a"},"payload":{"media":{"id":"m1","name":"Clip"}}}]}`, hook, hook, typ))
	for n, a := range answers {
		d := &inspector.Delivery{ReceivedAt: at, Method: "POST", Path: "/webhooks", Body: body, BodyLength: int64(len(body)),
			Status: a.status, Answer: a.mode, RemoteAddr: "127.0.0.1:5000", Source: "receiver"}
		if _, err := eng.Ingest(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		if n < len(schedule) {
			at = at.Add(schedule[n])
		}
	}
}

// resendSeed: four messages answered 500, 500 then 200 (re-sent after
// 60 s and 5 min), one closed then 200, one held then 200, five taken at
// once, one 503 four times (the schedule runs out).
func resendSeed(t *testing.T) func(context.Context, *inspector.Engine) {
	return func(_ context.Context, eng *inspector.Engine) {
		at := resendT0
		for i := range 4 {
			serviceSends(t, eng, fmt.Sprintf("ready-%d", i), "media.ready", at, answer{status: 500}, answer{status: 500}, answer{status: 200})
			at = at.Add(time.Second)
		}
		serviceSends(t, eng, "closed-1", "media.updated", at, answer{mode: "close"}, answer{status: 200})
		serviceSends(t, eng, "held-1", "media.updated", at, answer{mode: "hang"}, answer{status: 200})
		for i := range 5 {
			serviceSends(t, eng, fmt.Sprintf("ok-%d", i), "media.created", at, answer{status: 200})
		}
		serviceSends(t, eng, "failed-1", "media.failed", at, answer{status: 503}, answer{status: 503}, answer{status: 503}, answer{status: 503})
	}
}

// TestResendsTabDrawsTheScheduleAndTimelines: the Re-sends tab says the
// learned schedule in words and as bars, draws each re-sent message's
// attempts as marks coloured and shaped by their answer, says an attempt
// when hovered, opens its delivery when clicked, and shows the message of
// the delivery the Deliveries tab shows on top.
func TestResendsTabDrawsTheScheduleAndTimelines(t *testing.T) {
	h := newStoreHarness(t, resendSeed(t))
	m := h.win
	// The shown delivery: ready-2's third attempt.
	var third int64
	tls, err := resends.Timelines(context.Background(), h.db, []string{"ready-2"})
	if err != nil || len(tls) != 1 {
		t.Fatal(tls, err)
	}
	third = tls[0].Attempts[2].DeliveryID
	m.deliveries.open(third)
	if !m.deliveries.Detail.Resent.Visible() || m.deliveries.Detail.Resent.Text != "Sent 3 times…" {
		t.Fatalf("detail's re-sent button %v %q", m.deliveries.Detail.Resent.Visible(), m.deliveries.Detail.Resent.Text)
	}
	test.Tap(m.deliveries.Detail.Resent)
	r := m.resends
	if m.Tabs.Selected() != m.resendsTab {
		t.Fatal("the button did not open the Re-sends tab")
	}
	want := "Learned from 12 messages (7 re-sent): after a failed answer the service re-sent after ~1 min (n=7), ~5 min (n=5), ~30 min (n=1); nothing after a 2xx (n=11)."
	if r.Sentence.Text != want {
		t.Fatalf("sentence:\n got %s\nwant %s", r.Sentence.Text, want)
	}
	if !strings.Contains(r.Retries.Text, "re-send 1: after ~1 min (n=7") || !strings.Contains(r.Retries.Text, "1 message had a failed answer last and was not sent again (yet)") {
		t.Fatalf("retries: %s", r.Retries.Text)
	}
	// Bars: one per bucket, labelled by its median, as tall as its count.
	bars := test.WidgetRenderer(r.Histogram).(*histRenderer).bars
	if len(bars) != 3 || bars[0].label.Text != "~1 min" || bars[0].n.Text != "n=7" || bars[1].label.Text != "~5 min" {
		t.Fatalf("bars: %d", len(bars))
	}
	if bars[0].rect.Size().Height <= bars[1].rect.Size().Height || bars[1].rect.Size().Height <= bars[2].rect.Size().Height {
		t.Fatalf("bar heights do not follow the counts: %v %v %v", bars[0].rect.Size(), bars[1].rect.Size(), bars[2].rect.Size())
	}
	// Lanes: the 7 re-sent messages, newest first; the 5 sent once counted.
	if len(r.shown) != 7 || r.Lanes.Length() != 7 || !strings.Contains(r.Summary.Text, "5 messages were sent once") {
		t.Fatalf("%d lanes; summary %q", len(r.shown), r.Summary.Text)
	}
	kinds := map[string][]resends.Kind{}
	for _, tl := range r.shown {
		for _, a := range tl.Attempts {
			kinds[tl.HookUUID] = append(kinds[tl.HookUUID], a.Kind())
		}
	}
	if fmt.Sprint(kinds["closed-1"], kinds["held-1"], kinds["ready-0"]) != "[closed 2xx] [held 2xx] [status status 2xx]" {
		t.Fatalf("kinds %v", kinds)
	}
	// The shown delivery's message on top, its attempts as lines.
	if !r.Message.content.Visible() || !strings.Contains(r.Message.Title.Text, "ready-2): 3 attempts over 6 min; the last answered 200") || len(r.Message.Attempts.Objects) != 3 {
		t.Fatalf("message card %v %q (%d lines)", r.Message.content.Visible(), r.Message.Title.Text, len(r.Message.Attempts.Objects))
	}
	// A lane's marks: shapes and colours by kind, placed left to right.
	lane := r.Message.Lane
	lane.Resize(fyne.NewSize(600, lane.MinSize().Height))
	lr := test.WidgetRenderer(lane).(*laneRenderer)
	if _, ok := lr.marks[0].(*canvas.Rectangle); !ok {
		t.Fatalf("a 500 is drawn as %T, want a square", lr.marks[0])
	}
	if c, ok := lr.marks[2].(*canvas.Circle); !ok || c.FillColor != lane.Theme().Color("success", fyne.CurrentApp().Settings().ThemeVariant()) {
		t.Fatalf("a 200 is drawn as %T, want a green dot", lr.marks[2])
	}
	x := []float32{lr.marks[0].Position().X, lr.marks[1].Position().X, lr.marks[2].Position().X}
	if !(x[0] < x[1] && x[1] < x[2]) || lr.gaps[0].Text != "+1 min" || lr.gaps[1].Text != "+5 min" {
		t.Fatalf("marks at %v, gaps %q %q", x, lr.gaps[0].Text, lr.gaps[1].Text)
	}
	// Hovering the second mark says it; clicking it opens its delivery.
	at := fyne.NewPos(x[1]+markSize/2, lane.Size().Height/2)
	lane.MouseMoved(&desktop.MouseEvent{PointEvent: fyne.PointEvent{Position: at}})
	if !strings.HasPrefix(r.Message.Hover.Text, "Attempt 2 · ") || !strings.Contains(r.Message.Hover.Text, "Hookscope answered 500 · 1 min after the attempt before") {
		t.Fatalf("hover: %q", r.Message.Hover.Text)
	}
	lane.Tapped(&fyne.PointEvent{Position: at})
	if m.Tabs.Selected() != m.deliveriesTab || m.deliveries.selectedID != tls[0].Attempts[1].DeliveryID {
		t.Fatalf("clicking the mark showed #%d", m.deliveries.selectedID)
	}
	// A message sent once: no card, no button.
	once, _ := resends.Timelines(context.Background(), h.db, []string{"ok-1"})
	m.deliveries.open(once[0].Attempts[0].DeliveryID)
	if m.deliveries.Detail.Resent.Visible() {
		t.Fatal("a message sent once has a re-sent button")
	}
	m.Tabs.Select(m.resendsTab)
	if r.Message.content.Visible() {
		t.Fatalf("a message sent once has a card: %q", r.Message.Title.Text)
	}
}

// TestResendsExportAndEmpty: JSON and CSV exports hold every message (as
// `hookscope resends --json/--csv`), and a store without re-sends says
// how to provoke them.
func TestResendsExportAndEmpty(t *testing.T) {
	h := newStoreHarness(t, resendSeed(t))
	r := h.win.resends
	dir := t.TempDir()
	var errs []error
	r.export(filepath.Join(dir, "r.json"), false, func(err error) { errs = append(errs, err) })
	r.export(filepath.Join(dir, "r.csv"), true, func(err error) { errs = append(errs, err) })
	if len(errs) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	var rep resends.Report
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Timelines) != 12 || rep.Schedule.Resent != 7 || !strings.HasPrefix(rep.Sentence, "after a failed answer") {
		t.Fatalf("json: %d timelines, %v", len(rep.Timelines), err)
	}
	c, _ := os.ReadFile(filepath.Join(dir, "r.csv"))
	if lines := strings.Count(string(c), "\n"); lines != 1+4*3+2+2+5+4 || !strings.HasPrefix(string(c), "hook_uuid,attempt,delivery_id") {
		t.Fatalf("csv: %d lines", lines)
	}

	e := newStoreHarness(t, func(_ context.Context, eng *inspector.Engine) {
		serviceSends(t, eng, "ok-1", "media.created", resendT0, answer{status: 200})
	})
	e.win.Tabs.Select(e.win.resendsTab)
	if !e.win.resends.Empty.Visible() || !strings.Contains(e.win.resends.Empty.Text, "500 x2 then 200") {
		t.Fatal("no hint to provoke re-sends")
	}
	if e.win.resends.Sentence.Text != "Learned from 1 message (0 re-sent): nothing after a 2xx (n=1)." {
		t.Fatalf("sentence %q", e.win.resends.Sentence.Text)
	}
}
