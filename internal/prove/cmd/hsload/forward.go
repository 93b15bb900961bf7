package main

// The forwarding measurements: a small app to forward to, and lag, which
// measures ack-to-app lag and checks that every acknowledged delivery
// reached the app once, in order (`hookscope listen --forward-to`
// forwards).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/prove"
)

// seqHeader numbers lag's requests; forwarding carries it to the app
// byte-exact.
const seqHeader = "X-Hsload-Seq"

// serveUntilInterrupt serves h on ln until SIGINT, printing the URL.
func serveUntilInterrupt(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening http://%s/webhooks\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

// appHandler is the bare server, and the small Go app forwarding is
// measured against: it reads the body and answers 200 "ok". seen, when set, gets each request's
// X-Hsload-Seq.
func appHandler(seen func(seq int64, at time.Time)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if seen != nil {
			if n, err := strconv.ParseInt(r.Header.Get(seqHeader), 10, 64); err == nil {
				seen(n, time.Now())
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
}

// lagResult is what lag prints.
type lagResult struct {
	URL      string  `json:"url"`
	Rate     int     `json:"rate"`
	Seconds  float64 `json:"seconds"`
	DownSecs float64 `json:"app_down_seconds,omitempty"`
	Sent     int64   `json:"sent"`
	Acked    int64   `json:"acked"`
	AckP50   float64 `json:"ack_p50_ms"`
	AckP99   float64 `json:"ack_p99_ms"`
	// Lag runs from a delivery's ack to the app's receipt.
	LagP50 float64 `json:"lag_p50_ms"`
	LagP99 float64 `json:"lag_p99_ms"`
	LagMax float64 `json:"lag_max_ms"`
	// Drain is how long after the app came back every acked delivery
	// had arrived (with --down).
	Drain      float64 `json:"drain_seconds,omitempty"`
	Missing    int64   `json:"missing"`
	Duplicates int64   `json:"duplicates"`
	// OutOfOrder counts acked deliveries the app got before one with a
	// lower delivery id.
	OutOfOrder int64 `json:"out_of_order"`
	AllArrived bool  `json:"all_arrived_in_order"`
}

// lag posts numbered deliveries to a receiver that forwards to
// --app-addr, where it runs the app itself, and reports the ack-to-app
// lag; with --down the app is started only after that long, and the
// result also says how long the queue took to drain.
func lag(args []string) error {
	fs := flag.NewFlagSet("lag", flag.ExitOnError)
	target := fs.String("url", "", "receiver URL (required); it must forward to --app-addr")
	appAddr := fs.String("app-addr", "", "address the app listens on (required): the receiver's forward target")
	rate := fs.Int("rate", 500, "requests per second")
	dur := fs.Duration("duration", 10*time.Second, "how long to send")
	down := fs.Duration("down", 0, "keep the app down this long from the start, sending meanwhile; then start it and stop sending")
	conc := fs.Int("concurrency", 16, "concurrent connections")
	size := fs.Int("size", 2048, "body size in bytes (at least)")
	wait := fs.Duration("drain-timeout", 5*time.Minute, "how long to wait for the app to get every acked delivery")
	fs.Parse(args)
	if *target == "" || *appAddr == "" || *rate <= 0 {
		return fmt.Errorf("--url, --app-addr and a positive --rate are required")
	}
	var (
		mu      sync.Mutex
		ackAt   = map[int64]time.Time{}
		ackID   = map[int64]int64{}
		got     = map[int64]time.Time{}
		gotSeq  []int64
		dups    int64
		arrived = make(chan struct{}, 1)
	)
	seen := func(seq int64, at time.Time) {
		mu.Lock()
		if _, ok := got[seq]; ok {
			dups++
		} else {
			got[seq] = at
			gotSeq = append(gotSeq, seq)
		}
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
	}
	startApp := func() (func(), error) {
		ln, err := net.Listen("tcp", *appAddr)
		if err != nil {
			return nil, fmt.Errorf("app: listen on %s: %w", *appAddr, err)
		}
		srv := &http.Server{Handler: appHandler(seen), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		return func() { srv.Close() }, nil
	}
	sendFor := *dur
	if *down > 0 {
		sendFor = *down
	}
	var stopApp func()
	if *down == 0 {
		s, err := startApp()
		if err != nil {
			return err
		}
		stopApp = s
	}
	body := prove.Body(simulate.New(7), *size)
	tr := &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var seq, sent, acked atomic.Int64
	var ackLat []time.Duration
	due := make(chan time.Time, *rate)
	var wg sync.WaitGroup
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range due {
				n := seq.Add(1)
				b := unique(body, n)
				req, _ := http.NewRequest(http.MethodPost, *target, &byteReader{b: b})
				req.ContentLength = int64(len(b))
				req.Header.Set("User-Agent", simulate.UserAgent)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(seqHeader, strconv.FormatInt(n, 10))
				sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				now := time.Now()
				if resp.StatusCode != http.StatusOK {
					continue
				}
				id, _ := strconv.ParseInt(resp.Header.Get("X-Hookscope-Delivery"), 10, 64)
				acked.Add(1)
				mu.Lock()
				ackAt[n], ackID[n] = now, id
				ackLat = append(ackLat, now.Sub(t))
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	interval := time.Second / time.Duration(*rate)
	for i := int64(0); ; i++ {
		t := start.Add(time.Duration(i) * interval)
		if t.Sub(start) >= sendFor {
			break
		}
		time.Sleep(time.Until(t))
		select {
		case due <- t:
		default: // every connection busy: the receiver is not keeping up
		}
	}
	close(due)
	wg.Wait()
	res := lagResult{URL: *target, Rate: *rate, Seconds: time.Since(start).Seconds(), Sent: sent.Load(), Acked: acked.Load()}
	drainFrom := time.Now()
	if *down > 0 {
		res.DownSecs = down.Seconds()
		s, err := startApp()
		if err != nil {
			return err
		}
		stopApp = s
	}
	defer stopApp()
	deadline := time.After(*wait)
	for {
		mu.Lock()
		missing := int64(0)
		for n := range ackAt {
			if _, ok := got[n]; !ok {
				missing++
			}
		}
		mu.Unlock()
		res.Missing = missing
		if missing == 0 {
			break
		}
		select {
		case <-arrived:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
		}
		if time.Since(drainFrom) > *wait {
			break
		}
	}
	if *down > 0 {
		res.Drain = time.Since(drainFrom).Seconds()
	}
	time.Sleep(200 * time.Millisecond) // late duplicates
	mu.Lock()
	defer mu.Unlock()
	var lags []time.Duration
	for n, at := range ackAt {
		if g, ok := got[n]; ok {
			lags = append(lags, max(g.Sub(at), 0))
		}
	}
	// Order: the app's receipts, among acked deliveries, by delivery id.
	var last int64
	for _, n := range gotSeq {
		id, ok := ackID[n]
		if !ok {
			continue
		}
		if id < last {
			res.OutOfOrder++
		}
		last = max(last, id)
	}
	res.Duplicates = dups
	res.AckP50, res.AckP99 = pctMs(ackLat, 0.5), pctMs(ackLat, 0.99)
	res.LagP50, res.LagP99, res.LagMax = pctMs(lags, 0.5), pctMs(lags, 0.99), pctMs(lags, 1)
	res.AllArrived = res.Missing == 0 && res.OutOfOrder == 0
	return json.NewEncoder(os.Stdout).Encode(res)
}

// pctMs is the p-th quantile of ds in milliseconds.
func pctMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(float64(len(s)-1)*p)].Microseconds()) / 1000
}
