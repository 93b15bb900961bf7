package rules_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

var start = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

var fixtureTypes = []string{
	"media.created", "media.processing", "media.ready", "media.failed", "media.updated",
	"media.transcript_updated", "media.transcript_failed", "media.deleted", "media.translation_created",
	"media.localization_created", "media.localization_failed", "viewing_session.play",
	"viewing_session.percent_watched", "viewing_session.turnstile.converted",
	"viewing_session.call_to_action.converted", "viewing_session.annotation.converted", "live_event.registration",
}

// fixtureDelivery is delivery i of a deterministic store: ~2 KB bodies of
// 1 to 3 events, a tenth of media.updated changing the thumbnail, a few
// invalid signatures, duplicates and re-sends, a second path.
func fixtureDelivery(r *rand.Rand, i int) (*inspector.Delivery, *inspector.Analysis) {
	hook := fmt.Sprintf("hook-%d", i/2) // every message arrives twice: a re-send
	at := start.Add(time.Duration(i) * time.Second)
	nev := 1 + r.IntN(3)
	a := &inspector.Analysis{Signature: inspector.SignatureResult{Status: inspector.SignatureValid}, HookUUID: hook, Resend: i%2 == 1, AnalyzedAt: at}
	if r.IntN(100) < 5 {
		a.Signature.Status = inspector.SignatureInvalid
	}
	var evs []string
	for e := range nev {
		typ := fixtureTypes[r.IntN(len(fixtureTypes))]
		uuid := fmt.Sprintf("ev-%d-%d", i/2, e)
		payload := fmt.Sprintf(`{"media":{"id":"m%d","name":"video %d","url":"https://example.test/m%d","duration":%d.5,"thumbnail":{"url":"https://example.test/t%d.jpg"},"description":%q},"project":{"id":"p1","name":"Project"}`,
			r.IntN(500), i, i, r.IntN(3600), i, strings.Repeat("lorem ipsum dolor sit amet ", 20/nev))
		if typ == "media.updated" {
			if r.IntN(10) == 0 {
				payload += `,"previous_attributes":{"thumbnail":{"url":"https://example.test/old.jpg"}}`
			} else {
				payload += `,"previous_attributes":{"name":"old name"}`
			}
		}
		if typ == "viewing_session.percent_watched" {
			payload += fmt.Sprintf(`,"visitor":{"id":"v%d"},"percent_watched":%d`, r.IntN(50), 25*(1+r.IntN(4)))
		}
		payload += "}"
		gen := at.Add(-time.Duration(r.IntN(5000)) * time.Millisecond)
		evs = append(evs, fmt.Sprintf(`{"uuid":%q,"type":%q,"generated_at":%q,"metadata":{"account_id":"acct-1"},"payload":%s}`, uuid, typ, gen.Format(time.RFC3339), payload))
		ea := inspector.EventAnalysis{Index: e, UUID: uuid, Type: typ, AccountID: "acct-1", GeneratedRaw: gen.Format(time.RFC3339), GeneratedAt: gen, Copies: 1, Summary: typ}
		if i%2 == 1 {
			ea.Duplicate, ea.Copies = true, 2
		}
		a.Events = append(a.Events, ea)
	}
	body := []byte(fmt.Sprintf(`{"hook":{"uuid":%q},"events":[%s]}`, hook, strings.Join(evs, ",")))
	path := "/webhooks"
	if r.IntN(20) == 0 {
		path = "/staging"
	}
	d := &inspector.Delivery{
		ReceivedAt: at, Method: "POST", Path: path, Source: "receiver",
		Headers: []inspector.Header{
			{Name: "Host", Value: "example.trycloudflare.com"},
			{Name: "User-Agent", Value: "Service-Webhooks/0.0.47"},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-Service-Signature", Value: "0123"},
		},
		Body: body, BodyLength: int64(len(body)), Status: 200,
	}
	if i%7 == 0 {
		d.Status = 500
	}
	return d, a
}

// fill stores n fixture deliveries with their analyses, 32 at a time
// (group commit), so ids follow i only roughly.
func fill(tb testing.TB, db *storage.DB, n int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	ds := make([]*inspector.Delivery, n)
	as := make([]*inspector.Analysis, n)
	for i := range n {
		ds[i], as[i] = fixtureDelivery(r, i)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, d := range ds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, err := db.InsertDelivery(ctx, d)
			if err != nil {
				tb.Error(err)
				return
			}
			as[i].DeliveryID = id
			if err := db.SaveAnalysis(ctx, as[i]); err != nil {
				tb.Error(err)
			}
		}()
	}
	wg.Wait()
}

func openFilled(tb testing.TB, path string, n int) *storage.DB {
	db, err := storage.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if c, _ := db.Count(context.Background(), storage.Filter{}); c != int64(n) {
		fill(tb, db, n)
	}
	return db
}

// TestFindMatchesBruteForce: narrowing in SQL never loses a match nor
// keeps a non-match, for expressions of every narrowing kind, oldest and
// newest first, with and without a limit.
func TestFindMatchesBruteForce(t *testing.T) {
	ctx := context.Background()
	db := openFilled(t, filepath.Join(t.TempDir(), "hooks.db"), 300)
	now := start.Add(300 * time.Second)
	exprs := []string{
		`events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`,
		`delivery.signature == "invalid" && delivery.received_at > now - duration("3m")`,
		`delivery.received_at >= timestamp("2026-03-01T00:01:00Z") && delivery.received_at < timestamp("2026-03-01T00:02:00Z")`,
		`delivery.id > 20 && delivery.id <= 40 && delivery.path in ["/staging", "/other"]`,
		`delivery.id > 20 && delivery.id < 25`,
		`delivery.received_at >= timestamp("2026-03-01T00:01:30Z") && delivery.received_at <= timestamp("2026-03-01T00:01:40Z")`,
		`delivery.status == 500 && events.exists(e, e.type in ["media.ready", "media.failed"])`,
		`delivery.hook_uuid == "hook-7"`,
		`events.exists(e, e.dedupe == "duplicate") && delivery.resend`,
		`events.exists(e, e.type == "viewing_session.percent_watched" && e.payload.percent_watched >= 75)`,
		`delivery.headers["user-agent"].startsWith("Service-Webhooks/")`,
		`events.exists(e, e.summary == "media.ready") || delivery.path == "/staging"`,
		`delivery.signature == "valid" && delivery.signature == "invalid"`,
		`delivery.mentions("video 12")`,
		`delivery.mentions("MEDIA.updated") && delivery.signature == "invalid"`,
		`delivery.mentions("example.test/t17") || delivery.id == 3`,
		`delivery.decode_error != "" || events.exists(e, e.problems.size() > 0)`,
	}
	var all []*inspector.Record
	if err := db.Each(ctx, storage.Filter{}, func(r *inspector.Record) error { all = append(all, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, src := range exprs {
		e, err := rules.Compile(src, rules.Stored)
		if err != nil {
			t.Fatalf("%s: %s", src, rules.Render(err))
		}
		var want []int64
		for _, r := range all {
			if ok, _ := e.Eval(rules.Input{Record: r, Now: now}); ok {
				want = append(want, r.Delivery.ID)
			}
		}
		for _, newest := range []bool{false, true} {
			var got []int64
			st, err := rules.Find(ctx, db, e, rules.FindOptions{Now: now, NewestFirst: newest}, func(in *rules.Input) error {
				got = append(got, in.Record.Delivery.ID)
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			w := slices.Clone(want)
			if newest {
				slices.Reverse(w)
			}
			if !slices.Equal(got, w) {
				t.Errorf("%s (newest first %v):\n got %v\nwant %v", src, newest, got, w)
			}
			if st.Matched != len(w) || st.Failed != 0 {
				t.Errorf("%s: stats %+v", src, st)
			}
		}
		if len(want) > 2 {
			var got []int64
			if _, err := rules.Find(ctx, db, e, rules.FindOptions{Now: now, NewestFirst: true, Limit: 2}, func(in *rules.Input) error {
				got = append(got, in.Record.Delivery.ID)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if w := []int64{want[len(want)-1], want[len(want)-2]}; !slices.Equal(got, w) {
				t.Errorf("%s limit 2: %v, want %v", src, got, w)
			}
		}
	}
}

// BenchmarkFind filters a store of 100,000 deliveries
// (HOOKSCOPE_BENCH_ROWS to change it), walking all of them:
//
//	go test -run '^$' -bench Find -benchtime 5x ./rules/
//
// The store is built once per size in the temp dir and kept for the next
// run (building 100,000 takes about a minute).
func BenchmarkFind(b *testing.B) {
	n := 100_000
	if s := os.Getenv("HOOKSCOPE_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1000 {
			b.Fatalf("HOOKSCOPE_BENCH_ROWS=%q: want an integer >= 1000", s)
		}
		n = v
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hookscope-rules-bench-%d.db", n))
	db := openFilled(b, path, n)
	now := start.Add(time.Duration(n) * time.Second)
	for _, src := range []string{
		`events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`,
		`delivery.signature == "invalid" && delivery.received_at > now - duration("12h")`,
		`delivery.status == 500`,
		`events.exists(e, e.dedupe == "duplicate" && e.type.startsWith("viewing_session."))`,
		`events.exists(e, has(e.payload.visitor) && e.payload.visitor.id == "v7")`,
		`delivery.headers["user-agent"] != "Service-Webhooks/0.0.47"`,
	} {
		e, err := rules.Compile(src, rules.Stored)
		if err != nil {
			b.Fatal(rules.Render(err))
		}
		b.Run(src, func(b *testing.B) {
			var st rules.FindStats
			cpu0 := cpuTime()
			for b.Loop() {
				st, err = rules.Find(context.Background(), db, e, rules.FindOptions{Now: now}, func(*rules.Input) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/search")
			// CPU time is what a shared machine's load does not inflate:
			// on two idle cores a search takes about half of it.
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/search")
			b.ReportMetric(float64(st.Read), "read")
			b.ReportMetric(float64(st.Matched), "matched")
		})
	}
}
