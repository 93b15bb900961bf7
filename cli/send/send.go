// Package send is `hookscope send`: POST realistic simulated deliveries to
// a consumer URL.
package send

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

const examples = `  hookscope send http://127.0.0.1:8080/hooks --secret-env HOOK_SECRET --all-types
  hookscope send http://127.0.0.1:8080/hooks --type media.ready --type media.deleted --count 5
  hookscope send http://127.0.0.1:8080/hooks --scenario viewing-session --batch 3
  hookscope send https://my-app.example/webhooks --scenario at-least-once --duplicates 2 --json
  hookscope send --to http://127.0.0.1:3000/wh --all-types --seed 7 --ignore-status`

// Options are send's arguments and flags.
type Options struct {
	Env          *cmdutil.Env
	To           string
	Secrets      *cmdutil.SecretFlags
	Types        []string
	AllTypes     bool
	Scenario     string
	Batch        int
	Duplicates   int
	Shuffle      bool
	Count        int
	IgnoreStatus bool
	JSON         bool
	Seed         int64
	Timeout      time.Duration

	secrets [][]byte
	// batchGiven reports whether --batch was on the command line (its
	// default, 0, leaves the batch size to the scenario).
	batchGiven func() bool
}

// NewCmd builds `hookscope send`; runF replaces the sending in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "send URL [--secret S | --secret-env VAR] (--type T... | --all-types | --scenario NAME) [flags]",
		Short: "POST realistic simulated deliveries (all 17 types, scenarios) to a URL",
		Long: `POST realistic deliveries, as the service sends them (headers, signature,
batching), to your consumer's URL: single event types, all 17, or a scenario
such as at-least-once delivery. The URL is the argument or --to.`,
		Example: examples,
		Args:    cmdutil.MaxArgs(1, "one consumer URL"),
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.To, "to", "", "consumer URL to POST deliveries to (or give it as the argument)")
	o.Secrets = cmdutil.AddSecretFlags(fs)
	fs.StringArrayVar(&o.Types, "type", nil, "event `type` to send (repeatable): "+strings.Join(catalog.TypeNames(), ", "))
	fs.BoolVar(&o.AllTypes, "all-types", false, "send one event of each of the 17 types")
	fs.StringVar(&o.Scenario, "scenario", "", "send a scenario instead of single events: "+strings.Join(simulate.Scenarios(), ", "))
	fs.IntVar(&o.Batch, "batch", 0, "at most this many events per message (the service batches events that occur close together); default 1, and 3 for --scenario at-least-once")
	fs.IntVar(&o.Duplicates, "duplicates", 0, "extra copies of every event, each in another message than its other copies (at-least-once delivery)")
	o.batchGiven = func() bool { return fs.Changed("batch") }
	fs.BoolVar(&o.Shuffle, "shuffle", false, "mix the order of events before batching (the service does not guarantee order)")
	fs.IntVar(&o.Count, "count", 1, "repeat: events per type, or runs of the scenario")
	fs.BoolVar(&o.IgnoreStatus, "ignore-status", false, "exit 0 even when an answer is not 2xx")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per POST instead of text")
	fs.Int64Var(&o.Seed, "seed", 0, "make the generated data reproducible (0: random)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "per-request time-out (the service waits 10 s)")
	_ = cmd.RegisterFlagCompletionFunc("type", cmdutil.CompleteEventTypes)
	var scenarios []string
	for _, n := range simulate.Scenarios() {
		scenarios = append(scenarios, cobra.CompletionWithDesc(n, simulate.ScenarioDescription(n)))
	}
	_ = cmd.RegisterFlagCompletionFunc("scenario", cmdutil.CompleteFixed(scenarios...))
	return cmd
}

// validate checks the flags and resolves the signing secret.
func (o *Options) validate(args []string) error {
	var err error
	if o.To, err = cmdutil.ArgOrFlag(args, "--to", o.To); err != nil {
		return err
	}
	if err := checkTarget(o.To); err != nil {
		return err
	}
	for _, t := range o.Types {
		if !catalog.IsKnown(t) {
			return cmdutil.UsageErrorf("--type %q is not an event type; valid types: %s", t, strings.Join(catalog.TypeNames(), ", "))
		}
	}
	switch {
	case o.Scenario != "" && (len(o.Types) > 0 || o.AllTypes):
		return cmdutil.UsageErrorf("--scenario cannot be combined with --type or --all-types")
	case o.Scenario != "" && !slices.Contains(simulate.Scenarios(), o.Scenario):
		return cmdutil.UsageErrorf("--scenario %q is unknown; valid scenarios: %s", o.Scenario, strings.Join(simulate.Scenarios(), ", "))
	case o.Scenario == "" && len(o.Types) == 0 && !o.AllTypes:
		return cmdutil.UsageErrorf("choose what to send: --type T (repeatable), --all-types, or --scenario NAME (%s)", strings.Join(simulate.Scenarios(), ", "))
	case o.Batch < 0 || o.Batch == 0 && o.batchGiven != nil && o.batchGiven():
		return cmdutil.UsageErrorf("--batch must be at least 1, got %d", o.Batch)
	case o.Duplicates < 0:
		return cmdutil.UsageErrorf("--duplicates cannot be negative, got %d", o.Duplicates)
	case o.Count < 1:
		return cmdutil.UsageErrorf("--count must be at least 1, got %d", o.Count)
	case o.Timeout <= 0:
		return cmdutil.UsageErrorf("--timeout must be positive, got %s", o.Timeout)
	}
	o.secrets, err = o.Secrets.Resolve(o.Env)
	return err
}

// sendLine is one POST in send's --json output.
type sendLine struct {
	N        int         `json:"n"`
	Of       int         `json:"of"`
	HookUUID string      `json:"hook_uuid"`
	Events   []sendEvent `json:"events"`
	Bytes    int         `json:"bytes"`
	Status   int         `json:"status"`
	// LatencyMS runs from sending the request to reading the answer's headers.
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`

	latency time.Duration
}

type sendEvent struct {
	UUID string `json:"uuid"`
	Type string `json:"type"`
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	types := slices.Clone(o.Types)
	var secret []byte
	if len(o.secrets) > 0 {
		secret = o.secrets[0]
		if len(o.secrets) > 1 {
			fmt.Fprintf(env.Stderr, "note: %d secrets given; deliveries are signed with the first\n", len(o.secrets))
		}
	}
	g := simulate.New(o.Seed)
	opts := simulate.ScenarioOptions{Batch: o.Batch, Duplicates: o.Duplicates, Shuffle: o.Shuffle}
	var msgs []simulate.Message
	if o.Scenario != "" {
		for range o.Count {
			ms, err := g.Scenario(o.Scenario, opts)
			if err != nil {
				return fmt.Errorf("scenario %s: %w", o.Scenario, err)
			}
			msgs = append(msgs, ms...)
		}
	} else {
		if o.AllTypes {
			types = append(types, catalog.TypeNames()...)
		}
		var events []simulate.Event
		for range o.Count {
			for _, t := range types {
				events = append(events, g.Event(t))
			}
		}
		msgs = g.Batch(events, opts)
	}

	print := func(a simulate.Answer) {
		line := newSendLine(a)
		if o.JSON {
			b, _ := json.Marshal(line)
			fmt.Fprintf(env.Stdout, "%s\n", b)
		} else {
			printSendLine(env.Stdout, line)
		}
	}
	rep := simulate.Send(ctx, o.To, simulate.SignedWith(secret, msgs...), simulate.SendOptions{Timeout: o.Timeout, OnAnswer: print})
	sent := rep.Answers
	if rep.Unreachable != nil {
		sent = sent[:len(sent)-1] // the one that could not connect
	}
	events := 0
	for _, a := range sent {
		events += len(a.Message.Events)
	}
	ok, notOK, failed := rep.Counts()
	if !o.JSON && len(sent) > 0 {
		fmt.Fprintf(env.Stdout, "sent %s (%s) to %s: %d answered 2xx, %d other status, %d got no answer\n",
			plural.S(len(sent), "message"), plural.S(events, "event"), rep.URL, ok, notOK, len(sent)-ok-notOK)
	}
	switch err := rep.Err(); {
	case rep.Unreachable != nil:
		return fmt.Errorf("%w (is hookscope listen, or your app, running there?)", err)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %w", err)
	case failed > 0, notOK > 0 && !o.IgnoreStatus:
		if failed == 0 {
			err = fmt.Errorf("%w (use --ignore-status to exit 0 anyway)", err)
		}
		return err
	}
	return nil
}

// newSendLine is the --json line (and the text line) of one answer.
func newSendLine(a simulate.Answer) sendLine {
	l := sendLine{N: a.N, Of: a.Of, HookUUID: a.Message.Hook.UUID, Bytes: a.Bytes, Status: a.Status,
		LatencyMS: float64(a.Latency.Microseconds()) / 1000, latency: a.Latency}
	for _, e := range a.Message.Events {
		l.Events = append(l.Events, sendEvent{UUID: e.UUID, Type: e.Type})
	}
	if a.Err != nil {
		l.Error = a.Err.Error()
	}
	return l
}

// checkTarget validates the consumer URL given as the argument or --to.
func checkTarget(to string) error {
	if to == "" {
		return cmdutil.UsageErrorf("the consumer URL is required (the argument or --to), for example http://127.0.0.1:8080/hooks")
	}
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cmdutil.UsageErrorf("%q is not an http(s) URL with a host, for example http://127.0.0.1:8080/hooks", to)
	}
	return nil
}

func printSendLine(w io.Writer, l sendLine) {
	width := len(fmt.Sprint(l.Of))
	types := make([]string, len(l.Events))
	for i, e := range l.Events {
		types[i] = e.Type
	}
	status := "error: " + l.Error
	if l.Error == "" {
		status = fmt.Sprintf("%d %s", l.Status, http.StatusText(l.Status))
	}
	fmt.Fprintf(w, "%*d/%d  %-24s %8s  hook %s  %s\n", width, l.N, l.Of, status, human.Duration(l.latency), l.HookUUID[:min(8, len(l.HookUUID))]+"…", strings.Join(types, ", "))
}
