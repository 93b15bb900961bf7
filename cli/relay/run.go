package relay

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/listen"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/tunnel"
)

// DefaultAddr is where the relay listens unless told otherwise: beside
// listen's default port, so both can run on one machine.
const DefaultAddr = "127.0.0.1:8788"

// RunOptions are `hookscope relay`'s flags: running the relay.
type RunOptions struct {
	Env *cmdutil.Env

	Addr      string
	Path      string
	PublicURL string
	Data      string
	NATS      string
	NATSCreds string
	Replicas  int
	MaxAge    string
	MaxBytes  int64
	Sync      string
	JSON      bool
	Secrets   *cmdutil.SecretFlags
	Tunnel    *listen.TunnelOptions

	// Set by validate.
	secrets [][]byte
	tunnel  tunnel.Config
	relay   relay.Options
}

// addRunFlags registers the run flags on cmd (the parent command: its
// subcommands have flags of their own).
func addRunFlags(cmd *cobra.Command, o *RunOptions) {
	fs := cmd.Flags()
	fs.StringVar(&o.Addr, "addr", DefaultAddr, "address the receiver (and the laptops' /nats) listens on, host:port; another than loopback is open to the network: laptops still need their credential")
	fs.StringVar(&o.Path, "path", "/webhooks", "consumer path to show in URLs (POSTs to any path are recorded)")
	fs.StringVar(&o.PublicURL, "public-url", "", "the relay's URL as the service reaches it when you run your own HTTPS front (https://relay.example.com); laptops connect under /nats there")
	addDataFlag(cmd, &o.Data)
	fs.StringVar(&o.NATS, "nats", "", "use an existing NATS deployment at this `URL` (comma-separated for a cluster) instead of the embedded server")
	fs.StringVar(&o.NATSCreds, "nats-creds", "", "credentials `file` for --nats (.creds or an NKey seed)")
	fs.IntVar(&o.Replicas, "replicas", 1, "the stream's replicas on a --nats cluster (3 for a cluster of three)")
	fs.StringVar(&o.MaxAge, "max-age", "7d", "keep each delivery this long (e.g. 36h, 7d); laptops away longer lose the oldest")
	fs.Int64Var(&o.MaxBytes, "max-bytes", 0, "keep at most this many bytes of deliveries, the oldest going first (0: no limit)")
	fs.StringVar(&o.Sync, "sync", relay.DefaultSyncInterval.String(), "how often the embedded server syncs the stream to disk: a `duration`, or always (before each answer: safe against a power cut, slower on a busy disk)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per delivery instead of text")
	o.Secrets = cmdutil.AddSecretFlags(fs)
	o.Tunnel = listen.AddTunnelFlags(fs)
}

func (o *RunOptions) validate([]string) error {
	if err := cmdutil.CheckHostPort("--addr", o.Addr); err != nil {
		return err
	}
	if !strings.HasPrefix(o.Path, "/") {
		return cmdutil.UsageErrorf("--path must start with '/', got %q", o.Path)
	}
	var err error
	if o.secrets, err = o.Secrets.Resolve(o.Env); err != nil {
		return err
	}
	if o.tunnel, err = o.Tunnel.Config(o.Env); err != nil {
		return err
	}
	if o.PublicURL != "" {
		if o.Tunnel.Enabled {
			return cmdutil.UsageErrorf("--public-url is for your own HTTPS front; --tunnel gets its URL from cloudflared: give one")
		}
		if _, err := relay.WebSocketURL(o.PublicURL); err != nil {
			return cmdutil.UsageErrorf("--public-url: %v", err)
		}
	}
	switch {
	case o.NATSCreds != "" && o.NATS == "":
		return cmdutil.UsageErrorf("--nats-creds needs --nats")
	case o.Replicas < 1:
		return cmdutil.UsageErrorf("--replicas must be 1 or more, got %d", o.Replicas)
	case o.Replicas > 1 && o.NATS == "":
		return cmdutil.UsageErrorf("--replicas %d needs --nats, a NATS cluster: the embedded server is one node", o.Replicas)
	case o.MaxBytes < 0:
		return cmdutil.UsageErrorf("--max-bytes must be 0 (no limit) or positive, got %d", o.MaxBytes)
	}
	maxAge, err := parseAge(o.MaxAge)
	if err != nil {
		return cmdutil.UsageErrorf("--max-age %q: %v", o.MaxAge, err)
	}
	var sync time.Duration
	if o.Sync != "always" {
		if sync, err = time.ParseDuration(o.Sync); err != nil || sync <= 0 {
			return cmdutil.UsageErrorf("--sync %q: want always or a positive duration such as 1s", o.Sync)
		}
	}
	dir := o.Data
	if o.NATS == "" {
		if dir, err = dataDir(o.Data); err != nil {
			return err
		}
	}
	o.relay = relay.Options{DataDir: dir, NATSURL: o.NATS, NATSCreds: o.NATSCreds, Replicas: o.Replicas,
		MaxAge: maxAge, MaxBytes: o.MaxBytes, SyncInterval: sync}
	return nil
}

// parseAge reads a retention: a Go duration, or whole days ("7d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("want a positive number of days such as 7d, or a duration such as 36h")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("want a positive duration such as 36h, or days such as 7d")
	}
	return v, nil
}

// run runs the relay until ctx ends: the receiver with the relay's
// sink, the laptops' /nats on the same port, the tunnel when asked.
func run(ctx context.Context, o *RunOptions) error {
	env := o.Env
	if !inspector.IsLoopback(o.Addr) {
		fmt.Fprintf(env.Stderr, "warning: receiving on %s: anyone who can reach this machine can post deliveries (laptops still need their credential)\n", o.Addr)
	}
	ln, err := inspector.Listen(o.Addr)
	if err != nil {
		return err
	}
	out := listen.NewPrinter(env, o.JSON)
	logf := func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }
	st, err := station.New(station.Config{
		Listener: ln, Relay: &o.relay,
		Engine: inspector.Options{Secrets: o.secrets, Logf: logf},
	})
	if err != nil {
		ln.Close()
		return err
	}
	srv := st.RelayServer()
	st.Engine().Subscribe(out.Delivery)
	local := station.LocalURL(ln.Addr().String())
	public := o.PublicURL
	if public == "" && !o.Tunnel.Enabled && !unspecified(ln.Addr()) {
		public = local
	}
	if public != "" {
		if err := srv.SetPublicURL(public); err != nil {
			st.Close(context.Background())
			return err
		}
	}
	o.listening(out, local+o.Path, srv)
	if err := st.Start(ctx); err != nil {
		st.Close(context.Background())
		return err
	}
	closeStation := func() error {
		closeCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return st.Close(closeCtx)
	}
	if o.Tunnel.Enabled {
		if err := o.Tunnel.Start(ctx, out, st, o.tunnel, o.Path); err != nil {
			closeStation()
			return err
		}
		// Under the tunnel's own lines (its printer subscribed first); a
		// tunnel ready before this subscription is read from its state.
		var mu sync.Mutex
		said := ""
		laptopsAt := func(public string) {
			u, err := relay.WebSocketURL(public)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || u == said {
				return
			}
			said = u
			out.Line("relay: laptops connect to "+u, map[string]string{"laptop_url": u})
		}
		st.SubscribeTunnel(func(e tunnel.Event) {
			if e.Kind == tunnel.StateChanged && e.Status.State == tunnel.Ready {
				laptopsAt(e.Status.PublicURL)
			}
		})
		if sup := st.Tunnel(); sup != nil && sup.State().State == tunnel.Ready {
			laptopsAt(sup.State().PublicURL)
		}
	}
	<-ctx.Done()
	err = closeStation()
	out.Flush()
	if !o.JSON {
		fmt.Fprintln(env.Stderr, "stopped")
	}
	return err
}

// unspecified reports a listener on every interface (0.0.0.0, ::): its
// address is not one laptops elsewhere can use.
func unspecified(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsUnspecified()
}

// listening prints the start entry: where the service posts, where
// laptops connect, how signatures are checked and what the stream keeps.
func (o *RunOptions) listening(out *listen.Printer, url string, srv *relay.Server) {
	laptops := srv.LaptopURL()
	v := map[string]any{"listening": url, "relay": true, "laptop_url": laptops, "secrets": len(o.secrets), "data": o.relay.DataDir, "sync": o.Sync}
	verify := "signatures not verified (no --secret)"
	if n := len(o.secrets); n > 0 {
		verify = "verifying signatures with " + plural.S(n, "secret")
	}
	where := "stream " + relay.DefaultStream + " in " + o.relay.DataDir
	if o.NATS != "" {
		where = "stream " + relay.DefaultStream + " on " + o.NATS
	}
	laptops = "to " + laptops
	switch {
	case o.Tunnel.Enabled:
		laptops = "under /nats at the tunnel's URL (printed once it is up)"
	case srv.LaptopURL() == "":
		laptops = "under /nats at this machine's address (give --public-url, the URL they reach it at)"
	}
	sync := "synced to disk every " + o.Sync
	if o.Sync == "always" {
		sync = "synced to disk before each answer"
	}
	text := fmt.Sprintf("Relay receiving on %s  (%s; %s, kept %s, %s)\nLaptops connect %s; give each its own credential: hookscope relay invite NAME\nPress Ctrl+C to stop.",
		url, verify, where, o.MaxAge, sync, laptops)
	out.Line(text, v)
}
