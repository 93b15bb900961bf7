package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
)

const samplesExamples = `  hookscope samples --out testdata/webhooks --secret-env HOOK_SECRET
  hookscope samples --out /tmp/samples --seed 42 --secret test-secret
  hookscope samples --out ./samples --type media.ready --type live_event.registration`

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

func runSamples(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "samples", "--out DIR [--secret S | --secret-env VAR] [--type T]... [--seed N]", samplesExamples)
	out := fs.String("out", "", "directory to write the samples to (created if missing; existing sample files are replaced)")
	secrets := addSecretFlags(fs)
	var types multiFlag
	fs.Var(&types, "type", "only this event type (repeatable; default: all 17)")
	seed := fs.Int64("seed", 0, "make the samples reproducible (0: random)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError("--out is required: the directory to write the samples to")
	}
	for _, t := range types {
		if !catalog.IsKnown(t) {
			return usageError("--type %q is not an event type; valid types: %s", t, strings.Join(catalog.TypeNames(), ", "))
		}
	}
	if len(types) == 0 {
		types = catalog.TypeNames()
	}
	keys, err := secrets.resolve(env)
	if err != nil {
		return err
	}
	var secret []byte
	if len(keys) > 0 {
		secret = keys[0]
		if len(keys) > 1 {
			fmt.Fprintf(env.Stderr, "note: %d secrets given; samples are signed with the first\n", len(keys))
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", *out, err)
	}
	g := simulate.New(*seed)
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
		if err := writeFile(filepath.Join(*out, e.Body), body); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(*out, e.Headers), hj.Bytes()); err != nil {
			return err
		}
		idx.Samples = append(idx.Samples, e)
	}
	ib, _ := prettyJSON(idx)
	if err := writeFile(filepath.Join(*out, "index.json"), ib); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %d samples to %s (%s)\n", len(types), *out, map[bool]string{true: "signed", false: "unsigned: give --secret or --secret-env to add X-Service-Signature"}[len(secret) > 0])
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
