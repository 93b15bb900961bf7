package tail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/cli/internal/clitest"
	"github.com/hookscope/hookscope/cli/list"
	"github.com/hookscope/hookscope/cli/tail"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

// TestFollowerOrderOnce: each new delivery is printed once, in id order,
// after its analysis (or after AnalysisWait without one), filtered by the
// expression; a second handle on the store plays the other process.
func TestFollowerOrderOnce(t *testing.T) {
	ctx := context.Background()
	path := clitest.SeedStore(t)
	reader, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	e, err := rules.Compile(`delivery.signature != "invalid"`, rules.Stored)
	if err != nil {
		t.Fatal(err)
	}
	var printed []int64
	f := &tail.Follower{DB: reader, Expr: e, After: 3, Print: func(r list.Row) { printed = append(printed, r.ID) }}
	eng := inspector.NewEngine(writer, inspector.Options{Secrets: [][]byte{[]byte(clitest.CaptureSecret)}})
	g := simulate.New(5)
	store := func(secret string) int64 {
		m := g.Message(g.Event("media.ready"))
		body := m.Body()
		id, err := writer.InsertDelivery(ctx, &inspector.Delivery{Method: "POST", Path: "/webhooks", Headers: m.Headers([]byte(secret)), Body: body, BodyLength: int64(len(body)), Status: 200})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	now := time.Now()
	if err := f.Step(ctx, now); err != nil || len(printed) != 0 {
		t.Fatalf("nothing new: %v %v", printed, err)
	}
	a := store(clitest.CaptureSecret)
	if err := f.Step(ctx, now); err != nil || len(printed) != 0 {
		t.Fatalf("not analyzed yet, printed %v %v", printed, err)
	}
	b := store("wrong-secret") // invalid: filtered out
	c := store(clitest.CaptureSecret)
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Step(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := f.Step(ctx, now); err != nil {
		t.Fatal(err)
	}
	if len(printed) != 2 || printed[0] != a || printed[1] != c {
		t.Fatalf("printed %v, want [%d %d] (%d filtered out)", printed, a, c, b)
	}
	// Nobody analyzes this one: printed as it is after AnalysisWait.
	d := store(clitest.CaptureSecret)
	if err := f.Step(ctx, now); err != nil || len(printed) != 2 {
		t.Fatalf("printed %v before the wait", printed)
	}
	if err := f.Step(ctx, now.Add(tail.AnalysisWait)); err != nil || len(printed) != 3 || printed[2] != d {
		t.Fatalf("printed %v after the wait, want %d last", printed, d)
	}
}

// TestTailRunEnds: the command follows until its context ends (Ctrl+C),
// then exits 0.
func TestTailRunEnds(t *testing.T) {
	path := clitest.SeedStore(t)
	var out clitest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	env := clitestEnv(&out)
	done := make(chan int, 1)
	go func() { done <- runTail(ctx, env, "tail", "--db", path, "--json") }()
	writer, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	g := simulate.New(9)
	eng := inspector.NewEngine(writer, inspector.Options{})
	// The tail starts after the newest delivery it finds, so deliveries
	// are stored until it prints one (bounded), each analyzed at once.
	for i := 0; i < 100 && !strings.Contains(out.String(), `"path":"/late-`); i++ {
		m := g.Message(g.Event("media.created"))
		body := m.Body()
		if _, err := writer.InsertDelivery(context.Background(), &inspector.Delivery{Method: "POST", Path: fmt.Sprint("/late-", i), Body: body, BodyLength: int64(len(body)), Status: 200}); err != nil {
			t.Fatal(err)
		}
		if err := eng.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	out.WaitFor(t, `"path":"/late-`)
	time.Sleep(3 * storage.WatchEvery)
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	// Each printed once, in id order.
	var last int64
	for _, l := range out.Lines() {
		var r list.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if r.ID <= last {
			t.Errorf("delivery %d after %d:\n%s", r.ID, last, out.String())
		}
		last = r.ID
	}
}
