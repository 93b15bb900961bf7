package tail_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookscope/hookscope/cli/list"
	"github.com/hookscope/hookscope/cli/tail"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

// TestFollowerWhileReceiving: a receiving process (engine running)
// stores signed and unsigned deliveries while the follower steps; only
// the unsigned ones are printed, each once.
func TestFollowerWhileReceiving(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "hooks.db")
	writer, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	secret := []byte("s")
	eng := inspector.NewEngine(writer, inspector.Options{Secrets: [][]byte{secret}})
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	reader, err := storage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	e, err := rules.Compile(`delivery.signature == "missing"`, rules.Stored)
	if err != nil {
		t.Fatal(err)
	}
	printed := map[int64]list.Row{}
	f := &tail.Follower{DB: reader, Expr: e, Print: func(r list.Row) {
		if _, twice := printed[r.ID]; twice {
			t.Errorf("delivery %d printed twice", r.ID)
		}
		printed[r.ID] = r
	}}
	g := simulate.New(3)
	unsigned := 0
	for i := range 60 {
		m := g.Message(g.Event("media.ready"))
		body := m.Body()
		var key []byte
		if i%3 != 0 {
			key = secret
		} else {
			unsigned++
		}
		hs := m.Headers(key)
		if key == nil {
			hs = []inspector.Header{{Name: "Content-Type", Value: "application/json"}}
		}
		if _, err := eng.Ingest(ctx, &inspector.Delivery{ReceivedAt: time.Now(), Method: "POST", Path: "/w", Headers: hs, Body: body, BodyLength: int64(len(body)), Status: 200}); err != nil {
			t.Fatal(err)
		}
		if err := f.Step(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200 && len(printed) < unsigned; i++ {
		time.Sleep(20 * time.Millisecond)
		if err := f.Step(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for id, r := range printed {
		if r.Signature != "missing" {
			t.Errorf("delivery %d printed with signature %s", id, r.Signature)
		}
	}
	if len(printed) != unsigned {
		t.Errorf("printed %d, want %d", len(printed), unsigned)
	}
	cancel()
	<-done
}
