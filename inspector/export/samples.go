package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hookscope/hookscope/inspector"
)

// Samples is the folder `hookscope samples` writes: one example delivery
// per event type. Import reads it back; it is not an export format.
const Samples Format = "samples"

// Sample is one example delivery: its body, byte for byte, and the headers
// sent with it, in order.
type Sample struct {
	Type    string
	Body    []byte
	Headers []inspector.Header
}

// sampleIndex is a samples folder's index.json: what a test suite iterates
// over.
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

// WriteSamples writes each sample into dir (created if missing) as
// <type>.json (the body as it is), <type>.headers.json (its headers as a
// JSON object, in order) and an index.json listing them. Each file is
// written through a temporary file and a rename, so an interrupted run
// never leaves a half-written sample that a test suite would load. The
// files are example data for a repository, readable by all (0644).
func WriteSamples(dir, userAgent string, signed bool, samples []Sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	idx := sampleIndex{UserAgent: userAgent, Signed: signed, Samples: []sampleEntry{}}
	for _, s := range samples {
		e := sampleEntry{Type: s.Type, Body: s.Type + ".json", Headers: s.Type + ".headers.json"}
		var hj bytes.Buffer
		hj.WriteString("{\n")
		for i, h := range s.Headers {
			k, _ := json.Marshal(h.Name)
			v, _ := json.Marshal(h.Value)
			fmt.Fprintf(&hj, "  %s: %s", k, v)
			if i < len(s.Headers)-1 {
				hj.WriteString(",")
			}
			hj.WriteString("\n")
			if h.Name == inspector.SignatureHeader {
				e.Signature = h.Value
			}
		}
		hj.WriteString("}\n")
		if err := writeShared(filepath.Join(dir, e.Body), s.Body); err != nil {
			return err
		}
		if err := writeShared(filepath.Join(dir, e.Headers), hj.Bytes()); err != nil {
			return err
		}
		idx.Samples = append(idx.Samples, e)
	}
	ib, err := marshalPretty(idx)
	if err != nil {
		return fmt.Errorf("samples index: %w", err)
	}
	return writeShared(filepath.Join(dir, "index.json"), ib)
}

// writeShared writes a file readable by all through a temporary file and
// a rename.
func writeShared(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sample-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readSamples reads a samples folder through its index.json; ok is false
// when dir has no samples index. Each sample is a POST to /webhooks with
// its body file's bytes and its headers in order.
func readSamples(dir string) (ds []*inspector.Delivery, used map[string]bool, skipped []string, ok bool) {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, nil, nil, false
	}
	var idx sampleIndex
	if json.Unmarshal(data, &idx) != nil || idx.Samples == nil {
		return nil, nil, nil, false
	}
	used = map[string]bool{"index.json": true}
	for _, e := range idx.Samples {
		used[e.Body], used[e.Headers] = true, true
		if filepath.Base(e.Body) != e.Body || filepath.Base(e.Headers) != e.Headers {
			skipped = append(skipped, fmt.Sprintf("index.json: sample %q names a file outside the folder", e.Type))
			continue
		}
		body, err := os.ReadFile(filepath.Join(dir, e.Body))
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("sample %s: %v", e.Type, err))
			continue
		}
		hb, err := os.ReadFile(filepath.Join(dir, e.Headers))
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("sample %s: %v", e.Type, err))
			continue
		}
		hs, err := orderedStrings(hb)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", e.Headers, err))
			continue
		}
		ds = append(ds, &inspector.Delivery{Method: "POST", Path: "/webhooks", Headers: hs, Body: body,
			BodyLength: int64(len(body)), RemoteAddr: "import", Status: 200})
	}
	return ds, used, skipped, true
}
