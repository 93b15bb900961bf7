package export

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/internal/redact"
)

const (
	hookSecret   = "whsec-fixture-SECRET-42"
	bearerToken  = "tok-ACCESS-7f3a9c"
	cookieValue  = "sess-COOKIE-88b1"
	queryToken   = "qtok-BEARER-1d2e"
	signingKey   = "signing-key-of-capture"
	notUTF8Bytes = "\xff\xfe\x00binary\x80"
)

var secretsInTest = []string{hookSecret, bearerToken, cookieValue, queryToken, signingKey}

// testRecords returns a varied selection: a batch, single events of
// several types, a delivery with credentials, a non-UTF-8 body, a
// not-analyzed one.
func testRecords() []*inspector.Record {
	g := simulate.New(11)
	at := time.Date(2026, 3, 2, 9, 30, 0, 123456789, time.UTC)
	mk := func(id int64, body []byte, extra ...inspector.Header) *inspector.Record {
		hs := []inspector.Header{
			{Name: "Host", Value: "quiet-river.trycloudflare.com"},
			{Name: "User-Agent", Value: simulate.UserAgent},
			{Name: "Content-Length", Value: strconv.Itoa(len(body))},
		}
		hs = append(hs, extra...)
		hs = append(hs,
			inspector.Header{Name: "x-service-signature", Value: inspector.Sign([]byte(signingKey), body)},
			inspector.Header{Name: "Content-Type", Value: "application/json"},
			inspector.Header{Name: "X-Forwarded-Proto", Value: "https"},
		)
		d := &inspector.Delivery{ID: id, ReceivedAt: at.Add(time.Duration(id) * time.Second), Method: "POST", Path: "/webhooks",
			Headers: hs, Body: body, BodyLength: int64(len(body)), RemoteAddr: "127.0.0.1:5555", Status: 200, Source: "receiver"}
		a := &inspector.Analysis{DeliveryID: id, Signature: inspector.SignatureResult{Status: inspector.SignatureValid, Reason: "matches secret #1"}}
		if m, err := inspector.DecodeMessage(body); err == nil {
			a.HookUUID = m.HookUUID
			for i, e := range m.Events {
				a.Events = append(a.Events, inspector.EventAnalysis{Index: i, UUID: e.UUID, Type: e.Type, GeneratedRaw: e.GeneratedRaw, Raw: e.Raw})
			}
		}
		return &inspector.Record{Delivery: d, Analysis: a}
	}
	batch := g.Message(g.Event(catalog.TypeMediaCreated), g.Event(catalog.TypeMediaProcessing))
	recs := []*inspector.Record{
		mk(1, batch.Body()),
		mk(2, g.Message(g.Event(catalog.TypeMediaReady)).Body(),
			inspector.Header{Name: "Authorization", Value: "Bearer " + bearerToken},
			inspector.Header{Name: "Cookie", Value: "session=" + cookieValue + "; theme=dark"}),
		mk(3, g.Message(g.Event(catalog.TypeLiveEventRegistration)).Body()),
		mk(4, []byte(notUTF8Bytes)),
		mk(5, g.Message(g.Event(catalog.TypeMediaCreated)).Body()),
	}
	recs[1].Delivery.Query = "access_token=" + queryToken + "&x=1"
	recs[4].Analysis = nil
	return recs
}

func allFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = b
		}
		return nil
	})
	return out
}

func TestNoSecretInAnyExport(t *testing.T) {
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if !f.IsFolder() {
				out += "." + string(f)
			}
			sum, err := Export(context.Background(), Records(testRecords()...), Options{Format: f, Out: out, Secret: []byte(hookSecret),
				Target: "http://127.0.0.1:9/hook?access_token=" + queryToken})
			if err != nil {
				t.Fatal(err)
			}
			files := allFiles(t, dir)
			if len(files) == 0 || len(sum.Files) != len(files) {
				t.Fatalf("summary lists %d files, %d written", len(sum.Files), len(files))
			}
			for p, b := range files {
				for _, s := range secretsInTest {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("%s contains the secret %q", p, s)
					}
				}
			}
		})
	}
	// With --reveal the credentials are kept, never the fixture secret.
	dir := t.TempDir()
	if _, err := Export(context.Background(), Records(testRecords()...), Options{Format: HAR, Out: filepath.Join(dir, "x.har"), Reveal: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "x.har"))
	if !bytes.Contains(b, []byte(bearerToken)) || !bytes.Contains(b, []byte(queryToken)) {
		t.Error("reveal did not keep the credentials")
	}
}

// validateHAR checks the HAR 1.2 structure: every required field present
// with the right JSON type.
func validateHAR(t *testing.T, data []byte) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("HAR is not JSON: %v", err)
	}
	type want map[string]string // field -> "string", "number", "object", "array"
	check := func(where string, obj any, fields want) map[string]any {
		m, ok := obj.(map[string]any)
		if !ok {
			t.Fatalf("%s is %T, want an object", where, obj)
		}
		for k, typ := range fields {
			v, ok := m[k]
			if !ok {
				t.Errorf("%s.%s is missing", where, k)
				continue
			}
			var got string
			switch v.(type) {
			case string:
				got = "string"
			case float64:
				got = "number"
			case map[string]any:
				got = "object"
			case []any:
				got = "array"
			default:
				got = "other"
			}
			if got != typ {
				t.Errorf("%s.%s is %s, want %s", where, k, got, typ)
			}
		}
		return m
	}
	nv := func(where string, arr any) {
		for i, x := range arr.([]any) {
			check(where+"["+strconv.Itoa(i)+"]", x, want{"name": "string", "value": "string"})
		}
	}
	log := check("log", doc["log"], want{"version": "string", "creator": "object", "entries": "array"})
	if log["version"] != "1.2" {
		t.Errorf("log.version = %v", log["version"])
	}
	check("log.creator", log["creator"], want{"name": "string", "version": "string"})
	for i, e := range log["entries"].([]any) {
		w := "entries[" + strconv.Itoa(i) + "]"
		em := check(w, e, want{"startedDateTime": "string", "time": "number", "request": "object", "response": "object", "cache": "object", "timings": "object"})
		if _, err := time.Parse(time.RFC3339Nano, em["startedDateTime"].(string)); err != nil {
			t.Errorf("%s.startedDateTime: %v", w, err)
		}
		req := check(w+".request", em["request"], want{"method": "string", "url": "string", "httpVersion": "string", "cookies": "array",
			"headers": "array", "queryString": "array", "headersSize": "number", "bodySize": "number"})
		nv(w+".request.headers", req["headers"])
		nv(w+".request.queryString", req["queryString"])
		nv(w+".request.cookies", req["cookies"])
		if pd, ok := req["postData"]; ok {
			check(w+".request.postData", pd, want{"mimeType": "string", "text": "string"})
		}
		resp := check(w+".response", em["response"], want{"status": "number", "statusText": "string", "httpVersion": "string", "cookies": "array",
			"headers": "array", "content": "object", "redirectURL": "string", "headersSize": "number", "bodySize": "number"})
		check(w+".response.content", resp["content"], want{"size": "number", "mimeType": "string"})
		tm := check(w+".timings", em["timings"], want{"send": "number", "wait": "number", "receive": "number"})
		for _, k := range []string{"send", "wait", "receive"} {
			if tm[k].(float64) < 0 {
				t.Errorf("%s.timings.%s is negative (only optional timings may be -1)", w, k)
			}
		}
	}
}

func TestHARStructureAndRoundTrip(t *testing.T) {
	recs := testRecords()
	var buf bytes.Buffer
	if err := WriteHAR(&buf, recs, Options{Reveal: true, Version: "1.0"}); err != nil {
		t.Fatal(err)
	}
	validateHAR(t, buf.Bytes())
	p := filepath.Join(t.TempDir(), "capture.har")
	os.WriteFile(p, buf.Bytes(), 0o644)
	format, ds, skipped, err := Read(p)
	if err != nil || format != HAR || len(skipped) != 0 {
		t.Fatalf("read: %v %s %v", err, format, skipped)
	}
	if len(ds) != len(recs) {
		t.Fatalf("read %d deliveries, want %d", len(ds), len(recs))
	}
	for i, d := range ds {
		o := recs[i].Delivery
		if !bytes.Equal(d.Body, o.Body) {
			t.Errorf("delivery %d: body differs: %q vs %q", o.ID, d.Body, o.Body)
		}
		if !reflect.DeepEqual(d.Headers, o.Headers) {
			t.Errorf("delivery %d: headers differ:\n%v\n%v", o.ID, d.Headers, o.Headers)
		}
		if d.Method != o.Method || d.Path != o.Path || d.Query != o.Query || d.RemoteAddr != o.RemoteAddr ||
			d.Status != o.Status || !d.ReceivedAt.Equal(o.ReceivedAt) || d.BodyLength != o.BodyLength || d.Source != "import" {
			t.Errorf("delivery %d: %+v\nwant %+v", o.ID, d, o)
		}
	}
	if !strings.Contains(buf.String(), `"name": "session",`+"\n"+`              "value": "`+cookieValue) {
		t.Error("HAR cookies not parsed from the Cookie header")
	}
	if !strings.Contains(buf.String(), `"encoding": "base64"`) || !strings.Contains(buf.String(), `"url": "https://quiet-river.trycloudflare.com/webhooks?access_token=`) {
		t.Error("HAR lacks the base64 body or the https URL")
	}
}

func TestImportBrowserHAR(t *testing.T) {
	body := `{"hook":{"uuid":"abc"},"events":[]}`
	har := `{"log":{"version":"1.2","creator":{"name":"WebInspector","version":"537.36"},"pages":[],"entries":[
	 {"startedDateTime":"2026-03-02T10:00:00.000Z","time":12.5,"request":{"method":"GET","url":"https://x.example/","httpVersion":"h2","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"response":{"status":200,"statusText":"","httpVersion":"h2","headers":[],"cookies":[],"content":{"size":0,"mimeType":"text/html"},"redirectURL":"","headersSize":-1,"bodySize":-1},"cache":{},"timings":{"send":0,"wait":1,"receive":1}},
	 {"startedDateTime":"2026-03-02T10:00:01.000Z","time":20,"request":{"method":"POST","url":"https://hooks.example/in?a=b","httpVersion":"h2","headers":[{"name":":authority","value":"hooks.example"},{"name":":method","value":"POST"},{"name":"content-type","value":"application/json"},{"name":"x-service-signature","value":"00"}],"queryString":[{"name":"a","value":"b"}],"cookies":[],"headersSize":-1,"bodySize":34,"postData":{"mimeType":"application/json","text":` + strconv.Quote(body) + `}},"response":{"status":401,"statusText":"","httpVersion":"h2","headers":[],"cookies":[],"content":{"size":0,"mimeType":"text/plain"},"redirectURL":"","headersSize":-1,"bodySize":-1},"cache":{},"timings":{"send":0,"wait":1,"receive":1}}]}}`
	p := filepath.Join(t.TempDir(), "chrome.har")
	os.WriteFile(p, []byte(har), 0o644)
	ing := &fakeIngester{}
	rep, err := Import(context.Background(), p, ing)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != 1 || len(rep.Skipped) != 1 || rep.Format != HAR {
		t.Fatalf("report %+v", rep)
	}
	d := ing.got[0]
	want := []inspector.Header{{Name: "Host", Value: "hooks.example"}, {Name: "content-type", Value: "application/json"}, {Name: "x-service-signature", Value: "00"}}
	if string(d.Body) != body || d.Path != "/in" || d.Query != "a=b" || d.Status != 401 || !reflect.DeepEqual(d.Headers, want) || d.Source != "import" {
		t.Errorf("imported %+v", d)
	}
}

type fakeIngester struct {
	mu  sync.Mutex
	got []*inspector.Delivery
}

func (f *fakeIngester) Ingest(ctx context.Context, d *inspector.Delivery) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, d)
	return int64(len(f.got)), nil
}

func TestNDJSONRoundTrip(t *testing.T) {
	recs := testRecords()
	recs[2].Delivery.Truncated = true
	recs[2].Delivery.BodyLength = 99999
	p := filepath.Join(t.TempDir(), "x.ndjson")
	if _, err := Export(context.Background(), Records(recs...), Options{Format: NDJSON, Out: p, Reveal: true}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if n := bytes.Count(data, []byte("\n")); n != len(recs) {
		t.Errorf("%d lines, want %d", n, len(recs))
	}
	var first map[string]any
	json.Unmarshal(bytes.SplitN(data, []byte("\n"), 2)[0], &first)
	if a, ok := first["analysis"].(map[string]any); !ok || a["signature"] != "valid" || len(a["events"].([]any)) != 2 {
		t.Errorf("first line's analysis: %v", first["analysis"])
	}
	format, ds, _, err := Read(p)
	if err != nil || format != NDJSON {
		t.Fatal(err, format)
	}
	for i, d := range ds {
		o := *recs[i].Delivery
		o.ID, o.Source = 0, "import"
		if !reflect.DeepEqual(*d, o) {
			t.Errorf("delivery %d differs:\n got %+v\nwant %+v", i, *d, o)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	os.WriteFile(bad, []byte("{\"method\":\"POST\"}\nnot json\n"), 0o644)
	if _, _, _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad NDJSON: %v", err)
	}
}

func TestFixtures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fixtures")
	sum, err := Export(context.Background(), Records(testRecords()...), Options{Format: Fixtures, Out: dir, Secret: []byte(hookSecret)})
	if err != nil {
		t.Fatal(err)
	}
	// created (first seen in the batch), processing, ready, registration.
	names := []string{"README.md", "live_event.registration.json", "media.created.json", "media.processing.json", "media.ready.json"}
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) {
		t.Errorf("files %v, want %v", got, names)
	}
	if len(sum.Skipped) != 2 { // the binary delivery, and the types not covered
		t.Errorf("skipped %v", sum.Skipped)
	}
	for _, n := range names[1:] {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		var fx struct {
			Type    string            `json:"type"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		}
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatal(err)
		}
		sig := fx.Headers[inspector.SignatureHeader]
		if v := inspector.Verify(sig, true, []byte(fx.Body), [][]byte{[]byte(hookSecret)}); v.Status != inspector.SignatureValid {
			t.Errorf("%s: signature %s", n, v.Reason)
		}
		m, err := inspector.DecodeMessage([]byte(fx.Body))
		if err != nil || len(m.Events) != 1 || m.Events[0].Type != fx.Type || fx.Headers["Content-Length"] != strconv.Itoa(len(fx.Body)) {
			t.Errorf("%s: body %v %v", n, err, fx.Headers)
		}
	}
	// media.ready came alone: its fixture is the delivery's exact body.
	b, _ := os.ReadFile(filepath.Join(dir, "media.ready.json"))
	var fx Fixture
	json.Unmarshal(b, &fx)
	if fx.Body != string(testRecords()[1].Delivery.Body) {
		t.Error("a single-event delivery's fixture is not its exact body")
	}
	// Round trip through import.
	ing := &fakeIngester{}
	rep, err := Import(context.Background(), dir, ing)
	if err != nil || rep.Imported != 4 || rep.Format != Fixtures {
		t.Fatalf("import: %v %+v", err, rep)
	}
	for _, d := range ing.got {
		sig, ok := d.Header(inspector.SignatureHeader)
		if v := inspector.Verify(sig, ok, d.Body, [][]byte{[]byte(hookSecret)}); v.Status != inspector.SignatureValid {
			t.Errorf("imported fixture: signature %s", v.Reason)
		}
		if d.Headers[0].Name != "User-Agent" || d.Headers[1].Name != inspector.SignatureHeader {
			t.Errorf("header order lost: %v", d.Headers)
		}
	}
	if _, err := Export(context.Background(), Records(testRecords()...), Options{Format: Fixtures, Out: t.TempDir()}); err == nil {
		t.Error("fixtures without a secret")
	}
	// Limited to one type, a batch gives only that type's fixture.
	only := filepath.Join(t.TempDir(), "only")
	sum, err = Export(context.Background(), Records(testRecords()[0]), Options{Format: Fixtures, Out: only, Secret: []byte(hookSecret), Types: []string{catalog.TypeMediaProcessing}})
	if err != nil || len(sum.Files) != 2 || len(sum.Skipped) != 0 || filepath.Base(sum.Files[0]) != "media.processing.json" {
		t.Errorf("type-limited fixtures: %v %+v", err, sum)
	}
}

func TestJSONFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "json")
	if _, err := Export(context.Background(), Records(testRecords()...), Options{Format: JSON, Out: dir}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "delivery-000002.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"body": {`, `"hook": {`, `"value": "[REDACTED]"`, `"query": "access_token=%5BREDACTED%5D&x=1"`, `"signature": "valid"`} {
		if !strings.Contains(s, want) {
			t.Errorf("delivery-000002.json lacks %s:\n%s", want, s)
		}
	}
	b, _ = os.ReadFile(filepath.Join(dir, "delivery-000004.json"))
	var p prettyDelivery
	json.Unmarshal(b, &p)
	if p.BodyBase64 == "" || p.Body != nil {
		t.Errorf("binary body: %s", b)
	}
	// A second export into the same folder is refused; nothing is lost.
	if _, err := Export(context.Background(), Records(testRecords()...), Options{Format: JSON, Out: dir}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("export into a non-empty folder: %v", err)
	}
	f := filepath.Join(t.TempDir(), "x.har")
	os.WriteFile(f, []byte("mine"), 0o644)
	if _, err := Export(context.Background(), Records(testRecords()...), Options{Format: HAR, Out: f}); err == nil {
		t.Error("an existing file was overwritten")
	}
	if b, _ := os.ReadFile(f); string(b) != "mine" {
		t.Error("the existing file changed")
	}
	if _, err := Export(context.Background(), Records(), Options{Format: HAR, Out: f + "2"}); err == nil {
		t.Error("an empty selection exported")
	}
}

func TestCurlScriptIsByteExact(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	type got struct {
		method, uri string
		headers     http.Header
		body        []byte
	}
	var mu sync.Mutex
	var gots []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gots = append(gots, got{r.Method, r.RequestURI, r.Header.Clone(), b})
		mu.Unlock()
	}))
	defer srv.Close()
	recs := testRecords()
	// A large body goes through printf rather than the command line.
	recs[2].Delivery.Body = append(bytes.Repeat([]byte(" "), 200<<10), recs[2].Delivery.Body...)
	recs[3].Delivery.Method = http.MethodPut
	dir := filepath.Join(t.TempDir(), "curl")
	sum, err := Export(context.Background(), Records(recs...), Options{Format: Curl, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Files) != 1 || filepath.Base(sum.Files[0]) != "replay.sh" {
		t.Fatalf("files = %v, want replay.sh alone (each command carries its body)", sum.Files)
	}
	for i, url := range []string{srv.URL + "/in", ""} {
		mu.Lock()
		gots = nil
		mu.Unlock()
		cmd := exec.Command("sh", filepath.Join(dir, "replay.sh"))
		if url != "" {
			cmd.Args = append(cmd.Args, url)
		} else {
			cmd.Env = append(cmd.Environ(), URLVar+"="+srv.URL+"/env")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("replay.sh: %v\n%s", err, out)
		}
		if len(gots) != len(recs) {
			t.Fatalf("server got %d requests, want %d\n%s", len(gots), len(recs), out)
		}
		for j, g := range gots {
			d := recs[j].Delivery
			if !bytes.Equal(g.body, d.Body) {
				t.Errorf("delivery %d: body differs", d.ID)
			}
			sig, _ := d.Header(inspector.SignatureHeader)
			if g.headers.Get(inspector.SignatureHeader) != sig || g.headers.Get("User-Agent") != simulate.UserAgent || g.headers.Get("Accept") != "" {
				t.Errorf("delivery %d: headers %v", d.ID, g.headers)
			}
			path := []string{"/in", "/env"}[i]
			if q := redact.Query(d.Query); q != "" {
				path += "?" + q
			}
			if g.method != d.Method || g.uri != path {
				t.Errorf("delivery %d: %s %s, want %s %s", d.ID, g.method, g.uri, d.Method, path)
			}
		}
		if gots[1].headers.Get("Authorization") != redact.Placeholder {
			t.Errorf("Authorization = %q, want it redacted", gots[1].headers.Get("Authorization"))
		}
	}
}

func TestCurlScriptKeepsBodyTextOutOfItsCommands(t *testing.T) {
	recs := testRecords()
	recs[0].Analysis.Events[0].Type = "media.created\ntouch pwned"
	dir := filepath.Join(t.TempDir(), "curl")
	if _, err := Export(context.Background(), Records(recs...), Options{Format: Curl, Out: dir}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "replay.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("# delivery 1, received 2026-03-02 09:30:01Z: media.created?touch pwned,")) {
		t.Fatalf("the event type broke out of its comment:\n%s", b[:400])
	}
}

// TestExportFilesAreOwnerOnly: exports hold whole bodies, so files are
// 0600 (the script 0700) and the folders Hookscope creates 0700, like the
// store; also when an export overwrites older, wider files.
func TestExportFilesAreOwnerOnly(t *testing.T) {
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "new", "out")
			if !f.IsFolder() {
				out += "." + string(f)
			}
			opts := Options{Format: f, Out: out, Secret: []byte(hookSecret)}
			if _, err := Export(context.Background(), Records(testRecords()...), opts); err != nil {
				t.Fatal(err)
			}
			check := func() {
				t.Helper()
				root := filepath.Dir(out)
				filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						t.Fatal(err)
					}
					info, _ := d.Info()
					want := os.FileMode(0o600)
					switch {
					case d.IsDir():
						want = 0o700 | fs.ModeDir
					case filepath.Base(p) == "replay.sh":
						want = 0o700
					}
					if info.Mode() != want {
						t.Errorf("%s: mode %v, want %v", p, info.Mode(), want)
					}
					return nil
				})
			}
			check()
			// Overwriting files that were world-readable leaves them owner-only.
			filepath.WalkDir(filepath.Dir(out), func(p string, d fs.DirEntry, err error) error {
				if !d.IsDir() {
					os.Chmod(p, 0o644)
				}
				return nil
			})
			opts.Overwrite = true
			if _, err := Export(context.Background(), Records(testRecords()...), opts); err != nil {
				t.Fatal(err)
			}
			check()
		})
	}
}

// TestSignatureHeaderIsNotRedacted: an export keeps X-Service-Signature
// (an HMAC reveals no key, and the consumer needs it to verify).
func TestSignatureHeaderIsNotRedacted(t *testing.T) {
	if redact.IsSecretName(inspector.SignatureHeader) {
		t.Errorf("%s is redacted", inspector.SignatureHeader)
	}
}

func TestReadHARWithLogNotFirst(t *testing.T) {
	p := filepath.Join(t.TempDir(), "odd.har")
	os.WriteFile(p, []byte(`{"comment":"x","log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[{"startedDateTime":"2026-03-02T10:00:00Z","request":{"method":"POST","url":"http://h/p","headers":[],"postData":{"mimeType":"application/json","text":"{}"}},"response":{"status":200}}]}}`), 0o644)
	format, ds, _, err := Read(p)
	if err != nil || format != HAR || len(ds) != 1 || string(ds[0].Body) != "{}" {
		t.Errorf("read: %v %s %d", err, format, len(ds))
	}
}
