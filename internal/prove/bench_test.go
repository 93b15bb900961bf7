package prove

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

// BenchmarkIngestInProcess is the ingest path of `hookscope listen` (real
// receiver, engine and store) in one process, so it can be profiled:
//
//	go test -run '^$' -bench IngestInProcess -cpuprofile cpu.out ./internal/prove/
func BenchmarkIngestInProcess(b *testing.B) {
	// analysis=off shows the cost of the receive-and-store path alone, to
	// tell it from the analysis competing for the same cores.
	for _, analyze := range []bool{true, false} {
		b.Run(fmt.Sprintf("analysis=%v", analyze), func(b *testing.B) { benchIngest(b, analyze) })
	}
}

func benchIngest(b *testing.B, analyze bool) {
	db, err := storage.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	secret := []byte("bench-secret")
	eng := inspector.NewEngine(db, inspector.Options{Secrets: [][]byte{secret}})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	if analyze {
		go func() { runDone <- eng.Run(ctx) }()
	} else {
		runDone <- nil
	}
	srv, err := inspector.Serve("127.0.0.1:0", eng.Handler(), inspector.ServerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		srv.Shutdown(context.Background())
		cancel()
		<-runDone
	}()
	g := simulate.New(7)
	bodies := make([][]byte, 1000)
	for i := range bodies {
		bodies[i] = Body(g, 2048)
	}
	url := "http://" + srv.Addr() + "/webhooks"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := bodies[n.Add(1)%int64(len(bodies))]
			req, _ := simulate.NewRequest(context.Background(), url, body, secret)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// signedDelivery is a simulated signed message of at least size bytes.
func signedDelivery(size int, secret []byte) *inspector.Delivery {
	g := simulate.New(11)
	body := Body(g, size)
	return &inspector.Delivery{
		ID:         1,
		Method:     http.MethodPost,
		Path:       "/webhooks",
		Headers:    simulate.HeadersFor(body, secret),
		Body:       body,
		BodyLength: int64(len(body)),
	}
}

// BenchmarkAnalyze is what Engine.Analyze costs per delivery (verify the
// signature, decode, contract-check every event, hash it for the ledger)
// on realistic messages: typical 2 KB and 10 KB ones, whose rate decides
// whether analysis keeps up with the receiver, and a 1 MiB one. Not a
// target itself: the user waits are measured by make bench's ingest part
// (backlog worked off) and the UI's DetailOpen.
func BenchmarkAnalyze(b *testing.B) {
	secret := []byte("bench-secret")
	for _, size := range []struct {
		name string
		n    int
	}{{"2KB", 2 << 10}, {"10KB", 10 << 10}, {"1MiB", 1 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			d := signedDelivery(size.n, secret)
			eng := inspector.NewEngine(nil, inspector.Options{Secrets: [][]byte{secret}})
			a := eng.Analyze(context.Background(), d)
			if a.Error != nil || a.Signature.Status != inspector.SignatureValid {
				b.Fatalf("analysis: error %v, signature %s", a.Error, a.Signature.Status)
			}
			for _, e := range a.Events {
				if len(e.Problems) > 0 {
					b.Fatalf("event %s has problems: %v", e.Type, e.Problems)
				}
			}
			b.SetBytes(int64(len(d.Body)))
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				eng.Analyze(context.Background(), d)
			}
			b.ReportMetric(float64(len(a.Events)), "events")
		})
	}
}

// BenchmarkPretty1MiB is catalog.Pretty on a 1 MiB message: what the
// window spends formatting the body it opens.
func BenchmarkPretty1MiB(b *testing.B) {
	d := signedDelivery(1<<20, nil)
	b.SetBytes(int64(len(d.Body)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		catalog.Pretty(d.Body)
	}
}

// reportCPU reports the process's CPU time per op (all threads, GC
// included) as cpu-ms/op when the returned func runs. On a shared machine
// wall time mostly measures the neighbours; CPU time says how much work a
// change saved, and wall ≈ CPU / cores used shows how parallel it is.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		}
	}
}

// BenchmarkAnalysisThroughput measures the engine's analysis goroutine as
// `hookscope listen` runs it (Engine.Run over queued deliveries: verify,
// decode, ledger lookups, save): the rate at which analysis keeps up with
// the receiver.
func BenchmarkAnalysisThroughput(b *testing.B) {
	db, err := storage.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	secret := []byte("bench-secret")
	ts := &timedStore{Store: db, total: map[string]time.Duration{}, calls: map[string]int{}}
	eng := inspector.NewEngine(ts, inspector.Options{Secrets: [][]byte{secret}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var analyzed atomic.Int64
	all := make(chan struct{})
	eng.Subscribe(func(*inspector.Record) {
		if analyzed.Add(1) == int64(b.N) {
			close(all)
		}
	})
	g := simulate.New(3)
	bodies := make([][]byte, 500)
	for i := range bodies {
		bodies[i] = Body(g, 2048)
	}
	for i := range b.N {
		// Distinct hooks, a realistic share of re-sent events.
		body := bodies[i%len(bodies)]
		d := &inspector.Delivery{Method: http.MethodPost, Path: "/webhooks", Headers: simulate.HeadersFor(body, secret), Body: body, BodyLength: int64(len(body)), ReceivedAt: time.Now()}
		if _, err := eng.Ingest(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	go eng.Run(ctx)
	<-all
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	ts.mu.Lock()
	for name, d := range ts.total {
		b.Logf("%-18s %6d calls, %8.3f ms each, %v in all", name, ts.calls[name], float64(d.Microseconds())/1000/float64(ts.calls[name]), d.Round(time.Millisecond))
	}
	ts.mu.Unlock()
}
