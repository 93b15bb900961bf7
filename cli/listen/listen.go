// Package listen is `hookscope listen`: the headless receiver. It runs the
// same receiver assembly as the window (store with its inbox, engine,
// server, retention, tunnel) and prints one line per delivery.
package listen

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # receive on the default address and print one line per delivery
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

// DefaultAddr is where the receiver listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8787"

// DefaultPath is the consumer path shown in URLs; every path is accepted.
const DefaultPath = "/webhooks"

// Options are listen's flags, and what validation derives from them.
type Options struct {
	Env *cmdutil.Env

	Addr          string
	Path          string
	DBPath        string
	JSON          bool
	MaxBody       int64
	Answer        string
	AllowRemote   bool
	MaxDeliveries int64
	Pprof         string
	Secrets       *cmdutil.SecretFlags
	Tunnel        *TunnelOptions

	// Set by validate.
	secrets [][]byte
	mode    inspector.AnswerMode
}

// NewCmd builds `hookscope listen`. runF replaces the receiver in tests
// (nil: the real one); it gets validated Options.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "listen [flags]",
		Short: "Receive webhook deliveries, verify, decode and store them",
		Long: `Receive the service's webhook deliveries on a local address, store each one
byte-exact before answering, then verify its signature, decode its events
and print one line per delivery (or one JSON object with --json).
Ctrl+C stops accepting, finishes in-flight requests and closes the store.`,
		Example: examples,
		Args:    cmdutil.NoArgs,
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Addr, "addr", DefaultAddr, "address to listen on (host:port); loopback unless --allow-remote")
	fs.StringVar(&o.Path, "path", DefaultPath, "consumer path to show in URLs (POSTs to any path are recorded)")
	o.Secrets = cmdutil.AddSecretFlags(fs)
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per delivery instead of text")
	fs.Int64Var(&o.MaxBody, "max-body", inspector.DefaultMaxBody, "largest body stored whole, in bytes; larger ones are answered 413 and kept truncated")
	fs.StringVar(&o.Answer, "answer", "200", "how to answer: 200, 500, hang (no answer for 15 s) or close (drop the connection)")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow binding a non-loopback address (anyone on the network can then post to it)")
	fs.Int64Var(&o.MaxDeliveries, "max-deliveries", 0, "keep at most this many deliveries, deleting the oldest (0 = no cap)")
	fs.StringVar(&o.Pprof, "pprof", "", "serve Go's profiler (net/http/pprof) on this loopback address, e.g. 127.0.0.1:6060 (off by default)")
	o.Tunnel = addTunnelFlags(fs)
	_ = cmd.RegisterFlagCompletionFunc("answer", cmdutil.CompleteFixed("200\tanswer 200 OK", "500\tanswer 500: the service sends again", "hang\tno answer for 15 s", "close\tdrop the connection"))
	return cmd
}

// validate checks the flags and resolves secrets and the answer mode;
// every problem is a usage error.
func (o *Options) validate([]string) error {
	if o.Pprof != "" && !inspector.IsLoopback(o.Pprof) {
		return cmdutil.UsageErrorf("--pprof %s is not a loopback address: the profiler must not be reachable from the network", o.Pprof)
	}
	sec, err := o.Secrets.Resolve(o.Env)
	if err != nil {
		return err
	}
	o.secrets = sec
	if o.mode, err = inspector.ParseAnswerMode(o.Answer); err != nil {
		return cmdutil.UsageErrorf("--answer: %v", err)
	}
	if o.MaxBody <= 0 {
		return cmdutil.UsageErrorf("--max-body must be a positive number of bytes, got %d", o.MaxBody)
	}
	if o.MaxDeliveries < 0 {
		return cmdutil.UsageErrorf("--max-deliveries must be 0 (no cap) or positive, got %d", o.MaxDeliveries)
	}
	if !strings.HasPrefix(o.Path, "/") {
		return cmdutil.UsageErrorf("--path must start with '/', got %q", o.Path)
	}
	if !inspector.IsLoopback(o.Addr) && !o.AllowRemote {
		return cmdutil.UsageErrorf("--addr %s is not a loopback address; add --allow-remote to listen on the network", o.Addr)
	}
	if _, err := o.Tunnel.config(o.Env, o.Addr); err != nil && cmdutil.IsUsage(err) {
		return err
	}
	return nil
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	if !inspector.IsLoopback(o.Addr) {
		fmt.Fprintf(env.Stderr, "warning: listening on %s: anyone who can reach this machine can post deliveries\n", o.Addr)
	}
	db, err := cmdutil.OpenStoreWith(o.DBPath, storage.Options{Inbox: true})
	if err != nil {
		return err
	}
	defer db.Close()

	out := cmdutil.NewSyncWriter(env.Stdout)
	logf := func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }
	eng := inspector.NewEngine(db, inspector.Options{Secrets: o.secrets, MaxBody: o.MaxBody, Answer: o.mode, Logf: logf})
	color := env.IsTerminal && !o.JSON
	eng.Subscribe(func(r *inspector.Record) {
		if o.JSON {
			out.PrintJSON(listenJSON(r))
		} else {
			out.Print(listenText(r, color))
		}
		if o.MaxDeliveries > 0 && r.Delivery.ID%100 == 0 {
			if _, err := db.Prune(ctx, o.MaxDeliveries); err != nil {
				logf("prune: %v", err)
			}
		}
	})
	srv, err := inspector.Serve(o.Addr, eng.Handler(), inspector.ServerOptions{Engine: eng})
	if err != nil {
		return err
	}
	if o.Pprof != "" {
		stopProf, err := servePprof(o.Pprof)
		if err != nil {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			srv.Shutdown(shutdownCtx)
			cancel()
			return err
		}
		defer stopProf()
		fmt.Fprintf(env.Stderr, "profiler on http://%s/debug/pprof/\n", o.Pprof)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	runDone := make(chan error, 1)
	go func() { runDone <- eng.Run(runCtx) }()

	local := "http://" + srv.Addr() + o.Path
	if o.JSON {
		out.PrintJSON(map[string]any{"listening": local, "store": db.Path(), "secrets": len(o.secrets), "answer": string(o.mode)})
	} else {
		verify := "signatures not verified (no --secret)"
		if len(o.secrets) > 0 {
			verify = fmt.Sprintf("verifying signatures with %d secret(s)", len(o.secrets))
		}
		out.Print(fmt.Sprintf("Listening on %s  (%s; store %s)\nPress Ctrl+C to stop.\n", local, verify, db.Path()))
	}
	stopTunnel, err := o.Tunnel.startTunnel(ctx, &cmdutil.Env{Stdout: out, Stderr: env.Stderr, Getenv: env.Getenv}, srv.Addr(), o.Path, o.JSON)
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
	if !o.JSON {
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
