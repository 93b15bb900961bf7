// Command hsload is Hookscope's load generator: it posts signed, realistic
// webhook deliveries to a receiver and reports throughput and ack latency.
// It also runs the bare net/http server that answers 200 without storing:
// the app `make bench` forwards to.
//
//	hsload bare --addr 127.0.0.1:0              # prints "listening http://..." and serves
//	hsload run --url URL --secret-env S --rate 1000 --duration 10s
//	hsload run --url URL --secret-env S --rate 0 --concurrency 64   # saturation
//	hsload backlog --db FILE     # waits until every stored delivery is analyzed
//	hsload lag --url URL --app-addr ADDR --rate 500 [--down 60s]
//	hsload big --url URL --size 9961472 --concurrency 32 --pid PID   # big bodies at once; the receiver's peak memory
//
// run prints one JSON object: requests, ok, errors, rps, p50/p90/p99/max
// latency in milliseconds. backlog prints how many stored deliveries were
// waiting for analysis when it started and how long the receiver's
// analysis took to work them off. lag (forward.go) prints one JSON
// object with the ack-to-app lag and whether every acked delivery arrived
// once, in order. Latency is measured from the moment a request was due
// (fixed-rate mode) or sent (saturation), so a stalled receiver cannot
// hide its stalls (coordinated omission).
package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/prove"

	_ "modernc.org/sqlite" // reads a listener's store for backlog
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hsload bare|run|backlog|big|lag [flags] (hsload run --help)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "bare":
		err = bare(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "backlog":
		err = backlog(os.Args[2:])
	case "big":
		err = big(os.Args[2:])
	case "lag":
		err = lag(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "hsload: unknown command %q (bare, run, backlog, big or lag)\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hsload:", err)
		os.Exit(1)
	}
}

// bare serves 200 "ok" to every request after reading its body, with the
// same server settings a receiver would have, and stores nothing.
func bare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	fs.Parse(args)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	return serveUntilInterrupt(ln, appHandler(nil))
}

// backlogResult is what backlog prints.
type backlogResult struct {
	Deliveries int64   `json:"deliveries"`
	Backlog    int64   `json:"backlog_at_start"`
	Seconds    float64 `json:"drain_seconds"`
	Drained    bool    `json:"drained"`
}

// backlog polls a running listener's store, read-only, until no stored
// delivery is waiting for analysis (or the timeout), and reports how long
// that took: the receiver acks before analysing, so after a burst the
// analysis backlog is the other half of the ingest story.
func backlog(args []string) error {
	fs := flag.NewFlagSet("backlog", flag.ExitOnError)
	path := fs.String("db", "", "store file of the running listener (required)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	poll := fs.Duration("poll", 100*time.Millisecond, "polling interval")
	fs.Parse(args)
	if *path == "" {
		return fmt.Errorf("--db is required")
	}
	db, err := sql.Open("sqlite", "file:"+*path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("open %s: %w", *path, err)
	}
	defer db.Close()
	// Reads storage's schema directly: deliveries.analyzed is 0 until the
	// analysis is saved, and a partial index makes this count cheap.
	pending := func() (int64, error) {
		var n int64
		err := db.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE analyzed = 0`).Scan(&n)
		return n, err
	}
	start := time.Now()
	first, err := pending()
	if err != nil {
		return fmt.Errorf("count unanalyzed deliveries: %w", err)
	}
	res := backlogResult{Backlog: first}
	for n := first; ; {
		if n == 0 {
			res.Drained = true
			break
		}
		if time.Since(start) > *timeout {
			break
		}
		time.Sleep(*poll)
		if n, err = pending(); err != nil {
			return fmt.Errorf("count unanalyzed deliveries: %w", err)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if err := db.QueryRow(`SELECT COUNT(*) FROM deliveries`).Scan(&res.Deliveries); err != nil {
		return fmt.Errorf("count deliveries: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// target is where run and big send: the receiver's URL and the secret to
// sign with.
type target struct{ url, secretEnv *string }

func addTarget(fs *flag.FlagSet) target {
	return target{
		url:       fs.String("url", "", "receiver URL (required)"),
		secretEnv: fs.String("secret-env", "", "environment variable holding the webhook secret to sign with"),
	}
}

// resolve returns the URL and the secret (nil without --secret-env).
func (t target) resolve() (string, []byte, error) {
	if *t.url == "" {
		return "", nil, fmt.Errorf("--url is required")
	}
	if *t.secretEnv == "" {
		return *t.url, nil, nil
	}
	return *t.url, []byte(os.Getenv(*t.secretEnv)), nil
}

// bigResult is what big prints.
type bigResult struct {
	BodyBytes   int            `json:"body_bytes"`
	Concurrency int            `json:"concurrency"`
	Seconds     float64        `json:"seconds"`
	Statuses    map[string]int `json:"statuses"`
	// RSS of the receiver (from /proc, with --pid): before the bodies and
	// its peak (VmHWM) once every answer is in and, with --db, analysis
	// has worked them off.
	RSSBeforeMB float64 `json:"rss_before_mb,omitempty"`
	PeakRSSMB   float64 `json:"peak_rss_mb,omitempty"`
}

// big posts concurrency signed bodies of size bytes at once (a message of
// simulated events, so the receiver's analysis works on them too) and
// reports the answers and the receiver's memory: what concurrent big
// bodies cost it. A body over the receiver's cap is answered 413 after
// the cap, and the connection is closed: a write error then counts as
// "refused".
func big(args []string) error {
	fs := flag.NewFlagSet("big", flag.ExitOnError)
	tgt := addTarget(fs)
	size := fs.Int("size", 9961472, "body size in bytes (at least)")
	conc := fs.Int("concurrency", 32, "bodies sent at once")
	pid := fs.Int("pid", 0, "the receiver's process id, to read its memory from /proc")
	dbPath := fs.String("db", "", "the receiver's store: wait until analysis has worked the bodies off before reading the peak")
	fs.Parse(args)
	url, secret, err := tgt.resolve()
	if err != nil {
		return err
	}
	// A message of simulated events padded to size: the receiver holds
	// the whole body as it would a big real one, and analysis works the
	// events off in seconds (thousands of events per body made it take
	// minutes, which measures the store, not the receiver's memory).
	body := prove.Body(simulate.New(7), min(*size, 64<<10))
	if len(body) < *size {
		body = append(body, bytes.Repeat([]byte(" "), *size-len(body))...)
	}
	sig := inspector.Sign(secret, body)
	res := bigResult{BodyBytes: len(body), Concurrency: *conc, Statuses: map[string]int{}}
	if *pid > 0 {
		res.RSSBeforeMB = procMB(*pid, "VmRSS")
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range *conc {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if len(secret) > 0 {
				req.Header.Set(inspector.SignatureHeader, sig)
			}
			status := "refused"
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = strconv.Itoa(resp.StatusCode)
			}
			mu.Lock()
			res.Statuses[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	if *dbPath != "" {
		stored := 0 // every answer but 503 (and no answer) means stored
		for status, n := range res.Statuses {
			if status != "refused" && status != "503" {
				stored += n
			}
		}
		if err := waitAnalyzed(*dbPath, int64(stored), 5*time.Minute); err != nil {
			return err
		}
	}
	if *pid > 0 {
		res.PeakRSSMB = procMB(*pid, "VmHWM")
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// procMB reads one "Vm..." line of /proc/PID/status in MB.
func procMB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// waitAnalyzed polls a store until it holds at least stored deliveries
// and none waits for analysis.
func waitAnalyzed(path string, stored int64, timeout time.Duration) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		var n, all int64
		if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM deliveries WHERE analyzed = 0), (SELECT COUNT(*) FROM deliveries)`).Scan(&n, &all); err != nil {
			return fmt.Errorf("count unanalyzed deliveries: %w", err)
		}
		if n == 0 && all >= stored {
			return nil
		}
	}
	return fmt.Errorf("analysis did not finish within %v", timeout)
}

// result is what run prints.
type result struct {
	URL         string  `json:"url"`
	Mode        string  `json:"mode"`
	Rate        int     `json:"rate,omitempty"`
	Concurrency int     `json:"concurrency"`
	BodyBytes   int     `json:"body_bytes"`
	Seconds     float64 `json:"seconds"`
	Requests    int64   `json:"requests"`
	OK          int64   `json:"ok"`
	Errors      int64   `json:"errors"`
	RPS         float64 `json:"rps"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	tgt := addTarget(fs)
	size := fs.Int("size", 2048, "body size in bytes (at least)")
	rate := fs.Int("rate", 0, "requests per second; 0 means as fast as the receiver answers (saturation)")
	conc := fs.Int("concurrency", 64, "concurrent connections")
	dur := fs.Duration("duration", 10*time.Second, "how long to send")
	warm := fs.Duration("warmup", 1*time.Second, "sending before measuring starts")
	pool := fs.Int("bodies", 4000, "distinct bodies to cycle through")
	fs.Parse(args)
	url, secret, err := tgt.resolve()
	if err != nil {
		return err
	}

	g := simulate.New(42)
	msgs := make([][]byte, *pool)
	for i := range msgs {
		msgs[i] = prove.Body(g, *size)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var next atomic.Int64
	send := func() bool {
		n := next.Add(1)
		body := unique(msgs[n%int64(len(msgs))], n)
		req, _ := http.NewRequest(http.MethodPost, url, nil)
		req.Body = io.NopCloser(&byteReader{b: body})
		req.ContentLength = int64(len(body))
		req.GetBody = nil
		req.Header.Set("User-Agent", simulate.UserAgent)
		req.Header.Set("Content-Type", "application/json")
		if len(secret) > 0 {
			req.Header.Set(inspector.SignatureHeader, inspector.Sign(secret, body))
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	var (
		mu        sync.Mutex
		lat       []time.Duration
		requests  int64
		oks       int64
		measuring atomic.Bool
	)
	record := func(d time.Duration, ok bool) {
		if !measuring.Load() {
			return
		}
		mu.Lock()
		requests++
		if ok {
			oks++
		}
		lat = append(lat, d)
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if *rate > 0 {
		// Open loop: a request is due every 1/rate; a worker picks it up and
		// the latency counts from when it was due.
		due := make(chan time.Time, *rate)
		for range *conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for t := range due {
					ok := send()
					record(time.Since(t), ok)
				}
			}()
		}
		go func() {
			defer close(due)
			interval := time.Second / time.Duration(*rate)
			start := time.Now()
			for i := int64(0); ; i++ {
				t := start.Add(time.Duration(i) * interval)
				if d := time.Until(t); d > 0 {
					select {
					case <-stop:
						return
					case <-time.After(d):
					}
				}
				select {
				case <-stop:
					return
				case due <- t:
				default:
					// Every worker is busy and the backlog is full: the
					// receiver cannot keep up; count it as an error.
					record(0, false)
				}
			}
		}()
	} else {
		for range *conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					t := time.Now()
					ok := send()
					record(time.Since(t), ok)
				}
			}()
		}
	}
	time.Sleep(*warm)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(*dur)
	measuring.Store(false)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()

	pct := func(p float64) float64 { return pctMs(lat, p) }
	res := result{
		URL: url, Mode: "saturation", Rate: *rate, Concurrency: *conc, BodyBytes: len(msgs[0]),
		Seconds: elapsed.Seconds(), Requests: requests, OK: oks, Errors: requests - oks,
		RPS: float64(oks) / elapsed.Seconds(), P50ms: pct(0.50), P90ms: pct(0.90), P99ms: pct(0.99), MaxMs: pct(1),
	}
	if *rate > 0 {
		res.Mode = "fixed-rate"
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// unique returns a copy of body whose hook and event uuids end with n:
// every delivery a real account sends carries its own uuids, so a load
// of repeated bodies would measure the dedupe ledger's duplicate storms
// instead. The body's length does not change.
func unique(body []byte, n int64) []byte {
	out := bytes.Clone(body)
	tag := fmt.Sprintf("%08x", uint32(n))
	key := []byte(`"uuid":"`)
	for i := 0; ; {
		j := bytes.Index(out[i:], key)
		if j < 0 {
			return out
		}
		start := i + j + len(key)
		end := bytes.IndexByte(out[start:], '"')
		if end >= len(tag) {
			copy(out[start+end-len(tag):], tag)
		}
		i = start
	}
}

// byteReader is a fresh reader over a shared body, so bodies are not
// copied per request.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) Read(p []byte) (int, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.i:])
	r.i += n
	return n, nil
}
