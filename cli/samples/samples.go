// Package samples is `hookscope samples`: one signed example delivery per
// event type, written as files for test suites.
package samples

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
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

// sampleIndex is samples' index.json: what a test suite iterates over.
type sampleIndex struct {
	UserAgent string        `json:"user_agent"`
	Signed    bool          `json:"signed"`
	Samples   []sampleEntry `json:"samples"`
}

type sampleEntry struct {
	Type      string `json:"type"`
	Body      string `json:"body"`
	Headers   string `json:"headers"`
	Signature string `json:"signature,omitempty"`
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
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", o.Out, err)
	}
	g := simulate.New(o.Seed)
	idx := sampleIndex{UserAgent: simulate.UserAgent, Signed: len(secret) > 0}
	for _, typ := range types {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The file holds the pretty body, and the signature and length are
		// computed over exactly those bytes, so a test suite can post the
		// file as it is and verify it with the same secret.
		body := catalog.Pretty(g.Message(g.Event(typ)).Body())
		headers := simulate.HeadersFor(body, secret)
		var hj bytes.Buffer
		hj.WriteString("{\n")
		for i, h := range headers {
			k, _ := json.Marshal(h.Name)
			v, _ := json.Marshal(h.Value)
			fmt.Fprintf(&hj, "  %s: %s", k, v)
			if i < len(headers)-1 {
				hj.WriteString(",")
			}
			hj.WriteString("\n")
		}
		hj.WriteString("}\n")
		e := sampleEntry{Type: typ, Body: typ + ".json", Headers: typ + ".headers.json"}
		for _, h := range headers {
			if h.Name == "X-Service-Signature" {
				e.Signature = h.Value
			}
		}
		if err := writeFile(filepath.Join(o.Out, e.Body), body); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(o.Out, e.Headers), hj.Bytes()); err != nil {
			return err
		}
		idx.Samples = append(idx.Samples, e)
	}
	ib, _ := cmdutil.PrettyJSON(idx)
	if err := writeFile(filepath.Join(o.Out, "index.json"), ib); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %d samples to %s (%s)\n", len(types), o.Out, map[bool]string{true: "signed", false: "unsigned: give --secret or --secret-env to add X-Service-Signature"}[len(secret) > 0])
	return nil
}

// writeFile writes through a temporary file and a rename, so an interrupted
// run never leaves a half-written sample that a test suite would load.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sample-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
