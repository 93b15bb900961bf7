//go:build unix

package station_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/prove"
	"github.com/hookscope/hookscope/station"
)

// BenchmarkReceive posts ~2.5 KB deliveries from parallel clients through
// the whole assembly: no forwarding, the same with a typical set of answer
// rules (answering 200: what deciding costs), ack mode with one route, and
// pass-through to a small Go app. For profiles (-cpuprofile); the targets
// are measured with hsload (docs/benchmarks.md, "Forwarding").
func BenchmarkReceive(b *testing.B) {
	appSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok\n")
	}))
	defer appSrv.Close()
	// Distinct messages, as the service sends: one body sent again and
	// again makes the ledger's duplicate counts grow without end.
	g := simulate.New(1)
	bodies := make([][]byte, 8192)
	for i := range bodies {
		bodies[i] = prove.Body(g, 2048)
	}
	var next atomic.Int64
	for _, tc := range []struct {
		name  string
		fwd   *forward.Config
		rules []string
	}{
		{"off", nil, nil},
		{"off+rules", nil, typicalRules},
		{"ack", &forward.Config{}, nil},
		{"pass-through", &forward.Config{Mode: forward.ModePassThrough}, nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.fwd != nil {
				rs, _ := forward.ParseRoutes([]string{appSrv.URL + "/hook"})
				tc.fwd.Routes = rs
			}
			st, err := station.Open(context.Background(), station.Config{DBPath: filepath.Join(b.TempDir(), "b.db"), Addr: "127.0.0.1:0", Forward: tc.fwd,
				Answer: tc.rules, Engine: inspector.Options{Logf: func(string, ...any) {}}})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close(context.Background())
			url := "http://" + st.Addr() + "/webhooks"
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			b.SetParallelism(16)
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := bodies[next.Add(1)%int64(len(bodies))]
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := tr.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			// Closing drains the analysis backlog: not part of receiving.
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// typicalRules is a typical answer rule set: four rules, one a sequence,
// none matching the benchmark's deliveries, so each is evaluated and every
// delivery is still answered 200.
var typicalRules = []string{
	`delivery.path == "/slow" => 200 after 12s`,
	`media.deleted => close`,
	`events.exists(e, e.type == "viewing_session.play" && has(e.payload.visitor.id)) => 500 x2 then 200`,
	`delivery.headers["user-agent"].startsWith("curl/") => 401`,
}

// cpuTime is the process's user and system CPU time: on a shared machine
// it says more than the wall clock. It includes the clients' and the app's
// CPU, the same for every variant.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
