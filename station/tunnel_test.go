//go:build unix

package station_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookscope/hookscope/station"
	"github.com/hookscope/hookscope/tunnel"
)

// buildFakeCloudflared builds the tunnel package's fake cloudflared.
func buildFakeCloudflared(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cloudflared")
	if out, err := exec.Command("go", "build", "-o", bin, "../tunnel/internal/fakecloudflared").CombinedOutput(); err != nil {
		t.Fatalf("build fake cloudflared: %v\n%s", err, out)
	}
	return bin
}

// alive is the pids in the fake's pid file that still run.
func alive(t *testing.T, pidFile string) []int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		if syscall.Kill(pid, 0) == nil && !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// zombie reports a process that exited and was not reaped yet.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// TestStartTunnelSerialised: two starts at once (a double click on Start
// tunnel) leave exactly one cloudflared running, and StopTunnel none.
func TestStartTunnelSerialised(t *testing.T) {
	bin := buildFakeCloudflared(t)
	st, err := station.Open(t.Context(), station.Config{DBPath: filepath.Join(t.TempDir(), "h.db"), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	pidFile := filepath.Join(t.TempDir(), "pids")
	cfg := tunnel.Config{Binary: bin, PollInterval: 20 * time.Millisecond, Env: []string{"FAKECF_PID_FILE=" + pidFile}}
	for round := range 3 {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if _, err := st.StartTunnel(context.Background(), cfg); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for len(alive(t, pidFile)) != 1 || st.Tunnel().State().PID == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: cloudflared running: %v, want one", round, alive(t, pidFile))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if pids := alive(t, pidFile); pids[0] != st.Tunnel().State().PID {
			t.Fatalf("round %d: running %v, the station's tunnel is %d", round, pids, st.Tunnel().State().PID)
		}
		st.StopTunnel()
		if pids := alive(t, pidFile); len(pids) != 0 || st.Tunnel() != nil {
			t.Fatalf("round %d: after StopTunnel: %v running", round, pids)
		}
	}
}

// TestTunnelFollowsTheReceiver: a running tunnel moves with the receiver
// to its new address; a stopped one stays stopped.
func TestTunnelFollowsTheReceiver(t *testing.T) {
	bin := buildFakeCloudflared(t)
	st, err := station.Open(t.Context(), station.Config{DBPath: filepath.Join(t.TempDir(), "h.db"), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	argsFile := filepath.Join(t.TempDir(), "args.json")
	cfg := tunnel.Config{Binary: bin, PollInterval: 20 * time.Millisecond, Env: []string{"FAKECF_ARGS_FILE=" + argsFile}}
	if _, err := st.StartTunnel(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	first := st.Tunnel()
	if err := st.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	moved := st.Tunnel()
	if moved == nil || moved == first {
		t.Fatal("the tunnel did not follow the receiver")
	}
	want := "--url " + station.LocalURL(st.Addr())
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(argsFile)
		if strings.Contains(strings.ReplaceAll(string(b), `","`, " "), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cloudflared runs with %s, want %s", b, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st.StopTunnel()
	if err := st.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if st.Tunnel() != nil {
		t.Fatal("a stopped tunnel was started again when the receiver moved")
	}
}
