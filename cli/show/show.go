// Package show is `hookscope show`: one stored delivery, whole or a part
// of it (body, headers, events), for people or as JSON.
package show

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  hookscope show 42
  hookscope show 42 --body | jq .events
  hookscope show 42 --headers
  hookscope show 42 --events --json`

// Options are show's argument and flags.
type Options struct {
	Env     *cmdutil.Env
	DBPath  string
	Body    bool
	Headers bool
	Events  bool
	JSON    bool
	Reveal  bool

	id int64
}

// NewCmd builds `hookscope show`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "show ID [--body | --headers | --events] [--json]",
		Short: "Show one stored delivery: request, signature verdict, events, forwarding",
		Long: `Show one stored delivery: the request as it arrived, the signature verdict,
each event with its dedupe verdict and contract problems, and its forward
attempts. --body, --headers or --events print only that part. JSON is
pretty on a terminal and plain when piped.`,
		Example:           examples,
		ValidArgsFunction: cmdutil.CompleteDeliveryIDs,
		RunE:              cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	cmdutil.AddDBFlag(fs, &o.DBPath)
	fs.BoolVar(&o.Body, "body", false, "print only the body, byte-exact (pretty JSON on a terminal)")
	fs.BoolVar(&o.Headers, "headers", false, "print only the request headers, in wire order")
	fs.BoolVar(&o.Events, "events", false, "print only the events (their JSON with what Hookscope learned)")
	fs.BoolVar(&o.JSON, "json", false, "print JSON")
	fs.BoolVar(&o.Reveal, "reveal", false, "show credential headers and query parameters (Authorization, Cookie, access_token, ...) instead of redacting them")
	return cmd
}

func (o *Options) validate(args []string) error {
	if len(args) != 1 {
		return cmdutil.UsageErrorf("give one delivery id, for example hookscope show 42 (hookscope list shows the ids)")
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return cmdutil.UsageErrorf("%q is not a delivery id (a positive number)", args[0])
	}
	o.id = id
	n := 0
	for _, b := range []bool{o.Body, o.Headers, o.Events} {
		if b {
			n++
		}
	}
	if n > 1 {
		return cmdutil.UsageErrorf("--body, --headers and --events each print one part: give one of them")
	}
	if o.Body && o.JSON {
		return cmdutil.UsageErrorf("--body prints the body as it arrived; --json does not apply (the body is JSON already)")
	}
	return nil
}

// Detail is one delivery with everything known about it: what show
// prints and the agent interface's show tool returns.
type Detail struct {
	Delivery *inspector.Delivery `json:"delivery"`
	// Body is the body as text when it is UTF-8; BodyBase64 otherwise.
	Body       *string             `json:"body,omitempty"`
	BodyBase64 []byte              `json:"body_base64,omitempty"`
	Analysis   *inspector.Analysis `json:"analysis,omitempty"`
	Forward    []*forward.Attempt  `json:"forward,omitempty"`
}

// Load reads delivery id with its analysis and forward attempts; unless
// reveal, credential headers and query parameters are redacted as
// exports redact them.
func Load(ctx context.Context, db *storage.DB, id int64, reveal bool) (*Detail, error) {
	rec, err := db.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !reveal {
		rec.Delivery.Headers = export.HeadersFor(rec.Delivery, false)
		rec.Delivery.Query = export.QueryFor(rec.Delivery, false)
	}
	fw, err := db.ForwardAttempts(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &Detail{Delivery: rec.Delivery, Analysis: rec.Analysis, Forward: fw}
	if utf8.Valid(rec.Delivery.Body) {
		s := string(rec.Delivery.Body)
		d.Body = &s
	} else {
		d.BodyBase64 = rec.Delivery.Body
	}
	return d, nil
}

// EventJSON is one event as --events prints it: its JSON and verdicts.
type EventJSON struct {
	inspector.EventAnalysis
	Event json.RawMessage `json:"event"`
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	db, err := cmdutil.OpenExistingStore(o.Env, o.DBPath)
	if err != nil {
		return err
	}
	defer db.Close()
	d, err := Load(ctx, db, o.id, o.Reveal)
	if err != nil {
		return err
	}
	switch {
	case o.Body:
		b := d.Delivery.Body
		if env.IsTerminal && json.Valid(b) {
			b = catalog.PrettyColor(catalog.Pretty(b))
		}
		_, err := env.Stdout.Write(b)
		return err
	case o.Headers:
		if o.JSON {
			return cmdutil.PrintJSON(env, d.Delivery.Headers)
		}
		for _, h := range d.Delivery.Headers {
			fmt.Fprintf(env.Stdout, "%s: %s\n", h.Name, h.Value)
		}
		return nil
	case o.Events:
		evs := events(d)
		if o.JSON || len(evs) > 0 {
			return cmdutil.PrintJSON(env, evs)
		}
		fmt.Fprintln(env.Stdout, "no events (not analyzed yet, or not a webhook message)")
		return nil
	case o.JSON:
		return cmdutil.PrintJSON(env, d)
	}
	fmt.Fprint(env.Stdout, Text(d))
	return nil
}

func events(d *Detail) []EventJSON {
	out := []EventJSON{}
	if d.Analysis == nil {
		return out
	}
	for _, e := range d.Analysis.Events {
		out = append(out, EventJSON{EventAnalysis: e, Event: e.Raw})
	}
	return out
}

// Text is the delivery for people.
func Text(d *Detail) string {
	var b strings.Builder
	del := d.Delivery
	fmt.Fprintf(&b, "Delivery %d  %s  %s %s", del.ID, del.ReceivedAt.Local().Format(time.DateTime+".000"), del.Method, del.Path)
	if del.Query != "" {
		b.WriteString("?" + del.Query)
	}
	b.WriteString("\n")
	answer := fmt.Sprint(del.Status)
	if del.Answer != "" {
		answer = del.Answer
		if del.Status != 0 {
			answer += fmt.Sprintf(" (%d)", del.Status)
		}
	}
	fmt.Fprintf(&b, "  answered  %s\n  body      %d bytes", answer, del.BodyLength)
	if del.Truncated {
		b.WriteString(" (truncated)")
	}
	b.WriteString("\n")
	switch {
	case del.RelaySeq > 0:
		fmt.Fprintf(&b, "  source    via relay, stream sequence %d\n", del.RelaySeq)
	case del.Source != "" && del.Source != "receiver":
		fmt.Fprintf(&b, "  source    %s\n", del.Source)
	}
	if del.Damaged != "" {
		fmt.Fprintf(&b, "  DAMAGED   %s\n", del.Damaged)
	}
	a := d.Analysis
	if a == nil {
		b.WriteString("  not analyzed yet\n")
	} else {
		fmt.Fprintf(&b, "  signature %s", a.Signature.Status)
		if a.Signature.Reason != "" {
			b.WriteString(": " + a.Signature.Reason)
		}
		b.WriteString("\n")
		if a.HookUUID != "" {
			fmt.Fprintf(&b, "  hook      %s", a.HookUUID)
			if a.Resend {
				fmt.Fprintf(&b, " (a re-send; first in delivery %d)", a.ResendOf)
			}
			b.WriteString("\n")
		}
		if a.Error != nil {
			fmt.Fprintf(&b, "  not a webhook message: %s\n", a.Error.Reason)
		}
		for _, p := range a.Problems {
			fmt.Fprintf(&b, "  problem   %s\n", p.Message)
		}
		for _, e := range a.Events {
			verdict := "first"
			switch {
			case e.Divergent:
				verdict = fmt.Sprintf("DIVERGENT duplicate of delivery %d", e.FirstDeliveryID)
			case e.Duplicate:
				verdict = fmt.Sprintf("duplicate of delivery %d", e.FirstDeliveryID)
			}
			fmt.Fprintf(&b, "  event %d   %s %s  %s  (%s)\n", e.Index+1, e.Type, e.UUID, e.Summary, verdict)
			if e.OutOfOrder {
				fmt.Fprintf(&b, "            out of order: %s\n", e.OrderNote)
			}
			for _, p := range e.Problems {
				fmt.Fprintf(&b, "            problem: %s\n", p.Message)
			}
		}
	}
	for _, f := range d.Forward {
		fmt.Fprintf(&b, "  forward   %s\n", f.Short(time.Now()))
	}
	return b.String()
}
