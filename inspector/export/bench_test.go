package export

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookscope/hookscope/inspector"
)

func benchRecords(n int) []*inspector.Record {
	base := testRecords()
	out := make([]*inspector.Record, n)
	for i := range out {
		r := *base[i%len(base)]
		d := *r.Delivery
		d.ID = int64(i + 1)
		r.Delivery = &d
		out[i] = &r
	}
	return out
}

// BenchmarkWriteHAR1000 measures a HAR export of 1,000 deliveries.
func BenchmarkWriteHAR1000(b *testing.B) {
	recs := benchRecords(1000)
	for b.Loop() {
		if err := WriteHAR(io.Discard, recs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadHAR1000 measures parsing a 1,000-delivery HAR for import.
func BenchmarkReadHAR1000(b *testing.B) {
	var buf bytes.Buffer
	if err := WriteHAR(&buf, benchRecords(1000), Options{Reveal: true}); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "x.har")
	os.WriteFile(p, buf.Bytes(), 0o644)
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, ds, _, err := Read(p); err != nil || len(ds) != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteNDJSON1000 measures an NDJSON export of 1,000 deliveries.
func BenchmarkWriteNDJSON1000(b *testing.B) {
	recs := benchRecords(1000)
	for b.Loop() {
		if err := WriteNDJSON(io.Discard, recs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
