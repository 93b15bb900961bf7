//go:build unix

package tunnel

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("cloudflared pid %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopLeavesNoOrphan(t *testing.T) {
	s, r := startSupervisor(t, testConfig(t))
	e := r.waitFor(t, "ready", isState(Ready))
	pid := e.Status.PID
	if processGone(pid) {
		t.Fatalf("pid %d not running while ready", pid)
	}
	s.Stop()
	// Stop waits for the process, so it must already be gone.
	if !processGone(pid) {
		t.Fatalf("pid %d still running after Stop", pid)
	}
	if st := s.State(); st.State != Stopped {
		t.Fatalf("state = %+v", st)
	}
	if logsContain(s, "killing it") {
		t.Fatal("a well-behaved cloudflared was killed instead of stopped")
	}
	s.Stop() // idempotent
}

func TestSIGTERMIgnoredIsKilledAfterGrace(t *testing.T) {
	cfg := testConfig(t, "FAKECF_IGNORE_TERM=1")
	cfg.GracePeriod = 300 * time.Millisecond
	s, r := startSupervisor(t, cfg)
	e := r.waitFor(t, "ready", isState(Ready))
	start := time.Now()
	s.Stop()
	if d := time.Since(start); d < cfg.GracePeriod {
		t.Fatalf("Stop returned after %s, before the grace period", d)
	}
	if !processGone(e.Status.PID) {
		t.Fatalf("pid %d survived", e.Status.PID)
	}
	if !logsContain(s, "did not exit") {
		t.Fatalf("no kill noted in logs: %q", s.Logs())
	}
}

// TestKilledParentLeavesNoOrphan kills a Hookscope stand-in with SIGKILL, so
// no Stop runs, and checks the kernel ends cloudflared (Pdeathsig).
func TestKilledParentLeavesNoOrphan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal exists on Linux only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "HOOKSCOPE_TUNNEL_HELPER=1", "HELPER_BINARY="+fakeBinary)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { // never leave an orphan behind, even when failing
		if !processGone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if processGone(pid) {
		t.Fatalf("child %d not running", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid, 10*time.Second)
}
