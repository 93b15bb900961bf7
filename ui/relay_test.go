package ui

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"github.com/nats-io/nkeys"

	"github.com/hookscope/hookscope/inspector"
	"github.com/hookscope/hookscope/relay"
	"github.com/hookscope/hookscope/station"
)

// testRelayConn is a connection string for alice with a key made for the
// test, and its seed (the secret).
func testRelayConn(t *testing.T) (conn, seed string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := kp.Seed()
	return relay.ConnString{URL: "ws://127.0.0.1:18901/nats", Name: "alice", Stream: "HOOKSCOPE", Seed: string(s)}.String(), string(s)
}

// renderedTexts is every text drawn under o (visible objects only).
func renderedTexts(o fyne.CanvasObject) []string {
	if !o.Visible() {
		return nil
	}
	switch x := o.(type) {
	case *canvas.Text:
		return []string{x.Text}
	case *fyne.Container:
		var out []string
		for _, c := range x.Objects {
			out = append(out, renderedTexts(c)...)
		}
		return out
	case fyne.Widget:
		var out []string
		for _, c := range test.WidgetRenderer(x).Objects() {
			out = append(out, renderedTexts(c)...)
		}
		return out
	}
	return nil
}

// TestRelayFieldNeverRendersTheCredential: the pasted connection string
// is drawn as bullets, in the field, the status line and the window,
// until Show; Connect links the station, saves the string in the vault
// and names the relay without the credential.
func TestRelayFieldNeverRendersTheCredential(t *testing.T) {
	h := newHarness(t, nil)
	h.win.Tabs.SelectIndex(3)
	r := h.win.settingsV.Relay
	conn, seed := testRelayConn(t)
	r.Field.SetText(conn)
	secretShown := func() bool {
		for _, s := range renderedTexts(h.win.w.Content()) {
			if strings.Contains(s, seed) || strings.Contains(s, conn[:30]) {
				return true
			}
		}
		return false
	}
	if secretShown() {
		t.Fatal("the connection string is drawn before Show")
	}
	test.Tap(r.Connect)
	if h.relay.conn == nil || h.relay.conn.Seed != seed || h.vault.relay != conn {
		t.Fatalf("connected %v, saved %v", h.relay.conn != nil, h.vault.relay == conn)
	}
	if secretShown() || strings.Contains(h.win.Status.Text, seed) {
		t.Fatal("the credential is drawn after Connect")
	}
	if !strings.Contains(r.Who.Text, "alice at ws://127.0.0.1:18901/nats") {
		t.Fatalf("who: %q", r.Who.Text)
	}
	reveal := r.Field.ActionItem.(fyne.Tappable)
	test.Tap(reveal)
	if !secretShown() {
		t.Fatal("the eye does not show the connection string")
	}
	test.Tap(reveal)
	if secretShown() {
		t.Fatal("Hide leaves it shown")
	}
	test.Tap(r.Disconnect)
	if h.relay.linked || h.vault.relay != "" || h.win.header.Relay.Visible() {
		t.Fatalf("after Disconnect: linked %v, saved %v", h.relay.linked, h.vault.relay != "")
	}
}

// TestRelayConnectErrorsInWords: a string that is not one, and a link the
// station refuses (pass-through forwarding), are said under the field,
// without the string; nothing is saved.
func TestRelayConnectErrorsInWords(t *testing.T) {
	h := newHarness(t, nil)
	r := h.win.settingsV.Relay
	r.Field.SetText("hookscope-relay-1:bm90IGpzb24")
	test.Tap(r.Connect)
	if !r.Error.Visible() || !strings.Contains(r.Error.Text, "Not connected: the relay connection string is damaged") {
		t.Fatalf("damaged: %q", r.Error.Text)
	}
	r.Field.SetText("nats://alice:pw@relay:4222")
	test.Tap(r.Connect)
	if !strings.Contains(r.Error.Text, "not a relay connection string") || strings.Contains(r.Error.Text, "pw") {
		t.Fatalf("not one: %q", r.Error.Text)
	}
	conn, seed := testRelayConn(t)
	h.relay.err = station.ErrRelayPassThrough
	r.Field.SetText(conn)
	test.Tap(r.Connect)
	if !strings.Contains(r.Error.Text, "Not connected: pass-through forwarding answers the service") || strings.Contains(r.Error.Text, seed) {
		t.Fatalf("refused: %q", r.Error.Text)
	}
	if h.vault.relay != "" || h.relay.linked || r.Connect.Disabled() {
		t.Fatalf("refused link: saved %v, linked %v, Connect disabled %v", h.vault.relay != "", h.relay.linked, r.Connect.Disabled())
	}
}

// TestHeaderFollowsRelayStates: the header's relay row appears with a
// link and says each state in the words of relay.State.String, coloured
// by phase; Settings says the same; it goes when the link is turned off.
func TestHeaderFollowsRelayStates(t *testing.T) {
	h := newHarness(t, nil)
	hd := h.win.header
	if hd.Relay.Visible() || hd.relayLabel.Visible() {
		t.Fatal("relay row shown without a link")
	}
	conn, _ := testRelayConn(t)
	h.win.settingsV.Relay.Field.SetText(conn)
	test.Tap(h.win.settingsV.Relay.Connect)
	since := time.Date(2026, 11, 25, 14, 2, 0, 0, time.Local)
	for _, tc := range []struct {
		st    relay.State
		text  string
		color fyne.ThemeColorName
	}{
		{relay.State{Phase: relay.Connecting}, "relay: connecting", theme.ColorNamePrimary},
		{relay.State{Phase: relay.CatchingUp, Done: 1240, Total: 5002}, "relay: catching up 1,240 of 5,002", theme.ColorNamePrimary},
		{relay.State{Phase: relay.Live}, "relay: live", theme.ColorNameSuccess},
		{relay.State{Phase: relay.Unreachable, Since: since}, "relay unreachable since 14:02 (your deliveries are kept there)", theme.ColorNameWarning},
		{relay.State{Phase: relay.Stopped, Err: errors.New("the relay refused the credential alice")}, "relay stopped: the relay refused the credential alice", theme.ColorNameError},
	} {
		h.relay.publish(tc.st)
		h.win.bridge.Flush()
		if !hd.Relay.Visible() || hd.Relay.Text != tc.text || hd.Relay.Color != tc.color {
			t.Errorf("%s: header %q in %s (shown %v), want %q in %s", tc.st.Phase, hd.Relay.Text, hd.Relay.Color, hd.Relay.Visible(), tc.text, tc.color)
		}
		if got := h.win.settingsV.Relay.State.Text; !strings.EqualFold(got, tc.text) {
			t.Errorf("%s: Settings says %q", tc.st.Phase, got)
		}
	}
	test.Tap(hd.RelayButton)
	if h.win.Tabs.Selected().Content != h.win.settingsV.content {
		t.Fatal("Relay… does not open Settings")
	}
	h.relay.publish(relay.State{})
	h.win.bridge.Flush()
	if hd.Relay.Visible() || hd.relayLabel.Visible() {
		t.Fatal("relay row stays after the link is off")
	}
}

// TestForwardCAFileMustBePEM: a CA file that is not PEM is refused when
// saved, in words, and nothing changes; a PEM file is saved.
func TestForwardCAFileMustBePEM(t *testing.T) {
	h := newHarness(t, nil)
	s := h.win.settingsV
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.ForwardCA.SetText(notPEM)
	test.Tap(s.SaveButton)
	if !strings.Contains(s.Status.Text, "holds no PEM certificate") || h.win.settings.ForwardCA != "" {
		t.Fatalf("not PEM: %q, saved %q", s.Status.Text, h.win.settings.ForwardCA)
	}
	s.ForwardCA.SetText(notPEM + ".gone")
	test.Tap(s.SaveButton)
	if !strings.Contains(s.Status.Text, "no such file") {
		t.Fatalf("missing: %q", s.Status.Text)
	}
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	ca := writeTestCA(t, srv)
	s.ForwardCA.SetText(ca)
	test.Tap(s.SaveButton)
	if s.Status.Text != "Saved." || h.win.settings.ForwardCA != ca {
		t.Fatalf("PEM: %q, saved %q", s.Status.Text, h.win.settings.ForwardCA)
	}
}

// writeTestCA writes srv's certificate as a PEM file and returns its path.
func writeTestCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestForwardCAFileIsApplied: an app behind https with its own
// certificate is refused until its CA file is trusted in Settings; saved,
// the running forwarding trusts it and the app gets the delivery.
func TestForwardCAFileIsApplied(t *testing.T) {
	got := make(chan struct{}, 10)
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- struct{}{} }))
	app.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	app.StartTLS()
	t.Cleanup(app.Close)
	set := station.DefaultSettings()
	set.ForwardTo, set.ForwardOn = app.URL+"/webhooks", true
	h := newForwardHarness(t, set)
	h.post(t, "media.ready")
	h.waitFor(t, "a refused attempt", func() bool {
		a, _ := h.st.ForwardAttempts(context.Background(), 1)
		return len(a) > 0 && a[0].Status == 0 && a[0].Error != ""
	})
	s := h.win.settingsV
	s.ForwardCA.SetText(writeTestCA(t, app))
	test.Tap(s.SaveButton)
	h.waitFor(t, "saved", func() bool { return s.Status.Text == "Saved." })
	h.st.ForwardAgain(context.Background(), 1, "")
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the app never got the delivery with its CA trusted")
	}
}

// TestRelayedDeliverySaysViaRelay: a delivery taken from a relay says so
// in its row and its detail, with the relay's stream sequence; a direct
// one does not.
func TestRelayedDeliverySaysViaRelay(t *testing.T) {
	h := newHarness(t, func(s *fakeStore) {
		s.add("media.created", "Media created", inspector.SignatureValid, nil)
		s.add("media.ready", "Media ready", inspector.SignatureValid, func(r *inspector.Record) {
			r.Delivery.Source, r.Delivery.RelaySeq = relay.DeliverySource, 1240
		})
	})
	d := h.win.deliveries
	row := newRowView()
	if len(d.model.rows) != 2 {
		t.Fatalf("%d rows listed, want 2", len(d.model.rows))
	}
	for _, s := range d.model.rows {
		row.set(s, d.model.filter, false)
		if relayed := strings.Contains(row.path.Text, "via relay #1240"); relayed != (s.ID == 2) {
			t.Errorf("row %d: %q", s.ID, row.path.Text)
		}
	}
	d.open(2)
	if !strings.Contains(d.Detail.Meta.Text, "via relay #1240") {
		t.Fatalf("relayed: %q", d.Detail.Meta.Text)
	}
	d.open(1)
	if strings.Contains(d.Detail.Meta.Text, "relay") {
		t.Fatalf("direct: %q", d.Detail.Meta.Text)
	}
}

// TestHeaderMissesNoRelayStateAtStart: the link starts with the session,
// before the window; a state it reaches while the window is being built
// is shown (the window subscribes before it reads the state).
func TestHeaderMissesNoRelayStateAtStart(t *testing.T) {
	h := newHarness(t, nil)
	h.relay.state, h.relay.linked = relay.State{Phase: relay.Connecting}, true
	h.relay.afterRead = func() { h.relay.publish(relay.State{Phase: relay.Live}) }
	w := h.app.NewWindow("second")
	svc := h.win.svc
	m := newMainWindow(h.app, w, svc, station.DefaultSettings(), nil, nil, true)
	t.Cleanup(func() { m.close(); w.Close() })
	m.bridge.Flush()
	if m.header.Relay.Text != "relay: live" {
		t.Fatalf("header says %q after the link went live during the start", m.header.Relay.Text)
	}
}
