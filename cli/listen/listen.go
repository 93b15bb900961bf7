// Package listen is `hookscope listen`: the headless receiver. It runs the
// same receiver assembly as the window (station: store, engine, server,
// retention, forwarding, tunnel) and prints one entry per
// delivery and per forward attempt.
package listen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
	"github.com/hookscope/hookscope/tunnel"
)

const examples = `  # receive on the default address and forward every delivery to your app
  hookscope listen --forward-to localhost:3000/webhooks

  # real traffic from the service: a public URL, forwarded to your app
  hookscope listen --tunnel --forward-to http://localhost:3000/webhooks

  # media events to one handler, everything to another; what verified is re-signed with your app's dev secret
  WEBHOOK_SECRET=... APP_SECRET=... hookscope listen --secret-env WEBHOOK_SECRET \
    --forward-to 'media.*=http://localhost:3000/media' --forward-to http://localhost:4000/hooks \
    --forward-resign-secret-env APP_SECRET

  # the service meets your app's answers (its status, headers and body)
  hookscope listen --forward-to http://localhost:3000/webhooks --forward-mode pass-through

  # an https app with a private CA; a URL with a token in it, kept out of ps
  APP_URL='https://dev:token@app.internal:8443/hooks' hookscope listen --forward-to-env APP_URL --forward-ca ./dev-ca.pem

  # receive only, and print one line per delivery
  hookscope listen

  # a laptop of a team relay: what it received while this laptop slept, then live, to your app
  HOOKSCOPE_RELAY=... hookscope listen --relay-env HOOKSCOPE_RELAY --forward-to localhost:3000/webhooks

  # verify signatures; the secret comes from the environment
  WEBHOOK_SECRET=... hookscope listen --secret-env WEBHOOK_SECRET

  # machine-readable output, a separate store file, a 1 MiB body cap
  hookscope listen --json --db /tmp/hooks.db --max-body 1048576

  # answer 500 to make the service re-send
  hookscope listen --answer 500

  # answer rules, first match wins: each media message 500 twice then 200, playback events after 12 s
  hookscope listen --answer 'media.* => 500 x2 then 200' --answer 'viewing_session.* => 200 after 12s'

  # media messages to one handler, chosen by an expression
  hookscope listen --forward-to 'where events.exists(e, e.type.startsWith("media.")) => localhost:3000/media'

  # the flags only, not the window's saved settings
  hookscope listen --no-settings

  # a public HTTPS URL through your cloudflared (a quick tunnel, new hostname each run)
  hookscope listen --tunnel

  # the tunnel does not come up: cloudflared's own log lines too
  hookscope listen --tunnel --tunnel-log

  # a named tunnel on your own hostname; the token stays out of argv
  HOOKSCOPE_TUNNEL_TOKEN=... hookscope listen --tunnel --tunnel-token-env HOOKSCOPE_TUNNEL_TOKEN --tunnel-hostname hooks.example.com`

// DefaultAddr is where the receiver listens unless told otherwise.
const DefaultAddr = station.DefaultAddr

// DefaultPath is the consumer path shown in URLs; every path is accepted.
const DefaultPath = station.DefaultPath

// Options are listen's flags, and what validation derives from them.
type Options struct {
	Env *cmdutil.Env

	Addr          string
	Path          string
	DBPath        string
	JSON          bool
	MaxBody       int64
	Answer        []string
	NoSettings    bool
	AllowRemote   bool
	MaxDeliveries int64
	Pprof         string
	Secrets       *cmdutil.SecretFlags
	Tunnel        *TunnelOptions
	Forward       *ForwardOptions
	Relay         *RelayOptions

	// Set by validate.
	secrets [][]byte
	rules   *rules.Rules
	tunnel  tunnel.Config
	forward *forward.Config
	// using says what was taken from the window's saved settings;
	// rulesFrom where the answer rules came from.
	using     []string
	rulesFrom string

	fs *pflag.FlagSet
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

With --forward-to, every delivery also goes to your app, as the service sent it
(X-Service-Signature intact, Host set for your app). In ack mode (the default)
the service gets 200 once the delivery is stored, and your app gets it from a
queue kept in the store: in arrival order, retried until it answers 2xx, resumed
after a restart or a crash; a dead or slow app never delays the service's answer.
In pass-through mode the service gets your app's status, headers and body, or
502 (nothing listening) or 504 (no answer within --forward-timeout).
Each attempt is printed under its delivery ("→ 200 in 12 ms", "→ 500 in 3 ms
(attempt 2, next in 2 s)"); when your app goes down one line says so (with how
many deliveries wait), and one when it is back (--json prints every attempt).
A route that leads back to this receiver is refused, and every forwarded
request carries X-Hookscope-Forwarded, so a loop through another hop stops too.

With --relay-env VAR (or --relay-file FILE) the deliveries a team relay
received come too (hookscope relay; docs/relay.md): first those that arrived
while this laptop was away, in the relay's order, then live ones. Each is
stored before the relay is told, keeps the relay's receive time, headers and
body byte for byte, and is then analysed, shown ("via relay #42") and
forwarded as a direct one (ack mode). The relay's state is printed as it
changes ("relay: catching up 1,240 of 5,002", "relay: live"); a refused
credential stops listen.

--answer RULE (repeatable, in order, the first that matches answering) makes
the receiver answer otherwise than 200, to provoke the service's re-sends:
a status (500), a hold (200 after 12s, past the service's 10 s), close (no
answer), or a sequence per message (500 x2 then 200); with a condition first,
an event-type glob or an expression: 'media.* => 500'. Each delivery is stored
with what it was answered; docs/rules.md has the grammar and the variables.

Flags not given come from the window's saved settings in the same store (its
address, path, body cap, retention, answer rules, forwarding and secrets); the
start says which in one line. --no-settings uses the flags and defaults only.

Ctrl+C stops accepting, finishes in-flight requests, records what was forwarded
and closes the store; it says how many deliveries wait for your app: the next
run sends them.`,
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
	fs.StringArrayVar(&o.Answer, "answer", nil, "an answer `rule`, [COND =>] ACTION (repeatable, in order; the first that matches answers; none: 200): 500, hang (200 after 15 s), close, 200 after 12s, 500 x2 then 200, 'media.* => 503', 'delivery.signature != \"valid\" => 401' (docs/rules.md)")
	fs.BoolVar(&o.NoSettings, "no-settings", false, "ignore the window's saved settings (address, path, body cap, retention, answer rules, forwarding, secrets): flags and defaults only")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow binding a non-loopback address (anyone on the network can then post to it)")
	fs.Int64Var(&o.MaxDeliveries, "max-deliveries", 0, "keep at most this many deliveries, deleting the oldest (0 = no cap)")
	fs.StringVar(&o.Pprof, "pprof", "", "serve Go's profiler (net/http/pprof) on this loopback address, e.g. 127.0.0.1:6060 (off by default)")
	o.Tunnel = addTunnelFlags(fs)
	o.Forward = addForwardFlags(fs)
	o.Relay = addRelayFlags(fs)
	o.fs = fs
	_ = cmd.RegisterFlagCompletionFunc("answer", cmdutil.CompleteFixed("200\tanswer 200 OK", "500\tanswer 500: the service sends again", "hang\t200 after 15 s: past the service's 10 s", "close\tdrop the connection"))
	_ = cmd.RegisterFlagCompletionFunc("tunnel-protocol", cmdutil.CompleteFixed("auto\tQUIC, and http2 when UDP port 7844 is blocked", "quic\tQUIC over UDP port 7844", "http2\tHTTP/2 over TCP port 7844"))
	_ = cmd.RegisterFlagCompletionFunc("forward-mode", cmdutil.CompleteFixed("ack\tanswer 200 once stored, then forward from a durable queue", "pass-through\tanswer the service with your app's answer"))
	return cmd
}

// validate checks the flags, takes what they do not give from the
// window's saved settings (unless --no-settings), and resolves secrets,
// answer rules and forwarding; every problem in the flags is a usage
// error.
func (o *Options) validate([]string) error {
	if err := cmdutil.CheckHostPort("--addr", o.Addr); err != nil {
		return err
	}
	if o.Pprof != "" {
		if err := cmdutil.CheckHostPort("--pprof", o.Pprof); err != nil {
			return err
		}
		if !inspector.IsLoopback(o.Pprof) {
			return cmdutil.UsageErrorf("--pprof %s is not a loopback address: the profiler must not be reachable from the network", o.Pprof)
		}
	}
	sec, err := o.Secrets.Resolve(o.Env)
	if err != nil {
		return err
	}
	o.secrets = sec
	if o.rules, err = answerRules(o.Answer); err != nil {
		return err
	}
	o.rulesFrom = "--answer"
	if o.MaxBody <= 0 {
		return cmdutil.UsageErrorf("--max-body must be a positive number of bytes, got %d", o.MaxBody)
	}
	if o.MaxDeliveries < 0 {
		return cmdutil.UsageErrorf("--max-deliveries must be 0 (no cap) or positive, got %d", o.MaxDeliveries)
	}
	if !strings.HasPrefix(o.Path, "/") {
		return cmdutil.UsageErrorf("--path must start with '/', got %q", o.Path)
	}
	var saved *station.Settings
	if !o.NoSettings {
		if saved, err = o.useSettings(); err != nil {
			return err
		}
	}
	if !inspector.IsLoopback(o.Addr) && !o.AllowRemote {
		return cmdutil.UsageErrorf("--addr %s is not a loopback address; add --allow-remote to listen on the network", o.Addr)
	}
	if o.tunnel, err = o.Tunnel.config(o.Env); err != nil {
		return err
	}
	if o.forward, err = o.Forward.config(o.Env, o.Addr, saved); err != nil {
		return err
	}
	if saved != nil && o.forward != nil && len(o.Forward.To)+len(o.Forward.ToEnv) == 0 {
		o.using = append(o.using, "forwarding to "+strings.Join(routeNames(o.forward), ", ")+" ("+string(o.forward.Mode)+")")
	}
	return o.Relay.config(o.Env, o.forward)
}

// answerRules compiles --answer's rules; a wrong one is a usage error
// that names it and, for a condition, shows a caret under the column.
func answerRules(lines []string) (*rules.Rules, error) {
	rs, err := rules.NewRules(lines, nil)
	var re *rules.RuleError
	switch {
	case errors.As(err, new(rules.CompileErrors)) && errors.As(err, &re):
		return nil, cmdutil.UsageErrorf("--answer %q (rule %d): its condition is not valid (docs/rules.md has the variables):\n%s",
			lines[re.Index], re.Index+1, rules.Render(re.Err))
	case errors.As(err, &re):
		return nil, cmdutil.UsageErrorf("--answer (rule %d): %v", re.Index+1, re.Err)
	}
	return rs, err
}

// useSettings takes what the flags do not give from the window's saved
// settings in the store (a store that does not exist has none, and is
// not created), and the secrets from its vault when no --secret is given.
// What it took is listed in o.using; saved is the settings read (nil:
// none).
func (o *Options) useSettings() (saved *station.Settings, err error) {
	path, err := cmdutil.ExistingStorePath(o.Env, o.DBPath)
	var none *cmdutil.NoStoreError
	if errors.As(err, &none) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the window's settings in %s: %w (--no-settings ignores them)", path, err)
	}
	defer db.Close()
	ctx := context.Background()
	set, found, err := station.SavedSettings(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("the window's settings in %s: %w (--no-settings ignores them)", path, err)
	}
	if found {
		o.applySettings(set)
		saved = &set
	}
	if len(o.secrets) == 0 {
		vault, err := station.ChooseVault(db, path)
		if err != nil {
			fmt.Fprintf(o.Env.Stderr, "warning: %v\n", err)
		}
		secrets, err := vault.Load()
		if err != nil {
			return nil, fmt.Errorf("the window's secrets: %w (give --secret-env, or --no-settings)", err)
		}
		if len(secrets) > 0 {
			o.secrets = secrets
			o.using = append(o.using, plural.S(len(secrets), "secret")+" from "+vault.Name())
		}
	}
	return saved, nil
}

// applySettings takes from set what no flag gave.
func (o *Options) applySettings(set station.Settings) {
	unset := func(name string) bool { return !o.fs.Changed(name) }
	if unset("addr") && set.ListenAddr != DefaultAddr {
		o.Addr = set.ListenAddr
		o.using = append(o.using, "address "+set.ListenAddr)
	}
	if unset("path") && set.Path != DefaultPath {
		o.Path = set.Path
		o.using = append(o.using, "path "+set.Path)
	}
	if unset("max-body") && set.MaxBody != inspector.DefaultMaxBody {
		o.MaxBody = set.MaxBody
		o.using = append(o.using, fmt.Sprintf("body cap %d bytes", set.MaxBody))
	}
	if unset("max-deliveries") && set.Keep > 0 {
		o.MaxDeliveries = set.Keep
		o.using = append(o.using, fmt.Sprintf("keeping %d deliveries", set.Keep))
	}
	if unset("answer") && len(set.AnswerRules) > 0 {
		rs, err := rules.NewRules(set.AnswerRules, nil)
		if err != nil {
			// The window saves only rules that compile; an older or
			// hand-edited record is said and left out.
			fmt.Fprintf(o.Env.Stderr, "warning: the window's answer rules are not used: %v\n", err)
			return
		}
		o.rules, o.rulesFrom = rs, "the window's answer rules"
		o.using = append(o.using, plural.S(len(set.AnswerRules), "answer rule"))
	}
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	if !inspector.IsLoopback(o.Addr) {
		fmt.Fprintf(env.Stderr, "warning: listening on %s: anyone who can reach this machine can post deliveries\n", o.Addr)
	}
	// The ports first: a taken port is said before a store is created or
	// opened, and nothing is received before the store is open.
	ln, err := inspector.Listen(o.Addr)
	if err != nil {
		return err
	}
	var profLn net.Listener
	if o.Pprof != "" {
		if profLn, err = net.Listen("tcp", o.Pprof); err != nil {
			ln.Close()
			return fmt.Errorf("--pprof: listen on %s: %w", o.Pprof, err)
		}
	}
	out := newPrinter(env.Stdout, o.JSON, env.IsTerminal)
	logf := func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }
	st, err := station.New(station.Config{
		DBPath: o.DBPath, Listener: ln, Keep: o.MaxDeliveries, Forward: o.forward, Answer: o.rules.Lines(),
		Engine: inspector.Options{Secrets: o.secrets, MaxBody: o.MaxBody, Logf: logf},
	})
	if err != nil {
		ln.Close()
		if profLn != nil {
			profLn.Close()
		}
		return err
	}
	// Printed from the first: a restart analyses what a crash left and
	// forwards what was owed as soon as it starts.
	db := st.Store()
	if out.before, err = db.NewestDeliveryID(ctx); err != nil {
		st.Close(context.Background())
		if profLn != nil {
			profLn.Close()
		}
		return err
	}
	st.Engine().Subscribe(func(r *inspector.Record) {
		out.delivery(r, divergences(context.WithoutCancel(ctx), db, r))
	})
	if o.forward != nil {
		st.SubscribeForward(newForwardPrinter(out, len(o.forward.Routes)).event)
	}
	out.listening(start{url: "http://" + ln.Addr().String() + o.Path, store: db.Path(), secrets: len(o.secrets),
		rules: o.rules, rulesFrom: o.rulesFrom, fwd: o.forward, using: o.using})
	// Forwarding starts before the receiver serves: nothing is missed.
	if err := st.Start(ctx); err != nil {
		st.Close(context.Background())
		if profLn != nil {
			profLn.Close()
		}
		return err
	}
	if profLn != nil {
		defer servePprof(profLn)()
		fmt.Fprintf(env.Stderr, "profiler on http://%s/debug/pprof/\n", profLn.Addr())
	}
	// The forwarder's warnings (a target off this machine) go to the log:
	// stderr, once.
	// Stop accepting, finish in-flight requests (each stored before its
	// answer), record what was forwarded, let analysis drain the queue and
	// close the store.
	closeStation := func() error {
		closeCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return st.Close(closeCtx)
	}
	if err := o.Tunnel.startTunnel(ctx, out, st, o.tunnel, o.Path); err != nil {
		closeStation()
		return err
	}
	relayStopped, err := o.Relay.start(ctx, out, st)
	if err != nil {
		closeStation()
		return err
	}
	select {
	case <-ctx.Done():
	case err = <-relayStopped:
	}
	err = errors.Join(err, closeStation())
	out.flush()
	if o.forward != nil && o.forward.Mode == forward.ModeAck {
		sayWaiting(env, db.Path(), o.forward.Routes)
	}
	if !o.JSON {
		fmt.Fprintln(env.Stderr, "stopped")
	}
	return err
}

// sayWaiting tells, once listen has stopped, how many deliveries each
// route still owes: the next run (or another process forwarding the same
// route from this store) sends them.
func sayWaiting(env *cmdutil.Env, path string, routes []forward.Route) {
	db, err := storage.Open(path)
	if err != nil {
		return
	}
	defer db.Close()
	waiting, err := db.ForwardWaiting(context.Background())
	if err != nil {
		return
	}
	for _, r := range routes {
		if n := waiting[r.Name()]; n > 0 {
			fmt.Fprintf(env.Stderr, "%s to be forwarded to %s on the next run (its attempts so far are recorded)\n",
				plural.Count(int(n), "delivery waits", "deliveries wait"), r.Name())
		}
	}
}

// servePprof serves the Go profiler on its own mux and listener, so it is
// never reachable through the receiver, and returns how to stop it.
func servePprof(ln net.Listener) func() {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }
}
