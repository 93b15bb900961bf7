package listen

import (
	"context"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/station"
)

// RelayOptions are listen's flags for reading a team relay.
type RelayOptions struct {
	Env  string
	File string

	conn *relay.ConnString
}

// addRelayFlags registers --relay-env and --relay-file on fs.
func addRelayFlags(fs *pflag.FlagSet) *RelayOptions {
	r := &RelayOptions{}
	fs.StringVar(&r.Env, "relay-env", "", "read a team relay's deliveries too: the name of the environment `variable` holding this laptop's connection string (hookscope relay invite NAME; never on the command line)")
	fs.StringVar(&r.File, "relay-file", "", "read a team relay's deliveries too: a `file` holding this laptop's connection string")
	return r
}

// config reads the connection string (when a flag asks for one); every
// problem is a usage error, and none quotes the string.
func (r *RelayOptions) config(env *cmdutil.Env, fwd *forward.Config) error {
	if r.Env == "" && r.File == "" {
		return nil
	}
	c, err := relay.ReadConnString(env.Getenv, r.Env, r.File)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if fwd != nil && fwd.Mode == forward.ModePassThrough {
		return cmdutil.UsageErrorf("--forward-mode pass-through with a relay: %v", station.ErrRelayPassThrough)
	}
	r.conn = &c
	return nil
}

// relayHost reads a relay: the station.
type relayHost interface {
	SetRelay(ctx context.Context, conn *relay.ConnString) error
	SubscribeRelay(fn func(relay.State)) (cancel func())
}

// start links the station to the relay (when asked) and prints its
// states through out. stopped receives the reason once the relay refuses
// this laptop for good (a revoked credential, a delivery this Hookscope
// cannot read): listen then stops with it.
func (r *RelayOptions) start(ctx context.Context, out *printer, host relayHost) (stopped <-chan error, err error) {
	if r.conn == nil {
		return nil, nil
	}
	// The first state, connecting, is the line printed here.
	p := &relayPrinter{out: out, stopped: make(chan error, 1), last: relay.State{Phase: relay.Connecting}}
	out.emit(func() string { return "relay: connecting to " + r.conn.Redacted() + "\n" },
		relayLine{Relay: string(relay.Connecting), Message: "relay: connecting to " + r.conn.Redacted()})
	host.SubscribeRelay(p.state)
	if err := host.SetRelay(ctx, r.conn); err != nil {
		return nil, err
	}
	return p.stopped, nil
}

// relayLine is a relay state in listen's --json output.
type relayLine struct {
	Relay   string `json:"relay"`
	Done    uint64 `json:"done,omitempty"`
	Total   uint64 `json:"total,omitempty"`
	Stored  uint64 `json:"stored,omitempty"`
	Expired uint64 `json:"expired,omitempty"`
	Error   string `json:"error,omitempty"`
	// Message is the state in words, as the text output says it.
	Message string `json:"message"`
}

// relayPrinter prints a relay link's states: every change of phase, and
// a catch-up's progress at most once a second (the link reports each
// batch).
type relayPrinter struct {
	out     *printer
	stopped chan error

	mu        sync.Mutex
	last      relay.State
	printedAt time.Time
}

// progressEvery bounds how often a catch-up's progress is printed.
const progressEvery = time.Second

func (p *relayPrinter) state(st relay.State) {
	p.mu.Lock()
	changed := st.Phase != p.last.Phase || st.Expired != p.last.Expired
	if !changed && (st.Phase != relay.CatchingUp || time.Since(p.printedAt) < progressEvery) {
		p.last = st
		p.mu.Unlock()
		return
	}
	p.last, p.printedAt = st, time.Now()
	p.mu.Unlock()
	if st.Phase == "" {
		return // turned off
	}
	line := relayLine{Relay: string(st.Phase), Stored: st.Stored, Expired: st.Expired, Message: st.String()}
	if st.Phase == relay.CatchingUp {
		line.Done, line.Total = st.Done, st.Total
	}
	if st.Err != nil {
		line.Error = st.Err.Error()
	}
	p.out.emit(func() string { return line.Message + "\n" }, line)
	if st.Phase == relay.Stopped {
		select {
		case p.stopped <- st.Err:
		default:
		}
	}
}
