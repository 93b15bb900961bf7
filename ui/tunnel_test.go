package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/tunnel"
)

// logTunnel is a fake tunnel that keeps a log.
type logTunnel struct {
	*fakeTunnel
	lines []string
}

func (t *logTunnel) Logs() []string { return t.lines }

// TestHeaderTunnelRowAgreesWithTheButton: while cloudflared runs the
// button stops it and the Public row says what the tunnel waits for or
// what is wrong (a tunnel that never connected is "starting" with its
// reason), and when the next try is; a tunnel given up says why and that
// Start tries again.
func TestHeaderTunnelRowAgreesWithTheButton(t *testing.T) {
	h := newHarness(t, nil)
	hd := h.win.header
	next := time.Date(2026, 11, 25, 15, 4, 5, 0, time.Local)
	const edge = "cloudflared cannot reach Cloudflare's edge on port 7844. Still trying."
	for _, tc := range []struct {
		name   string
		st     tunnel.Status
		button string
		badge  string
		row    []string
		not    []string
	}{
		{"off", tunnel.Status{State: tunnel.Stopped}, "Start tunnel", "tunnel off", []string{"start the tunnel to get a public URL"}, nil},
		{"connecting", tunnel.Status{State: tunnel.Starting, PID: 42}, "Stop tunnel", "tunnel starting",
			[]string{"connecting to Cloudflare"}, []string{"start the tunnel"}},
		{"blocked edge", tunnel.Status{State: tunnel.Starting, PID: 42, Cause: tunnel.CauseEdgeBlocked, Reason: edge}, "Stop tunnel", "tunnel starting",
			[]string{edge}, []string{"start the tunnel", "reconnecting"}},
		{"waiting for the next try", tunnel.Status{State: tunnel.Starting, Cause: tunnel.CauseRateLimited, Reason: "Cloudflare is rate-limiting quick tunnels",
			Attempt: 2, NextRetry: next}, "Stop tunnel", "tunnel starting",
			[]string{"Cloudflare is rate-limiting quick tunnels. Try 2 failed; next try at 15:04:05."}, []string{"start the tunnel"}},
		{"lost after ready", tunnel.Status{State: tunnel.Reconnecting, PID: 43, Cause: tunnel.CauseLostConnection, Reason: "cloudflared lost its connection to Cloudflare"},
			"Stop tunnel", "tunnel reconnecting", []string{"lost its connection"}, nil},
		{"gave up", tunnel.Status{State: tunnel.Failed, Cause: tunnel.CauseBadToken, Reason: "cloudflared refused the tunnel token."}, "Start tunnel", "tunnel failed",
			[]string{"cloudflared refused the tunnel token. Press Start tunnel to try again."}, nil},
		{"unusable cloudflared", tunnel.Status{State: tunnel.NotInstalled, Cause: tunnel.CauseNotInstalled, Reason: `cloudflared "/usr/bin/cloudflared" is version 2021.3.1`},
			"Start tunnel", "tunnel failed", []string{"is version 2021.3.1. Press Start tunnel"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.win.tunnelEvent(tunnel.Event{Kind: tunnel.StateChanged, Status: tc.st})
			if hd.TunnelButton.Text != tc.button || hd.TunnelState.Text != tc.badge {
				t.Errorf("button %q, badge %q; want %q, %q", hd.TunnelButton.Text, hd.TunnelState.Text, tc.button, tc.badge)
			}
			for _, w := range tc.row {
				if !strings.Contains(hd.PublicURL.Text, w) {
					t.Errorf("Public row %q lacks %q", hd.PublicURL.Text, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(hd.PublicURL.Text, w) {
					t.Errorf("Public row %q says %q", hd.PublicURL.Text, w)
				}
			}
			if !hd.CopyPublic.Disabled() {
				t.Error("Copy enabled without a public URL")
			}
		})
	}
}

// TestTunnelLogView: the Log button by the tunnel state opens the
// cloudflared log, newest last, and Copy all copies it.
func TestTunnelLogView(t *testing.T) {
	h := newHarness(t, nil)
	hd := h.win.header
	if hd.TunnelLog.Visible() {
		t.Fatal("Log shown for a tunnel control that keeps no log")
	}
	lt := &logTunnel{fakeTunnel: h.tun, lines: []string{
		"hookscope: started /usr/bin/cloudflared tunnel --no-autoupdate --metrics 127.0.0.1:40000 --url http://127.0.0.1:8787 (pid 42)",
		"2026-11-25T20:05:40Z INF |  ERROR: Allow outbound QUIC traffic on port 7844 or use HTTP2.   |",
		"2026-11-25T20:05:42Z ERR Failed to dial a quic connection error=\"failed to dial to edge with quic: timeout: no recent network activity\"",
	}}
	h.win.svc.Tunnel = &logTunnel{fakeTunnel: h.tun}
	hd.refresh()
	if !hd.TunnelLog.Visible() || !hd.TunnelLog.Disabled() {
		t.Fatal("Log enabled for an empty log")
	}
	h.win.svc.Tunnel = lt
	hd.refresh()
	if !hd.TunnelLog.Visible() || hd.TunnelLog.Disabled() {
		t.Fatal("no Log button")
	}
	test.Tap(hd.TunnelLog)
	v := hd.LogView
	if v == nil || v.dialog == nil {
		t.Fatal("no log view")
	}
	if n := v.Code.Rows(); n < 3 || !strings.HasPrefix(v.Code.RowText(0), "hookscope: started") {
		t.Fatalf("%d rows, first %q", n, v.Code.RowText(0))
	}
	if !strings.Contains(v.Note.Text, "3 lines") {
		t.Fatalf("note %q", v.Note.Text)
	}
	test.Tap(v.CopyAll)
	if got := h.app.Clipboard().Content(); got != strings.Join(lt.lines, "\n")+"\n" {
		t.Fatalf("clipboard %q", got)
	}
	lt.lines = append(lt.lines, "hookscope: try 1 failed: …; next try at 15:04:05 (in 2s)")
	v.set(lt.Logs())
	if !strings.Contains(v.Code.RowText(v.Code.Rows()-1), "try 1 failed") {
		t.Fatalf("last row %q", v.Code.RowText(v.Code.Rows()-1))
	}
	v.dialog.Hide()
}

// TestStartAfterGivingUp: Start tunnel on a tunnel that gave up starts a
// new one (it did nothing while the station still held the old one), and
// the window's status and log are the new supervisor's.
func TestStartAfterGivingUp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "cloudflared")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'cloudflared version 2026.8.2 (built x)'; exit 0; fi\n" +
		"echo 'Provided Tunnel token is not valid.' >&2\nexit 255\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := station.Open(t.Context(), station.Config{DBPath: filepath.Join(t.TempDir(), "h.db"), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	ctl := &stationTunnel{st: st, binary: bin, logf: t.Logf}
	waitFailed := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for ctl.Status().State != tunnel.Failed {
			if time.Now().After(deadline) {
				t.Fatalf("status %+v", ctl.Status())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	waitFailed()
	first := st.Tunnel()
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	if st.Tunnel() == first {
		t.Fatal("Start after giving up did not start a new tunnel")
	}
	waitFailed()
	if s := ctl.Status(); s.Cause != tunnel.CauseBadToken || !strings.Contains(strings.Join(ctl.Logs(), "\n"), "Provided Tunnel token is not valid.") {
		t.Fatalf("status %+v, log %q", s, ctl.Logs())
	}
	ctl.Stop()
	if s := ctl.Status(); s.State != tunnel.Failed || len(ctl.Logs()) == 0 {
		t.Fatalf("after Stop the last status and log are gone: %+v", s)
	}
}
