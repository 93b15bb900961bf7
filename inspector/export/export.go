// Package export writes a selection of stored deliveries in formats other
// tools and people use (pretty JSON, consumer test fixtures, curl scripts,
// HAR 1.2, NDJSON) and reads HAR, fixtures and NDJSON back as deliveries.
// Credentials in headers and query strings are redacted unless the caller
// reveals them; a secret given to sign fixtures is never written.
package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/redact"
)

// Format is an export format.
type Format string

// The formats.
const (
	JSON     Format = "json"     // a folder of pretty JSON files, one per delivery
	Fixtures Format = "fixtures" // a folder of test fixtures, one per event type
	Curl     Format = "curl"     // a folder with a shell script of curl commands, each carrying its body
	HAR      Format = "har"      // one HAR 1.2 file
	NDJSON   Format = "ndjson"   // one file, a delivery per line
)

// Formats lists the formats in the order the UI offers them.
func Formats() []Format { return []Format{JSON, Fixtures, Curl, HAR, NDJSON} }

// ParseFormat checks a user-given format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == strings.ToLower(strings.TrimSpace(s)) {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown export format %q (expected json, fixtures, curl, har or ndjson)", s)
}

// IsFolder reports whether the format writes a folder rather than a file.
func (f Format) IsFolder() bool { return f == JSON || f == Fixtures || f == Curl }

// Source yields the records to export, oldest first. The CLI wraps
// storage.DB.Each with a filter; the UI passes its selection with Records.
type Source interface {
	Each(ctx context.Context, fn func(*inspector.Record) error) error
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, fn func(*inspector.Record) error) error

// Each calls f.
func (f SourceFunc) Each(ctx context.Context, fn func(*inspector.Record) error) error {
	return f(ctx, fn)
}

// Records is a Source over records already in memory.
func Records(recs ...*inspector.Record) Source {
	return SourceFunc(func(ctx context.Context, fn func(*inspector.Record) error) error {
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Options configure an export.
type Options struct {
	Format Format
	// Out is the folder (json, fixtures, curl) or file (har, ndjson) to write.
	Out string
	// Writer, for har and ndjson, receives the output instead of Out.
	Writer io.Writer
	// Overwrite allows writing into a non-empty folder or over a file.
	Overwrite bool
	// Reveal keeps credential headers and query parameters as they are.
	Reveal bool
	// Secret signs the fixtures. It is never written anywhere.
	Secret []byte
	// Types and EventUUIDs, when set, limit which events become fixtures
	// (a batch in the selection may carry other events too).
	Types      []string
	EventUUIDs []string
	// Target is the default URL of the curl script.
	Target string
	// Version is Hookscope's version, written as the HAR creator's.
	Version string
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Summary says what an export wrote.
type Summary struct {
	Format     Format   `json:"format"`
	Out        string   `json:"out"`
	Deliveries int      `json:"deliveries"`
	Files      []string `json:"files"`
	// Skipped explains anything left out (for example a fixture type with
	// no event in the selection, or a body that is not a message).
	Skipped []string `json:"skipped,omitempty"`
}

// DefaultTarget is the curl script's URL when none is given: the local
// receiver's default address.
const DefaultTarget = "http://127.0.0.1:8787/webhooks"

// Export writes the records of src in opts.Format.
func Export(ctx context.Context, src Source, opts Options) (*Summary, error) {
	if _, err := ParseFormat(string(opts.Format)); err != nil {
		return nil, err
	}
	if opts.Format == Fixtures && len(opts.Secret) == 0 {
		return nil, errors.New("fixtures carry a signature: give the secret your consumer's tests verify with")
	}
	if opts.Out == "" && (opts.Writer == nil || opts.Format.IsFolder()) {
		return nil, errors.New("no output path given")
	}
	var recs []*inspector.Record
	if err := src.Each(ctx, func(r *inspector.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read deliveries to export: %w", err)
	}
	if len(recs) == 0 {
		return nil, errors.New("the selection is empty: nothing to export")
	}
	sum := &Summary{Format: opts.Format, Out: opts.Out, Deliveries: len(recs)}
	if opts.Format.IsFolder() {
		if err := prepareFolder(opts.Out, opts.Overwrite); err != nil {
			return nil, err
		}
		var err error
		switch opts.Format {
		case JSON:
			err = writeJSONFolder(opts, recs, sum)
		case Fixtures:
			err = writeFixtures(opts, recs, sum)
		case Curl:
			err = writeCurl(opts, recs, sum)
		}
		if err != nil {
			return sum, err
		}
		return sum, nil
	}
	write := func(w io.Writer) error {
		if opts.Format == HAR {
			return WriteHAR(w, recs, opts)
		}
		return WriteNDJSON(w, recs, opts)
	}
	if opts.Writer != nil {
		sum.Out = "-"
		return sum, write(opts.Writer)
	}
	if err := writeFile(opts.Out, opts.Overwrite, write); err != nil {
		return nil, err
	}
	sum.Files = []string{opts.Out}
	return sum, nil
}

// Exports hold whole bodies and headers, so, like the store, they are
// readable by their owner only. Folders the user already had keep their mode.
const (
	fileMode   os.FileMode = 0o600
	scriptMode os.FileMode = 0o700
	folderMode os.FileMode = 0o700
)

// prepareFolder creates dir, refusing to mix an export into a folder that
// already holds files unless told to: an export must not lose the user's work.
func prepareFolder(dir string, overwrite bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, folderMode); err != nil {
			return fmt.Errorf("create export folder: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("export folder %s: %w", dir, err)
	case len(ents) > 0 && !overwrite:
		return fmt.Errorf("export folder %s is not empty; choose another folder or allow overwriting", dir)
	}
	return nil
}

// writeFile writes through a temporary file and renames it, so a failed
// export leaves no half file and an existing file is replaced whole.
func writeFile(path string, overwrite bool, write func(io.Writer) error) error {
	if _, err := os.Stat(path); err == nil && !overwrite {
		return fmt.Errorf("%s already exists; choose another name or allow overwriting", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, folderMode); err != nil {
		return fmt.Errorf("create folder for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), fileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeInto writes one file of a folder export and lists it.
func writeInto(sum *Summary, dir, name string, data []byte, mode os.FileMode) error {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), folderMode); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	// WriteFile keeps the mode of a file it overwrites.
	if err := os.Chmod(p, mode); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	sum.Files = append(sum.Files, p)
	return nil
}

// HeadersFor returns a delivery's headers as exported: redacted unless
// revealed.
func HeadersFor(d *inspector.Delivery, reveal bool) []inspector.Header {
	if reveal {
		return append([]inspector.Header(nil), d.Headers...)
	}
	out := make([]inspector.Header, len(d.Headers))
	for i, h := range d.Headers {
		out[i] = inspector.Header{Name: h.Name, Value: redact.Header(h.Name, h.Value)}
	}
	return out
}

// QueryFor returns a delivery's query string as exported: redacted unless
// revealed.
func QueryFor(d *inspector.Delivery, reveal bool) string {
	if reveal {
		return d.Query
	}
	return redact.Query(d.Query)
}
