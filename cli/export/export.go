// Package export is `hookscope export`: write stored deliveries as pretty
// JSON, test fixtures, a curl script, HAR 1.2 or NDJSON.
package export

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookscope/hookscope/cli/cmdutil"
	"github.com/hookscope/hookscope/cli/internal/readstore"
	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/internal/plural"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/storage"
)

const examples = `  # every stored delivery as a HAR file for browser devtools or HTTP Toolkit
  hookscope export hooks.har

  # test fixtures, one file per event type, signed with your test secret
  TEST_SECRET=... hookscope export testdata/webhooks --format fixtures --secret-env TEST_SECRET

  # the last hour's media.ready deliveries as a curl script (replay.sh, bodies inline)
  hookscope export replay-ready --format curl --type media.ready --since 1h

  # deliveries 12 and 15 as pretty JSON files; NDJSON of duplicates to stdout
  hookscope export picked --format json --id 12,15
  hookscope export - --format ndjson --duplicates

  # everything a damaged store still holds, read without writing to it
  hookscope export rescued.ndjson --salvage`

// Options are export's arguments and flags.
type Options struct {
	Env       *cmdutil.Env
	Format    string
	Out       string
	DBPath    string
	Selection *cmdutil.SelectionFlags
	Secrets   *cmdutil.SecretFlags
	Reveal    bool
	Force     bool
	Target    string
	JSON      bool
	Salvage   bool
	Where     string

	expr   *rules.Expr
	format export.Format
	secret []byte
	filter storage.Filter
}

// NewCmd builds `hookscope export`; runF replaces the writing in tests.
func NewCmd(env *cmdutil.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Env: env}
	cmd := &cobra.Command{
		Use:   "export PATH [--format json|fixtures|curl|har|ndjson] [selection] [flags]",
		Short: "Write deliveries as pretty JSON, test fixtures, curl script, HAR 1.2 or NDJSON",
		Long: `Write stored deliveries to PATH (the argument or --out; - is standard output
for har and ndjson). The format comes from PATH's extension (.har, .ndjson or
.jsonl) unless --format says otherwise; the folder formats (json, fixtures,
curl) need --format. Credential headers and query parameters are redacted
unless --reveal. Select deliveries with --id, --type, --since, --signature,
--duplicates or an expression with --where (default: all). A store too damaged to open is read with
--salvage: every delivery still readable, and a list of what was not.`,
		Example: examples,
		Args:    cmdutil.MaxArgs(1, "one PATH"),
		RunE:    cmdutil.RunE(o, o.validate, runF, run),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Format, "format", "", "json (folder of pretty files), fixtures (folder, one file per event type), curl (folder with replay.sh), har (file) or ndjson (file); default: from PATH's extension")
	fs.StringVar(&o.Out, "out", "", "folder (json, fixtures, curl) or file (har, ndjson; - for standard output) to write (or give it as the argument)")
	cmdutil.AddDBFlag(fs, &o.DBPath)
	o.Selection = cmdutil.AddSelectionFlags(fs)
	o.Secrets = cmdutil.AddSecretFlags(fs)
	fs.BoolVar(&o.Reveal, "reveal", false, "keep credential headers and query parameters (Authorization, Cookie, access_token, ...) instead of redacting them")
	fs.BoolVar(&o.Force, "force", false, "write into a non-empty folder or over an existing file")
	fs.StringVar(&o.Target, "to", export.DefaultTarget, "default URL of the curl script (it also takes the URL as its first argument)")
	fs.BoolVar(&o.JSON, "json", false, "print the summary as JSON")
	fs.StringVar(&o.Where, "where", "", readstore.WhereUsage)
	fs.BoolVar(&o.Salvage, "salvage", false, "read a damaged store without writing to it: every delivery that can still be read, listing what could not be; selection flags do not apply")
	_ = cmd.RegisterFlagCompletionFunc("format", cmdutil.CompleteExportFormats)
	cmdutil.RegisterSelectionCompletion(cmd)
	return cmd
}

// FormatFromPath names the export format a file's extension stands for:
// .har, .ndjson or .jsonl; "" for anything else (folders included).
func FormatFromPath(path string) export.Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".har":
		return export.HAR
	case ".ndjson", ".jsonl":
		return export.NDJSON
	}
	return ""
}

// validate checks the arguments and flags and resolves the format, the
// fixtures secret and the selection.
func (o *Options) validate(args []string) error {
	var err error
	if o.Out, err = cmdutil.ArgOrFlag(args, "--out", o.Out); err != nil {
		return err
	}
	if o.Out == "" {
		return cmdutil.UsageErrorf("give the file or folder to write (the argument or --out), e.g. capture.har")
	}
	if o.Salvage && (o.Selection.Set() || o.Where != "") {
		return cmdutil.UsageErrorf("--salvage reads every delivery it can; it takes no selection flags (--id, --type, --since, --signature, --duplicates, --where)")
	}
	if o.expr, err = readstore.Where(o.Where); err != nil {
		return err
	}
	switch {
	case o.Format != "":
		if o.format, err = export.ParseFormat(o.Format); err != nil {
			return cmdutil.UsageErrorf("--format: %v", err)
		}
	case FormatFromPath(o.Out) != "":
		o.format = FormatFromPath(o.Out)
	case o.Out == "-":
		return cmdutil.UsageErrorf("--format is required with - (standard output): har or ndjson")
	default:
		return cmdutil.UsageErrorf("cannot tell the format from %q: name a .har or .ndjson file, or give --format (json, fixtures or curl for a folder)", o.Out)
	}
	if o.Out == "-" && o.format.IsFolder() {
		return cmdutil.UsageErrorf("--format %s writes a folder; - (standard output) is only for har and ndjson", o.format)
	}
	if o.secret, err = o.Secrets.Single(o.Env, "sign fixtures"); err != nil {
		return err
	}
	if o.format == export.Fixtures && o.secret == nil {
		return cmdutil.UsageErrorf("--format fixtures needs --secret or --secret-env: the secret your consumer's tests verify signatures with (it is written in no file)")
	}
	if o.format != export.Fixtures && o.secret != nil {
		return cmdutil.UsageErrorf("--secret is only used by --format fixtures")
	}
	if o.filter, err = o.Selection.Filter(time.Now()); err != nil {
		return err
	}
	return o.checkOut()
}

// checkOut refuses, before the store is opened, to write over a file or
// into a folder that holds files, unless --force: an export must not lose
// the user's work. (Export checks again as it writes.)
func (o *Options) checkOut() error {
	if o.Force || o.Out == "-" {
		return nil
	}
	fi, err := os.Stat(o.Out)
	switch {
	case err != nil:
		return nil // nothing there yet
	case o.format.IsFolder() && !fi.IsDir():
		return cmdutil.UsageErrorf("%s is a file; --format %s writes a folder: give a folder's path", o.Out, o.format)
	case !o.format.IsFolder() && fi.IsDir():
		return cmdutil.UsageErrorf("%s is a folder; --format %s writes a file: give a file's path", o.Out, o.format)
	case !fi.IsDir():
		return cmdutil.UsageErrorf("%s already exists; give --force to overwrite it, or another name", o.Out)
	}
	if ents, err := os.ReadDir(o.Out); err == nil && len(ents) > 0 {
		return cmdutil.UsageErrorf("the folder %s is not empty; give --force to write into it, or another folder", o.Out)
	}
	return nil
}

func run(ctx context.Context, o *Options) error {
	env := o.Env
	f, filter := o.format, o.filter
	// For fixtures --type also limits which events of a batch become files.
	opts := export.Options{Format: f, Out: o.Out, Overwrite: o.Force, Reveal: o.Reveal, Secret: o.secret, Target: o.Target, Version: env.Version, Types: filter.Types}
	if o.Out == "-" {
		opts.Writer = env.Stdout
	}
	var src export.Source
	var salvaged *storage.SalvageReport
	if o.Salvage {
		path, err := cmdutil.ExistingStorePath(env, o.DBPath)
		if err != nil {
			return err
		}
		src = export.SourceFunc(func(ctx context.Context, fn func(*inspector.Record) error) (err error) {
			salvaged, err = storage.Salvage(ctx, path, fn)
			return err
		})
	} else {
		db, err := cmdutil.OpenExistingStore(env, o.DBPath)
		if err != nil {
			return err
		}
		defer db.Close()
		src = export.SourceFunc(func(ctx context.Context, fn func(*inspector.Record) error) error {
			st, err := db.EachWhere(ctx, filter, o.expr, time.Now(), fn)
			readstore.Failed(env.Stderr, st)
			return err
		})
	}
	sum, err := export.Export(ctx, src, opts)
	if err != nil {
		return err
	}
	var unread []string
	if salvaged != nil {
		unread = salvaged.Skipped
	}
	if o.Out == "-" {
		for _, s := range unread {
			fmt.Fprintf(env.Stderr, "could not read: %s\n", s)
		}
		return nil
	}
	if o.JSON {
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
	fmt.Fprintf(env.Stdout, "Exported %s as %s to %s (%s).\n", plural.Count(sum.Deliveries, "delivery", "deliveries"), f, o.Out, plural.S(len(sum.Files), "file"))
	for _, s := range sum.Skipped {
		fmt.Fprintf(env.Stdout, "  skipped: %s\n", s)
	}
	for _, s := range unread {
		fmt.Fprintf(env.Stdout, "  could not read: %s\n", s)
	}
	if !o.Reveal {
		fmt.Fprintln(env.Stdout, "Credential headers and query parameters were redacted (--reveal keeps them).")
	}
	return nil
}
