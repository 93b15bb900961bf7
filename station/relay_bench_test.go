package station_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/prove"
	"github.com/hookscope/hookscope/relay"
)

// The relay's targets (docs/benchmarks.md, Relay) with real stations: a
// relay station (embedded NATS, file storage) and laptop stations on
// SQLite stores, analysing as they commit. scripts/bench-relay.sh runs
// them beside the ack comparison against the real binaries.

// percentile is the q-quantile of sorted ds, in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
}

// relayBodies are distinct realistic ~2.5 KB messages signed with secret.
func relayBodies(n int) [][]byte {
	g := simulate.New(25)
	out := make([][]byte, n)
	for i := range out {
		out[i] = prove.Body(g, 2048)
	}
	return out
}

// BenchmarkRelayCatchUp: a laptop that slept through N deliveries (100,000
// by default; HOOKSCOPE_BENCH_CATCHUP sets N) drains them into its store,
// reporting its progress as it goes. The relay is filled through its sink
// (the fill is not measured). Run: go test ./station -run '^$' -bench
// RelayCatchUp -benchtime 1x
func BenchmarkRelayCatchUp(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("HOOKSCOPE_BENCH_CATCHUP")); err == nil && v > 0 {
		n = v
	}
	secret := []byte("bench-secret")
	r := openRelay(b, secret)
	asleepSince := time.Now()
	bodies := relayBodies(4096)
	sink := r.RelayServer().Sink()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				body := bodies[i%int64(len(bodies))]
				d := &inspector.Delivery{ReceivedAt: time.Now().UTC(), Method: "POST", Path: "/webhooks", Status: 200, RemoteAddr: "203.0.113.7:4000",
					Headers: []inspector.Header{{Name: "Content-Type", Value: "application/json"}, {Name: inspector.SignatureHeader, Value: inspector.Sign(secret, body)}},
					Body:    body, BodyLength: int64(len(body))}
				if err := sink.Record(context.Background(), d); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		c, err := relay.Invite(r.dir, fmt.Sprintf("sleeper-%d", i), r.RelayServer().LaptopURL(), relay.DefaultStream, false, asleepSince)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.RelayServer().Reload(context.Background()); err != nil {
			b.Fatal(err)
		}
		l := openLaptop(b, nil, secret)
		var progress atomic.Int64
		var total atomic.Uint64
		cancel := l.SubscribeRelay(func(s relay.State) {
			if s.Phase == relay.CatchingUp {
				progress.Add(1)
				total.Store(s.Total)
			}
		})
		b.StartTimer()
		start := time.Now()
		if err := l.SetRelay(context.Background(), &c); err != nil {
			b.Fatal(err)
		}
		for {
			st, _ := l.RelayState()
			if st.Stored >= uint64(n) {
				break
			}
			if st.Phase == relay.Stopped {
				b.Fatal(st.Err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
		b.ReportMetric(float64(progress.Load()), "progress-reports")
		b.ReportMetric(float64(total.Load()), "catch-up-total")
		l.SetRelay(context.Background(), nil)
	}
}

// BenchmarkRelayLiveLag: deliveries posted to the relay station over HTTP
// at a fixed rate (open loop: each request starts on schedule; rate 500/s,
// HOOKSCOPE_BENCH_RATE sets it), a live laptop reading them. It reports
// the lag from the relay's receipt to the laptop's commit (the laptop's
// link reports each commit: every sequence it covers was stored then),
// and the relay's answer time counted from when each request was due. Run:
// go test ./station -run '^$' -bench RelayLiveLag -benchtime 15000x
func BenchmarkRelayLiveLag(b *testing.B) {
	rate := 500
	if v, err := strconv.Atoi(os.Getenv("HOOKSCOPE_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	secret := []byte("bench-secret")
	r := openRelay(b, secret)
	l := openLaptop(b, nil, secret)
	if err := l.SetRelay(context.Background(), r.invite(b, "live")); err != nil {
		b.Fatal(err)
	}
	for st, _ := l.RelayState(); st.Phase != relay.Live; st, _ = l.RelayState() {
		time.Sleep(5 * time.Millisecond)
	}
	var mu sync.Mutex
	received := map[uint64]time.Time{} // by stream sequence, the relay's receive time
	committed := []time.Time{}         // by sequence-1, when the laptop's commit covered it
	r.Engine().Subscribe(func(rec *inspector.Record) {
		mu.Lock()
		received[uint64(rec.Delivery.ID)] = rec.Delivery.ReceivedAt
		mu.Unlock()
	})
	l.SubscribeRelay(func(s relay.State) {
		now := time.Now()
		mu.Lock()
		for uint64(len(committed)) < s.Stored {
			committed = append(committed, now)
		}
		mu.Unlock()
	})
	bodies := relayBodies(2048)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	url := "http://" + r.Addr() + "/webhooks"
	var acks []time.Duration
	var failed atomic.Int64
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wg.Go(func() {
			body := bodies[i%len(bodies)]
			req, err := simulate.NewRequest(context.Background(), url, body, secret)
			if err != nil {
				failed.Add(1)
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed.Add(1)
				return
			}
			took := time.Since(due)
			mu.Lock()
			acks = append(acks, took)
			mu.Unlock()
		})
	}
	wg.Wait()
	want := b.N - int(failed.Load())
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := len(committed) >= want && len(received) >= want
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	var lags []time.Duration
	for i, at := range committed {
		if rt, ok := received[uint64(i+1)]; ok {
			lags = append(lags, at.Sub(rt))
		}
	}
	slices.Sort(lags)
	slices.Sort(acks)
	b.ReportMetric(float64(failed.Load()), "not-200")
	b.ReportMetric(float64(len(lags)), "committed")
	b.ReportMetric(percentile(lags, 0.50), "lag-p50-ms")
	b.ReportMetric(percentile(lags, 0.99), "lag-p99-ms")
	b.ReportMetric(percentile(acks, 0.50), "ack-p50-ms")
	b.ReportMetric(percentile(acks, 0.99), "ack-p99-ms")
}
