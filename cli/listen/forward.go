package listen

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/station"
)

// ForwardOptions are listen's forwarding flags.
type ForwardOptions struct {
	To             []string
	ToEnv          []string
	Mode           string
	Timeout        time.Duration
	Retries        int
	Headers        []string
	HeaderEnv      []string
	ResignEnv      string
	SkipUnverified bool
	SkipMalformed  bool
	CA             string
	Insecure       bool

	fs *pflag.FlagSet
}

// forwardFlags names every forwarding flag but the routes': each needs
// one.
var forwardFlags = []string{"forward-mode", "forward-timeout", "forward-retries", "forward-header", "forward-header-env", "forward-resign-secret-env",
	"forward-skip-unverified", "forward-skip-malformed", "forward-ca", "forward-insecure"}

// addForwardFlags registers the --forward-* flags on fs.
func addForwardFlags(fs *pflag.FlagSet) *ForwardOptions {
	f := &ForwardOptions{fs: fs}
	fs.StringArrayVar(&f.To, "forward-to", nil, "forward every delivery to your app at this `URL` (http:// when it has no scheme: localhost:3000/webhooks), only messages with an event type matching a glob with GLOB=URL, or the deliveries an expression chooses with 'where COND => URL' (repeatable; a message goes whole to every route it matches)")
	fs.StringArrayVar(&f.ToEnv, "forward-to-env", nil, "name of an environment `variable` holding a --forward-to route, for a URL with credentials in it (repeatable; the value is never printed)")
	fs.StringVar(&f.Mode, "forward-mode", string(forward.ModeAck), "ack: answer the service once stored, then forward from a durable queue; pass-through: answer the service with your app's answer")
	fs.DurationVar(&f.Timeout, "forward-timeout", forward.DefaultTimeout, "how long one forward waits for your app's answer (in pass-through the service then gets 504; keep it under the service's 10s)")
	fs.IntVar(&f.Retries, "forward-retries", forward.DefaultRetries, "how often a delivery your app answers non-2xx, drops or does not answer in time is sent again (0: once only). Defaults: "+forward.DefaultsHelp())
	fs.StringArrayVar(&f.Headers, "forward-header", nil, "add a header to every forwarded request, as 'Name: value' (repeatable; replaces a captured header of that name)")
	fs.StringArrayVar(&f.HeaderEnv, "forward-header-env", nil, "add a header whose value is in an environment variable, as `NAME=VAR` (repeatable; for tokens: the value is never printed)")
	fs.StringVar(&f.ResignEnv, "forward-resign-secret-env", "", "name of an environment `variable` holding your app's development webhook secret: deliveries whose signature verified (--secret) are signed again with it; the others go without a signature (it is never printed or stored)")
	fs.BoolVar(&f.SkipUnverified, "forward-skip-unverified", false, "with --forward-resign-secret-env: do not forward deliveries whose signature did not verify at all (each is recorded as skipped)")
	fs.BoolVar(&f.SkipMalformed, "forward-skip-malformed", false, "do not forward malformed or rejected deliveries (not a webhook message, not a POST, over the body cap) to catch-all routes")
	fs.StringVar(&f.CA, "forward-ca", "", "PEM `file` of the CA that signed your app's certificate (an https app with a private or self-signed CA), trusted besides the system's")
	fs.BoolVar(&f.Insecure, "forward-insecure", false, "send to an https app without checking its certificate (said on start and on every attempt)")
	return f
}

// config checks the flags and builds the forwarder's configuration (nil
// without a route); every problem in the flags is a usage error. addr is
// where the receiver listens: a route back to it is refused. Without a
// --forward-to, the routes of saved (the window's settings, nil: none)
// are used when its forwarding is on, with its mode and CA file unless
// the flags give them.
func (f *ForwardOptions) config(env *cmdutil.Env, addr string, saved *station.Settings) (*forward.Config, error) {
	specs := slices.Clone(f.To)
	for _, name := range f.ToEnv {
		v := strings.TrimSpace(env.Getenv(name))
		if v == "" {
			return nil, cmdutil.UsageErrorf("--forward-to-env %s: the environment variable is unset or empty", name)
		}
		specs = append(specs, v)
	}
	fromSettings := false
	if len(specs) == 0 && saved != nil && saved.ForwardOn {
		specs = forward.SplitRoutes(saved.ForwardTo)
		fromSettings = len(specs) > 0
		if !f.fs.Changed("forward-mode") && saved.ForwardMode != "" {
			f.Mode = saved.ForwardMode
		}
		if !f.fs.Changed("forward-ca") {
			f.CA = saved.ForwardCA
		}
	}
	if len(specs) == 0 {
		for _, name := range forwardFlags {
			if f.fs.Changed(name) {
				return nil, cmdutil.UsageErrorf("--%s needs --forward-to: give your app's URL, for example --forward-to localhost:3000/webhooks", name)
			}
		}
		return nil, nil
	}
	routes, err := forward.ParseRoutes(specs)
	switch {
	case err != nil && fromSettings:
		return nil, fmt.Errorf("the window's Forward to field: %v (give --forward-to, or --no-settings)", err)
	case err != nil && errors.As(err, new(rules.CompileErrors)):
		return nil, cmdutil.UsageErrorf("--forward-to: a where route's condition is not valid (docs/rules.md has the variables):\n%s", rules.Render(err))
	case err != nil:
		return nil, cmdutil.UsageErrorf("--forward-to: %v", err)
	}
	for _, r := range routes {
		if r.PointsAt(addr, "") {
			return nil, cmdutil.UsageErrorf("--forward-to %s: it is this receiver's own address (--addr %s): each delivery would come back and be forwarded again without end; give your app's URL", r.Name(), addr)
		}
	}
	mode, err := forward.ParseMode(f.Mode)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--forward-mode: %v", err)
	}
	if f.Timeout <= 0 {
		return nil, cmdutil.UsageErrorf("--forward-timeout must be a positive duration such as 9s, got %s", f.Timeout)
	}
	if f.Retries < 0 {
		return nil, cmdutil.UsageErrorf("--forward-retries must be 0 (send once) or more, got %d", f.Retries)
	}
	headers, err := forward.ParseHeaders(f.Headers)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--forward-header: %v", err)
	}
	for _, spec := range f.HeaderEnv {
		name, v, ok := strings.Cut(spec, "=")
		if !ok || name == "" || v == "" {
			return nil, cmdutil.UsageErrorf("--forward-header-env %q: expected NAME=VAR, such as Authorization=APP_TOKEN", spec)
		}
		value := env.Getenv(v)
		if value == "" {
			return nil, cmdutil.UsageErrorf("--forward-header-env %s: the environment variable %s is unset or empty", spec, v)
		}
		h, err := forward.ParseHeader(name + ": " + value)
		if err != nil {
			// The value stays out of the message: it is a secret.
			if _, err = forward.ParseHeader(name + ": x"); err == nil {
				err = fmt.Errorf("the value of %s holds a line break or NUL", v)
			}
			return nil, cmdutil.UsageErrorf("--forward-header-env %s: %v", spec, err)
		}
		headers = append(headers, h)
	}
	if f.SkipUnverified && f.ResignEnv == "" {
		return nil, cmdutil.UsageErrorf("--forward-skip-unverified needs --forward-resign-secret-env: it keeps from your app the deliveries that would otherwise go unsigned")
	}
	if f.CA != "" {
		if _, err := os.Stat(f.CA); err != nil && fromSettings && !f.fs.Changed("forward-ca") {
			return nil, fmt.Errorf("the window's CA file for forward targets: %v (give --forward-ca, or --no-settings)", err)
		} else if err != nil {
			return nil, cmdutil.UsageErrorf("--forward-ca: %v", err)
		}
	}
	cfg := &forward.Config{Routes: routes, Mode: mode, Headers: headers, SkipMalformed: f.SkipMalformed, SkipUnverified: f.SkipUnverified,
		CAFile: f.CA, Insecure: f.Insecure, Policy: forward.Policy{Timeout: f.Timeout, Retries: f.Retries}}
	if f.Retries == 0 {
		cfg.Policy.Retries = forward.NoRetries
	}
	if f.ResignEnv != "" {
		v := env.Getenv(f.ResignEnv)
		if v == "" {
			return nil, cmdutil.UsageErrorf("--forward-resign-secret-env %s: the environment variable is unset or empty", f.ResignEnv)
		}
		cfg.ResignSecret = []byte(v)
	}
	return cfg, nil
}

// forwardPrinter turns the forwarder's events into output entries: one per
// attempt, and one when a route's app goes down or comes back.
type forwardPrinter struct {
	out    *printer
	routes int

	mu sync.Mutex
	// state is each route's state as last said; downSince when it went
	// down.
	state     map[string]forward.RouteStateName
	downSince map[string]time.Time
}

func newForwardPrinter(out *printer, routes int) *forwardPrinter {
	return &forwardPrinter{out: out, routes: routes, state: map[string]forward.RouteStateName{}, downSince: map[string]time.Time{}}
}

// forwardLine is one attempt in listen's --json output.
type forwardLine struct {
	Forward forwardJSON `json:"forward"`
}

// forwardJSON is an attempt with the app's body as text when it is UTF-8
// (base64 otherwise, as encoding/json writes bytes) and the latency in
// milliseconds.
type forwardJSON struct {
	*forward.Attempt
	LatencyMS    float64 `json:"latency_ms"`
	ResponseBody *string `json:"response_body,omitempty"`
	BodyBase64   []byte  `json:"response_body_base64,omitempty"`
}

// routeLine is a route's change of state in listen's --json output.
type routeLine struct {
	Route forward.RouteStatus `json:"forward_route"`
}

func (p *forwardPrinter) event(e forward.Event) {
	switch e.Kind {
	case forward.AttemptDone:
		p.attempt(e.Attempt, e.Route)
	case forward.RouteChanged:
		p.route(e.Route, 0)
	}
}

// attempt prints one attempt: "15:04:05.012  #41    → 200 in 12 ms", and
// under a failure that is the app's verdict the reason in plain words.
// With --json every attempt is a line. In text, an ack route's attempts
// that found the app down are not: the down line says it once, and the
// back line how many waited.
func (p *forwardPrinter) attempt(a *forward.Attempt, rs forward.RouteStatus) {
	j := forwardJSON{Attempt: a, LatencyMS: float64(a.Latency.Microseconds()) / 1000}
	if len(a.ResponseBody) > 0 {
		if utf8.Valid(a.ResponseBody) {
			s := string(a.ResponseBody)
			j.ResponseBody = &s
		} else {
			j.BodyBase64 = a.ResponseBody
		}
	}
	quiet := a.Kind == forward.KindAck && a.Outcome.Down()
	p.out.emitAfter(a.DeliveryID, func() string {
		if quiet {
			return ""
		}
		paint := p.out.paint
		arrow := "→ " + a.Short(time.Now())
		switch {
		case a.OK():
			arrow = paint(ansiGreen, arrow)
		case a.Outcome.Down() || a.Outcome == forward.Stopped:
			arrow = paint(ansiYellow, arrow)
		default:
			arrow = paint(ansiRed, arrow)
		}
		if a.Insecure {
			arrow += paint(ansiRed, "  (--forward-insecure: the certificate was not checked)")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s  #%-5d %s", a.StartedAt.Local().Format("15:04:05.000"), a.DeliveryID, arrow)
		if p.routes > 1 || a.Kind == forward.KindAgain {
			fmt.Fprintf(&b, "  %s", paint(ansiDim, a.Route))
		}
		if a.Relayed != 0 && a.Relayed != a.Status {
			fmt.Fprintf(&b, "  (the service got %d)", a.Relayed)
		}
		b.WriteByte('\n')
		if !a.OK() && !a.Outcome.Down() && a.Reason() != "" {
			fmt.Fprintf(&b, "    %s\n", a.Reason())
		}
		if a.NotResigned != "" && a.Outcome != forward.Skipped {
			fmt.Fprintf(&b, "    %s\n", paint(ansiYellow, "not re-signed: "+a.NotResigned))
		}
		if a.RelayCut {
			fmt.Fprintf(&b, "    the app's answer (%d bytes) reached the service cut to its first %d bytes (%s)\n", a.ResponseLength, forward.RelayMaxResponse, forward.CutHeader)
		}
		return b.String()
	}, forwardLine{Forward: j})
	p.route(rs, a.DeliveryID)
}

// route says, once per change, that a route's app went down or came back
// (with how many deliveries waited), or that another process forwards it
// (standby) and when this one takes over; a change an attempt of
// delivery id showed is said under that attempt.
func (p *forwardPrinter) route(rs forward.RouteStatus, id int64) {
	p.mu.Lock()
	was, seen := p.state[rs.Name]
	p.state[rs.Name] = rs.State
	var downFor time.Duration
	switch {
	case rs.State == forward.RouteDown && was != forward.RouteDown:
		p.downSince[rs.Name] = rs.Since
	case rs.State == forward.RouteUp && was == forward.RouteDown:
		downFor = time.Since(p.downSince[rs.Name])
	}
	p.mu.Unlock()
	var text string
	switch {
	case rs.State == was:
		return
	case rs.State == forward.RouteDown:
		text = p.out.paint(ansiYellow, "forward: "+rs.DownText(time.Time{}))
	case was == forward.RouteDown && rs.State == forward.RouteUp:
		text = p.out.paint(ansiGreen, "forward: "+rs.BackText(downFor))
	case rs.State == forward.RouteStandby:
		text = p.out.paint(ansiYellow, fmt.Sprintf("forward to %s: %s.", rs.App(), rs.LastError))
	case was == forward.RouteStandby && seen:
		text = fmt.Sprintf("forward to %s: the other process stopped; this one forwards now, from where it left off.", rs.App())
	default:
		return
	}
	p.out.emitAfter(id, func() string { return text + "\n" }, routeLine{Route: rs})
}

// routeNames lists a configuration's routes, as named.
func routeNames(cfg *forward.Config) []string {
	names := make([]string, len(cfg.Routes))
	for i, r := range cfg.Routes {
		names[i] = r.Name()
	}
	return names
}

// forwardStart describes forwarding on the start entry.
func forwardStart(cfg *forward.Config) (text string, v map[string]any) {
	if cfg == nil {
		return "", nil
	}
	names := routeNames(cfg)
	how := "ack: the service gets 200 once a delivery is stored; your app gets it next, in order, retried until it answers 2xx"
	if cfg.Mode == forward.ModePassThrough {
		how = "pass-through: your app's answer is the service's"
	}
	text = fmt.Sprintf("Forwarding to %s (%s).\n", strings.Join(names, ", "), how)
	if cfg.Mode == forward.ModePassThrough && cfg.Policy.Timeout >= 10*time.Second {
		text += fmt.Sprintf("Warning: --forward-timeout %s is not under the service's 10 s: the service gives up before Hookscope answers it 504.\n", cfg.Policy.Timeout)
	}
	if len(cfg.ResignSecret) > 0 {
		unverified := "forwarded without a signature"
		if cfg.SkipUnverified {
			unverified = "not forwarded"
		}
		text += fmt.Sprintf("Re-signing with your app's secret the deliveries whose signature verified; the others are %s.\n", unverified)
	}
	if cfg.Insecure {
		text += "WARNING: --forward-insecure: https apps' certificates are NOT checked; anyone on the way can read and change what is forwarded.\n"
	}
	return text, map[string]any{"mode": string(cfg.Mode), "routes": names, "timeout_ms": cfg.Policy.Timeout.Milliseconds(), "resigned": len(cfg.ResignSecret) > 0,
		"skip_unverified": cfg.SkipUnverified, "insecure": cfg.Insecure, "ca_file": cfg.CAFile}
}
