package ui

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/inspector/forward"
	"github.com/hookscope/hookscope/inspector/simulate"
	"github.com/hookscope/hookscope/station"
)

// testApp is the developer's app: it keeps every body it gets and answers
// with status (200 unless set).
type testApp struct {
	addr string
	mu   sync.Mutex
	got  [][]byte
	code int
	// body is the answer's body; {"handled":true} when nil.
	body []byte
	srv  *http.Server
}

// startTestApp serves the app on addr ("127.0.0.1:0" picks a port).
func startTestApp(t *testing.T, addr string) *testApp {
	t.Helper()
	a := &testApp{code: 200}
	a.serve(t, addr)
	return a
}

func (a *testApp) serve(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	a.srv = &http.Server{Handler: a}
	go a.srv.Serve(ln)
	t.Cleanup(func() { a.srv.Close() })
}

func (a *testApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.got = append(a.got, body)
	code, out := a.code, a.body
	a.mu.Unlock()
	if out == nil {
		out = []byte(`{"handled":true}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-App", "test")
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

func (a *testApp) received() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

func (a *testApp) setCode(c int) {
	a.mu.Lock()
	a.code = c
	a.mu.Unlock()
}

// forwardHarness is a window over a real station (store, engine,
// receiver, forwarder) on a free port.
type forwardHarness struct {
	app fyne.App
	st  *station.Station
	win *mainWindow
}

func newForwardHarness(t *testing.T, set station.Settings) *forwardHarness {
	t.Helper()
	st, err := station.New(station.Config{DBPath: filepath.Join(t.TempDir(), "hooks.db")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if cfg, err := set.ForwardConfig(); err != nil {
		t.Fatal(err)
	} else if cfg != nil {
		if err := st.SetForward(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	set.ListenAddr = st.Addr()
	h := &forwardHarness{app: test.NewTempApp(t), st: st}
	w := h.app.NewWindow("Hookscope")
	w.Resize(fyne.NewSize(1280, 800))
	h.win = newMainWindow(h.app, w, stationServices(st, "", nil), set, nil, nil, true)
	t.Cleanup(func() {
		h.win.close()
		w.Close()
		st.Close(context.Background())
	})
	return h
}

// post sends one message of typ to the receiver and returns the status
// the service got.
func (h *forwardHarness) post(t *testing.T, typ string) int {
	t.Helper()
	g := simulate.New(time.Now().UnixNano())
	req, err := simulate.NewRequest(context.Background(), "http://"+h.st.Addr()+"/webhooks", g.Message(g.Event(typ)).Body(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor flushes the bridge until ok holds.
func (h *forwardHarness) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		h.win.bridge.Flush()
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rowBadges is the forward badge text of each loaded row, newest first.
func (h *forwardHarness) rowBadges() []string {
	v := h.win.deliveries
	out := make([]string, len(v.model.rows))
	for i, s := range v.model.rows {
		b, has := v.badges[s.ID]
		out[i], _, _ = forwardLook(b, has, h.win.forwardOff())
	}
	return out
}

func allEqual(list []string, want string, n int) bool {
	if len(list) != n {
		return false
	}
	for _, s := range list {
		if s != want {
			return false
		}
	}
	return true
}

// TestWindowForwardsToTheApp: typing the app's URL into Forward to and
// turning the switch on forwards every delivery, remembered in settings;
// each row gets its badge live; the Forward pane shows the attempt and
// the app's answer; Forward again sends once more.
func TestWindowForwardsToTheApp(t *testing.T) {
	app := startTestApp(t, "127.0.0.1:0")
	h := newForwardHarness(t, station.DefaultSettings())
	f := h.win.header.Forward
	if f.State.Text != "forwarding off" || f.Down.Visible() {
		t.Fatalf("before: state %q, down line shown %v", f.State.Text, f.Down.Visible())
	}
	url := "http://" + app.addr + "/webhooks"
	test.Type(f.Field, url)
	if f.State.Text != "press Enter to apply" {
		t.Fatalf("typed, not applied: state %q", f.State.Text)
	}
	// Enter turns it on: no separate tick.
	f.Field.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if f.State.Text != "forwarding (ack)" || !f.On.Checked {
		t.Fatalf("after Enter: state %q, on %v, status %q", f.State.Text, f.On.Checked, h.win.Status.Text)
	}
	saved, err := station.LoadSettings(context.Background(), h.st.Store())
	if err != nil || saved.ForwardTo != url || !saved.ForwardOn || saved.ForwardMode != "ack" {
		t.Fatalf("settings saved %+v, %v", saved, err)
	}
	for _, typ := range []string{"media.created", "media.ready", "media.updated"} {
		if code := h.post(t, typ); code != 200 {
			t.Fatalf("the service got %d", code)
		}
	}
	h.waitFor(t, "every row shows → 200", func() bool { return allEqual(h.rowBadges(), "→ 200", 3) })
	if app.received() != 3 {
		t.Fatalf("the app got %d deliveries, want 3", app.received())
	}

	d := h.win.deliveries
	d.List.Select(0)
	p := d.Detail.Forward
	if len(p.attempts) != 1 || d.Detail.forwardTab.Text != "Forward → 200" {
		t.Fatalf("pane: %d attempts, tab %q", len(p.attempts), d.Detail.forwardTab.Text)
	}
	for _, want := range []string{"Attempt 1 to " + url, "Your app answered 200 OK"} {
		if !strings.Contains(p.Info.Text, want) {
			t.Errorf("attempt detail lacks %q:\n%s", want, p.Info.Text)
		}
	}
	if !p.Headers.Visible() || !strings.Contains(p.Headers.String(), "X-App: test") {
		t.Errorf("response headers (shown %v):\n%s", p.Headers.Visible(), p.Headers.String())
	}
	if p.Body.Rows() == 0 || !strings.Contains(p.Body.RowText(1), `"handled": true`) {
		t.Errorf("the app's body is not in the code viewer: %d rows, %q", p.Body.Rows(), p.Body.RowText(1))
	}

	app.setCode(500)
	test.Tap(p.Again)
	if app.received() != 4 || len(p.attempts) != 2 || p.attempts[1].Kind != forward.KindAgain {
		t.Fatalf("Forward again: app got %d, pane shows %d attempts", app.received(), len(p.attempts))
	}
	if !strings.Contains(p.Info.Text, "Your app answered 500") || d.Detail.forwardTab.Text != "Forward → 500" || h.rowBadges()[0] != "→ 500" {
		t.Fatalf("after Forward again: tab %q, row %q, detail:\n%s", d.Detail.forwardTab.Text, h.rowBadges()[0], p.Info.Text)
	}
	if !strings.Contains(h.win.Status.Text, "Forwarded #3 again") {
		t.Errorf("status %q", h.win.Status.Text)
	}
}

// TestWindowSaysTheAppIsDown: while nothing listens on the app's port the
// header says so (how many wait, why) and rows show → refused; when the
// app is back the line goes, the status line says it, and what waited
// arrives.
func TestWindowSaysTheAppIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	set := station.DefaultSettings()
	set.ForwardTo, set.ForwardOn = "http://"+addr+"/webhooks", true
	h := newForwardHarness(t, set)
	f := h.win.header.Forward
	h.post(t, "media.created")
	h.post(t, "media.ready")
	h.waitFor(t, "the header says the app is down", func() bool {
		return f.Down.Visible() && strings.Contains(f.Down.Text, "2 deliveries wait")
	})
	for _, want := range []string{"Your app at " + addr + " is down", "Nothing is listening on " + addr + " (connection refused); start it, or check the port in the URL."} {
		if !strings.Contains(f.Down.Text, want) {
			t.Errorf("down line lacks %q: %q", want, f.Down.Text)
		}
	}
	if f.State.Text != "app down" {
		t.Errorf("state %q", f.State.Text)
	}
	h.waitFor(t, "the oldest row shows → refused", func() bool {
		b := h.rowBadges()
		return len(b) == 2 && b[1] == "→ refused" && b[0] == "queued"
	})

	app := startTestApp(t, addr)
	h.waitFor(t, "the app got both, in order", func() bool { return app.received() == 2 && allEqual(h.rowBadges(), "→ 200", 2) })
	h.waitFor(t, "the down line goes", func() bool { return !f.Down.Visible() })
	if !strings.Contains(h.win.Status.Text, "is back after") || f.State.Text != "forwarding (ack)" {
		t.Errorf("status %q, state %q", h.win.Status.Text, f.State.Text)
	}
}

// TestWindowForwardSwitchAndMode: off, deliveries are stored but not
// forwarded and rows say → off; pass-through answers the service with
// the app's status; both without a restart.
func TestWindowForwardSwitchAndMode(t *testing.T) {
	app := startTestApp(t, "127.0.0.1:0")
	set := station.DefaultSettings()
	set.ForwardTo, set.ForwardOn = "http://"+app.addr+"/webhooks", true
	h := newForwardHarness(t, set)
	f := h.win.header.Forward
	test.Tap(f.On) // off
	if f.State.Text != "forwarding off" {
		t.Fatalf("state %q", f.State.Text)
	}
	h.post(t, "media.created")
	h.waitFor(t, "the row shows → off", func() bool { return allEqual(h.rowBadges(), "→ off", 1) })
	h.win.deliveries.List.Select(0)
	if p := h.win.deliveries.Detail.Forward; !p.Again.Disabled() || !strings.Contains(p.Note.Text, "Forwarding is off") {
		t.Fatalf("pane with forwarding off: again disabled %v, note %q", p.Again.Disabled(), p.Note.Text)
	}

	app.setCode(500)
	f.Mode.SetSelected(modePassThroughLabel)
	test.Tap(f.On)
	if f.State.Text != "forwarding (pass-through)" {
		t.Fatalf("state %q (%s)", f.State.Text, h.win.Status.Text)
	}
	if code := h.post(t, "media.ready"); code != 500 {
		t.Fatalf("pass-through: the service got %d, want the app's 500", code)
	}
	if app.received() != 1 {
		t.Fatalf("the app got %d, want only the delivery sent while on", app.received())
	}
	h.waitFor(t, "rows: → 500 over → off", func() bool {
		b := h.rowBadges()
		return len(b) == 2 && b[0] == "→ 500" && b[1] == "→ off"
	})
	saved, _ := station.LoadSettings(context.Background(), h.st.Store())
	if saved.ForwardMode != "pass-through" || !saved.ForwardOn {
		t.Fatalf("saved %+v", saved)
	}
	// Answer rules set meanwhile answer only what no route takes: the
	// app still answers this route's deliveries.
	sv := h.win.settingsV
	sv.Rules.setLines([]string{"500"})
	test.Tap(sv.SaveButton)
	h.waitFor(t, "saved", func() bool { return sv.Status.Text == "Saved." })
	if !slices.Equal(h.win.settings.AnswerRules, []string{"500"}) {
		t.Fatalf("answer 500 with pass-through on: %q, rules %q", sv.Status.Text, h.win.settings.AnswerRules)
	}
	if h.post(t, "media.ready"); app.received() != 2 {
		t.Fatalf("with answer rules set, the app got %d, want 2", app.received())
	}
}

// TestWindowForwardKeepsCredentialsHidden: a target URL with a password
// shows redacted in the field, the pane and the status line, until
// Show reveals it.
func TestWindowForwardKeepsCredentialsHidden(t *testing.T) {
	app := startTestApp(t, "127.0.0.1:0")
	h := newForwardHarness(t, station.DefaultSettings())
	f := h.win.header.Forward
	test.Type(f.Field, "http://dev:hunter2@"+app.addr+"/webhooks")
	test.Tap(f.On)
	if strings.Contains(f.Field.Text, "hunter2") || strings.Contains(h.win.Status.Text, "hunter2") || !f.Reveal.Visible() {
		t.Fatalf("after applying: field %q, status %q, reveal shown %v", f.Field.Text, h.win.Status.Text, f.Reveal.Visible())
	}
	h.post(t, "media.created")
	h.waitFor(t, "forwarded", func() bool { return allEqual(h.rowBadges(), "→ 200", 1) })
	h.win.deliveries.List.Select(0)
	if p := h.win.deliveries.Detail.Forward; strings.Contains(p.Info.Text, "hunter2") || strings.Contains(attemptLine(p.attempts[0]), "hunter2") {
		t.Fatalf("the pane shows the password:\n%s", p.Info.Text)
	}
	// Unchanged, the redacted field keeps the saved target.
	f.Field.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if !strings.Contains(h.win.settings.ForwardTo, "hunter2") {
		t.Fatalf("the saved target lost its password: %q", h.win.settings.ForwardTo)
	}
	test.Tap(f.Reveal)
	if !strings.Contains(f.Field.Text, "hunter2") || f.Reveal.Visible() {
		t.Fatalf("revealed: %q", f.Field.Text)
	}
}

// TestWindowForwardSaysWhatIsWrong: a field that is not a URL is said
// once, under the field (not again in the status line), the switch stays
// off, and nothing is saved or started.
func TestWindowForwardSaysWhatIsWrong(t *testing.T) {
	h := newForwardHarness(t, station.DefaultSettings())
	f := h.win.header.Forward
	for _, how := range []string{"Enter", "On"} {
		f.Field.SetText("")
		test.Type(f.Field, "ftp://files.example/webhooks")
		if how == "Enter" {
			f.Field.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
		} else {
			test.Tap(f.On)
		}
		if f.State.Text != "not applied" || !f.Down.Visible() || strings.Count(f.Down.Text, "ftp") != 1 {
			t.Fatalf("%s: state %q, line %q", how, f.State.Text, f.Down.Text)
		}
		if h.win.Status.Text != "" {
			t.Fatalf("%s: the error is said twice: status line %q", how, h.win.Status.Text)
		}
		if f.On.Checked || h.st.Forwarder() != nil || h.win.settings.ForwardOn {
			t.Fatalf("%s: forwarding turned on from a bad field (switch %v)", how, f.On.Checked)
		}
	}
	test.Type(f.Field, "x") // fixing it clears what the last try said
	if f.Down.Visible() {
		t.Fatalf("while editing: line %q", f.Down.Text)
	}
}

// refusingForward is a Forwarding whose station refuses every route, as
// it refuses one pointing at its own receiver.
type refusingForward struct{ Forwarding }

func (refusingForward) SetForward(context.Context, *forward.Config) error {
	return errors.New("http://127.0.0.1:8787/webhooks is this receiver: forwarding to it would loop")
}
func (refusingForward) ForwardStatus() []forward.RouteStatus        { return nil }
func (refusingForward) ForwardRoutes() []forward.Route              { return nil }
func (refusingForward) SubscribeForward(func(forward.Event)) func() { return func() {} }
func (refusingForward) Badges(context.Context, []int64) (map[int64]forward.Badge, error) {
	return nil, nil
}
func (refusingForward) ForwardAttempts(context.Context, int64) ([]*forward.Attempt, error) {
	return nil, nil
}

// TestWindowForwardRefusedByTheStationChangesNothing: a route the
// station refuses (the receiver's own URL) is said once under the field
// and nothing is turned on or saved.
func TestWindowForwardRefusedByTheStationChangesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.win.svc.Forward = refusingForward{}
	f := newForwardRow(h.win)
	h.win.header.Forward = f
	test.Type(f.Field, h.win.localURL())
	f.Field.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if f.On.Checked || h.win.settings.ForwardOn || h.win.settings.ForwardTo != "" {
		t.Fatalf("refused, yet on %v, settings %+v", f.On.Checked, h.win.settings)
	}
	if strings.Count(f.Down.Text, "would loop") != 1 || strings.Contains(h.win.Status.Text, "loop") {
		t.Fatalf("line %q, status %q: want the reason once, under the field", f.Down.Text, h.win.Status.Text)
	}
}

// TestForwardBadgeDescribesItsOwnReceiver: a window whose receiver is
// stopped does not say it forwards, whatever its settings say.
func TestForwardBadgeDescribesItsOwnReceiver(t *testing.T) {
	h := newHarness(t, nil)
	h.win.svc.Forward = refusingForward{}
	h.win.settings.ForwardTo, h.win.settings.ForwardOn = "http://127.0.0.1:3000/webhooks", true
	f := newForwardRow(h.win)
	f.fill(h.win.settings)
	if f.State.Text != "forwarding (ack)" {
		t.Fatalf("listening: state %q", f.State.Text)
	}
	h.recv.err = errors.New("port 8787 is in use")
	f.refresh()
	if strings.Contains(f.State.Text, "forwarding") {
		t.Fatalf("receiver stopped: state %q", f.State.Text)
	}
}

// TestWindowForwardToItsOwnURLIsRefusedOnce: the Local URL pasted into
// Forward to (its Copy button sits right above it) is refused by the
// station, said once under the field, and nothing is turned on: it made
// 3,454 deliveries out of one in 4 s.
func TestWindowForwardToItsOwnURLIsRefusedOnce(t *testing.T) {
	h := newForwardHarness(t, station.DefaultSettings())
	f := h.win.header.Forward
	test.Type(f.Field, h.win.localURL())
	f.Field.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if f.On.Checked || h.win.settings.ForwardOn || h.st.Forwarder() != nil {
		t.Fatalf("forwarding to itself turned on (switch %v)", f.On.Checked)
	}
	if f.State.Text != "not applied" || strings.Count(f.Down.Text, "leads back to this receiver") != 1 || strings.Contains(h.win.Status.Text, "leads back") {
		t.Fatalf("state %q, line %q, status %q: want the reason once, under the field", f.State.Text, f.Down.Text, h.win.Status.Text)
	}
	if code := h.post(t, "media.created"); code != 200 {
		t.Fatalf("the service got %d", code)
	}
	h.waitFor(t, "one row", func() bool { return len(h.win.deliveries.model.rows) >= 1 })
	if n := len(h.win.deliveries.model.rows); n != 1 {
		t.Fatalf("one delivery became %d", n)
	}
}
