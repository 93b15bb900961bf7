package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/internal/plural"
)

// Ingester stores and analyzes an imported delivery. inspector.Engine
// implements it, so imports are analyzed exactly like received deliveries:
// the desktop app passes its running engine.
type Ingester interface {
	Ingest(ctx context.Context, d *inspector.Delivery) (int64, error)
}

// IngestFunc adapts a function to Ingester, for example a store's
// InsertDelivery followed by one Engine.Drain in a one-shot command.
type IngestFunc func(ctx context.Context, d *inspector.Delivery) (int64, error)

// Ingest calls f.
func (f IngestFunc) Ingest(ctx context.Context, d *inspector.Delivery) (int64, error) {
	return f(ctx, d)
}

// ImportReport says what an import did.
type ImportReport struct {
	Path     string   `json:"path"`
	Format   Format   `json:"format"`
	Imported int      `json:"imported"`
	IDs      []int64  `json:"ids"`
	Skipped  []string `json:"skipped,omitempty"`
}

// maxImport bounds a file read whole: far above any capture worth
// inspecting, and a clear refusal instead of an exhausted machine.
const maxImport = 1 << 30

// Read loads the deliveries of a HAR file, an NDJSON file, or a folder —
// of fixtures, of the json export, a curl export's replay.sh, or what
// `hookscope samples` writes — without storing them (the UI previews with
// it): whatever Hookscope writes, it reads back. It fails when nothing in
// path is a delivery, saying what it found instead.
func Read(path string) (Format, []*inspector.Delivery, []string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil, nil, fmt.Errorf("import %s: %w", path, err)
	}
	var (
		format  Format
		ds      []*inspector.Delivery
		skipped []string
	)
	if fi.IsDir() {
		format, ds, skipped, err = readFolder(path)
	} else {
		if fi.Size() > maxImport {
			return "", nil, nil, fmt.Errorf("import %s: the file is %d bytes, more than the %d-byte limit", path, fi.Size(), maxImport)
		}
		var data []byte
		data, err = os.ReadFile(path)
		if err != nil {
			return "", nil, nil, fmt.Errorf("import %s: %w", path, err)
		}
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		if isHAR(data) {
			format = HAR
			ds, skipped, err = readHAR(data)
		} else {
			format = NDJSON
			ds, err = readNDJSON(data)
			if err != nil && hasLog(data) {
				format = HAR
				ds, skipped, err = readHAR(data)
			} else if err != nil {
				err = fmt.Errorf("neither a HAR file (no top-level \"log\") nor Hookscope NDJSON: %w", err)
			}
		}
	}
	if err != nil {
		return format, nil, skipped, fmt.Errorf("import %s: %w", path, err)
	}
	if len(ds) == 0 {
		return format, nil, skipped, fmt.Errorf("import %s: no deliveries found (%s)", path, describeSkipped(skipped))
	}
	for _, d := range ds {
		d.Source = "import"
	}
	return format, ds, skipped, nil
}

func describeSkipped(s []string) string {
	switch len(s) {
	case 0:
		return "it holds nothing to import"
	case 1:
		return s[0]
	}
	return fmt.Sprintf("%s, and %d more skipped", s[0], len(s)-1)
}

// readFolder reads a folder Hookscope wrote: a curl export (replay.sh), a
// samples folder (index.json), or files of fixtures or of the json export
// (any mix). Every file that is not read is listed in skipped, with why,
// except the README.md a fixtures export writes beside its files.
func readFolder(dir string) (Format, []*inspector.Delivery, []string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, nil, fmt.Errorf("read folder: %w", err)
	}
	if len(ents) == 0 {
		return "", nil, nil, errors.New("the folder is empty")
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = !e.IsDir()
	}
	if names[curlScript] {
		ds, err := readCurl(filepath.Join(dir, curlScript))
		return Curl, ds, othersSkipped(ents, map[string]bool{curlScript: true}), err
	}
	if ds, used, skipped, ok := readSamples(dir); ok {
		return Samples, ds, append(skipped, othersSkipped(ents, used)...), nil
	}
	format := Fixtures
	var out []*inspector.Delivery
	var skipped []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case e.IsDir():
			skipped = append(skipped, name+"/: a folder (import reads the files of one folder)")
			continue
		case name == "README.md":
			continue // the fixtures export's own
		case !strings.HasSuffix(name, ".json"):
			skipped = append(skipped, name+": not a .json file, nor a curl export's replay.sh")
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		if d, ok, err := readJSONDelivery(data); ok {
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			format = JSON
			out = append(out, d)
			continue
		}
		d, why := readFixture(data)
		if d == nil {
			skipped = append(skipped, name+": "+why)
			continue
		}
		out = append(out, d)
	}
	return format, out, skipped, nil
}

// othersSkipped lists the entries of a folder a reader did not use.
func othersSkipped(ents []os.DirEntry, used map[string]bool) []string {
	var out []string
	for _, e := range ents {
		if !used[e.Name()] {
			out = append(out, e.Name()+": not part of the export")
		}
	}
	return out
}

// Import reads path and ingests every delivery in it, in file order. The
// whole file is parsed before anything is stored, so a bad file imports
// nothing.
func Import(ctx context.Context, path string, ing Ingester) (*ImportReport, error) {
	format, ds, skipped, err := Read(path)
	if err != nil {
		return nil, err
	}
	return Ingest(ctx, path, format, ds, skipped, ing)
}

// Ingest stores what Read returned for path, in order: a command reads
// first, and opens its store only for something to import.
func Ingest(ctx context.Context, path string, format Format, ds []*inspector.Delivery, skipped []string, ing Ingester) (*ImportReport, error) {
	rep := &ImportReport{Path: path, Format: format, Skipped: skipped, IDs: []int64{}}
	for i, d := range ds {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("import stopped after %d of %s: %w", i, plural.Count(len(ds), "delivery", "deliveries"), err)
		}
		id, err := ing.Ingest(ctx, d)
		if err != nil {
			return rep, fmt.Errorf("import delivery %d of %d: %w", i+1, len(ds), err)
		}
		rep.Imported++
		rep.IDs = append(rep.IDs, id)
	}
	return rep, nil
}
