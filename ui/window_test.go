package ui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/inspector/catalog"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/rules"
	"github.com/hookscope/hookscope/station"
)

type harness struct {
	app    fyne.App
	store  *fakeStore
	engine *fakeEngine
	recv   *fakeReceiver
	tun    *fakeTunnel
	vault  *memVault
	relay  *fakeRelay
	win    *mainWindow
	sent   int
	keep   int64
}

func newHarness(t *testing.T, seed func(*fakeStore)) *harness {
	t.Helper()
	h := &harness{app: test.NewTempApp(t), store: newFakeStore(), engine: &fakeEngine{}, recv: &fakeReceiver{addr: "127.0.0.1:8787"}, tun: &fakeTunnel{installed: true}, vault: &memVault{}, relay: &fakeRelay{}}
	if seed != nil {
		seed(h.store)
	}
	svc := Services{
		Store: h.store, Engine: h.engine, Receiver: h.recv, Tunnel: h.tun, Vault: h.vault,
		Reverify: func(context.Context) (int, error) { return 0, nil },
		SendTest: func(_ context.Context, url string, _ [][]byte) (int, error) {
			h.sent++
			return 3, nil
		},
		StorePath: "/tmp/test.db", Version: "test",
		SetKeep:        func(n int64) { h.keep = n },
		SetAnswerRules: h.engine.setAnswerRules,
		TryAnswerRules: func(_ context.Context, lines []string, rec *inspector.Record, attempt int) (rules.Trial, error) {
			rs, err := rules.NewRules(lines, nil)
			if err != nil {
				return rules.Trial{}, err
			}
			return rs.Try(rec, attempt, nil), nil
		},
		Relay: h.relay, RelayVault: h.vault,
	}
	w := h.app.NewWindow("Hookscope")
	h.win = newMainWindow(h.app, w, svc, station.DefaultSettings(), nil, nil, true)
	h.win.skipConfirm = true
	w.Resize(fyne.NewSize(1200, 800))
	t.Cleanup(func() { h.win.close(); w.Close() })
	return h
}

func threeDeliveries(s *fakeStore) {
	s.add("media.created", "Media “Clip 1” created", inspector.SignatureValid, nil)
	s.add("media.ready", "Media “Clip 2” is ready", inspector.SignatureInvalid, nil)
	s.add("viewing_session.play", "Visitor played “Clip 3”", inspector.SignatureValid, func(r *inspector.Record) {
		r.Analysis.Events[0].Duplicate = true
		r.Analysis.Events[0].Copies = 2
	})
}

func TestListShowsNewestFirstAndSelectingShowsDetail(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	v := h.win.deliveries
	if n := v.List.Length(); n != 3 {
		t.Fatalf("list length = %d, want 3", n)
	}
	if v.model.rows[0].ID != 3 {
		t.Fatalf("first row id = %d, want 3 (newest first)", v.model.rows[0].ID)
	}
	v.List.Select(1)
	if !strings.Contains(v.Detail.Title.Text, "#2") || !strings.Contains(v.Detail.Title.Text, "media.ready") {
		t.Fatalf("detail title = %q", v.Detail.Title.Text)
	}
	v.Detail.Tabs.SelectIndex(1)
	if got := allRows(v.Detail.JSONView); !strings.Contains(got, "\"type\": \"media.ready\"") {
		t.Fatalf("JSON tab is not pretty-printed:\n%s", got)
	}
	if len(v.Detail.EventsBox.Objects) == 0 {
		t.Fatal("no event cards")
	}
	if len(v.Detail.headers) != 3 {
		t.Fatalf("headers = %d, want 3", len(v.Detail.headers))
	}
	if !strings.Contains(h.win.header.Counts.Text, "3 deliveries") || !strings.Contains(h.win.header.Counts.Text, "1 invalid") {
		t.Fatalf("counts = %q", h.win.header.Counts.Text)
	}
}

// filterSeed ingests four deliveries the filters tell apart: #1
// media.created about "Aurora"; #2 media.ready about "Borealis", signed
// with the wrong secret; #3 one message carrying media.created then
// media.ready about "Cascade"; #4 #1's event again in a new message (a
// duplicate).
func filterSeed(t *testing.T) func(context.Context, *inspector.Engine) {
	return func(_ context.Context, eng *inspector.Engine) {
		g := simulate.New(3)
		media := func(typ, name string) simulate.Event {
			m := g.Media()
			m.Name = name
			if typ == catalog.TypeMediaReady {
				return g.Wrap(typ, &catalog.MediaReady{Media: m})
			}
			return g.Wrap(typ, &catalog.MediaCreated{Media: m, Project: g.Project()})
		}
		aurora := media(catalog.TypeMediaCreated, "Aurora")
		created, ready := media(catalog.TypeMediaCreated, "Cascade"), media(catalog.TypeMediaReady, "Cascade")
		ready.Payload.(*catalog.MediaReady).Media = created.Payload.(*catalog.MediaCreated).Media
		ingestBody(t, eng, g.Message(aurora).Body(), capturedSecret, 1)
		ingestBody(t, eng, g.Message(media(catalog.TypeMediaReady, "Borealis")).Body(), "not-the-secret", 2)
		ingestBody(t, eng, g.Message(created, ready).Body(), capturedSecret, 3)
		ingestBody(t, eng, g.Message(aurora).Body(), capturedSecret, 4)
	}
}

// rowIDs lists the ids the deliveries list shows, in order.
func rowIDs(v *deliveriesView) []int64 {
	var ids []int64
	for _, r := range v.model.rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestFiltersNarrowTheListAndClearRestoresIt runs against the real store,
// whose filters the list shows: a type matches any event of a batch, and
// text matches words.
func TestFiltersNarrowTheListAndClearRestoresIt(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	check := func(what string, want ...int64) {
		t.Helper()
		if got := rowIDs(v); !slices.Equal(got, want) || v.List.Length() != len(want) {
			t.Fatalf("%s: rows %v, want %v", what, got, want)
		}
	}
	check("no filter", 4, 3, 2, 1)
	v.SigSelect.SetSelected("invalid")
	check("signature filter", 2)
	v.SigSelect.SetSelected(anySignature)
	v.DedupeSelect.SetSelected(duplicatesOnly)
	check("duplicates filter", 4)
	v.ClearButton.OnTapped()
	v.TypeSelect.SetSelected("media.ready")
	check("type filter (the batch's second event counts)", 3, 2)
	test.Type(v.Search, "borealis")
	check("type and text", 2)
	v.TypeSelect.SetSelected("media.created")
	check("no match")
	if !v.NoMatch.Visible() {
		t.Fatal("no-match message hidden")
	}
	test.Tap(v.ClearButton)
	check("after clear", 4, 3, 2, 1)
	if v.Search.Text != "" || v.TypeSelect.Selected != allTypes {
		t.Fatalf("after clear: search %q, type %q", v.Search.Text, v.TypeSelect.Selected)
	}
}

func TestCopyActionsAndShortcut(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	v := h.win.deliveries
	v.List.Select(0)
	body := string(h.store.recs[3].Delivery.Body)
	test.Tap(v.Detail.CopyBody)
	if got := h.app.Clipboard().Content(); got != body {
		t.Fatalf("clipboard = %q, want the body", got)
	}
	test.Tap(v.Detail.CopyCurl)
	curl := h.app.Clipboard().Content()
	if !strings.HasPrefix(curl, `curl -sS -X POST "${HOOKSCOPE_URL:-http://127.0.0.1:8787/webhooks}"`) || !strings.Contains(curl, "-H 'X-Service-Signature: abc123'") {
		t.Fatalf("curl = %s", curl)
	}
	test.Tap(v.Detail.CopyPretty)
	if got := h.app.Clipboard().Content(); !strings.Contains(got, "\n") {
		t.Fatalf("pretty JSON not multi-line: %q", got)
	}
	h.app.Clipboard().SetContent("")
	v.List.Select(1)
	h.win.w.Canvas().(fyne.Shortcutable).TypedShortcut(&fyne.ShortcutCopy{})
	if got := h.app.Clipboard().Content(); got != string(h.store.recs[2].Delivery.Body) {
		t.Fatalf("Ctrl+C copied %q", got)
	}
	if !strings.Contains(h.win.Status.Text, "Copied body of #2") {
		t.Fatalf("status = %q", h.win.Status.Text)
	}
}

func TestArrowKeysMoveTheSelection(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	v := h.win.deliveries
	v.List.Select(0)
	v.List.TypedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
	if v.selectedID != 2 {
		t.Fatalf("after Down selected %d, want 2", v.selectedID)
	}
	v.List.TypedKey(&fyne.KeyEvent{Name: fyne.KeyUp})
	if v.selectedID != 3 {
		t.Fatalf("after Up selected %d, want 3", v.selectedID)
	}
}

func TestLiveDeliveriesArriveThroughTheBridge(t *testing.T) {
	h := newStoreHarness(t, filterSeed(t))
	v := h.win.deliveries
	v.List.Select(0) // delivery 4
	g := simulate.New(4)
	arrive := func(secret string, i int) {
		t.Helper()
		ingestBody(t, h.eng, g.Message(g.Event(catalog.TypeMediaDeleted)).Body(), secret, i)
		if err := h.eng.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.win.bridge.Flush()
	}
	arrive(capturedSecret, 5)
	if got := rowIDs(v); len(got) != 5 || got[0] != 5 {
		t.Fatalf("after a live delivery: rows %v", got)
	}
	if v.selectedID != 4 {
		t.Fatalf("selection moved to %d", v.selectedID)
	}
	if !strings.Contains(h.win.header.Counts.Text, "5 deliveries") {
		t.Fatalf("counts = %q", h.win.header.Counts.Text)
	}
	// A live delivery that does not match the filter stays out.
	v.SigSelect.SetSelected("valid")
	arrive("not-the-secret", 6)
	arrive(capturedSecret, 7)
	if got := rowIDs(v); !slices.Equal(got, []int64{7, 5, 4, 3, 1}) {
		t.Fatalf("under the valid filter: rows %v", got)
	}
}

func TestDeleteRemovesTheDelivery(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	v := h.win.deliveries
	v.List.Select(0)
	test.Tap(v.Detail.DeleteButton)
	if n := v.List.Length(); n != 2 {
		t.Fatalf("rows after delete = %d", n)
	}
	if _, ok := h.store.recs[3]; ok {
		t.Fatal("store still has delivery 3")
	}
	if v.Detail.rec != nil {
		t.Fatal("detail still shows the deleted delivery")
	}
}

func TestEmptyStateAndSendTest(t *testing.T) {
	h := newHarness(t, nil)
	v := h.win.deliveries
	if v.body.Objects[0] != v.Empty.content {
		t.Fatal("empty store does not show the empty state")
	}
	if !strings.Contains(v.Empty.URL.Text, "http://127.0.0.1:8787/webhooks") {
		t.Fatalf("empty state URL = %q", v.Empty.URL.Text)
	}
	test.Tap(v.Empty.SendTest)
	if h.sent != 1 || !strings.Contains(h.win.Status.Text, "Sent 3 test deliveries") {
		t.Fatalf("send test: sent %d, status %q", h.sent, h.win.Status.Text)
	}
	r := h.store.add("media.created", "first", inspector.SignatureValid, nil)
	h.engine.sub(r)
	h.win.bridge.Flush()
	if v.body.Objects[0] == v.Empty.content {
		t.Fatal("empty state still shown after the first delivery")
	}
}

func TestTabsAndTunnel(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	if n := len(h.win.Tabs.Items); n != 4 || h.win.Tabs.Items[0].Text != "Deliveries" || h.win.Tabs.Items[1].Text != "Re-sends" || h.win.Tabs.Items[2].Text != "OAuth" || h.win.Tabs.Items[3].Text != "Settings" {
		t.Fatalf("tabs = %d", n)
	}
	h.win.Tabs.SelectIndex(3) // Settings
	if h.win.Tabs.Selected().Content != h.win.settingsV.content {
		t.Fatal("Settings tab not shown")
	}
	hd := h.win.header
	if hd.CopyPublic.Disabled() == false {
		t.Fatal("public copy enabled without a tunnel")
	}
	test.Tap(hd.TunnelButton)
	if !strings.HasPrefix(hd.PublicURL.Text, "https://quiet-lake.trycloudflare.com/webhooks") {
		t.Fatalf("public URL = %q", hd.PublicURL.Text)
	}
	test.Tap(hd.CopyPublic)
	if got := h.app.Clipboard().Content(); got != "https://quiet-lake.trycloudflare.com/webhooks" {
		t.Fatalf("clipboard = %q", got)
	}
	if hd.TunnelButton.Text != "Stop tunnel" {
		t.Fatalf("tunnel button = %q", hd.TunnelButton.Text)
	}
}

func TestTunnelHiddenWhenNotInstalled(t *testing.T) {
	h := newHarness(t, nil)
	h.tun.installed = false
	h.win.header.refresh()
	if h.win.header.TunnelButton.Visible() || !strings.Contains(h.win.header.PublicURL.Text, "install cloudflared") {
		t.Fatalf("tunnel control shown without cloudflared: %q", h.win.header.PublicURL.Text)
	}
}

func TestSettingsArePersistedAndApplied(t *testing.T) {
	h := newHarness(t, nil)
	s := h.win.settingsV
	s.ListenAddr.SetText("127.0.0.1:9999")
	s.Path.SetText("/hooks")
	s.MaxBodyKiB.SetText("2048")
	s.Keep.SetText("5000")
	s.Rules.setLines([]string{"hang"})
	s.NotifyInvalid.SetChecked(false)
	s.Cloudflared.SetText("/opt/cf/cloudflared")
	test.Tap(s.SaveButton)
	if s.Status.Text != "Saved." {
		t.Fatalf("status = %q", s.Status.Text)
	}
	got, err := station.LoadSettings(context.Background(), h.store)
	if err != nil {
		t.Fatal(err)
	}
	if got.ListenAddr != "127.0.0.1:9999" || got.Path != "/hooks" || got.MaxBody != 2048*1024 || got.Keep != 5000 || !slices.Equal(got.AnswerRules, []string{"hang"}) || got.NotifyInvalid {
		t.Fatalf("persisted %+v", got)
	}
	if h.recv.addr != "127.0.0.1:9999" || !slices.Equal(h.engine.answer, []string{"hang"}) || h.engine.maxBody != 2048*1024 || h.keep != 5000 {
		t.Fatalf("not applied: recv %s answer %s max %d keep %d", h.recv.addr, h.engine.answer, h.engine.maxBody, h.keep)
	}
	if h.tun.binary != "/opt/cf/cloudflared" || h.tun.localURL != "http://127.0.0.1:9999" {
		t.Fatalf("tunnel configured with binary %q, local URL %q", h.tun.binary, h.tun.localURL)
	}
	if h.win.header.LocalURL.Text != "http://127.0.0.1:9999/hooks" {
		t.Fatalf("local URL = %q", h.win.header.LocalURL.Text)
	}
	// Bad input is refused with a message and changes nothing.
	s.ListenAddr.SetText("0.0.0.0:80")
	test.Tap(s.SaveButton)
	if !strings.HasPrefix(s.Status.Text, "Not saved") || h.recv.addr != "127.0.0.1:9999" {
		t.Fatalf("bad address: status %q, receiver %s", s.Status.Text, h.recv.addr)
	}
}

func TestSecretsGoToTheVaultAndEngine(t *testing.T) {
	h := newHarness(t, threeDeliveries)
	if !strings.Contains(h.win.header.Secrets.Text, "no secret") {
		t.Fatalf("secrets badge = %q", h.win.header.Secrets.Text)
	}
	h.win.addSecret("s3cret")
	if len(h.vault.secrets) != 1 || string(h.engine.secrets[0]) != "s3cret" {
		t.Fatal("secret not saved or not given to the engine")
	}
	if h.win.header.Secrets.Text != "1 secret set" {
		t.Fatalf("secrets badge = %q", h.win.header.Secrets.Text)
	}
	for _, text := range labelTexts(h.win.settingsV.SecretsList) {
		if strings.Contains(text, "s3cret") {
			t.Fatalf("secret shown in clear: %q", text)
		}
	}
}

// walk calls fn for o and every object under it: containers, scrolls,
// splits, all tabs (shown or not), cards and form items.
func walk(o fyne.CanvasObject, fn func(fyne.CanvasObject)) {
	if o == nil {
		return
	}
	fn(o)
	switch x := o.(type) {
	case *widget.Card:
		walk(x.Content, fn)
	case *widget.Form:
		for _, it := range x.Items {
			walk(it.Widget, fn)
		}
	case *container.AppTabs:
		for _, it := range x.Items {
			walk(it.Content, fn)
		}
	case *container.Scroll:
		walk(x.Content, fn)
	case *container.Split:
		walk(x.Leading, fn)
		walk(x.Trailing, fn)
	case *lazyTab:
		walk(x.content, fn)
	case *fyne.Container:
		for _, c := range x.Objects {
			walk(c, fn)
		}
	}
}

// labelTexts collects the texts of every label under o.
func labelTexts(o fyne.CanvasObject) []string {
	var out []string
	walk(o, func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok {
			out = append(out, l.Text)
		}
	})
	return out
}

// findButton returns the first button under o with the given text.
func findButton(o fyne.CanvasObject, text string) *widget.Button {
	var found *widget.Button
	walk(o, func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Text == text && found == nil {
			found = b
		}
	})
	return found
}

// TestHeaderSaysHowTheReceiverAnswers: any answer but 200 shows in the
// header, in amber, in a row of its own with the way to change it; the
// receiver's badge and the Local URL keep their room.
func TestHeaderSaysHowTheReceiverAnswers(t *testing.T) {
	h := newHarness(t, nil)
	hd, s := h.win.header, h.win.settingsV
	narrowest := h.win.w.Content().MinSize().Width
	for _, tc := range []struct {
		mode []string
		text string
	}{
		{[]string{"500"}, "answering 500 to every delivery"},
		{[]string{"hang"}, "holding every delivery 15 s, then answering 200"},
		{[]string{"close"}, "closing every connection unanswered"},
		{[]string{`delivery.signature == "invalid" => close`, "live_event.* => 500 x2 then 200", "media.* => 500"},
			"closing connections unanswered for some deliveries (rule 1 of 3; 2 more rules answer other than 200)"},
		{nil, ""},
	} {
		s.Rules.setLines(tc.mode)
		test.Tap(s.SaveButton)
		if hd.Receiver.Text != "listening on 127.0.0.1:8787" || hd.Receiver.Color != theme.ColorNameSuccess {
			t.Errorf("answer %s: the receiver's badge says %q in %s", tc.mode, hd.Receiver.Text, hd.Receiver.Color)
		}
		if shown := hd.answersRow.Visible() && hd.AnswerMode.Visible(); shown != (tc.text != "") || (shown && hd.Answers.Text != tc.text) {
			t.Errorf("answer %s: Answers row shown %v, saying %q; want %q", tc.mode, shown, hd.Answers.Text, tc.text)
		}
		if w := h.win.w.Content().MinSize().Width; w > narrowest {
			t.Errorf("answer %s: the window needs %.0f px, %.0f with the normal answer", tc.mode, w, narrowest)
		}
	}
	s.Rules.setLines([]string{"500"})
	test.Tap(s.SaveButton)
	h.win.Tabs.SelectIndex(0)
	test.Tap(hd.AnswerMode)
	if h.win.Tabs.Selected().Content != s.content {
		t.Fatal("Answer mode… does not open Settings")
	}
}

// TestTakenPortSaysWhyAndOffersAFreeOne: a receiver that could not bind
// says why, blanks what points at it, and moves to the next free port on
// request, saving it.
func TestTakenPortSaysWhyAndOffersAFreeOne(t *testing.T) {
	h := newHarness(t, nil)
	h.recv.busy = map[string]bool{"127.0.0.1:8787": true, "127.0.0.1:8788": true}
	h.recv.addr = ""
	h.recv.err = h.recv.Restart("127.0.0.1:8787")
	h.win.header.refresh()
	h.win.deliveries.Empty.refresh()
	hd, e := h.win.header, h.win.deliveries.Empty
	if hd.Receiver.Text != "receiver stopped" || !strings.Contains(hd.LocalURL.Text, "port 8787 is in use by another program") {
		t.Fatalf("header: %q, local URL %q", hd.Receiver.Text, hd.LocalURL.Text)
	}
	if !hd.CopyLocal.Disabled() || !hd.SendTest.Disabled() || !hd.FreePort.Visible() {
		t.Fatalf("copy disabled %v, send test disabled %v, free port offered %v", hd.CopyLocal.Disabled(), hd.SendTest.Disabled(), hd.FreePort.Visible())
	}
	if w := h.win.w.Content().MinSize().Width; w > 900 {
		t.Errorf("the reason widens the window to %.0f px", w)
	}
	if !strings.Contains(e.URL.Text, "port 8787 is in use") || !e.CopyURL.Disabled() || !e.SendTest.Disabled() {
		t.Fatalf("empty state: %q, copy disabled %v, send test disabled %v", e.URL.Text, e.CopyURL.Disabled(), e.SendTest.Disabled())
	}

	test.Tap(hd.FreePort)
	if h.recv.addr != "127.0.0.1:8789" || h.recv.err != nil {
		t.Fatalf("receiver on %q (%v), want the next free port 8789", h.recv.addr, h.recv.err)
	}
	saved, err := station.LoadSettings(context.Background(), h.store)
	if err != nil || saved.ListenAddr != "127.0.0.1:8789" || h.win.settingsV.ListenAddr.Text != "127.0.0.1:8789" {
		t.Fatalf("saved %q (%v), Settings shows %q", saved.ListenAddr, err, h.win.settingsV.ListenAddr.Text)
	}
	if hd.LocalURL.Text != "http://127.0.0.1:8789/webhooks" || hd.CopyLocal.Disabled() || hd.SendTest.Disabled() || hd.FreePort.Visible() || hd.Receiver.Text != "listening on 127.0.0.1:8789" {
		t.Fatalf("after the move: %q, %q, copy disabled %v, free port shown %v", hd.LocalURL.Text, hd.Receiver.Text, hd.CopyLocal.Disabled(), hd.FreePort.Visible())
	}
	if e.URL.Text != "http://127.0.0.1:8789/webhooks" || e.CopyURL.Disabled() || e.SendTest.Disabled() {
		t.Fatalf("empty state after the move: %q", e.URL.Text)
	}
	if !strings.Contains(h.win.Status.Text, "Listening on 127.0.0.1:8789 instead of 127.0.0.1:8787") {
		t.Fatalf("status = %q", h.win.Status.Text)
	}
}

// TestSaveRetriesAStoppedReceiver: once the other program let go of the
// port, Save listens there again without the address having changed.
func TestSaveRetriesAStoppedReceiver(t *testing.T) {
	h := newHarness(t, nil)
	h.recv.busy = map[string]bool{"127.0.0.1:8787": true}
	h.recv.addr = ""
	h.recv.err = h.recv.Restart("127.0.0.1:8787")
	h.win.header.refresh()
	s := h.win.settingsV
	test.Tap(s.SaveButton)
	if !strings.Contains(s.Status.Text, "port 8787 is in use") || h.recv.err == nil {
		t.Fatalf("save with the port still taken: %q", s.Status.Text)
	}
	delete(h.recv.busy, "127.0.0.1:8787")
	test.Tap(s.SaveButton)
	if h.recv.err != nil || h.recv.addr != "127.0.0.1:8787" || h.win.header.Receiver.Text != "listening on 127.0.0.1:8787" {
		t.Fatalf("after the port was freed: %v, header %q", h.recv.err, h.win.header.Receiver.Text)
	}
}
