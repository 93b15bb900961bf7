package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/storage"
)

const listenExamples = `  # receive on the default address and print one line per delivery
  hookscope listen

  # verify signatures; the secret comes from the environment
  WEBHOOK_SECRET=... hookscope listen --secret-env WEBHOOK_SECRET

  # machine-readable output, a separate store file, a 1 MiB body cap
  hookscope listen --json --db /tmp/hooks.db --max-body 1048576

  # answer 500 to make the service re-send
  hookscope listen --answer 500

  # a public HTTPS URL through your cloudflared (a quick tunnel, new hostname each run)
  hookscope listen --tunnel

  # a named tunnel on your own hostname; the token stays out of argv
  HOOKSCOPE_TUNNEL_TOKEN=... hookscope listen --tunnel --tunnel-token-env HOOKSCOPE_TUNNEL_TOKEN --tunnel-hostname hooks.example.com`

// DefaultListenAddr is where the receiver listens unless told otherwise.
const DefaultListenAddr = "127.0.0.1:8787"

// DefaultPath is the consumer path shown in URLs; every path is accepted.
const DefaultPath = "/webhooks"

func runListen(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "listen", "[flags]", listenExamples)
	addr := fs.String("addr", DefaultListenAddr, "address to listen on (host:port); loopback unless --allow-remote")
	path := fs.String("path", DefaultPath, "consumer path to show in URLs (POSTs to any path are recorded)")
	secrets := addSecretFlags(fs)
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	jsonOut := fs.Bool("json", false, "print one JSON object per delivery instead of text")
	maxBody := fs.Int64("max-body", inspector.DefaultMaxBody, "largest body stored whole, in bytes; larger ones are answered 413 and kept truncated")
	answer := fs.String("answer", "200", "how to answer: 200, 500, hang (no answer for 15 s) or close (drop the connection)")
	allowRemote := fs.Bool("allow-remote", false, "allow binding a non-loopback address (anyone on the network can then post to it)")
	keep := fs.Int64("max-deliveries", 0, "keep at most this many deliveries, deleting the oldest (0 = no cap)")
	pprofAddr := fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this loopback address, e.g. 127.0.0.1:6060 (off by default)")
	tf := addTunnelFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *pprofAddr != "" && !inspector.IsLoopback(*pprofAddr) {
		return usageError("--pprof %s is not a loopback address: the profiler must not be reachable from the network", *pprofAddr)
	}
	sec, err := secrets.resolve(env)
	if err != nil {
		return err
	}
	mode, err := inspector.ParseAnswerMode(*answer)
	if err != nil {
		return usageError("--answer: %v", err)
	}
	if *maxBody <= 0 {
		return usageError("--max-body must be a positive number of bytes, got %d", *maxBody)
	}
	if *keep < 0 {
		return usageError("--max-deliveries must be 0 (no cap) or positive, got %d", *keep)
	}
	if !strings.HasPrefix(*path, "/") {
		return usageError("--path must start with '/', got %q", *path)
	}
	if !inspector.IsLoopback(*addr) {
		if !*allowRemote {
			return usageError("--addr %s is not a loopback address; add --allow-remote to listen on the network", *addr)
		}
		fmt.Fprintf(env.Stderr, "warning: listening on %s: anyone who can reach this machine can post deliveries\n", *addr)
	}
	db, err := openStoreWith(*dbPath, storage.Options{Inbox: true, Logf: func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }})
	if err != nil {
		return err
	}
	defer db.Close()

	out := &syncWriter{w: env.Stdout}
	logf := func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }
	eng := inspector.NewEngine(db, inspector.Options{Secrets: sec, MaxBody: *maxBody, Answer: mode, Logf: logf})
	color := env.IsTerminal && !*jsonOut
	eng.Subscribe(func(r *inspector.Record) {
		if *jsonOut {
			out.writeJSON(listenJSON(r))
		} else {
			out.write(listenText(r, color))
		}
		if *keep > 0 && r.Delivery.ID%100 == 0 {
			if _, err := db.Prune(ctx, *keep); err != nil {
				logf("prune: %v", err)
			}
		}
	})
	srv, err := inspector.Serve(*addr, eng.Handler())
	if err != nil {
		return err
	}
	if *pprofAddr != "" {
		stopProf, err := servePprof(*pprofAddr)
		if err != nil {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			srv.Shutdown(shutdownCtx)
			cancel()
			return err
		}
		defer stopProf()
		fmt.Fprintf(env.Stderr, "profiler on http://%s/debug/pprof/\n", *pprofAddr)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	runDone := make(chan error, 1)
	go func() { runDone <- eng.Run(runCtx) }()

	local := "http://" + srv.Addr() + *path
	if *jsonOut {
		out.writeJSON(map[string]any{"listening": local, "store": db.Path(), "secrets": len(sec), "answer": string(mode)})
	} else {
		verify := "signatures not verified (no --secret)"
		if len(sec) > 0 {
			verify = fmt.Sprintf("verifying signatures with %d secret(s)", len(sec))
		}
		out.write(fmt.Sprintf("Listening on %s  (%s; store %s)\nPress Ctrl+C to stop.\n", local, verify, db.Path()))
	}
	stopTunnel, err := tf.startTunnel(ctx, &Env{Stdout: out, Stderr: env.Stderr, Getenv: env.Getenv}, srv.Addr(), *path, *jsonOut)
	if err != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(shutdownCtx)
		cancel()
		stopRun()
		<-runDone
		return err
	}

	<-ctx.Done()
	if stopTunnel != nil {
		stopTunnel()
	}
	// Stop accepting, finish in-flight requests (each stored before its
	// answer), then let analysis drain the queue and close the store.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	serr := srv.Shutdown(shutdownCtx)
	stopRun()
	rerr := <-runDone
	if !*jsonOut {
		fmt.Fprintln(env.Stderr, "stopped")
	}
	if serr != nil {
		return serr
	}
	return rerr
}

// servePprof serves the Go profiler on its own mux and listener, so it is
// never reachable through the receiver, and returns how to stop it.
func servePprof(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}

// openStore opens the store at path, or the default store when path is empty.
func openStore(path string) (*storage.DB, error) {
	return openStoreWith(path, storage.Options{})
}

// openStoreWith is openStore with options: the receiving commands open the
// store with its inbox.
func openStoreWith(path string, o storage.Options) (*storage.DB, error) {
	if path == "" {
		p, err := storage.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	db, err := storage.OpenWith(path, o)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// syncWriter serialises whole lines from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) write(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, text)
}

func (s *syncWriter) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Write(append(b, '\n'))
}

// listenEvent is one event in listen's --json output.
type listenEvent struct {
	UUID        string            `json:"uuid"`
	Type        string            `json:"type"`
	GeneratedAt string            `json:"generated_at"`
	AccountID   string            `json:"account_id"`
	Duplicate   bool              `json:"duplicate"`
	Copies      int               `json:"copies"`
	FirstID     int64             `json:"first_delivery_id"`
	Divergent   bool              `json:"divergent"`
	OutOfOrder  bool              `json:"out_of_order"`
	Summary     string            `json:"summary,omitempty"`
	Problems    []catalog.Problem `json:"problems"`
}

// listenLine is one delivery in listen's --json output.
type listenLine struct {
	DeliveryID      int64             `json:"delivery_id"`
	ReceivedAt      string            `json:"received_at"`
	Method          string            `json:"method"`
	Path            string            `json:"path"`
	Status          int               `json:"status"`
	Answer          string            `json:"answer,omitempty"`
	BodyLength      int64             `json:"body_length"`
	Signature       string            `json:"signature"`
	SignatureReason string            `json:"signature_reason,omitempty"`
	SecretMatched   *int              `json:"secret_matched"`
	HookUUID        string            `json:"hook_uuid"`
	Resend          bool              `json:"resend"`
	ResendOf        int64             `json:"resend_of,omitempty"`
	Error           *string           `json:"error"`
	ErrorOffset     *int64            `json:"error_offset,omitempty"`
	Truncated       bool              `json:"truncated"`
	Rejected        bool              `json:"rejected"`
	Problems        []catalog.Problem `json:"problems"`
	Events          []listenEvent     `json:"events"`
}

func listenJSON(r *inspector.Record) listenLine {
	d, a := r.Delivery, r.Analysis
	l := listenLine{
		DeliveryID: d.ID,
		ReceivedAt: d.ReceivedAt.UTC().Format(time.RFC3339Nano),
		Method:     d.Method,
		Path:       d.Path,
		Status:     d.Status,
		Answer:     d.Answer,
		BodyLength: d.BodyLength,
		Truncated:  d.Truncated,
		Rejected:   d.Rejected,
		Problems:   []catalog.Problem{},
		Events:     []listenEvent{},
	}
	if a == nil {
		l.Signature = "pending"
		return l
	}
	l.Signature = string(a.Signature.Status)
	l.SignatureReason = a.Signature.Reason
	if a.Signature.SecretIndex >= 0 {
		i := a.Signature.SecretIndex
		l.SecretMatched = &i
	}
	l.HookUUID, l.Resend, l.ResendOf = a.HookUUID, a.Resend, a.ResendOf
	if a.Error != nil {
		l.Error = &a.Error.Reason
		if a.Error.Offset >= 0 {
			off := a.Error.Offset
			l.ErrorOffset = &off
		}
	}
	if a.Problems != nil {
		l.Problems = a.Problems
	}
	for _, e := range a.Events {
		ps := e.Problems
		if ps == nil {
			ps = []catalog.Problem{}
		}
		l.Events = append(l.Events, listenEvent{
			UUID: e.UUID, Type: e.Type, GeneratedAt: e.GeneratedRaw, AccountID: e.AccountID,
			Duplicate: e.Duplicate, Copies: e.Copies, FirstID: e.FirstDeliveryID, Divergent: e.Divergent,
			OutOfOrder: e.OutOfOrder, Summary: e.Summary, Problems: ps,
		})
	}
	return l
}

// ANSI colours for the text form on a terminal.
const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
)

func listenText(r *inspector.Record, color bool) string {
	paint := func(c, s string) string {
		if !color {
			return s
		}
		return c + s + ansiReset
	}
	d, a := r.Delivery, r.Analysis
	var b strings.Builder
	status := fmt.Sprint(d.Status)
	switch {
	case d.Answer == string(inspector.AnswerHang):
		status = "held 15s"
	case d.Answer == string(inspector.AnswerClose):
		status = "closed"
	}
	fmt.Fprintf(&b, "%s  #%-5d %s %s  %s", d.ReceivedAt.Local().Format("15:04:05.000"), d.ID, d.Method, d.Path, status)
	if a == nil {
		b.WriteString("  (not analyzed)\n")
		return b.String()
	}
	sig := "signature " + string(a.Signature.Status)
	switch a.Signature.Status {
	case inspector.SignatureValid:
		if a.Signature.SecretIndex > 0 {
			sig += fmt.Sprintf(" (secret #%d)", a.Signature.SecretIndex+1)
		}
		if a.Signature.UpperCase {
			sig += " (upper-case hex)"
		}
		sig = paint(ansiGreen, sig)
	case inspector.SignatureInvalid, inspector.SignatureMissing:
		sig = paint(ansiRed, sig)
	default:
		sig = paint(ansiDim, sig)
	}
	fmt.Fprintf(&b, "  %s", sig)
	if d.Truncated {
		b.WriteString(paint(ansiYellow, fmt.Sprintf("  TRUNCATED (%d bytes sent)", d.BodyLength)))
	}
	if a.Resend {
		b.WriteString(paint(ansiYellow, fmt.Sprintf("  re-sent message (first #%d)", a.ResendOf)))
	}
	if n := len(a.Problems); n > 0 {
		fmt.Fprintf(&b, "  %d header problem(s)", n)
	}
	b.WriteByte('\n')
	if a.Error != nil {
		fmt.Fprintf(&b, "    %s %s\n", paint(ansiRed, "undecodable:"), a.Error.Reason)
	}
	for _, e := range a.Events {
		marks := "new"
		if e.Duplicate {
			marks = paint(ansiYellow, fmt.Sprintf("duplicate ×%d of #%d", e.Copies, e.FirstDeliveryID))
		}
		if e.Divergent {
			marks += " " + paint(ansiRed+ansiBold, "DIVERGENT")
		}
		if e.OutOfOrder {
			marks += " " + paint(ansiYellow, "out-of-order")
		}
		if len(e.Problems) > 0 {
			marks += fmt.Sprintf(" %d problem(s)", len(e.Problems))
		}
		typ := e.Type
		if typ == "" {
			typ = "(no type)"
		}
		uuid := e.UUID
		if uuid == "" {
			uuid = "(no uuid)"
		}
		fmt.Fprintf(&b, "    %-42s %-34s %s\n", typ, uuid, marks)
	}
	return b.String()
}
