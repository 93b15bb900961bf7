package ui

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/replay"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/storage"
)

// replayHarness is a window over a real temporary store and engine, so
// the views run the real replay, export and import code.
type replayHarness struct {
	app fyne.App
	db  *storage.DB
	eng *inspector.Engine
	win *mainWindow
	dir string
}

const capturedSecret = "captured-secret-1"

func newReplayHarness(t *testing.T, n int) *replayHarness {
	t.Helper()
	return newStoreHarness(t, func(ctx context.Context, eng *inspector.Engine) {
		g := simulate.New(7)
		types := []string{"media.created", "media.ready", "media.updated", "viewing_session.play"}
		for i := 0; i < n; i++ {
			ingestBody(t, eng, g.Message(g.Event(types[i%len(types)])).Body(), capturedSecret, i)
		}
	})
}

// newStoreHarness is a window over a real store in a temporary folder and
// a real engine (secret capturedSecret), after seed ingested what the test
// needs and the engine analyzed it: for tests whose behaviour is the
// store's (filters, counts) or the real engines'.
func newStoreHarness(t *testing.T, seed func(ctx context.Context, eng *inspector.Engine)) *replayHarness {
	t.Helper()
	dir := t.TempDir()
	db, err := storage.Open(filepath.Join(dir, "hooks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	secrets := [][]byte{[]byte(capturedSecret)}
	eng := inspector.NewEngine(db, inspector.Options{Secrets: secrets})
	ctx := context.Background()
	seed(ctx, eng)
	if err := eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	h := &replayHarness{app: test.NewTempApp(t), db: db, eng: eng, dir: dir}
	svc := Services{Store: db, Engine: eng, StorePath: db.Path(), Version: "test"}
	w := h.app.NewWindow("Hookscope")
	w.Resize(fyne.NewSize(1280, 800))
	h.win = newMainWindow(h.app, w, svc, station.DefaultSettings(), secrets, nil, true)
	t.Cleanup(func() { h.win.close(); w.Close() })
	return h
}

// ingestBody stores body as the i-th delivery, signed with secret.
func ingestBody(t *testing.T, eng *inspector.Engine, body []byte, secret string, i int) {
	t.Helper()
	d := &inspector.Delivery{ReceivedAt: time.Date(2026, 11, 22, 3, 0, i, 0, time.UTC), Method: "POST", Path: "/webhooks",
		Headers: simulate.HeadersFor(body, []byte(secret)), Body: body, BodyLength: int64(len(body)), RemoteAddr: "127.0.0.1:5000", Status: 200}
	if _, err := eng.Ingest(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// consumer is a webhook consumer that verifies signatures with its secret
// and keeps what it received.
type consumer struct {
	secret []byte
	mu     sync.Mutex
	bodies [][]byte
}

func (c *consumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, body)
	c.mu.Unlock()
	sig := r.Header.Get("X-Service-Signature")
	res := inspector.Verify(sig, sig != "", body, [][]byte{c.secret})
	if res.Status != inspector.SignatureValid {
		http.Error(w, `{"error":"bad signature"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true,"processed":1}`))
}

func (c *consumer) received() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.bodies...)
}

func newConsumer(t *testing.T, secret string) (*consumer, string) {
	t.Helper()
	c := &consumer{secret: []byte(secret)}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL + "/webhooks"
}

// selectNewest shows the newest delivery in the detail pane.
func (h *replayHarness) selectNewest(t *testing.T) *inspector.Record {
	t.Helper()
	h.win.deliveries.List.Select(0)
	rec := h.win.deliveries.Detail.rec
	if rec == nil {
		t.Fatal("no delivery in the detail pane")
	}
	return rec
}

// newestReplay opens a replay view of the newest delivery without going
// through the detail pane, whose rendering dominates these tests under -race.
func (h *replayHarness) newestReplay(t *testing.T) (*replayView, *inspector.Record) {
	t.Helper()
	rows, err := h.db.List(context.Background(), storage.Filter{}, 1)
	if err != nil || len(rows) == 0 {
		t.Fatalf("no delivery: %v", err)
	}
	rec, err := h.db.Get(context.Background(), rows[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return newReplayView(h.win, h.db, rec.Delivery), rec
}

func TestReplayShowsResultInlineAndRemembersTarget(t *testing.T) {
	h := newReplayHarness(t, 2)
	cons, url := newConsumer(t, capturedSecret)
	rec := h.selectNewest(t)

	v := h.win.openReplay()
	if v == nil {
		t.Fatal("no replay dialog")
	}
	if v.Target.Text != "" {
		t.Fatalf("target pre-filled with %q before any replay", v.Target.Text)
	}
	test.Type(v.Target, url)
	test.Tap(v.Send)

	if v.last == nil || v.last.Status != 200 {
		t.Fatalf("result = %+v, headline %q", v.last, v.Headline.Text)
	}
	if !strings.Contains(v.Headline.Text, "200 OK") {
		t.Fatalf("headline = %q", v.Headline.Text)
	}
	if got := v.Detail.Text(); !strings.Contains(got, `"processed": 1`) || !strings.Contains(got, "Content-Type: application/json") {
		t.Fatalf("result detail lacks the pretty answer and headers:\n%s", got)
	}
	if v.Detail.Scroll != fyne.ScrollBoth {
		t.Fatal("the answer does not scroll: a long one is drawn past its pane")
	}
	got := cons.received()
	if len(got) != 1 || !bytes.Equal(got[0], rec.Delivery.Body) {
		t.Fatalf("consumer got %d bodies; byte-exact = %v", len(got), len(got) == 1 && bytes.Equal(got[0], rec.Delivery.Body))
	}
	if len(v.history) != 1 || v.history[0].Status != 200 {
		t.Fatalf("history = %v", v.history)
	}
	if !strings.HasPrefix(v.HistoryTitle.Text, "Replay history: 1 ") {
		t.Fatalf("history title = %q", v.HistoryTitle.Text)
	}

	// The next dialog offers the same target and shows the earlier replay.
	again := h.win.openReplay()
	if again.Target.Text != url {
		t.Fatalf("remembered target = %q, want %q", again.Target.Text, url)
	}
	if len(again.history) != 1 {
		t.Fatalf("history in a new dialog = %d, want 1", len(again.history))
	}
}

func TestReplayReportsNetworkErrorInPlainWords(t *testing.T) {
	h := newReplayHarness(t, 1)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/webhooks"
	srv.Close() // nothing listens there now
	v, _ := h.newestReplay(t)
	test.Type(v.Target, url)
	test.Tap(v.Send)
	if v.last == nil || v.last.Status != 0 {
		t.Fatalf("result = %+v", v.last)
	}
	// The words are the replay's own (internal/networds), not the window's.
	if !strings.Contains(v.Headline.Text, "No answer: nothing is listening on "+srv.Listener.Addr().String()+" (connection refused); start it") {
		t.Fatalf("headline = %q", v.Headline.Text)
	}
}

func TestReplayResignedAndEditedBody(t *testing.T) {
	h := newReplayHarness(t, 1)
	const devSecret = "dev-secret-for-resign-42"
	cons, url := newConsumer(t, devSecret)
	v, _ := h.newestReplay(t)
	test.Type(v.Target, url)

	// Byte-exact carries the captured signature, which the consumer's
	// other secret refuses.
	test.Tap(v.Send)
	if v.last == nil || v.last.Status != 401 || !strings.Contains(v.Headline.Text, "not a 2xx") {
		t.Fatalf("byte-exact: result %+v, headline %q", v.last, v.Headline.Text)
	}

	v.Mode.SetSelected(modeResign)
	test.Tap(v.Send)
	if !strings.Contains(v.Headline.Text, "secret") || v.last.Status != 401 {
		t.Fatalf("re-signing without a secret was not refused: %q", v.Headline.Text)
	}
	test.Type(v.Secret, devSecret)
	test.Tap(v.Send)
	if v.last.Status != 200 || v.last.Mode != replay.ModeResigned {
		t.Fatalf("re-signed: %+v / %q", v.last, v.Headline.Text)
	}

	// An edited body that is not JSON is refused with where it breaks, and nothing is sent.
	v.Mode.SetSelected(modeEdited)
	if v.Tabs.SelectedIndex() != 1 {
		t.Fatal("edited mode does not show the editor")
	}
	sent := len(cons.received())
	v.Body.SetText("{\"events\": [\n  {\"uuid\": \"x\",}\n]}")
	if !strings.Contains(v.BodyStatus.Text, "byte offset 28") || !strings.Contains(v.BodyStatus.Text, "line 2") {
		t.Fatalf("validation as you type = %q", v.BodyStatus.Text)
	}
	test.Tap(v.Send)
	if !strings.Contains(v.Headline.Text, "not sent") || !strings.Contains(v.Headline.Text, "offset 28") {
		t.Fatalf("headline = %q", v.Headline.Text)
	}
	if len(cons.received()) != sent {
		t.Fatal("an invalid body was sent")
	}

	edited := `{"hook":{"uuid":"h-edit"},"events":[]}`
	v.Body.SetText(edited)
	if !strings.HasPrefix(v.BodyStatus.Text, "Valid JSON") {
		t.Fatalf("valid body status = %q", v.BodyStatus.Text)
	}
	test.Tap(v.Send)
	got := cons.received()
	if v.last.Status != 200 || v.last.Mode != replay.ModeEdited || string(got[len(got)-1]) != edited {
		t.Fatalf("edited: %+v / %q", v.last, v.Headline.Text)
	}

	// The secret is in no file of the store.
	assertNotInDir(t, h.dir, devSecret)
}

func TestReplayLargeBodyIsNotEditable(t *testing.T) {
	h := newReplayHarness(t, 1)
	_, rec := h.newestReplay(t)
	big := *rec.Delivery
	big.Body = bytes.Repeat([]byte("x"), editableBody+1)
	rs, _ := h.win.replayDeps()
	v := newReplayView(h.win, rs, &big)
	for _, o := range v.Mode.Options {
		if o == modeEdited {
			t.Fatal("a body over the edit limit offers Edited")
		}
	}
}

func TestChaosPreviewAndRun(t *testing.T) {
	h := newReplayHarness(t, 3)
	cons, url := newConsumer(t, capturedSecret)
	v := h.win.openChaos()
	if !strings.Contains(v.Pick.Explain.Text, "every delivery (no filter is set): 3 deliveries.") {
		t.Fatalf("selection text = %q", v.Pick.Explain.Text)
	}
	test.Type(v.Target, url)
	v.Times.SetText("2")

	v.Shape.SetSelected(shapeSplit)
	test.Tap(v.Preview)
	if !strings.Contains(v.Summary.Text, "secret") {
		t.Fatalf("split without a secret: %q", v.Summary.Text)
	}
	v.Shape.SetSelected(shapeAsIs)
	v.Pick.Limit.SetText("2")
	test.Tap(v.Preview)
	if len(v.shown) != 4 || !strings.Contains(v.Summary.Text, "4 requests from 2 deliveries") {
		t.Fatalf("plan: %q, %d lines", v.Summary.Text, len(v.shown))
	}
	if len(cons.received()) != 0 {
		t.Fatal("the preview sent something")
	}
	test.Tap(v.Start)
	if v.report == nil || len(v.report.Results) != 4 || v.report.Answered2xx != 4 {
		t.Fatalf("report = %+v, summary %q", v.report, v.Summary.Text)
	}
	if strings.HasPrefix(v.Summary.Text, "Cancelled") || !strings.Contains(v.Summary.Text, "4 answered 2xx") {
		t.Fatalf("summary = %q", v.Summary.Text)
	}
	if len(cons.received()) != 4 || len(v.shown) != 4 || v.Progress.Value != 1 {
		t.Fatalf("consumer got %d, lines %d, progress %v", len(cons.received()), len(v.shown), v.Progress.Value)
	}
	if !v.Start.Disabled() && v.Cancel.Disabled() {
		return
	}
	t.Fatal("buttons not reset after the run")
}

func TestExportWritesFilesWithoutTheSecret(t *testing.T) {
	h := newReplayHarness(t, 4)
	const fixtureSecret = "fixture-secret-do-not-write"
	out := filepath.Join(t.TempDir(), "fixtures")
	v := h.win.openExport()
	if !v.Secret.Disabled() {
		t.Fatal("the secret entry is enabled for HAR")
	}
	if v.Reveal.Checked {
		t.Fatal("reveal is on by default")
	}
	v.Format.SetSelected("fixtures")
	if v.Secret.Disabled() {
		t.Fatal("the secret entry is disabled for fixtures")
	}
	v.Out.SetText(out)
	test.Type(v.Secret, fixtureSecret)
	test.Tap(v.Export)
	if v.summary == nil || len(v.summary.Files) < 4 {
		t.Fatalf("summary = %+v, result %q", v.summary, v.Result.Text)
	}
	if !strings.Contains(v.Result.Text, "Credentials are redacted") {
		t.Fatalf("result = %q", v.Result.Text)
	}
	assertNotInDir(t, out, fixtureSecret)
	if _, err := os.Stat(filepath.Join(out, "media.ready.json")); err != nil {
		t.Fatalf("no fixture for media.ready: %v", err)
	}

	// Exporting again into the same folder is refused, and says so.
	test.Tap(v.Export)
	if !strings.HasPrefix(v.Result.Text, "Nothing written") {
		t.Fatalf("second export = %q", v.Result.Text)
	}
}

// TestCopyAsCurlIsTheExportedCommand: the detail pane's "Copy as curl"
// copies exactly the command the curl export writes for the delivery, and
// running it sends the stored body byte for byte, with its query string.
func TestCopyAsCurlIsTheExportedCommand(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	h := newReplayHarness(t, 2)
	ctx := context.Background()
	body := []byte("{\"hook\":{\"uuid\":\"h-curl\"},\"events\":[]}\x00 it's 100% \\ done")
	d := &inspector.Delivery{ReceivedAt: time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC), Method: "POST", Path: "/webhooks", Query: "token=tok-in-query&x=1",
		Headers: []inspector.Header{{Name: "Host", Value: "quiet-lake.trycloudflare.com"}, {Name: "X-Service-Signature", Value: "t=1,v1=ab"},
			{Name: "Authorization", Value: "Bearer tok-in-header"}, {Name: "Content-Type", Value: "application/json"}},
		Body: body, BodyLength: int64(len(body)), RemoteAddr: "127.0.0.1:5000", Status: 200}
	if _, err := h.eng.Ingest(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	h.win.bridge.Flush()
	if rec := h.selectNewest(t); rec.Delivery.ID != d.ID {
		t.Fatalf("newest is #%d, want #%d", rec.Delivery.ID, d.ID)
	}
	test.Tap(h.win.deliveries.Detail.CopyCurl)
	copied := h.app.Clipboard().Content()
	if !strings.Contains(h.win.Status.Text, "credentials redacted") || strings.Contains(copied, "tok-in-") {
		t.Fatalf("status %q; copied:\n%s", h.win.Status.Text, copied)
	}

	dir := filepath.Join(t.TempDir(), "curl")
	ex := h.win.openExport()
	ex.Format.SetSelected("curl")
	ex.Out.SetText(dir)
	test.Tap(ex.Export)
	if ex.summary == nil {
		t.Fatalf("export: %q", ex.Result.Text)
	}
	script, err := os.ReadFile(filepath.Join(dir, "replay.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script, []byte("\n"+copied+"\n")) {
		t.Fatalf("the copied command is not the exported one:\n%s\n--- script:\n%s", copied, script)
	}

	var got struct {
		uri, auth string
		body      []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.uri, got.auth = r.RequestURI, r.Header.Get("Authorization")
		got.body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "pasted.sh")
	if err := os.WriteFile(file, []byte(copied+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", file)
	cmd.Env = append(cmd.Environ(), "HOOKSCOPE_URL="+srv.URL+"/in")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running the copied command: %v\n%s", err, out)
	}
	if !bytes.Equal(got.body, body) || got.uri != "/in?token=%5BREDACTED%5D&x=1" || got.auth != "[REDACTED]" {
		t.Fatalf("server got %s, Authorization %q, body %q", got.uri, got.auth, got.body)
	}
}

func TestExportThenImportThroughTheEngine(t *testing.T) {
	h := newReplayHarness(t, 3)
	file := filepath.Join(t.TempDir(), "hooks.ndjson")
	ex := h.win.openExport()
	ex.Format.SetSelected("ndjson")
	ex.Out.SetText(file)
	test.Tap(ex.Export)
	if ex.summary == nil || ex.summary.Deliveries != 3 {
		t.Fatalf("export: %q", ex.Result.Text)
	}

	im := h.win.openImport()
	if im == nil {
		t.Fatal("no import dialog with a real engine")
	}
	test.Tap(im.Import)
	if !strings.Contains(im.Result.Text, "choose a file") {
		t.Fatalf("empty path: %q", im.Result.Text)
	}
	im.Path.SetText(filepath.Join(t.TempDir(), "missing.har"))
	test.Tap(im.Import)
	if !strings.HasPrefix(im.Result.Text, "Nothing imported") {
		t.Fatalf("missing file: %q", im.Result.Text)
	}
	im.Path.SetText(file)
	test.Tap(im.Import)
	if im.report == nil || im.report.Imported != 3 || !strings.Contains(im.Result.Text, "Imported 3 deliveries (ndjson)") {
		t.Fatalf("import: %q", im.Result.Text)
	}
	if err := h.eng.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := h.db.Stats(context.Background())
	if err != nil || st.Deliveries != 6 {
		t.Fatalf("stats after import = %+v, %v", st, err)
	}
}

func TestConsumerCheckFillsTable(t *testing.T) {
	h := newReplayHarness(t, 0)
	_, url := newConsumer(t, capturedSecret)
	v := h.win.openConsumerCheck()
	if !v.UseSaved.Checked || !v.Secret.Disabled() {
		t.Fatal("the configured secret is not offered")
	}
	if v.Secret.Text != "" {
		t.Fatal("the secret entry shows the stored secret")
	}
	test.Tap(v.Run)
	if !strings.Contains(v.Summary.Text, "URL") && !strings.Contains(v.Summary.Text, "http") {
		t.Fatalf("no target: %q", v.Summary.Text)
	}
	test.Type(v.Target, url)
	test.Tap(v.Run)
	if v.report == nil {
		t.Fatalf("no report: %q", v.Summary.Text)
	}
	want := len(replay.CheckCases())
	if rows, cols := v.Table.Length(); rows != want || cols != checkColumns {
		t.Fatalf("table %dx%d, want %dx%d", rows, cols, want, checkColumns)
	}
	if v.report.Failed != 0 || v.report.Passed < 20 {
		t.Fatalf("a correct consumer: %q", v.Summary.Text)
	}
	v.Table.Select(widget.TableCellID{Row: want - 2, Col: colCase})
	v.ExplainScroll.Resize(fyne.NewSize(300, 90)) // a narrow dialog wraps the text past the box
	v.ExplainScroll.ScrollToBottom()
	if v.ExplainScroll.Offset.Y == 0 {
		t.Fatalf("the explanation does not scroll (%v in %v); the next check proves nothing", v.Explain.MinSize(), v.ExplainScroll.Size())
	}
	v.Table.Select(widget.TableCellID{Row: want - 1, Col: colCase}) // all pass: the check's order
	if !strings.Contains(v.Explain.Text, "missing-signature") {
		t.Fatalf("explanation = %q", v.Explain.Text)
	}
	if y := v.ExplainScroll.Offset.Y; y != 0 {
		t.Fatalf("the next case's explanation opened scrolled to %.0f, want its top", y)
	}
	if v.Lead.Visible() {
		t.Fatalf("a correct consumer gets a lead: %q", v.Lead.Text)
	}
	test.Tap(v.CopyText)
	if got := h.app.Clipboard().Content(); !strings.Contains(got, "bad-signature") || strings.Contains(got, capturedSecret) {
		t.Fatalf("copied report:\n%s", got)
	}
}

func TestConsumerCheckShowsFailures(t *testing.T) {
	h := newReplayHarness(t, 0)
	// A consumer that accepts anything: forged deliveries must fail.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	t.Cleanup(srv.Close)
	v := h.win.openConsumerCheck()
	test.Type(v.Target, srv.URL)
	test.Tap(v.Run)
	if v.report == nil || v.report.Failed < 2 {
		t.Fatalf("report = %+v", v.report)
	}
	if v.cases[0].Verdict != replay.Fail || !strings.Contains(v.Explain.Text, v.cases[0].Name) {
		t.Fatalf("failures are not first and explained: first %s %s, explanation %q", v.cases[0].Name, v.cases[0].Verdict, v.Explain.Text)
	}
	var fails int
	for _, c := range v.cases {
		if c.Verdict == replay.Fail {
			fails++
			if text, _, _ := verdictLook(c.Verdict); text != "fail" {
				t.Fatalf("badge text = %q", text)
			}
		}
	}
	if fails != v.report.Failed || !strings.Contains(v.Summary.Text, "failed") {
		t.Fatalf("fails in table %d, report %d, summary %q", fails, v.report.Failed, v.Summary.Text)
	}
	// The lead says what the endpoint did, above the cases.
	if !v.Lead.Visible() || !strings.Contains(v.Lead.Text, "What the endpoint did") || !strings.Contains(v.Lead.Text, "wrong or missing signature") {
		t.Fatalf("lead (visible %v): %q", v.Lead.Visible(), v.Lead.Text)
	}
}

// assertNotInDir fails when s appears in any file under dir.
func assertNotInDir(t *testing.T, dir, s string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s contains the secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// buttonTexts lists the texts of every button under o.
func buttonTexts(o fyne.CanvasObject) []string {
	var out []string
	switch w := o.(type) {
	case *widget.Button:
		return []string{w.Text}
	case *fyne.Container:
		for _, c := range w.Objects {
			out = append(out, buttonTexts(c)...)
		}
	case *container.Split:
		out = append(buttonTexts(w.Leading), buttonTexts(w.Trailing)...)
	}
	return out
}

func TestActionButtonsFollowTheEngines(t *testing.T) {
	h := newReplayHarness(t, 1)
	got := strings.Join(append(buttonTexts(h.win.deliveries.split), buttonTexts(h.win.deliveries.Detail.pane)...), "|")
	for _, want := range []string{"Replay selection…", "Export…", "Import…", "Consumer check…", "Replay…"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q button in the Deliveries tab: %s", want, got)
		}
	}
	// A store that keeps no replays and an engine that cannot ingest
	// leave only the consumer check, which needs neither.
	f := newHarness(t, threeDeliveries)
	got = strings.Join(append(buttonTexts(f.win.deliveries.split), buttonTexts(f.win.deliveries.Detail.pane)...), "|")
	if strings.Contains(got, "Replay") || strings.Contains(got, "Import…") || !strings.Contains(got, "Consumer check…") {
		t.Errorf("buttons with fakes: %s", got)
	}
	if f.win.openReplay() != nil || f.win.openChaos() != nil || f.win.openExport() != nil || f.win.openImport() != nil {
		t.Error("a dialog opened without its engine")
	}
}

func TestReplayHistoryRowShowsItsAnswer(t *testing.T) {
	h := newReplayHarness(t, 1)
	_, url := newConsumer(t, capturedSecret)
	v, _ := h.newestReplay(t)
	test.Type(v.Target, url)
	test.Tap(v.Send)
	v.Target.SetText(url + "/nope?access_token=tok-secret-9")
	test.Tap(v.Send) // the consumer answers every path; the token must be redacted
	if len(v.history) != 2 {
		t.Fatalf("history = %d", len(v.history))
	}
	if strings.Contains(v.Detail.Text(), "tok-secret-9") || strings.Contains(historyLine(v.history[0]), "tok-secret-9") {
		t.Fatal("a token in the target URL is shown")
	}
	v.History.Select(1)
	if v.last != v.history[1] || !strings.Contains(v.Detail.Text(), v.history[1].Target) {
		t.Fatalf("selecting a history row did not show it: %q", v.Headline.Text)
	}
	if last, _ := replay.LastTarget(context.Background(), h.db); last != url {
		t.Fatalf("a URL with a token was remembered: %q", last)
	}
}

// TestReplayAndConsumerCheckOfferTheForwardToURL: with a Forward to URL
// set, Replay… and Consumer check… start with your app's URL, not an
// empty field with :3000 as its hint; a URL with a password is not shown.
func TestReplayAndConsumerCheckOfferTheForwardToURL(t *testing.T) {
	h := newReplayHarness(t, 1)
	h.selectNewest(t)
	app := "http://127.0.0.1:4567/hooks"
	h.win.settings.ForwardTo = "media.*=" + app
	if got := h.win.openReplay().Target.Text; got != app {
		t.Fatalf("Replay… target %q, want %q", got, app)
	}
	if got := h.win.openConsumerCheck().Target.Text; got != app {
		t.Fatalf("Consumer check… target %q, want %q", got, app)
	}
	h.win.settings.ForwardTo = "http://dev:hunter2@127.0.0.1:4567/hooks"
	if got := h.win.openReplay().Target.Text; strings.Contains(got, "hunter2") {
		t.Fatalf("Replay… shows the password: %q", got)
	}
}
