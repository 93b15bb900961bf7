// Package samples is `hookscope samples`: one signed example delivery per
// event type, written as files for test suites.
package samples

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/plural"
)

const examples = `  hookscope samples testdata/webhooks --secret-env HOOK_SECRET
  hookscope samples /tmp/samples --seed 42 --secret test-secret
  hookscope samples --out ./samples --type media.ready --type live_event.registration`

// Options are samples' arguments and flags.
type Options struct {
	Env     *cmdutil.Env
	Out     string
	Secrets *cmdutil.SecretFlags
	Types   []string
	Seed    int64

	secrets [][]byte
}

// NewCmd builds `hookscope samples`; runF replaces the writing in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "samples DIR [--secret S | --secret-env VAR] [--type T]... [--seed N]",
		Short: "Write one signed example delivery per event type for test suites",
		Long: `Write one example delivery per event type into DIR (the argument or --out):
the pretty body, its headers (signed when a secret is given, over exactly the
bytes in the file) and an index.json a test suite can iterate over.`,
		Example: examples,
		Args:    cmdutil.MaxArgs(1, "one folder"),
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Out, "out", "", "directory to write the samples to (or give it as the argument; created if missing; existing sample files are replaced)")
	o.Secrets = cmdutil.AddSecretFlags(fs)
	fs.StringArrayVar(&o.Types, "type", nil, "only this event `type` (repeatable; default: all 17)")
	fs.Int64Var(&o.Seed, "seed", 0, "make the samples reproducible (0: random)")
	_ = cmd.RegisterFlagCompletionFunc("type", cmdutil.CompleteEventTypes)
	return cmd
}

// validate takes the folder and checks the types; it resolves the secrets.
func (o *Options) validate(args []string) error {
	var err error
	if o.Out, err = cmdutil.ArgOrFlag(args, "--out", o.Out); err != nil {
		return err
	}
	if o.Out == "" {
		return cmdutil.UsageErrorf("the folder to write the samples to is required (the argument or --out)")
	}
	for _, t := range o.Types {
		if !catalog.IsKnown(t) {
			return cmdutil.UsageErrorf("--type %q is not an event type; valid types: %s", t, strings.Join(catalog.TypeNames(), ", "))
		}
	}
	o.secrets, err = o.Secrets.Resolve(o.Env)
	return err
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	types := o.Types
	if len(types) == 0 {
		types = catalog.TypeNames()
	}
	var secret []byte
	if len(o.secrets) > 0 {
		secret = o.secrets[0]
		if len(o.secrets) > 1 {
			fmt.Fprintf(env.Stderr, "note: %d secrets given; samples are signed with the first\n", len(o.secrets))
		}
	}
	g := simulate.New(o.Seed)
	var samples []export.Sample
	for _, typ := range types {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The file holds the pretty body, and the signature and length are
		// computed over exactly those bytes, so a test suite can post the
		// file as it is and verify it with the same secret.
		body := catalog.Pretty(g.Message(g.Event(typ)).Body())
		samples = append(samples, export.Sample{Type: typ, Body: body, Headers: simulate.HeadersFor(body, secret)})
	}
	if err := export.WriteSamples(o.Out, simulate.UserAgent, len(secret) > 0, samples); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s to %s (%s)\n", plural.S(len(types), "sample"), o.Out, map[bool]string{true: "signed", false: "unsigned: give --secret or --secret-env to add X-Service-Signature"}[len(secret) > 0])
	return nil
}
