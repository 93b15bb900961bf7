package export_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/export"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/storage"
)

const roundTripSecret = "whsec-round-trip"

// roundTripRecords is a varied selection: a batch, a single event, a
// pretty (not compact) JSON body as samples write, a body that is not
// UTF-8, one starting with '@', a query string and credential headers.
func roundTripRecords() []*inspector.Record {
	g := simulate.New(5)
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	bodies := [][]byte{
		g.Message(g.Event(catalog.TypeMediaCreated), g.Event(catalog.TypeMediaProcessing)).Body(),
		g.Message(g.Event(catalog.TypeMediaReady)).Body(),
		catalog.Pretty(g.Message(g.Event(catalog.TypeLiveEventRegistration)).Body()),
		[]byte("\xff\xfe\x00binary\x80"),
		[]byte("@-not-a-file"),
	}
	var recs []*inspector.Record
	for i, body := range bodies {
		id := int64(i + 1)
		hs := []inspector.Header{
			{Name: "Host", Value: "quiet-river.trycloudflare.com"},
			{Name: "User-Agent", Value: simulate.UserAgent},
			{Name: inspector.SignatureHeader, Value: inspector.Sign([]byte(roundTripSecret), body)},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "X-Forwarded-Proto", Value: "https"},
		}
		if i == 1 {
			hs = append(hs, inspector.Header{Name: "Authorization", Value: "Bearer tok-secret"})
		}
		hs = append(hs, inspector.Header{Name: "Content-Length", Value: strconv.Itoa(len(body))})
		d := &inspector.Delivery{ID: id, ReceivedAt: at.Add(time.Duration(id) * time.Second), Method: "POST", Path: "/webhooks",
			Headers: hs, Body: body, BodyLength: int64(len(body)), RemoteAddr: "127.0.0.1:5555", Status: 200}
		if i == 1 {
			d.Query = "x=1&y=%27two%27"
		}
		recs = append(recs, &inspector.Record{Delivery: d})
	}
	return recs
}

// without returns hs without the named headers (any case).
func without(hs []inspector.Header, names ...string) []inspector.Header {
	var out []inspector.Header
	for _, h := range hs {
		drop := false
		for _, n := range names {
			drop = drop || strings.EqualFold(h.Name, n)
		}
		if !drop {
			out = append(out, h)
		}
	}
	return out
}

// TestEveryFormatReadsBack: what each export format writes, import reads
// back: bodies byte for byte, headers in order (what the format carries of
// them), method, path and query.
func TestEveryFormatReadsBack(t *testing.T) {
	recs := roundTripRecords()
	for _, f := range export.Formats() {
		t.Run(string(f), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			opts := export.Options{Format: f, Out: out, Reveal: true}
			if f == export.Fixtures {
				opts.Secret = []byte(roundTripSecret)
			}
			if _, err := export.Export(context.Background(), export.Records(recs...), opts); err != nil {
				t.Fatal(err)
			}
			format, ds, skipped, err := export.Read(out)
			if err != nil {
				t.Fatalf("Read: %v (skipped %q)", err, skipped)
			}
			if format != f || len(skipped) > 0 {
				t.Errorf("read as %s, skipped %q", format, skipped)
			}
			if f == export.Fixtures {
				// One fixture per event type, each a delivery signed with the
				// export's secret: the file's body and headers, exactly.
				if len(ds) != 4 {
					t.Fatalf("%d fixtures read back, want 4 (one per type)", len(ds))
				}
				for _, d := range ds {
					sig, _ := d.Header(inspector.SignatureHeader)
					cl, _ := d.Header("Content-Length")
					if v := inspector.Verify(sig, true, d.Body, [][]byte{[]byte(roundTripSecret)}); v.Status != inspector.SignatureValid || cl != strconv.Itoa(len(d.Body)) {
						t.Errorf("fixture read back: %s, Content-Length %s for %d bytes", v.Reason, cl, len(d.Body))
					}
				}
				return
			}
			if len(ds) != len(recs) {
				t.Fatalf("%d deliveries read back, want %d", len(ds), len(recs))
			}
			for i, d := range ds {
				want := recs[i].Delivery
				if !bytes.Equal(d.Body, want.Body) {
					t.Errorf("delivery %d: body %q, want %q", want.ID, d.Body, want.Body)
				}
				if d.Method != want.Method || d.Path != want.Path || d.Query != want.Query {
					t.Errorf("delivery %d: %s %s ? %s, want %s %s ? %s", want.ID, d.Method, d.Path, d.Query, want.Method, want.Path, want.Query)
				}
				wantHs, gotHs := want.Headers, d.Headers
				if f == export.Curl {
					// curl writes Host and Content-Length itself: the folder
					// carries the other headers, the import adds curl's.
					wantHs, gotHs = without(wantHs, "Host", "Content-Length"), without(gotHs, "Host", "Content-Length")
					if cl, _ := d.Header("Content-Length"); cl != strconv.Itoa(len(want.Body)) {
						t.Errorf("delivery %d: Content-Length %q", want.ID, cl)
					}
				}
				if !slices.Equal(gotHs, wantHs) {
					t.Errorf("delivery %d: headers\n%q\nwant\n%q", want.ID, gotHs, wantHs)
				}
				if f != export.HAR && !d.ReceivedAt.Equal(want.ReceivedAt) {
					t.Errorf("delivery %d: received %s, want %s", want.ID, d.ReceivedAt, want.ReceivedAt)
				}
			}
		})
	}
}

// TestSamplesReadBack: a samples folder imports as one delivery per
// sample, with the file's bytes and the headers file's headers in order.
func TestSamplesReadBack(t *testing.T) {
	g := simulate.New(9)
	var samples []export.Sample
	for _, typ := range []string{catalog.TypeMediaReady, catalog.TypeViewingPlay} {
		body := catalog.Pretty(g.Message(g.Event(typ)).Body())
		samples = append(samples, export.Sample{Type: typ, Body: body, Headers: simulate.HeadersFor(body, []byte(roundTripSecret))})
	}
	dir := filepath.Join(t.TempDir(), "samples")
	if err := export.WriteSamples(dir, simulate.UserAgent, true, samples); err != nil {
		t.Fatal(err)
	}
	format, ds, skipped, err := export.Read(dir)
	if err != nil || format != export.Samples || len(skipped) > 0 || len(ds) != len(samples) {
		t.Fatalf("Read = %s, %d deliveries, skipped %q, %v", format, len(ds), skipped, err)
	}
	for i, d := range ds {
		if !bytes.Equal(d.Body, samples[i].Body) || !slices.Equal(d.Headers, samples[i].Headers) || d.Method != "POST" {
			t.Errorf("sample %s read back as %s %q %q", samples[i].Type, d.Method, d.Headers, d.Body)
		}
	}
}

// TestReadSaysWhatTheFolderHolds: a folder with nothing to import is not
// called empty when it is not.
func TestReadSaysWhatTheFolderHolds(t *testing.T) {
	dir := t.TempDir()
	if _, _, _, err := export.Read(dir); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty folder: %v", err)
	}
	for name, data := range map[string]string{"notes.txt": "hi", "other.json": `{"a":1}`} {
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _, err := export.Read(dir)
	if err == nil || strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "1 more skipped") {
		t.Errorf("folder of other files: %v", err)
	}
}

// TestCurlImportIsWhatCurlSends runs a curl export's replay.sh with real
// curl against Hookscope's receiver, and holds the import of the same
// folder to what the receiver recorded: headers in order (Host, the
// script's, Content-Length), body, method, path and query.
func TestCurlImportIsWhatCurlSends(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	db, err := storage.Open(filepath.Join(t.TempDir(), "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eng := inspector.NewEngine(db, inspector.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := inspector.ServeListener(ln, eng.Handler(), inspector.ServerOptions{})
	defer srv.Shutdown(context.Background())

	recs := roundTripRecords()
	dir := filepath.Join(t.TempDir(), "curl")
	if _, err := export.Export(context.Background(), export.Records(recs...), export.Options{Format: export.Curl, Out: dir, Reveal: true, Target: "http://" + srv.Addr() + "/webhooks"}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", filepath.Join(dir, "replay.sh")).CombinedOutput(); err != nil {
		t.Fatalf("replay.sh: %v\n%s", err, out)
	}
	_, imported, _, err := export.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []*inspector.Delivery
	if err := db.Each(context.Background(), storage.Filter{}, func(r *inspector.Record) error {
		got = append(got, r.Delivery)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || len(imported) != len(recs) {
		t.Fatalf("received %d, imported %d, want %d", len(got), len(imported), len(recs))
	}
	for i, d := range imported {
		r := got[i]
		if !bytes.Equal(d.Body, r.Body) || d.Method != r.Method || d.Path != r.Path || d.Query != r.Query || !slices.Equal(d.Headers, r.Headers) {
			t.Errorf("delivery %d: imported %s %s?%s %q\nreceived %s %s?%s %q", i+1, d.Method, d.Path, d.Query, d.Headers, r.Method, r.Path, r.Query, r.Headers)
		}
	}
}

func writeFile(p, data string) error { return os.WriteFile(p, []byte(data), 0o600) }
