package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/storage"
)

const exportExamples = `  # every stored delivery as a HAR file for browser devtools or HTTP Toolkit
  hookscope export --format har --out hooks.har

  # test fixtures, one file per event type, signed with your test secret
  TEST_SECRET=... hookscope export --format fixtures --out testdata/webhooks --secret-env TEST_SECRET

  # the last hour's media.ready deliveries as a curl script (replay.sh + bodies/)
  hookscope export --format curl --out replay-ready --type media.ready --since 1h

  # deliveries 12 and 15 as pretty JSON files; NDJSON of duplicates to stdout
  hookscope export --format json --out picked --id 12,15
  hookscope export --format ndjson --out - --duplicates`

// selectionFlags choose stored deliveries for replay and export.
type selectionFlags struct {
	ids        multiFlag
	types      multiFlag
	since      string
	signatures multiFlag
	duplicates bool
}

func addSelectionFlags(fs *flag.FlagSet) *selectionFlags {
	s := &selectionFlags{}
	fs.Var(&s.ids, "id", "delivery id (repeatable, or comma-separated)")
	fs.Var(&s.types, "type", "deliveries with an event of this type (repeatable), e.g. media.ready")
	fs.StringVar(&s.since, "since", "", "deliveries received within this long (e.g. 30m, 2h) or since an RFC 3339 time")
	fs.Var(&s.signatures, "signature", "deliveries with this signature verdict: valid, invalid, missing or unverified (repeatable)")
	fs.BoolVar(&s.duplicates, "duplicates", false, "only deliveries carrying a duplicate event")
	return s
}

// set reports whether any selection flag was given.
func (s *selectionFlags) set() bool {
	return len(s.ids) > 0 || len(s.types) > 0 || s.since != "" || len(s.signatures) > 0 || s.duplicates
}

// filter turns the flags into a store filter.
func (s *selectionFlags) filter(now time.Time) (storage.Filter, error) {
	var f storage.Filter
	for _, v := range s.ids {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			id, err := strconv.ParseInt(p, 10, 64)
			if err != nil || id <= 0 {
				return f, usageError("--id %q is not a delivery id (a positive number)", p)
			}
			f.IDs = append(f.IDs, id)
		}
	}
	for _, t := range s.types {
		for _, p := range strings.Split(t, ",") {
			if p = strings.TrimSpace(p); p != "" {
				f.Types = append(f.Types, p)
			}
		}
	}
	if s.since != "" {
		if d, err := time.ParseDuration(s.since); err == nil {
			if d <= 0 {
				return f, usageError("--since must be a positive duration, got %s", s.since)
			}
			f.Since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s.since); err == nil {
			f.Since = t
		} else {
			return f, usageError("--since %q is neither a duration (30m, 2h) nor an RFC 3339 time", s.since)
		}
	}
	for _, v := range s.signatures {
		switch st := inspector.SignatureStatus(strings.ToLower(v)); st {
		case inspector.SignatureValid, inspector.SignatureInvalid, inspector.SignatureMissing, inspector.SignatureUnverified:
			f.Signatures = append(f.Signatures, st)
		default:
			return f, usageError("--signature %q: expected valid, invalid, missing or unverified", v)
		}
	}
	f.DuplicatesOnly = s.duplicates
	return f, nil
}

// singleSecret resolves --secret/--secret-env to exactly one secret (nil
// when none was given).
func singleSecret(env *Env, s *secretFlags, what string) ([]byte, error) {
	sec, err := s.resolve(env)
	if err != nil {
		return nil, err
	}
	if len(sec) > 1 {
		return nil, usageError("give one secret to %s, not %d", what, len(sec))
	}
	if len(sec) == 0 {
		return nil, nil
	}
	return sec[0], nil
}

func runExport(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "export", "--format json|fixtures|curl|har|ndjson --out PATH [selection] [flags]", exportExamples)
	format := fs.String("format", "", "json (folder of pretty files), fixtures (folder, one file per event type), curl (folder with replay.sh), har (file) or ndjson (file)")
	out := fs.String("out", "", "folder (json, fixtures, curl) or file (har, ndjson; - for standard output) to write")
	dbPath := fs.String("db", "", "store file (default: the app's store in the user config directory)")
	sel := addSelectionFlags(fs)
	secrets := addSecretFlags(fs)
	reveal := fs.Bool("reveal", false, "keep credential headers and query parameters (Authorization, Cookie, access_token, ...) instead of redacting them")
	force := fs.Bool("force", false, "write into a non-empty folder or over an existing file")
	target := fs.String("to", export.DefaultTarget, "default URL of the curl script (it also takes the URL as its first argument)")
	jsonOut := fs.Bool("json", false, "print the summary as JSON")
	salvage := fs.Bool("salvage", false, "read a damaged store without writing to it: every delivery that can still be read (and what its inbox holds), listing what could not be; selection flags do not apply")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *salvage && sel.set() {
		return usageError("--salvage reads every delivery it can; it takes no selection flags (--id, --type, --since, --signature, --duplicates)")
	}
	f, err := export.ParseFormat(*format)
	if err != nil {
		if *format == "" {
			return usageError("--format is required (json, fixtures, curl, har or ndjson)")
		}
		return usageError("--format: %v", err)
	}
	if *out == "" {
		return usageError("--out is required: the folder or file to write")
	}
	if *out == "-" && f.IsFolder() {
		return usageError("--format %s writes a folder; --out - (standard output) is only for har and ndjson", f)
	}
	secret, err := singleSecret(env, secrets, "sign fixtures")
	if err != nil {
		return err
	}
	if f == export.Fixtures && secret == nil {
		return usageError("--format fixtures needs --secret or --secret-env: the secret your consumer's tests verify signatures with (it is written in no file)")
	}
	if f != export.Fixtures && secret != nil {
		return usageError("--secret is only used by --format fixtures")
	}
	filter, err := sel.filter(time.Now())
	if err != nil {
		return err
	}
	// For fixtures --type also limits which events of a batch become files.
	opts := export.Options{Format: f, Out: *out, Overwrite: *force, Reveal: *reveal, Secret: secret, Target: *target, Version: Version, Types: filter.Types}
	if *out == "-" {
		opts.Writer = env.Stdout
	}
	var src export.Source
	var salvaged *storage.SalvageReport
	if *salvage {
		path := *dbPath
		if path == "" {
			if path, err = storage.DefaultPath(); err != nil {
				return err
			}
		}
		src = export.SourceFunc(func(ctx context.Context, fn func(*inspector.Record) error) (err error) {
			salvaged, err = storage.Salvage(ctx, path, fn)
			return err
		})
	} else {
		db, err := openStore(*dbPath)
		if err != nil {
			return err
		}
		defer db.Close()
		src = export.SourceFunc(func(ctx context.Context, fn func(*inspector.Record) error) error { return db.Each(ctx, filter, fn) })
	}
	sum, err := export.Export(ctx, src, opts)
	if err != nil {
		return err
	}
	if *out == "-" {
		if salvaged != nil {
			for _, s := range salvaged.Skipped {
				fmt.Fprintf(env.Stderr, "could not read: %s\n", s)
			}
		}
		return nil
	}
	if *jsonOut {
		var v any = sum
		if salvaged != nil {
			v = struct {
				*export.Summary
				Salvage *storage.SalvageReport `json:"salvage"`
			}{sum, salvaged}
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(env.Stdout, "Exported %s as %s to %s (%s).\n", count(sum.Deliveries, "delivery", "deliveries"), f, *out, count(len(sum.Files), "file", "files"))
	for _, s := range sum.Skipped {
		fmt.Fprintf(env.Stdout, "  skipped: %s\n", s)
	}
	if salvaged != nil {
		for _, s := range salvaged.Skipped {
			fmt.Fprintf(env.Stdout, "  could not read: %s\n", s)
		}
	}
	if !*reveal {
		fmt.Fprintln(env.Stdout, "Credential headers and query parameters were redacted (--reveal keeps them).")
	}
	return nil
}

// count says "1 file" or "3 files".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
