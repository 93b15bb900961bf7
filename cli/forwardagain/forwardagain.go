// Package forwardagain is `hookscope forward-again`: send stored
// deliveries to the developer's app once more, now, outside the queue,
// recorded with their deliveries as the window's Forward again does.
package forwardagain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # send delivery 42 again to every route it matches
  hookscope forward-again 42

  # to one route of the store's, or to a URL of your choosing
  hookscope forward-again 42 43 --route 'media.*=http://localhost:3000/media'
  hookscope forward-again 42 --to http://localhost:4000/webhooks

  # the way listen forwarded: re-signed with your app's development secret
  DEV_SECRET=... hookscope forward-again 42 --resign-secret-env DEV_SECRET`

// Options are forward-again's arguments and flags.
type Options struct {
	Env       *cmdutil.Env
	DBPath    string
	Route     string
	To        string
	ResignEnv string
	Headers   []string
	Timeout   time.Duration
	JSON      bool

	ids    []int64
	secret []byte
}

// NewCmd builds `hookscope forward-again`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "forward-again ID... [--route NAME | --to URL] [flags]",
		Short: "Send stored deliveries to your app once more, recorded as the window's Forward again",
		Long: `Send stored deliveries to your app once more, now, outside the forward queue,
and record each attempt with its delivery (kind "again"), as the window's
Forward again does. It runs in this process: listen or the window need not
be running. The routes are the ones the store has forwarded to (listen
--forward-to, the window's Forward to); --route picks one of them, --to
sends to any URL instead. What the forwarding process kept to itself is
not in the store: give --resign-secret-env and --header again if it used
them. With no route in the store, --to is required.`,
		Example:           examples,
		ValidArgsFunction: cmdutil.CompleteDeliveryIDs,
		RunE:              cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.StringVar(&o.Route, "route", "", "send to this route of the store's only (as listen names it: URL or GLOB=URL)")
	fs.StringVar(&o.To, "to", "", "send to this `URL` instead of the store's routes")
	fs.StringVar(&o.ResignEnv, "resign-secret-env", "", "name of an environment `variable` holding your app's development webhook secret: deliveries whose stored signature verified are signed again with it, others go unsigned")
	fs.StringArrayVar(&o.Headers, "header", nil, "add a header to every request, as 'Name: value' (repeatable)")
	fs.DurationVar(&o.Timeout, "timeout", forward.DefaultTimeout, "how long one send waits for your app's answer")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per attempt")
	return cmd
}

func (o *Options) validate(args []string) error {
	if len(args) == 0 {
		return cmdutil.UsageErrorf("give the ids of the deliveries to forward again, for example hookscope forward-again 42")
	}
	for _, a := range args {
		for _, p := range strings.Split(a, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || id <= 0 {
				return cmdutil.UsageErrorf("%q is not a delivery id (a positive number)", p)
			}
			o.ids = append(o.ids, id)
		}
	}
	if o.Route != "" && o.To != "" {
		return cmdutil.UsageErrorf("--route picks one of the store's routes and --to gives another URL: give one of them")
	}
	if o.To != "" {
		if _, err := forward.ParseRoute(o.To); err != nil {
			return cmdutil.UsageErrorf("--to: %v", err)
		}
	}
	if o.Timeout <= 0 {
		return cmdutil.UsageErrorf("--timeout must be a positive duration such as 9s")
	}
	if o.ResignEnv != "" {
		v := o.Env.Getenv(o.ResignEnv)
		if v == "" {
			return cmdutil.UsageErrorf("--resign-secret-env %s: the environment variable is unset or empty", o.ResignEnv)
		}
		o.secret = []byte(v)
	}
	if _, err := forward.ParseHeaders(o.Headers); err != nil {
		return cmdutil.UsageErrorf("--header: %v", err)
	}
	return nil
}

// Request is one forward-again: what the command's flags say.
type Request struct {
	IDs []int64
	// Route is one of the store's routes ("": every route a delivery
	// matches); To is a URL to send to instead.
	Route, To    string
	ResignSecret []byte
	Headers      []string
	Timeout      time.Duration
}

// ErrNoRoute is the error of a store that never forwarded, without --to.
var ErrNoRoute = errors.New("the store has no forward route (nothing was forwarded from it yet): give --to URL, your app's address")

// Send forwards each delivery again and returns the attempts, recorded in
// the store: what forward-again does and the agent interface's tool
// calls. It uses forward.Forwarder.ForwardAgain, the window's Forward
// again, on a forwarder built from the store's routes (or To) that is
// never started: nothing queued is sent.
func Send(ctx context.Context, db *storage.DB, r Request) ([]*forward.Attempt, error) {
	var specs []string
	if r.To != "" {
		specs = []string{r.To}
	} else {
		waiting, err := db.ForwardWaiting(ctx)
		if err != nil {
			return nil, err
		}
		for name := range waiting {
			specs = append(specs, name)
		}
		slices.Sort(specs)
		if len(specs) == 0 {
			return nil, ErrNoRoute
		}
		if r.Route != "" && !slices.Contains(specs, r.Route) {
			return nil, fmt.Errorf("the store has no route %q; its routes: %s", r.Route, strings.Join(specs, ", "))
		}
	}
	routes, err := forward.ParseRoutes(specs)
	if err != nil {
		return nil, fmt.Errorf("the store's routes: %w", err)
	}
	headers, err := forward.ParseHeaders(r.Headers)
	if err != nil {
		return nil, err
	}
	// No receiver secrets here: a delivery is re-signed when the analysis
	// stored with it found its signature valid.
	verify := func(d *inspector.Delivery) inspector.SignatureResult {
		rec, err := db.Get(ctx, d.ID)
		if err != nil || rec.Analysis == nil {
			return inspector.SignatureResult{Status: inspector.SignatureUnverified, Reason: "it has not been analyzed"}
		}
		return rec.Analysis.Signature
	}
	f, err := forward.New(forward.Config{Routes: routes, Mode: forward.ModeAck, ResignSecret: r.ResignSecret, Headers: headers,
		Policy: forward.Policy{Timeout: r.Timeout}}, forward.Options{Store: db, Verify: verify})
	if err != nil {
		return nil, err
	}
	defer f.Stop(context.WithoutCancel(ctx))
	route := r.Route
	if r.To != "" {
		route = routes[0].Name()
	}
	var out []*forward.Attempt
	for _, id := range r.IDs {
		as, err := f.ForwardAgain(ctx, id, route)
		out = append(out, as...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func run(ctx context.Context, o *Options) error {
	db, err := cmdutil.OpenExistingStore(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	as, err := Send(ctx, db, Request{IDs: o.ids, Route: o.Route, To: o.To, ResignSecret: o.secret, Headers: o.Headers, Timeout: o.Timeout})
	out := cmdutil.NewSyncWriter(o.Env.Stdout)
	bad := 0
	for _, a := range as {
		if !a.OK() {
			bad++
		}
		if o.JSON {
			out.PrintJSON(a)
		} else {
			out.Print(fmt.Sprintf("delivery %d → %s: %s\n", a.DeliveryID, a.Route, a.Short(time.Now())))
		}
	}
	if errors.Is(err, ErrNoRoute) {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d attempts were not taken by the app (2xx)", bad, len(as))
	}
	return nil
}
