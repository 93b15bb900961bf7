package prove

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// TestBatchedAnalysisMatchesOneByOne: the engine analyzes queued
// deliveries in chunks and saves each chunk at once; its ledger verdicts
// (duplicate, copies, first delivery, divergent, re-sent, out of order)
// must be exactly those of analysing and saving one delivery at a time.
func TestBatchedAnalysisMatchesOneByOne(t *testing.T) {
	secret := []byte("ledger-secret")
	g := simulate.New(21)
	var bodies [][]byte
	for _, sc := range simulate.Scenarios() {
		msgs, err := g.Scenario(sc, simulate.ScenarioOptions{Batch: 2, Duplicates: 2, Shuffle: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			bodies = append(bodies, m.Body())
		}
	}
	// Re-sent messages (same hook uuid) and a divergent copy.
	bodies = append(bodies, bodies[0], bodies[3])
	bodies = append(bodies, []byte(strings.Replace(string(bodies[1]), `"generated_at":"20`, `"generated_at":"19`, 1)))
	if len(bodies) < 40 {
		t.Fatalf("only %d messages", len(bodies))
	}
	verdicts := func(oneByOne bool) []string {
		db, err := storage.Open(filepath.Join(t.TempDir(), "l.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		eng := inspector.NewEngine(db, inspector.Options{Secrets: [][]byte{secret}})
		var out []string
		eng.Subscribe(func(r *inspector.Record) {
			a := r.Analysis
			out = append(out, fmt.Sprintf("d%d resend=%v of %d", r.Delivery.ID, a.Resend, a.ResendOf))
			for _, e := range a.Events {
				out = append(out, fmt.Sprintf("  %s dup=%v copies=%d first=%d div=%v ooo=%v", e.UUID, e.Duplicate, e.Copies, e.FirstDeliveryID, e.Divergent, e.OutOfOrder))
			}
		})
		ctx := context.Background()
		for i, b := range bodies {
			d := &inspector.Delivery{Method: http.MethodPost, Path: "/webhooks", Headers: simulate.HeadersFor(b, secret), Body: b, BodyLength: int64(len(b)), ReceivedAt: time.Unix(int64(i), 0)}
			if _, err := eng.Ingest(ctx, d); err != nil {
				t.Fatal(err)
			}
			if oneByOne {
				if err := eng.Drain(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := eng.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := verdicts(true), verdicts(false)
	if len(want) != len(got) {
		t.Fatalf("one by one: %d lines, batched: %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("line %d:\n one by one %s\n batched    %s", i, want[i], got[i])
		}
	}
	// The fixture must exercise every verdict, or the comparison proves
	// little.
	all := strings.Join(want, "\n")
	for _, v := range []string{"dup=true", "div=true", "resend=true", "ooo=true"} {
		if !strings.Contains(all, v) {
			t.Errorf("no %s verdict in the fixture", v)
		}
	}
	t.Logf("%d messages, %d verdict lines compared", len(bodies), len(want))
}
