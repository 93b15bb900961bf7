package storage

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
)

// Benchmarks (not run by tests):
//
//	go test -run '^$' -bench . -benchtime 2s ./storage/
//	HOOKSCOPE_BENCH_ROWS=100000 go test -run '^$' -bench Large ./storage/
//
// BenchmarkLarge builds its fixture (default 1,000,000 deliveries) once per
// run in a temp dir; that takes minutes at full size.

var benchTypes = []string{
	"media.created", "media.processing", "media.ready", "media.failed", "media.updated",
	"media.transcript_updated", "media.transcript_failed", "media.deleted", "media.translation_created",
	"media.localization_created", "media.localization_failed", "viewing_session.play",
	"viewing_session.percent_watched", "viewing_session.turnstile.converted",
	"viewing_session.call_to_action.converted", "viewing_session.annotation.converted", "live_event.registration",
}

// benchWords is a vocabulary for titles and descriptions, so the full-text
// index sees a realistic spread of terms rather than one repeated string.
func benchWords(r *rand.Rand) []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	words := make([]string, 3000)
	for i := range words {
		n := 3 + r.IntN(8)
		b := make([]byte, n)
		for j := range b {
			b[j] = letters[r.IntN(len(letters))]
		}
		words[i] = string(b)
	}
	return words
}

func hexID(r *rand.Rand, n int) string {
	const hexdigits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = hexdigits[r.IntN(16)]
	}
	return string(b)
}

// benchDelivery makes one realistic delivery of about 2 KB with 1 to 3
// events, and its analysis. i makes rare markers deterministic: every
// 1000th body carries the word "needleword".
func benchDelivery(r *rand.Rand, words []string, i int, at time.Time) (*inspector.Delivery, *inspector.Analysis) {
	nev := 1 + r.IntN(3)
	hook := hexID(r, 32)
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"hook":{"uuid":%q},"events":[`, hook)
	a := &inspector.Analysis{
		Signature:  inspector.SignatureResult{Status: inspector.SignatureValid, SecretIndex: 0, Expected: []string{hexID(r, 64)}},
		HookUUID:   hook,
		AnalyzedAt: at,
	}
	switch p := r.IntN(100); {
	case p < 5:
		a.Signature = inspector.SignatureResult{Status: inspector.SignatureInvalid, SecretIndex: -1, Received: hexID(r, 64), Expected: []string{hexID(r, 64)}, Reason: "digest differs"}
	case p < 8:
		a.Signature = inspector.SignatureResult{Status: inspector.SignatureMissing, SecretIndex: -1}
	case p < 10:
		a.Signature = inspector.SignatureResult{Status: inspector.SignatureUnverified, SecretIndex: -1}
	}
	for e := range nev {
		if e > 0 {
			sb.WriteByte(',')
		}
		typ := benchTypes[r.IntN(len(benchTypes))]
		uuid := hexID(r, 16+16*r.IntN(2))
		media := hexID(r, 10)
		title := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
		var desc []string
		for range 520 / nev / 6 {
			desc = append(desc, words[r.IntN(len(words))])
		}
		if i%1000 == 0 && e == 0 {
			desc = append(desc, "needleword")
		}
		gen := at.Add(-time.Duration(r.IntN(5000)) * time.Millisecond)
		fmt.Fprintf(&sb, `{"uuid":%q,"type":%q,"generated_at":%q,"metadata":{"account_id":"acct-%d"},`+
			`"payload":{"media":{"id":%q,"name":%q,"url":"https://example.test/medias/%s","duration":%d.5,`+
			`"thumbnail":{"url":"https://example.test/thumbs/%s.jpg"},"description":%q},"project":{"id":"p%d","name":%q}}}`,
			uuid, typ, gen.Format(time.RFC3339), r.IntN(50), media, title, media, r.IntN(3600), media,
			strings.Join(desc, " "), r.IntN(100), words[r.IntN(len(words))])
		ev := inspector.EventAnalysis{
			Index: e, UUID: uuid, Type: typ, AccountID: "acct", GeneratedRaw: gen.Format(time.RFC3339), GeneratedAt: gen,
			Subject: "media:" + media, Hash: hexID(r, 64), Copies: 1, Summary: typ + ": " + title,
		}
		switch p := r.IntN(1000); {
		case p < 1:
			ev.Duplicate, ev.Divergent, ev.Copies = true, true, 2
		case p < 50:
			ev.Duplicate, ev.Copies = true, 2
		}
		if r.IntN(100) < 2 {
			ev.Problems = []catalog.Problem{{Severity: catalog.SeverityWarning, Path: "payload.media.duration", Message: "duration is null"}}
		}
		a.Events = append(a.Events, ev)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	path := "/webhooks"
	if r.IntN(100) < 5 {
		path = "/hooks/staging"
	}
	d := &inspector.Delivery{
		ReceivedAt: at, Method: "POST", Path: path,
		Headers: []inspector.Header{
			{Name: "Host", Value: "words-words.trycloudflare.com"},
			{Name: "User-Agent", Value: "Service-Webhooks/0.0.47"},
			{Name: "Content-Length", Value: strconv.Itoa(len(body))},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-Service-Signature", Value: hexID(r, 64)},
			{Name: "Accept-Encoding", Value: "gzip"},
		},
		Body: body, BodyLength: int64(len(body)), RemoteAddr: "127.0.0.1:54321", Status: 200,
	}
	return d, a
}

// buildFixture fills db with n analyzed deliveries in big transactions,
// through the same SQL the store runs, without per-row fsyncs.
func buildFixture(b *testing.B, db *DB, n int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	words := benchWords(r)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const perTx = 5000
	for done := 0; done < n; {
		var rows []analysisRow
		err := db.write(ctx, func(tx *sql.Tx) error {
			rows = rows[:0]
			for k := 0; k < perTx && done+k < n; k++ {
				d, a := benchDelivery(r, words, done+k, start.Add(time.Duration(done+k)*time.Second))
				p, err := newPendingInsert(d)
				if err != nil {
					return err
				}
				if a.DeliveryID, err = insertRow(tx, db.stmts, p, 0); err != nil {
					return err
				}
				row, err := newAnalysisRow(a)
				if err != nil {
					return err
				}
				rows = append(rows, row)
			}
			return nil
		})
		var file string
		if err == nil {
			err = db.writeAnalysis(ctx, func(tx *sql.Tx) (err error) {
				file, err = saveAnalysisRows(ctx, tx, db.astmts, rows)
				return err
			})
		}
		if err == nil {
			err = db.write(ctx, func(tx *sql.Tx) error {
				_, err := markAnalyzed(ctx, tx, db.stmts, rows, file)
				return err
			})
		}
		if err != nil {
			b.Fatal(err)
		}
		done += len(rows)
	}
	for _, h := range []*sql.DB{db.sql, db.an} {
		if _, err := h.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRows(b *testing.B) int {
	n := 1_000_000
	if s := os.Getenv("HOOKSCOPE_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1000 {
			b.Fatalf("HOOKSCOPE_BENCH_ROWS=%q: want an integer >= 1000", s)
		}
		n = v
	}
	return n
}

func openBench(b *testing.B) *DB {
	db, err := Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkInsert measures durable insert throughput of ~2 KB deliveries
// from many concurrent receivers (group commit) and from one caller at a
// time (one fsync each).
func BenchmarkInsert(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	words := benchWords(r)
	d, a := benchDelivery(r, words, 1, time.Now())
	for _, par := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", par), func(b *testing.B) {
			db := openBench(b)
			b.SetBytes(int64(len(d.Body)))
			b.SetParallelism(max(1, par/max(1, runtime.GOMAXPROCS(0))))
			if par == 1 {
				for b.Loop() {
					if _, err := db.InsertDelivery(context.Background(), d); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := db.InsertDelivery(context.Background(), d); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
	// The engine's full write path per delivery: insert, then its analysis.
	b.Run("insert+analysis/goroutines=64", func(b *testing.B) {
		db := openBench(b)
		b.SetParallelism(max(1, 64/max(1, runtime.GOMAXPROCS(0))))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id, err := db.InsertDelivery(context.Background(), d)
				if err != nil {
					b.Fatal(err)
				}
				an := *a
				an.DeliveryID = id
				if err := db.SaveAnalysis(context.Background(), &an); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	})
}

// BenchmarkLarge measures the UI's queries on a store of
// HOOKSCOPE_BENCH_ROWS deliveries (default 1,000,000).
func BenchmarkLarge(b *testing.B) {
	n := benchRows(b)
	db := openBench(b)
	start := time.Now()
	buildFixture(b, db, n)
	b.Logf("built %d deliveries in %v", n, time.Since(start).Round(time.Second))
	ctx := context.Background()
	var size int64
	for _, p := range []string{db.Path(), db.Path() + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			size += st.Size()
		}
	}
	var bodyBytes int64
	if err := db.sql.QueryRow(`SELECT SUM(LENGTH(body)) FROM bodies`).Scan(&bodyBytes); err != nil {
		b.Fatal(err)
	}
	b.Logf("file %d bytes: %.0f bytes per delivery (bodies alone %.0f)", size, float64(size)/float64(n), float64(bodyBytes)/float64(n))
	b.Run("DiskBytes", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(float64(size)/float64(n), "bytes/delivery")
		b.ReportMetric(float64(bodyBytes)/float64(n), "body-bytes/delivery")
	})

	var mid int64
	if err := db.sql.QueryRow(`SELECT id FROM deliveries ORDER BY id LIMIT 1 OFFSET ?`, n/2).Scan(&mid); err != nil {
		b.Fatal(err)
	}
	invalid := []inspector.SignatureStatus{inspector.SignatureInvalid}
	filters := []struct {
		name string
		f    Filter
	}{
		{"newest", Filter{}},
		{"middle", Filter{BeforeID: mid}},
		{"type", Filter{Types: []string{"media.updated"}}},
		{"three-types", Filter{Types: []string{"media.ready", "media.failed", "media.deleted"}}},
		{"invalid", Filter{Signatures: invalid}},
		{"valid-or-missing", Filter{Signatures: []inspector.SignatureStatus{inspector.SignatureValid, inspector.SignatureMissing}}},
		{"duplicates", Filter{DuplicatesOnly: true}},
		{"divergent", Filter{DivergentOnly: true}},
		{"problems", Filter{ProblemsOnly: true}},
		{"path-rare", Filter{Path: "/hooks/staging"}},
		{"path-common", Filter{Path: "/webhooks"}},
		{"text-rare", Filter{Text: "needleword"}},
		{"text-common", Filter{Text: "thumbnail"}},
		{"since-1h", Filter{Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n)*time.Second - time.Hour)}},
		{"type+invalid", Filter{Types: []string{"media.updated"}, Signatures: invalid}},
		{"divergent+path-common", Filter{DivergentOnly: true, Path: "/webhooks"}},
		{"text-rare+type", Filter{Text: "needleword", Types: []string{"media.created"}}},
	}
	for _, tc := range filters {
		b.Run("List50/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := db.List(ctx, tc.f, 50); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, tc := range filters {
		if tc.name == "middle" {
			continue
		}
		b.Run("Count/"+tc.name, func(b *testing.B) {
			var c int64
			for b.Loop() {
				var err error
				if c, err = db.Count(ctx, tc.f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c), "matches")
		})
	}
	// What every Open reads to find damage where a listener writes first.
	b.Run("OpenCheck", func(b *testing.B) {
		for b.Loop() {
			if err := db.check(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Stats", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Stats(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Get(ctx, mid); err != nil {
				b.Fatal(err)
			}
		}
	})
	var uuid, subject string
	if err := db.an.QueryRow(`SELECT uuid, subject FROM events WHERE delivery_id = ?`, mid).Scan(&uuid, &subject); err != nil {
		b.Fatal(err)
	}
	b.Run("LedgerLookups", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Ledger(ctx, []string{"nohook"}, []string{uuid}, []string{subject}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Insert/goroutines=64", func(b *testing.B) {
		r := rand.New(rand.NewPCG(5, 6))
		d, _ := benchDelivery(r, benchWords(r), 1, time.Now())
		b.SetParallelism(max(1, 64/max(1, runtime.GOMAXPROCS(0))))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := db.InsertDelivery(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	})
}
