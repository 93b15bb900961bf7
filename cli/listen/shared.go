package listen

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/tunnel"
)

// What `hookscope relay` shares with listen: it runs the same receiver
// behind the same station, so it prints its deliveries and its tunnel
// with listen's printer, one implementation of those lines.

// Printer is listen's output (text, or one JSON object per line) for
// another command that runs a receiver.
type Printer struct{ p *printer }

// NewPrinter prints to env's standard output, coloured on a terminal.
func NewPrinter(env *cmdutil.Env, jsonOut bool) *Printer {
	return &Printer{newPrinter(env.Stdout, jsonOut, env.IsTerminal)}
}

// Delivery prints one delivery as listen does (without the first copies
// of divergent events: a relay keeps no ledger).
func (p *Printer) Delivery(r *inspector.Record) { p.p.delivery(r, nil) }

// Line prints one entry: text (a line, without its newline), or v with
// --json.
func (p *Printer) Line(text string, v any) {
	p.p.emit(func() string { return text + "\n" }, v)
}

// Flush writes what waits (at exit).
func (p *Printer) Flush() { p.p.flush() }

// AddTunnelFlags registers listen's cloudflared flags on fs (--tunnel,
// --cloudflared, --tunnel-token-env, --tunnel-hostname,
// --tunnel-protocol, --tunnel-log).
func AddTunnelFlags(fs *pflag.FlagSet) *TunnelOptions { return addTunnelFlags(fs) }

// Config checks the tunnel flags as listen does; its errors are usage
// errors.
func (f *TunnelOptions) Config(env *cmdutil.Env) (tunnel.Config, error) { return f.config(env) }

// Start runs cloudflared in front of st's receiver when --tunnel was
// given, printing its states through out as listen does (the public URL
// with path once it is ready).
func (f *TunnelOptions) Start(ctx context.Context, out *Printer, st *station.Station, cfg tunnel.Config, path string) error {
	return f.startTunnel(ctx, out.p, st, cfg, path)
}
