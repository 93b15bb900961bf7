package ui

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTunnelCtlSaysWhatIsWrong: the header's line for a cloudflared that
// cannot run names the configured path and what is wrong with it.
func TestTunnelCtlSaysWhatIsWrong(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "cloudflared")
	ok, why := (&stationTunnel{binary: bad}).Installed()
	if ok || !strings.Contains(why, bad) || !strings.Contains(why, "does not exist") || !strings.Contains(why, "Settings → Tunnel") {
		t.Fatalf("Installed() = %v, %q", ok, why)
	}
	t.Setenv("PATH", t.TempDir())
	if ok, why := (&stationTunnel{}).Installed(); ok || !strings.Contains(why, "install cloudflared") {
		t.Fatalf("Installed() with nothing on PATH = %v, %q", ok, why)
	}
}
