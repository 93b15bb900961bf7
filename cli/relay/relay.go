// Package relay is `hookscope relay`: running a team relay (the receiver
// with the relay's sink, behind the same station as listen), its
// credentials (invite, revoke) and its status.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/relay"
)

// NewCmd builds `hookscope relay`: run with flags alone, it is the relay;
// its subcommands manage it.
func NewCmd(env *cmdutil.Env) *cobra.Command { return newCmd(env, nil) }

// newCmd is NewCmd with runF replacing the relay's run in tests.
func newCmd(env *cmdutil.Env, runF func(context.Context, *RunOptions) error) *cobra.Command {
	o := &RunOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "relay [flags] | relay <subcommand>",
		Short: "A team's always-on relay: receive while laptops sleep; invite and revoke laptops",
		Long: `Run on an always-on machine, hookscope relay receives the service's
deliveries with the same receiver as listen (the same body cap, raw capture,
signature check with --secret-env) and keeps each one in a NATS JetStream
stream, answering the service only once the stream has it. Every invited
laptop reads the stream in order with its own credential (hookscope listen
--relay-env VAR, or the window's Settings), also what arrived while it slept.
Laptops connect over WebSocket under /nats on the same port, so one tunnel
(--tunnel) or one HTTPS front (--public-url) serves the service and laptops.
It prints the URL for the service, the laptops' address and one line per
delivery ("#42" is its stream sequence); Ctrl+C or SIGTERM stops it cleanly.

  hookscope relay invite alice   print alice's connection string (shown once)
  hookscope relay revoke alice   end alice's credential (a running relay drops her)
  hookscope relay status         addresses, stream size and limits, each laptop's position

The relay's data (its stream, its credentials) is in --data, by default under
your config folder; --nats uses an existing NATS deployment instead of the
embedded server. See docs/relay.md.`,
		Example: `  hookscope relay --tunnel
  WEBHOOK_SECRET=... hookscope relay --addr 0.0.0.0:8788 --public-url https://relay.example.com --secret-env WEBHOOK_SECRET
  hookscope relay --nats nats://n1:4222,nats://n2:4222 --nats-creds relay.creds --replicas 3
  hookscope relay invite alice --out alice.relay
  hookscope relay revoke alice
  hookscope relay status --json`,
		Args:                       cmdutil.Subcommands,
		SuggestionsMinimumDistance: 2,
		RunE:                       cmdutil.RunE(o, o.validate, runF, run),
	}
	addRunFlags(cmd, o)
	cmd.AddCommand(NewInviteCmd(env, nil), NewRevokeCmd(env, nil), NewStatusCmd(env, nil))
	return cmd
}

// addDataFlag registers --data.
func addDataFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "data", "", "the relay's data folder (default: hookscope/relay in your config folder)")
}

// dataDir resolves --data.
func dataDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return relay.DefaultDataDir()
}

// InviteOptions are `relay invite`'s argument and flags.
type InviteOptions struct {
	Env     *cmdutil.Env
	Name    string
	Data    string
	URL     string
	Out     string
	Replace bool
	Creds   string
	Stream  string
}

// NewInviteCmd builds `hookscope relay invite NAME`; runF replaces the
// work in tests.
func NewInviteCmd(env *cmdutil.Env, runF func(context.Context, *InviteOptions) error) *cobra.Command {
	o := &InviteOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "invite NAME [--url URL] [--out FILE] [flags]",
		Short: "Issue a laptop's credential and print its connection string (once)",
		Long: `Issue a credential called NAME (lower-case letters, digits, '-') and print
the one-line connection string that holds it and the relay's address, for
NAME's laptop: hookscope listen --relay-env VAR, the window's Relay settings,
or hookscope pull. It is printed once on standard output (nothing else is),
or written to --out (0600). The relay keeps only its public half: a lost
string is replaced with --replace. A running relay accepts it at once.

The credential may read the relay's stream and use only its own consumer
(named NAME): one credential per laptop.

With an existing NATS deployment, issue the user there (see docs/relay.md
for its permissions) and wrap its .creds file: --creds FILE --url NATS_URL.`,
		Example: `  hookscope relay invite alice
  hookscope relay invite ci-main --out ci-main.relay
  hookscope relay invite alice --replace        # a new string; the old one stops working
  hookscope relay invite bob --creds bob.creds --url nats://nats.example:4222`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("give the credential's NAME, e.g. hookscope relay invite alice")
			}
			return nil
		},
		RunE: cmdutil.RunE(o, o.validate, runF, runInvite),
	}
	addDataFlag(cmd, &o.Data)
	fs := cmd.Flags()
	fs.StringVar(&o.URL, "url", "", "the relay's public URL as the service is given it (https://...; laptops connect under /nats), or a NATS URL used as is (default: the running relay's)")
	fs.StringVar(&o.Out, "out", "", "write the connection string to this `file` (0600) instead of standard output")
	fs.BoolVar(&o.Replace, "replace", false, "issue a new credential for a NAME that has one (the old one stops working)")
	fs.StringVar(&o.Creds, "creds", "", "an existing NATS deployment's credentials `file` for NAME (.creds or seed), wrapped with --url")
	fs.StringVar(&o.Stream, "stream", relay.DefaultStream, "the relay's stream name")
	return cmd
}

func (o *InviteOptions) validate(args []string) error {
	o.Name = args[0]
	if err := relay.CheckName(o.Name); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if o.Creds != "" && o.URL == "" {
		return cmdutil.UsageErrorf("--creds needs --url: the NATS deployment's address the laptop connects to")
	}
	if o.Out != "" {
		if _, err := os.Stat(o.Out); err == nil {
			return cmdutil.UsageErrorf("%s already exists; give another --out (a connection string is never written over a file)", o.Out)
		}
	}
	return nil
}

// laptopURL turns --url into the laptops' address.
func laptopURL(u string) (string, error) {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return relay.WebSocketURL(u)
	}
	for _, scheme := range []string{"nats://", "tls://", "ws://", "wss://"} {
		if strings.HasPrefix(u, scheme) {
			return u, nil
		}
	}
	return "", cmdutil.UsageErrorf("--url %q: give the relay's public URL (https://...) or a NATS URL (nats://, tls://, ws://, wss://)", u)
}

func runInvite(ctx context.Context, o *InviteOptions) error {
	env := o.Env
	var c relay.ConnString
	var note string
	if o.Creds != "" {
		b, err := os.ReadFile(o.Creds)
		if err != nil {
			return fmt.Errorf("read --creds: %w", err)
		}
		if c, err = relay.ExternalConnString(o.URL, o.Name, o.Stream, b, time.Now()); err != nil {
			return err
		}
		note = "Its permissions are the NATS deployment's (docs/relay.md lists what it needs)."
	} else {
		dir, err := dataDir(o.Data)
		if err != nil {
			return err
		}
		admin, err := relay.DialAdmin(ctx, dir)
		if err != nil && !errors.Is(err, relay.ErrNotRunning) {
			return err
		}
		if admin != nil {
			defer admin.Close()
		}
		url := o.URL
		if url == "" && admin != nil {
			url = admin.PublicURL()
		}
		if url == "" {
			why := "the relay is not running"
			if admin != nil {
				why = "the running relay has no public URL yet"
			}
			return cmdutil.UsageErrorf("give --url, the relay's public URL (%s): laptops connect to it under /nats", why)
		}
		lu, err := laptopURL(url)
		if err != nil {
			return err
		}
		if c, err = relay.Invite(dir, o.Name, lu, o.Stream, o.Replace, time.Now()); err != nil {
			return err
		}
		switch {
		case admin == nil:
			note = "The relay is not running; it accepts the credential when it starts."
		default:
			if err := admin.Reload(ctx); err != nil {
				return fmt.Errorf("%s's credential is issued but the running relay did not take it: %w", o.Name, err)
			}
			note = "The running relay accepts it now."
		}
	}
	if o.Out != "" {
		f, err := os.OpenFile(o.Out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("write --out: %w", err)
		}
		_, werr := io.WriteString(f, c.String()+"\n")
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return fmt.Errorf("write --out: %w", werr)
		}
		fmt.Fprintf(env.Stderr, "Wrote %s's connection string to %s (only you can read it). Give it to %s only.\n%s\n", o.Name, o.Out, o.Name, note)
		return nil
	}
	// The string alone on standard output (so `> file` keeps only it);
	// the words go to standard error.
	fmt.Fprintf(env.Stderr, "%s's connection string (shown once; give it to %s only, e.g. as an environment variable for hookscope listen --relay-env):\n", o.Name, o.Name)
	fmt.Fprintln(env.Stdout, c.String())
	fmt.Fprintln(env.Stderr, note)
	return nil
}

// RevokeOptions are `relay revoke`'s argument and flags.
type RevokeOptions struct {
	Env  *cmdutil.Env
	Name string
	Data string
}

// NewRevokeCmd builds `hookscope relay revoke NAME`; runF replaces the
// work in tests.
func NewRevokeCmd(env *cmdutil.Env, runF func(context.Context, *RevokeOptions) error) *cobra.Command {
	o := &RevokeOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "revoke NAME [flags]",
		Short: "End a laptop's credential (a running relay drops its connection)",
		Long: `End NAME's credential: a running relay closes NAME's connections at once and
refuses them from then on, and deletes NAME's consumer. Invite NAME again
for a new credential.`,
		Example: `  hookscope relay revoke alice`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.UsageErrorf("give the credential's NAME, e.g. hookscope relay revoke alice")
			}
			return nil
		},
		RunE: cmdutil.RunE(o, func(args []string) error { o.Name = args[0]; return nil }, runF, runRevoke),
	}
	addDataFlag(cmd, &o.Data)
	return cmd
}

func runRevoke(ctx context.Context, o *RevokeOptions) error {
	dir, err := dataDir(o.Data)
	if err != nil {
		return err
	}
	if err := relay.Revoke(dir, o.Name, time.Now()); err != nil {
		return err
	}
	admin, err := relay.DialAdmin(ctx, dir)
	if errors.Is(err, relay.ErrNotRunning) {
		fmt.Fprintf(o.Env.Stdout, "Revoked %s's credential. The relay is not running; it refuses %s when it starts.\n", o.Name, o.Name)
		return nil
	}
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.Reload(ctx); err != nil {
		return fmt.Errorf("%s's credential is revoked in the relay's file but the running relay did not apply it: %w", o.Name, err)
	}
	fmt.Fprintf(o.Env.Stdout, "Revoked %s's credential: the relay closed %s's connections and refuses them from now on.\n", o.Name, o.Name)
	return nil
}

// StatusOptions are `relay status`'s flags.
type StatusOptions struct {
	Env       *cmdutil.Env
	Data      string
	JSON      bool
	NATSURL   string
	NATSCreds string
	Stream    string
}

// NewStatusCmd builds `hookscope relay status`; runF replaces the work in
// tests.
func NewStatusCmd(env *cmdutil.Env, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	o := &StatusOptions{Env: env}
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "The relay's addresses, stream size and limits, and each laptop's position",
		Long: `Show the running relay's public URL (for the service) and the laptops'
address, what its stream holds and keeps, and where each laptop stands
("alice: 0 behind; bob: 3,114 behind, last seen 9 h ago"). It reads the relay
running with --data on this machine, or a stream on an existing NATS
deployment with --nats and --nats-creds.`,
		Example: `  hookscope relay status
  hookscope relay status --json
  hookscope relay status --nats nats://nats.example:4222 --nats-creds relay.creds`,
		Args: cmdutil.NoArgs,
		RunE: cmdutil.RunE(o, o.validate, runF, runStatus),
	}
	addDataFlag(cmd, &o.Data)
	fs := cmd.Flags()
	fs.BoolVar(&o.JSON, "json", false, "print the status as JSON")
	fs.StringVar(&o.NATSURL, "nats", "", "read the stream on this existing NATS deployment (URL) instead of a relay on this machine")
	fs.StringVar(&o.NATSCreds, "nats-creds", "", "credentials `file` for --nats")
	fs.StringVar(&o.Stream, "stream", relay.DefaultStream, "the relay's stream name (with --nats)")
	return cmd
}

func (o *StatusOptions) validate([]string) error {
	if o.NATSURL != "" && o.Data != "" {
		return cmdutil.UsageErrorf("--nats reads a NATS deployment; --data a relay on this machine: give one")
	}
	if o.NATSCreds != "" && o.NATSURL == "" {
		return cmdutil.UsageErrorf("--nats-creds needs --nats")
	}
	return nil
}

func runStatus(ctx context.Context, o *StatusOptions) error {
	var st *relay.Status
	var err error
	if o.NATSURL != "" {
		st, err = externalStatus(ctx, o)
	} else {
		var dir string
		if dir, err = dataDir(o.Data); err != nil {
			return err
		}
		var admin *relay.Admin
		admin, err = relay.DialAdmin(ctx, dir)
		if errors.Is(err, relay.ErrNotRunning) {
			return fmt.Errorf("%w (%s): start it with `hookscope relay`, or give --data", err, dir)
		}
		if err != nil {
			return err
		}
		defer admin.Close()
		st, err = admin.Status(ctx)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		b, _ := json.Marshal(st)
		fmt.Fprintf(o.Env.Stdout, "%s\n", b)
		return nil
	}
	fmt.Fprint(o.Env.Stdout, st.Text(time.Now()))
	return nil
}

// externalStatus reads the stream on an existing deployment.
func externalStatus(ctx context.Context, o *StatusOptions) (*relay.Status, error) {
	opts := []nats.Option{nats.NoReconnect(), nats.Name("hookscope relay status")}
	if o.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(o.NATSCreds))
	}
	nc, err := nats.Connect(o.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	st, err := relay.ReadStatus(ctx, js, o.Stream, nil)
	if err != nil {
		return nil, err
	}
	st.LaptopURL = o.NATSURL
	return st, nil
}
