package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
)

// Benchmarks (not run by tests):
//
//	go test -tags migrated_fynedo -run '^$' -bench . -benchtime 20x ./ui/
//
// The store fixture (HOOKSCOPE_UI_BENCH_ROWS deliveries, default 100,000)
// is built once in the temp dir and reused by later runs.

func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("HOOKSCOPE_UI_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

var benchTypes = catalog.TypeNames()

// benchRecord makes one ~1 KB delivery and its analysis with a realistic
// spread: 5% invalid signatures, 10% duplicates, 1% divergent, 3% problems.
func benchRecord(r *rand.Rand, i int) (*inspector.Delivery, *inspector.Analysis) {
	typ := benchTypes[i%len(benchTypes)]
	uuid := fmt.Sprintf("%016x", r.Uint64())
	title := fmt.Sprintf("Video %d about %s", i, []string{"pricing", "onboarding", "webhooks", "security", "release"}[i%5])
	if i%1000 == 0 {
		title += " needleword"
	}
	ev := fmt.Sprintf(`{"uuid":%q,"type":%q,"payload":{"media":{"id":"m%08d","name":%q,"url":"https://acme.videohost.example/medias/m%08d","duration":%d.5,"thumbnail":{"url":"https://embed.videohost.example/t/%d.jpg"}},"project":{"id":"p1","name":"Marketing"}},"metadata":{"account_id":"4875402"},"generated_at":"2026-03-02T09:10:19Z"}`,
		uuid, typ, i, title, i, 100+i%900, i)
	body := fmt.Sprintf(`{"hook":{"uuid":"%032x"},"events":[%s]}`, i, ev)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	d := &inspector.Delivery{ReceivedAt: at, Method: "POST", Path: "/webhooks", Body: []byte(body), BodyLength: int64(len(body)), Status: 200,
		Headers: []inspector.Header{{Name: "User-Agent", Value: "Service-Webhooks/0.0.47"}, {Name: "Content-Type", Value: "application/json"}}}
	a := &inspector.Analysis{Signature: inspector.SignatureResult{Status: inspector.SignatureValid, SecretIndex: 0}, AnalyzedAt: at,
		Events: []inspector.EventAnalysis{{UUID: uuid, Type: typ, Summary: typ + " — " + title, Raw: []byte(ev), Copies: 1, Hash: uuid}}}
	switch p := i % 100; {
	case p < 5:
		a.Signature = inspector.SignatureResult{Status: inspector.SignatureInvalid, SecretIndex: -1, Reason: "digest differs"}
	case p < 15:
		a.Events[0].Duplicate, a.Events[0].Copies = true, 2
		if p == 14 {
			a.Events[0].Divergent = true
		}
	case p < 18:
		a.Events[0].Problems = []catalog.Problem{{Severity: catalog.SeverityWarning, Path: "payload.media.duration", Message: "is null"}}
	}
	return d, a
}

// benchStore opens (building when needed) the fixture store.
func benchStore(b *testing.B) *storage.DB {
	b.Helper()
	n := benchRows()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hookscope-ui-bench-%d.db", n))
	_, statErr := os.Stat(path)
	db, err := storage.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if statErr == nil {
		if st, err := db.Stats(context.Background()); err == nil && st.Deliveries == int64(n) {
			return db
		}
	}
	start := time.Now()
	ctx := context.Background()
	// Concurrent writers share group commits, so the fixture builds in
	// seconds instead of one fsync per delivery.
	var wg sync.WaitGroup
	const workers = 64
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := w; i < n; i += workers {
				d, a := benchRecord(r, i)
				id, err := db.InsertDelivery(ctx, d)
				if err != nil {
					errs <- err
					return
				}
				a.DeliveryID = id
				if err := db.SaveAnalysis(ctx, a); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d deliveries in %v", n, time.Since(start).Round(time.Millisecond))
	return db
}

func benchWindow(b *testing.B, db *storage.DB) *mainWindow {
	b.Helper()
	a := test.NewTempApp(b)
	w := a.NewWindow("bench")
	svc := Services{Store: db, StorePath: db.Path()}
	m := newMainWindow(a, w, svc, station.DefaultSettings(), nil, nil, true)
	w.Resize(fyne.NewSize(1280, 800))
	return m
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkWindowOpen measures opening the whole window on the fixture
// store until the list holds its first page and the counts are known.
func BenchmarkWindowOpen(b *testing.B) {
	db := benchStore(b)
	var m *mainWindow
	for b.Loop() {
		m = benchWindow(b, db)
		if len(m.deliveries.model.rows) == 0 || m.deliveries.model.total != int64(benchRows()) {
			b.Fatalf("list not ready: %d rows, total %d", len(m.deliveries.model.rows), m.deliveries.model.total)
		}
		m.close()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(rssMB(), "rss-MB")
}

// issueExample is issue 26's example expression.
const issueExample = `events.exists(e, e.type == "media.updated" && has(e.payload.previous_attributes.thumbnail))`

// BenchmarkFilter measures one filter change, from the widget to the
// applied first page and count (the inline bridge runs the store queries
// in the call). The Clear before each change is not timed; "clear" times
// a Clear from the invalid-signature filter back to everything.
func BenchmarkFilter(b *testing.B) {
	db := benchStore(b)
	m := benchWindow(b, db)
	defer m.close()
	v := m.deliveries
	cases := []struct {
		name       string
		before, do func()
	}{
		{"signature-invalid", v.clearFilters, func() { v.SigSelect.SetSelected("invalid") }},
		{"type", v.clearFilters, func() { v.TypeSelect.SetSelected("media.updated") }},
		{"divergent", v.clearFilters, func() { v.DedupeSelect.SetSelected(divergentOnly) }},
		{"problems", v.clearFilters, func() { v.ProblemsCheck.SetChecked(true) }},
		{"text-rare", v.clearFilters, func() { v.Search.SetText("needleword") }},
		{"text-common", v.clearFilters, func() { v.Search.SetText("onboarding") }},
		{"clear", func() { v.SigSelect.SetSelected("invalid") }, v.clearFilters},
		// The expression field: the issue's example (narrowed by type, each
		// media.updated payload read), one narrowed by signature and time,
		// and one the store cannot narrow (every body read).
		{"expr-example", v.clearFilters, func() { v.Expression.SetText(issueExample) }},
		{"expr-signature-recent", v.clearFilters, func() {
			v.Expression.SetText(`delivery.signature == "invalid" && delivery.received_at > timestamp("2026-01-02T00:00:00Z")`)
		}},
		{"expr-every-body", v.clearFilters, func() { v.Expression.SetText(`delivery.body.contains("needleword")`) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				c.before()
				b.StartTimer()
				c.do()
				if v.model.loading || v.model.total < 0 || v.ExprError.Visible() {
					b.Fatal("filter not applied")
				}
			}
		})
	}
}

// BenchmarkDetailOpen1MiB measures what selecting a row with a 1 MiB
// body does, from the list's selection as a click makes it: the store
// read, pretty-printing, the event cards (the body carries ~5,500 events,
// all in the analysis) and the pane; then the JSON and Raw tabs shown in
// turn, each laid out with its visible rows, and back to Events. Between
// iterations (untimed) a small delivery is selected, so each one really
// opens the big one again.
func BenchmarkDetailOpen1MiB(b *testing.B) { benchDetailOpen(b, 1<<20) }

// BenchmarkDetailOpen10MiB is the same for a 10 MiB body.
func BenchmarkDetailOpen10MiB(b *testing.B) { benchDetailOpen(b, 10<<20) }

func benchDetailOpen(b *testing.B, size int) {
	store := newFakeStore()
	store.add("media.created", "small", inspector.SignatureValid, nil)
	r := store.add("media.updated", "big", inspector.SignatureValid, nil)
	body := bigBody(size)
	r.Delivery.Body, r.Delivery.BodyLength = body, int64(len(body))
	var msg struct{ Events []json.RawMessage }
	if err := json.Unmarshal(body, &msg); err != nil {
		b.Fatal(err)
	}
	r.Analysis.Events = r.Analysis.Events[:0]
	for i, ev := range msg.Events {
		uuid := fmt.Sprintf("e%d", i)
		r.Analysis.Events = append(r.Analysis.Events, inspector.EventAnalysis{UUID: uuid, Type: "media.updated",
			Summary: "Media updated", Raw: ev, Copies: 1, GeneratedRaw: "2026-03-02T09:10:19Z"})
	}
	a := test.NewTempApp(b)
	w := a.NewWindow("bench")
	m := newMainWindow(a, w, Services{Store: store}, station.DefaultSettings(), nil, nil, true)
	defer m.close()
	w.Resize(fyne.NewSize(1280, 800))
	b.ReportMetric(float64(len(body))/(1<<20), "body-MiB")
	v, d := m.deliveries, m.deliveries.Detail
	if v.model.rows[0].ID != r.Delivery.ID {
		b.Fatal("the big delivery is not the first row")
	}
	for b.Loop() {
		b.StopTimer()
		v.List.Select(1) // the small delivery
		b.StartTimer()
		v.List.Select(0)      // inline bridge: read, prepare and show
		d.Tabs.SelectIndex(1) // the JSON tab laid out
		d.Tabs.SelectIndex(2) // and the Raw one
		d.Tabs.SelectIndex(0)
	}
	if d.rec.Delivery.ID != r.Delivery.ID || d.JSONView.created > 200 || d.JSONView.Rows() < 1000 {
		b.Fatalf("JSON view: %d row objects for %d rows", d.JSONView.created, d.JSONView.Rows())
	}
}
