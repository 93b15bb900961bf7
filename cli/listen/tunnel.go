package listen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/tunnel"
)

// TunnelOptions are listen's cloudflared flags.
type TunnelOptions struct {
	Enabled  bool
	Binary   string
	TokenEnv string
	Hostname string
	Protocol string
	// Log prints cloudflared's log lines as they come.
	Log bool
	// tune lets tests shorten the supervisor's timings.
	tune func(*tunnel.Config)
}

// addTunnelFlags registers --tunnel, --cloudflared, --tunnel-token-env,
// --tunnel-hostname, --tunnel-protocol and --tunnel-log on fs.
func addTunnelFlags(fs *pflag.FlagSet) *TunnelOptions {
	f := &TunnelOptions{}
	fs.BoolVar(&f.Enabled, "tunnel", false, "expose the receiver through a cloudflared tunnel and print its public POST URL (a quick tunnel unless --tunnel-token-env is given)")
	fs.StringVar(&f.Binary, "cloudflared", "", "path to the cloudflared binary (default: cloudflared on PATH)")
	fs.StringVar(&f.TokenEnv, "tunnel-token-env", "", "name of an environment variable holding a named tunnel's token (the token is a secret: it is never printed)")
	fs.StringVar(&f.Hostname, "tunnel-hostname", "", "public hostname routed to the named tunnel, e.g. hooks.example.com (with --tunnel-token-env)")
	fs.StringVar(&f.Protocol, "tunnel-protocol", "auto", "cloudflared's protocol to Cloudflare: auto (QUIC, switching to http2 when UDP port 7844 is blocked), quic or http2 (TCP port 7844)")
	fs.BoolVar(&f.Log, "tunnel-log", false, "print cloudflared's log lines as they come (tokens redacted)")
	return f
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$`)

// config checks the flag combination and builds the supervisor's
// configuration (the station points it at the receiver); wrong
// combinations are usage errors (exit 2).
func (f *TunnelOptions) config(env *cmdutil.Env) (tunnel.Config, error) {
	if !f.Enabled {
		for name, set := range map[string]bool{"--cloudflared": f.Binary != "", "--tunnel-token-env": f.TokenEnv != "",
			"--tunnel-hostname": f.Hostname != "", "--tunnel-protocol": f.Protocol != "auto", "--tunnel-log": f.Log} {
			if set {
				return tunnel.Config{}, cmdutil.UsageErrorf("%s needs --tunnel", name)
			}
		}
		return tunnel.Config{}, nil
	}
	cfg := tunnel.Config{Binary: f.Binary}
	if f.Binary != "" {
		// A path given on purpose that cannot run is a wrong flag, said
		// before anything starts; no usable cloudflared on PATH is not
		// (the receiver works without it, see startTunnel).
		var ni *tunnel.NotInstalledError
		if _, err := tunnel.Find(f.Binary, runtime.GOOS); errors.As(err, &ni) {
			fix := cmp.Or(ni.Fix, "give the path of the cloudflared program, or leave --cloudflared out to use cloudflared from PATH")
			return cfg, cmdutil.UsageErrorf("--cloudflared %s %s: %s", f.Binary, ni.Problem, fix)
		}
	}
	switch f.Protocol {
	case "auto":
	case "quic", "http2":
		cfg.Protocol = f.Protocol
	default:
		return cfg, cmdutil.UsageErrorf("--tunnel-protocol %q: want auto, quic or http2", f.Protocol)
	}
	switch {
	case f.Hostname != "" && f.TokenEnv == "":
		return cfg, cmdutil.UsageErrorf("--tunnel-hostname is for a named tunnel: give its token with --tunnel-token-env VAR too (or drop it for a quick tunnel)")
	case f.TokenEnv != "" && f.Hostname == "":
		return cfg, cmdutil.UsageErrorf("--tunnel-token-env needs --tunnel-hostname: the public hostname you routed to the named tunnel in Cloudflare")
	case f.TokenEnv != "":
		tok := strings.TrimSpace(env.Getenv(f.TokenEnv))
		if tok == "" {
			return cfg, cmdutil.UsageErrorf("--tunnel-token-env %s: the environment variable is unset or empty", f.TokenEnv)
		}
		host := strings.TrimRight(strings.TrimPrefix(strings.TrimSpace(f.Hostname), "https://"), "/")
		if !hostnameRE.MatchString(host) {
			return cfg, cmdutil.UsageErrorf("--tunnel-hostname %q is not a hostname (want something like hooks.example.com)", f.Hostname)
		}
		cfg.Token, cfg.Hostname = tok, host
	}
	if f.tune != nil {
		f.tune(&cfg)
	}
	return cfg, nil
}

// tunnelHost runs cloudflared in front of the receiver: the station.
type tunnelHost interface {
	StartTunnel(ctx context.Context, cfg tunnel.Config) (*tunnel.Supervisor, error)
	SubscribeTunnel(fn func(tunnel.Event)) (cancel func())
}

// startTunnel starts the cloudflared supervisor in front of the receiver
// when --tunnel was given (cfg is what config built). It prints, through
// out, the public consumer URL (public URL + path) when the tunnel is
// ready and again whenever it changes, and what goes wrong: why the
// tunnel is not ready, each failed try with the time of the next; text
// lines, or with --json one JSON object per line such as {"tunnel_url":
// "https://…/webhooks", "state": "ready"}. With --tunnel-log it prints
// cloudflared's log lines too. No usable cloudflared (none on PATH, not
// cloudflared, too old) is reported (with install help) but is not an
// error: the receiver keeps working locally. (A wrong --cloudflared path
// never gets here: validate refuses it.) The station stops cloudflared
// when it closes.
func (f *TunnelOptions) startTunnel(ctx context.Context, out *printer, host tunnelHost, cfg tunnel.Config, path string) error {
	if !f.Enabled {
		return nil
	}
	p := &tunnelPrinter{out: out, path: path}
	if f.Log {
		cfg.OnLog = p.log
	}
	cancel := host.SubscribeTunnel(p.event)
	if _, err := host.StartTunnel(ctx, cfg); err != nil {
		cancel()
		var ni *tunnel.NotInstalledError
		if errors.As(err, &ni) {
			p.notInstalled(ni)
			return nil
		}
		return err
	}
	return nil
}

// tunnelPrinter turns supervisor events into output entries.
type tunnelPrinter struct {
	mu      sync.Mutex
	out     *printer
	path    string
	changed string // previous URL from a URLChanged event, shown with the next ready line
	// What was printed last: a line is printed when it says something new.
	pid    int
	reason string
	state  tunnel.State
}

// tunnelLine is one line of listen's --json tunnel output.
type tunnelLine struct {
	TunnelURL   string `json:"tunnel_url,omitempty"`
	State       string `json:"state"`
	Reason      string `json:"reason,omitempty"`
	Cause       string `json:"cause,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	NextTry     string `json:"next_try,omitempty"`
	Protocol    string `json:"protocol,omitempty"`
	PreviousURL string `json:"previous_url,omitempty"`
	Message     string `json:"message,omitempty"`
	Cloudflared string `json:"cloudflared,omitempty"`
	Install     string `json:"install,omitempty"`
}

// tunnelLogLine is a cloudflared log line in listen's --json output.
type tunnelLogLine struct {
	TunnelLog string `json:"tunnel_log"`
}

// log prints one cloudflared log line (--tunnel-log).
func (p *tunnelPrinter) log(line string) {
	p.out.emit(func() string { return "tunnel log: " + line + "\n" }, tunnelLogLine{TunnelLog: line})
}

// notInstalled says there is no usable cloudflared, what was looked for,
// what is wrong and how to install (or update) it.
func (p *tunnelPrinter) notInstalled(ni *tunnel.NotInstalledError) {
	line := tunnelLine{State: string(tunnel.NotInstalled), Cause: string(tunnel.CauseNotInstalled),
		Reason: ni.Summary() + "; the receiver keeps working locally", Install: ni.Help}
	head := "tunnel: not installed — "
	if ni.Path != "" {
		head = "tunnel: cannot use cloudflared — "
	}
	p.out.emit(func() string {
		text := head + line.Reason + ".\n"
		if ni.Fix != "" && !strings.Contains(ni.Fix, ni.Help) {
			return text + "  " + ni.Fix + "\n"
		}
		return text + "Install cloudflared:\n  " + strings.ReplaceAll(line.Install, "\n", "\n  ") + "\n"
	}, line)
}

func (p *tunnelPrinter) event(e tunnel.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := e.Status
	if e.Kind == tunnel.URLChanged {
		p.changed = tunnel.ConsumerURL(e.PreviousURL, p.path)
		return
	}
	launched := st.PID != 0 && st.PID != p.pid
	news := launched || st.State != p.state || st.Reason != p.reason || !st.NextRetry.IsZero()
	p.pid, p.state, p.reason = st.PID, st.State, st.Reason
	if !news {
		return
	}
	line := tunnelLine{State: string(st.State), Reason: st.Reason, Cause: string(st.Cause), Protocol: st.Protocol}
	var text string
	switch st.State {
	case tunnel.Ready:
		line.TunnelURL = tunnel.ConsumerURL(st.PublicURL, p.path)
		text = "tunnel: ready — POST URL: " + line.TunnelURL
		if p.changed != "" {
			line.PreviousURL = p.changed
			line.Message = tunnel.URLChangedMessage
			text += "\ntunnel: " + tunnel.URLChangedMessage + " (was " + p.changed + ")"
			p.changed = ""
		}
	case tunnel.NotInstalled:
		return // Start's error carries the details; startTunnel prints them
	case tunnel.Stopped:
		line.Cause = ""
		text = "tunnel: stopped"
	case tunnel.Starting, tunnel.Reconnecting:
		switch {
		case !st.NextRetry.IsZero():
			line.Attempt, line.NextTry = st.Attempt, st.NextRetry.Format(time.RFC3339)
			text = fmt.Sprintf("tunnel: %s — %s\ntunnel: try %d failed; next try at %s (in %s)", st.State, st.Reason,
				st.Attempt, st.NextRetry.Format(time.TimeOnly), time.Until(st.NextRetry).Round(time.Second))
		case launched:
			// A new run: the reason, if any, is the last try's, printed then.
			line.Reason, line.Cause = "", ""
			line.Cloudflared, line.Attempt = st.Version.String(), st.Attempt+1
			text = fmt.Sprintf("tunnel: starting cloudflared %s (%s)", st.Version, st.Binary)
			if st.Attempt > 0 {
				text = fmt.Sprintf("tunnel: starting cloudflared again (try %d)", st.Attempt+1)
			}
			if st.Protocol != "" {
				text += " with --protocol " + st.Protocol
			}
		default:
			text = fmt.Sprintf("tunnel: %s — %s", st.State, st.Reason)
		}
	default:
		text = fmt.Sprintf("tunnel: %s — %s", st.State, st.Reason)
	}
	p.out.emit(func() string { return text + "\n" }, line)
}
