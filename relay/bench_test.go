package relay

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite"

	"github.com/hookscope/hookscope/inspector"
)

// benchDelivery is a typical receipt: a 1.6 KB message and the service's
// headers.
func benchDelivery(i int) *inspector.Delivery {
	body := fmt.Appendf(nil, `{"hook":{"uuid":"%032x","event_count":1},"events":[{"uuid":"%032x","type":"media.ready","generated_at":"2026-05-01T00:00:00Z","account_id":"acc_1","payload":{"media":{"id":"m%d","title":"%0900d","duration":12.5,"status":"ready"}}}]}`, i, i, i, i)
	return &inspector.Delivery{
		ReceivedAt: time.Now().UTC(), Method: "POST", Path: "/webhooks", RemoteAddr: "203.0.113.7:4000", Status: 200,
		Headers: []inspector.Header{
			{Name: "Host", Value: "relay.example"}, {Name: "User-Agent", Value: "VideoService-Webhooks/2.1"},
			{Name: "Content-Type", Value: "application/json"}, {Name: "Content-Length", Value: fmt.Sprint(len(body))},
			{Name: "X-Signature", Value: "t=1714521600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"},
			{Name: "X-Request-Id", Value: fmt.Sprintf("%016x", i)},
		},
		Body: body, BodyLength: int64(len(body)),
	}
}

// sqliteStore commits relayed deliveries to SQLite the way a laptop's
// store does (WAL, synchronous=FULL, one transaction per batch,
// idempotent by origin and sequence): the catch-up's real cost.
type sqliteStore struct {
	db  *sql.DB
	lag func(*Relayed)
}

func newSQLiteStore(b *testing.B) *sqliteStore {
	path := filepath.Join(b.TempDir(), "laptop.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE deliveries (id INTEGER PRIMARY KEY, origin TEXT NOT NULL, seq INTEGER NOT NULL,
		received_at INTEGER, method TEXT, path TEXT, headers BLOB, body BLOB, UNIQUE (origin, seq))`); err != nil {
		b.Fatal(err)
	}
	return &sqliteStore{db: db}
}

func (s *sqliteStore) InsertRelayed(ctx context.Context, ds []*Relayed) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO deliveries (origin, seq, received_at, method, path, headers, body)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (origin, seq) DO NOTHING`)
	if err != nil {
		return err
	}
	for _, r := range ds {
		d := r.Delivery
		var hs []byte
		for _, h := range d.Headers {
			hs = append(append(append(append(hs, h.Name...), ": "...), h.Value...), "\r\n"...)
		}
		res, err := st.ExecContext(ctx, r.Origin, r.Seq, d.ReceivedAt.UnixNano(), d.Method, d.Path, hs, d.Body)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			r.Duplicate = true
		} else {
			d.ID, _ = res.LastInsertId()
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if s.lag != nil {
		for _, r := range ds {
			s.lag(r)
		}
	}
	return nil
}

// latencies collects durations and reports percentiles.
type latencies struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ds) == 0 {
		return
	}
	slices.Sort(l.ds)
	at := func(q float64) float64 {
		return float64(l.ds[min(len(l.ds)-1, int(q*float64(len(l.ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), prefix+"-p50-ms")
	b.ReportMetric(at(0.99), prefix+"-p99-ms")
}

// BenchmarkRelayAck is the relay's answer path at a fixed rate (open
// loop: each delivery starts on schedule, whatever the others do): the
// publish-ack latency with the embedded server and file storage (fsync
// per message, or on an interval), and the live lag from the relay's receipt to a laptop's
// SQLite commit. Run: go test ./relay -run '^$' -bench RelayAck -benchtime 5000x
func BenchmarkRelayAck(b *testing.B) {
	for _, tc := range []struct {
		rate int
		sync time.Duration
	}{{500, 0}, {1000, 0}, {500, time.Minute}, {1000, time.Minute}} {
		name := fmt.Sprintf("rate=%d/sync=each", tc.rate)
		if tc.sync > 0 {
			name = fmt.Sprintf("rate=%d/sync=%s", tc.rate, tc.sync)
		}
		rate := tc.rate
		b.Run(name, func(b *testing.B) {
			r := startRelay(b, Options{SyncInterval: tc.sync}, inspector.ServerOptions{})
			c, err := Invite(r.dir, "bench", r.LaptopURL(), DefaultStream, false, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			r.reload(b)
			var ack, lag latencies
			var stored atomic.Int64
			st := newSQLiteStore(b)
			st.lag = func(rl *Relayed) {
				lag.add(time.Since(rl.Delivery.ReceivedAt))
				stored.Add(1)
			}
			src, err := NewSource(SourceOptions{Conn: c, Store: st})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- src.Run(ctx) }()
			defer func() { cancel(); <-done }()
			for src.State().Phase != Live {
				time.Sleep(10 * time.Millisecond)
			}
			sink := r.Sink()
			var wg sync.WaitGroup
			var failed atomic.Int64
			interval := time.Second / time.Duration(rate)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
				wg.Go(func() {
					d := benchDelivery(i)
					t0 := time.Now()
					d.ReceivedAt = t0.UTC()
					if err := sink.Record(context.Background(), d); err != nil {
						failed.Add(1)
						return
					}
					ack.add(time.Since(t0))
				})
			}
			wg.Wait()
			b.StopTimer()
			deadline := time.Now().Add(30 * time.Second)
			for stored.Load() < int64(b.N)-failed.Load() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			// A publish not acknowledged within PublishTimeout is answered
			// 503 (the service retries): counted, not hidden.
			b.ReportMetric(float64(failed.Load()), "unacked")
			ack.report(b, "ack")
			lag.report(b, "lag")
		})
	}
}

// BenchmarkCatchUp is a laptop that slept through 100,000 deliveries
// draining them into its store: in memory (the link's own cost) and into
// SQLite (WAL, synchronous=FULL, a transaction per batch). Run: go test
// ./relay -run '^$' -bench CatchUp -benchtime 1x
func BenchmarkCatchUp(b *testing.B) {
	const n = 100_000
	r := startRelay(b, Options{}, inspector.ServerOptions{})
	fillStream(b, r, n)
	for _, tc := range []struct {
		name  string
		store func(b *testing.B) Store
		// batch bounds a commit (0: the default); upTo stops early.
		batch int
		upTo  uint64
	}{
		{"memory", func(*testing.B) Store { return newMemStore() }, 0, n},
		{"sqlite", func(b *testing.B) Store { return newSQLiteStore(b) }, 0, n},
		// Why the Source commits what has arrived together: one commit
		// (and fsync) per delivery.
		{"sqlite-unbatched", func(b *testing.B) Store { return newSQLiteStore(b) }, 1, 5000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				name := fmt.Sprintf("%s-%d", tc.name, i)
				c, err := Invite(r.dir, name, r.LaptopURL(), DefaultStream, false, time.Unix(0, 0))
				if err != nil {
					b.Fatal(err)
				}
				r.reload(b)
				var progress atomic.Int64
				var stored atomic.Uint64
				src, err := NewSource(SourceOptions{Conn: c, Store: tc.store(b), MaxBatch: tc.batch, OnState: func(s State) {
					if s.Phase == CatchingUp {
						progress.Add(1)
					}
					stored.Store(s.Stored)
				}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				b.StartTimer()
				start := time.Now()
				go func() { done <- src.Run(ctx) }()
				for stored.Load() < tc.upTo {
					time.Sleep(time.Millisecond)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				cancel()
				<-done
				b.ReportMetric(float64(tc.upTo)/elapsed.Seconds(), "deliveries/s")
				b.ReportMetric(float64(progress.Load()), "progress-reports")
			}
		})
	}
}

// fillStream publishes n deliveries quickly (asynchronously, many in flight).
func fillStream(b *testing.B, r *testRelay, n int) {
	b.Helper()
	for i := 0; i < n; {
		var futures []jetstream.PubAckFuture
		for ; i < n && len(futures) < 1000; i++ {
			d := benchDelivery(i)
			f, err := r.js.PublishAsync(r.subject, encodeEnvelope(d, fmt.Sprint("fill-", i)))
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
	}
}
