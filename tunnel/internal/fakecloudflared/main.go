// Command fakecloudflared stands in for cloudflared in Hookscope's tunnel
// tests where the real one cannot go offline: a tunnel that gets ready, a
// crash after that, a delivery through the edge, auto-update, a cloudflared
// that ignores SIGTERM. (Failures before the edge, the pre-checks of a
// blocked edge and the token check are tested against the real cloudflared:
// realcf_test.go.) It accepts the flags Hookscope passes, writes
// cloudflared 2026.8's stderr lines (the quick-tunnel ASCII box, then the
// metrics server, as the real one orders them), serves /quicktunnel and
// /ready (both text/plain, as the real one) on --metrics, and forwards HTTP
// from its own loopback "edge" port to --url so a delivery really travels
// fake edge -> receiver.
//
// The hostname in the box is a made-up *.trycloudflare.com name; the real
// loopback address of the edge is served at GET /fake/edge on the metrics
// address (and written to $FAKECF_EDGE_FILE when set).
//
// Behaviours, chosen by environment variables:
//
//	FAKECF_VERSION=2024.8.2   version printed by --version
//	FAKECF_NO_QUICKTUNNEL=1   /quicktunnel answers 404 (URL only in the log)
//	FAKECF_NO_METRICS=1       no metrics server at all (log only)
//	FAKECF_READY_DELAY=500ms  wait before registering the connection
//	FAKECF_CRASH_AFTER=200ms  exit 1 that long after becoming ready
//	FAKECF_EXIT_CODE=11       log an auto-update and exit with that code
//	FAKECF_QUIC_BLOCKED=1     QUIC to the edge is blocked, TCP is open: log
//	                          failed QUIC dials and the real pre-check report
//	                          (UDP FAIL, TCP PASS); only --protocol http2
//	                          registers a connection
//	FAKECF_QUIC_BLOCKED=old   the same without the pre-checks (cloudflared
//	                          before 2026 has none)
//	FAKECF_IGNORE_TERM=1      ignore SIGTERM (and SIGINT)
//	FAKECF_LOG_TOKEN=1        log the named tunnel's token (redaction must hide it)
//	FAKECF_ARGS_FILE=path     write argv and whether TUNNEL_TOKEN was set, as JSON
//	FAKECF_PID_FILE=path      append this process's pid, one per line
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:])) }

func logf(level, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s %s %s\n", time.Now().UTC().Format("2006-01-02T15:04:05Z"), level, fmt.Sprintf(format, a...))
}

func run(args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-v" || args[0] == "version") {
		v := os.Getenv("FAKECF_VERSION")
		if v == "" {
			v = "2024.8.2"
		}
		fmt.Printf("cloudflared version %s (built 2024-08-05-1234 UTC)\n", v)
		return 0
	}
	if f := os.Getenv("FAKECF_ARGS_FILE"); f != "" {
		b, _ := json.Marshal(map[string]any{"args": args, "tunnel_token": os.Getenv("TUNNEL_TOKEN")})
		_ = os.WriteFile(f, b, 0o600)
	}
	if f := os.Getenv("FAKECF_PID_FILE"); f != "" {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(fh, "%d\n", os.Getpid())
			fh.Close()
		}
	}
	if len(args) == 0 || args[0] != "tunnel" {
		fmt.Fprintln(os.Stderr, "fakecloudflared: only `tunnel` and `--version` are supported")
		return 2
	}
	fs := flag.NewFlagSet("tunnel", flag.ContinueOnError)
	noAuto := fs.Bool("no-autoupdate", false, "")
	metrics := fs.String("metrics", "", "")
	protocol := fs.String("protocol", "auto", "")
	origin := fs.String("url", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	named := false
	token := os.Getenv("TUNNEL_TOKEN")
	if rest := fs.Args(); len(rest) > 0 {
		if rest[0] != "run" {
			fmt.Fprintf(os.Stderr, "fakecloudflared: unknown subcommand %q\n", rest[0])
			return 2
		}
		named = true
		rs := flag.NewFlagSet("run", flag.ContinueOnError)
		tok := rs.String("token", "", "")
		if err := rs.Parse(rest[1:]); err != nil {
			return 2
		}
		if *tok != "" {
			token = *tok
		}
	}
	if !*noAuto {
		logf("WRN", "Autoupdate is enabled; this fake refuses to run without --no-autoupdate")
	}

	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	ignoreTerm := os.Getenv("FAKECF_IGNORE_TERM") == "1"

	if !named {
		logf("INF", "Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out. However, be aware that these account-less Tunnels have no uptime guarantee.")
		logf("INF", "Requesting new quick Tunnel on trycloudflare.com...")
	}
	switch {
	case os.Getenv("FAKECF_EXIT_CODE") != "":
		var code int
		fmt.Sscanf(os.Getenv("FAKECF_EXIT_CODE"), "%d", &code)
		logf("INF", "cloudflared has been updated to version 2099.1.0")
		return code
	}
	if named && os.Getenv("FAKECF_LOG_TOKEN") == "1" {
		logf("INF", "Starting tunnel with token %s", token)
	}
	if named && token == "" {
		fmt.Fprintln(os.Stderr, `"cloudflared tunnel run" requires the ID or name of the tunnel to run as the last command line argument or in the configuration file.`)
		return 1
	}

	// The fake edge: a loopback listener forwarding to the origin.
	edge, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		logf("ERR", "edge listen: %v", err)
		return 1
	}
	edgeURL := "http://" + edge.Addr().String()
	target := *origin
	if named {
		target = os.Getenv("FAKECF_ORIGIN") // named tunnels route by dashboard config
	}
	var proxy http.Handler = http.NotFoundHandler()
	if target != "" {
		if !strings.Contains(target, "://") {
			target = "http://" + target
		}
		u, err := url.Parse(target)
		if err != nil {
			logf("ERR", "bad --url %q: %v", target, err)
			return 1
		}
		proxy = httputil.NewSingleHostReverseProxy(u)
	}
	go http.Serve(edge, proxy) //nolint:errcheck // ends with the process
	if f := os.Getenv("FAKECF_EDGE_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(edgeURL), 0o600)
	}

	host := ""
	if !named {
		host = randomHost()
	}
	readyCh := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/quicktunnel", func(w http.ResponseWriter, r *http.Request) {
		if os.Getenv("FAKECF_NO_QUICKTUNNEL") == "1" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8") // as the real one does
		fmt.Fprintf(w, `{"hostname":%q}`, host)
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8") // JSON, labelled as text, as the real one does
		select {
		case <-readyCh:
			fmt.Fprintf(w, `{"status":200,"readyConnections":1,"connectorId":"00000000-0000-0000-0000-000000000000"}`)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"status":503,"readyConnections":0,"connectorId":"00000000-0000-0000-0000-000000000000"}`)
		}
	})
	mux.HandleFunc("/fake/edge", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, edgeURL) })
	if !named {
		line := fmt.Sprintf("https://%s", host)
		title := "Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):"
		width := len(title) + 4
		logf("INF", "+%s+", strings.Repeat("-", width))
		logf("INF", "|  %-*s  |", len(title), title)
		logf("INF", "|  %-*s  |", len(title), line)
		logf("INF", "+%s+", strings.Repeat("-", width))
	}
	logf("INF", "Version %s (Checksum 0000)", os.Getenv("FAKECF_VERSION"))
	logf("INF", "Generated Connector ID: 00000000-0000-0000-0000-000000000000")
	initial := "quic"
	if *protocol == "http2" {
		initial = "http2"
	}
	logf("INF", "Initial protocol %s", initial)
	logf("INF", "Starting metrics server on %s/metrics", *metrics)
	if *metrics != "" && os.Getenv("FAKECF_NO_METRICS") != "1" {
		ml, err := net.Listen("tcp", *metrics)
		if err != nil {
			logf("ERR", "failed to bind metrics server on %s: %v", *metrics, err)
			return 1
		}
		go http.Serve(ml, mux) //nolint:errcheck // ends with the process
	}

	if b := os.Getenv("FAKECF_QUIC_BLOCKED"); b != "" && *protocol != "http2" {
		return quicBlocked(term, ignoreTerm, b == "1")
	}

	if d, _ := time.ParseDuration(os.Getenv("FAKECF_READY_DELAY")); d > 0 {
		if !wait(d, term, ignoreTerm) {
			return 0
		}
	}
	close(readyCh)
	logf("INF", "Registered tunnel connection connIndex=0 connection=00000000-0000-0000-0000-000000000001 event=0 ip=198.41.200.13 location=ams05 protocol=%s", initial)

	crash, _ := time.ParseDuration(os.Getenv("FAKECF_CRASH_AFTER"))
	if crash <= 0 {
		crash = 24 * time.Hour
	}
	if !wait(crash, term, ignoreTerm) {
		logf("INF", "Initiating graceful shutdown due to signal terminated ...")
		return 0
	}
	logf("ERR", "Serve tunnel error error=\"connection with edge closed\" connIndex=0")
	logf("FTL", "fake crash")
	return 1
}

// quicBlocked plays cloudflared behind a firewall that drops UDP to port
// 7844 but lets TCP through: QUIC dials time out, and the pre-checks
// (lines as cloudflared 2026.8.2 logs them) say so when prechecks. It
// never exits on its own.
func quicBlocked(term chan os.Signal, ignoreTerm, prechecks bool) int {
	dial := func() {
		logf("ERR", `Failed to dial a quic connection error="failed to dial to edge with quic: timeout: no recent network activity" connIndex=0 event=0 ip=198.41.200.13`)
	}
	dial()
	for _, row := range []string{
		"+----------------------------------------------------------------------------------------------+",
		"|                                   CONNECTIVITY PRE-CHECKS                                    |",
		"|  UDP Connectivity  198.41.200.13:7844  FAIL    QUIC connection failed                         |",
		"|  TCP Connectivity  198.41.200.13:7844  PASS    HTTP/2 connection successful                   |",
		"|  WARNING: Allow outbound QUIC traffic on port 7844 or use HTTP2.                              |",
		"|  SUMMARY: Environment ready with degraded transport. cloudflared will proceed using 'http2'. |",
		"+----------------------------------------------------------------------------------------------+",
	} {
		if prechecks {
			logf("INF", "%s", row)
		}
	}
	if prechecks {
		logf("INF", `precheck component="UDP Connectivity" details="QUIC connection failed" run_id=0 status=fail target=198.41.200.13:7844`)
		logf("INF", `precheck component="TCP Connectivity" details="HTTP/2 connection successful" run_id=0 status=pass target=198.41.200.13:7844`)
	}
	for wait(100*time.Millisecond, term, ignoreTerm) {
		dial()
	}
	logf("INF", "Initiating graceful shutdown due to signal terminated ...")
	return 0
}

// wait sleeps d and reports true, or false when a signal asks to stop first.
func wait(d time.Duration, term chan os.Signal, ignoreTerm bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return true
		case <-term:
			if ignoreTerm {
				logf("INF", "ignoring signal (FAKECF_IGNORE_TERM)")
				continue
			}
			return false
		}
	}
}

func randomHost() string {
	words := []string{"symantec", "transferred", "lock", "revenues", "four", "dashed", "word", "url",
		"amber", "river", "silent", "orbit", "maple", "quartz", "harbor", "velvet", "ember", "cobalt"}
	parts := make([]string, 4)
	for i := range parts {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(words))))
		parts[i] = words[n.Int64()]
	}
	suffix, _ := rand.Int(rand.Reader, big.NewInt(1<<30))
	return fmt.Sprintf("%s-%x.trycloudflare.com", strings.Join(parts, "-"), suffix.Int64())
}
