// Package pull is `hookscope pull`: read deliveries from a team's relay
// for CI and scripts, and write them as `hookscope export` does.
package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	exportcmd "github.com/hookscope/hookscope/cli/export"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/relay"
)

const examples = `  # the last two hours of deliveries as NDJSON, for a CI job
  hookscope pull deliveries.ndjson --relay-env HOOKSCOPE_RELAY --since 2h

  # media.* deliveries from stream sequence 1200 on, as a HAR file
  hookscope pull media.har --relay-file ci.relay --from-seq 1200 --type 'media.*'

  # NDJSON to standard output
  hookscope pull - --relay-env HOOKSCOPE_RELAY --since 30m

  # into a store, for hookscope list/show/export (again later: only what is new is added)
  hookscope pull --into ci.db --relay-env HOOKSCOPE_RELAY --since 2h`

// Options are pull's argument and flags.
type Options struct {
	Env       *cmdutil.Env
	Out       string
	Format    string
	RelayEnv  string
	RelayFile string
	Since     string
	FromSeq   uint64
	Types     []string
	Durable   bool
	Secrets   *cmdutil.SecretFlags
	Reveal    bool
	Force     bool
	JSON      bool
	Into      string

	conn    relay.ConnString
	since   time.Time
	format  export.Format
	secret  []byte
	secrets [][]byte
}

// NewCmd builds `hookscope pull`; runF replaces the work in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "pull (PATH | --into STORE) (--relay-env VAR | --relay-file FILE) [--since 2h | --from-seq N] [--type GLOB]... [flags]",
		Short: "Read deliveries from a team's relay and write them as export does (for CI)",
		Long: `Read the deliveries a relay holds and write them to PATH in export's formats
(NDJSON, HAR, or the json, fixtures and curl folders; - is standard output for
ndjson and har). The connection string (hookscope relay invite NAME) is read
from an environment variable or a file, never from the command line.

It reads from --since or --from-seq (default: everything the relay holds) up
to the newest delivery when it starts, through a throwaway consumer: the
credential's laptop position does not move unless --durable (then it reads
from that position, and acknowledges what it read). One pull at a time per
credential.

With --into STORE it imports them into a store instead, as a laptop does
(each marked via the relay with its stream sequence, and analysed): a delivery
already there is skipped, so pulling again adds only what is new.

Exit codes: 0 it got what was asked (an empty selection writes nothing and
says so), 1 the relay was unreachable or refused the credential, 2 usage.`,
		Example: examples,
		Args:    cmdutil.MaxArgs(1, "one PATH"),
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Out, "out", "", "file (ndjson, har; - for standard output) or folder (json, fixtures, curl) to write (or give it as the argument)")
	fs.StringVar(&o.Format, "format", "", "ndjson, har, json, fixtures or curl; default: from PATH's extension (ndjson for -)")
	fs.StringVar(&o.RelayEnv, "relay-env", "", "name of the environment `variable` holding the relay connection string")
	fs.StringVar(&o.RelayFile, "relay-file", "", "`file` holding the relay connection string")
	fs.StringVar(&o.Since, "since", "", "deliveries the relay received within this long (e.g. 30m, 2h) or since an RFC 3339 time")
	fs.Uint64Var(&o.FromSeq, "from-seq", 0, "deliveries from this stream sequence on")
	fs.StringArrayVar(&o.Types, "type", nil, "deliveries with an event whose type matches this `glob` (repeatable), e.g. 'media.*'")
	fs.BoolVar(&o.Durable, "durable", false, "read from, and move, the credential's own position (as its laptop does) instead of a throwaway consumer")
	o.Secrets = cmdutil.AddSecretFlags(fs)
	fs.BoolVar(&o.Reveal, "reveal", false, "keep credential headers and query parameters instead of redacting them")
	fs.BoolVar(&o.Force, "force", false, "write into a non-empty folder or over an existing file")
	fs.BoolVar(&o.JSON, "json", false, "print the summary as JSON")
	fs.StringVar(&o.Into, "into", "", "import into this store `file` instead of writing a file (each delivery once: one already there, by the relay's stream and sequence, is skipped), then analyse")
	_ = cmd.RegisterFlagCompletionFunc("format", cmdutil.CompleteExportFormats)
	return cmd
}

func (o *Options) validate(args []string) error {
	var err error
	if o.Out, err = cmdutil.ArgOrFlag(args, "--out", o.Out); err != nil {
		return err
	}
	if o.Into != "" {
		if o.Out != "" || o.Format != "" || o.Force || o.Reveal {
			return cmdutil.UsageErrorf("--into imports into a store: it takes no PATH, --out, --format, --force or --reveal")
		}
		if o.secrets, err = o.Secrets.Resolve(o.Env); err != nil {
			return err
		}
		return o.checkSelection()
	}
	if o.Out == "" {
		return cmdutil.UsageErrorf("give the file or folder to write (the argument or --out), e.g. deliveries.ndjson, or - for standard output")
	}
	switch {
	case o.Format != "":
		if o.format, err = export.ParseFormat(o.Format); err != nil {
			return cmdutil.UsageErrorf("--format: %v", err)
		}
	case o.Out == "-":
		o.format = export.NDJSON
	case exportcmd.FormatFromPath(o.Out) != "":
		o.format = exportcmd.FormatFromPath(o.Out)
	default:
		return cmdutil.UsageErrorf("cannot tell the format from %q: name a .ndjson or .har file, or give --format (json, fixtures or curl for a folder)", o.Out)
	}
	if o.Out == "-" && o.format.IsFolder() {
		return cmdutil.UsageErrorf("--format %s writes a folder; - (standard output) is only for ndjson and har", o.format)
	}
	if o.secret, err = o.Secrets.Single(o.Env, "sign fixtures and verify signatures"); err != nil {
		return err
	}
	if o.format == export.Fixtures && o.secret == nil {
		return cmdutil.UsageErrorf("--format fixtures needs --secret or --secret-env: the secret your consumer's tests verify signatures with")
	}
	if o.secret != nil {
		o.secrets = [][]byte{o.secret}
	}
	return o.checkSelection()
}

// checkSelection checks what to read (--type, --since, --from-seq,
// --durable) and reads the connection string.
func (o *Options) checkSelection() error {
	for _, g := range o.Types {
		if _, err := path.Match(g, ""); err != nil {
			return cmdutil.UsageErrorf("--type %q is not a valid glob (e.g. media.*)", g)
		}
	}
	if o.Since != "" && o.FromSeq > 0 {
		return cmdutil.UsageErrorf("give --since or --from-seq, not both")
	}
	if o.Durable && (o.Since != "" || o.FromSeq > 0) {
		return cmdutil.UsageErrorf("--durable reads from the credential's own position: it takes no --since or --from-seq")
	}
	if o.Since != "" {
		if d, err := time.ParseDuration(o.Since); err == nil && d > 0 {
			o.since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, o.Since); err == nil {
			o.since = t
		} else {
			return cmdutil.UsageErrorf("--since %q is neither a positive duration (30m, 2h) nor an RFC 3339 time", o.Since)
		}
	}
	return o.readConn()
}

// readConn reads the connection string from --relay-env or --relay-file;
// its errors never quote it.
func (o *Options) readConn() error {
	c, err := relay.ReadConnString(o.Env.Getenv, o.RelayEnv, o.RelayFile)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	o.conn = c
	return nil
}

// exitError makes the command exit with code for err (1 unreachable).
type exitError struct {
	error
	code int
}

func (e exitError) ExitCode() int { return e.code }
func (e exitError) Unwrap() error { return e.error }

func run(ctx context.Context, o *Options) error {
	if o.Into != "" {
		return runInto(ctx, o)
	}
	env := o.Env
	// Analysis without a store: types for --type and the fixtures,
	// signature verdicts with a secret; no ledger.
	eng := inspector.NewEngine(nil, inspector.Options{Secrets: o.secrets})
	var recs []*inspector.Record
	sum, err := relay.Pull(ctx, relay.PullOptions{
		Conn: o.conn, Since: o.since, FromSeq: o.FromSeq, Durable: o.Durable,
		Each: func(r *relay.Relayed) error {
			d := r.Delivery
			d.ID = int64(r.Seq) // the relay's numbering, as its answer said
			a := eng.Analyze(ctx, d)
			if !matches(a, o.Types) {
				return nil
			}
			recs = append(recs, &inspector.Record{Delivery: d, Analysis: a})
			return nil
		},
	})
	if err != nil {
		return pullError(err)
	}
	if len(recs) == 0 {
		fmt.Fprintf(env.Stderr, "The relay holds no delivery matching the selection (%s read); nothing written.\n", plural.Count(sum.Deliveries, "delivery", "deliveries"))
		if o.JSON {
			fmt.Fprintln(env.Stdout, `{"deliveries":0,"read":`+strconv.Itoa(sum.Deliveries)+`}`)
		}
		return nil
	}
	opts := export.Options{Format: o.format, Out: o.Out, Overwrite: o.Force, Reveal: o.Reveal, Secret: o.secret, Version: env.Version}
	if o.format == export.Fixtures {
		opts.Types = fixtureTypes(recs, o.Types)
	}
	if o.Out == "-" {
		opts.Writer = env.Stdout
	}
	es, err := export.Export(ctx, export.Records(recs...), opts)
	if err != nil {
		return err
	}
	if o.Out == "-" {
		return nil
	}
	if o.JSON {
		b, _ := json.Marshal(struct {
			*export.Summary
			Read     int    `json:"read"`
			FirstSeq uint64 `json:"first_seq,omitempty"`
			LastSeq  uint64 `json:"last_seq,omitempty"`
		}{es, sum.Deliveries, sum.FirstSeq, sum.LastSeq})
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(env.Stdout, "Pulled %s from the relay (sequences %d-%d) as %s to %s.\n",
		plural.Count(es.Deliveries, "delivery", "deliveries"), sum.FirstSeq, sum.LastSeq, o.format, o.Out)
	for _, s := range es.Skipped {
		fmt.Fprintf(env.Stdout, "  skipped: %s\n", s)
	}
	if !o.Reveal {
		fmt.Fprintln(env.Stdout, "Credential headers and query parameters were redacted (--reveal keeps them).")
	}
	return nil
}

// pullError makes an unreachable relay or a refused credential exit 1.
func pullError(err error) error {
	var un *relay.UnreachableError
	var refused *relay.RefusedError
	if errors.As(err, &un) || errors.As(err, &refused) {
		return exitError{err, 1}
	}
	return err
}

// matches reports whether an analysed delivery has an event whose type
// matches one of globs (every delivery when there are none).
func matches(a *inspector.Analysis, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, ev := range a.Events {
		for _, g := range globs {
			if ok, _ := path.Match(g, ev.Type); ok {
				return true
			}
		}
	}
	return false
}

// fixtureTypes are the event types of recs matching globs, for the
// fixtures format's per-type files (nil: every type).
func fixtureTypes(recs []*inspector.Record, globs []string) []string {
	if len(globs) == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range recs {
		for _, ev := range r.Analysis.Events {
			for _, g := range globs {
				if ok, _ := path.Match(g, ev.Type); ok && !seen[ev.Type] {
					seen[ev.Type] = true
					out = append(out, ev.Type)
				}
			}
		}
	}
	return out
}
