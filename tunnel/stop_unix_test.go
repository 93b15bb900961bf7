//go:build unix

package tunnel

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
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

// TestKilledParentLeavesNoOrphan kills a Hookscope stand-in with SIGKILL,
// so no Stop runs, and checks cloudflared ends too: run directly, and run
// by a wrapper script that does not exec it (the parent-death signal
// reaches only the wrapper; the guard ends the rest of the group).
func TestKilledParentLeavesNoOrphan(t *testing.T) {
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "cloudflared-wrapper")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\n"+fakeBinary+" \"$@\"\necho wrapper done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, binary string }{
		{"direct", fakeBinary},
		{"wrapper without exec", wrapper},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), "HOOKSCOPE_TUNNEL_HELPER=1", "HELPER_BINARY="+tc.binary, "FAKECF_PID_FILE="+pidFile)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || strings.HasPrefix(line, "error") {
				_ = cmd.Process.Kill()
				t.Fatalf("helper: %q %v", line, err)
			}
			// The fake writes its pid as it starts, before the helper's
			// cloudflared is ready, so it is there.
			b, err := os.ReadFile(pidFile)
			pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || perr != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("fake pid file %q: %v %v", b, err, perr)
			}
			t.Cleanup(func() { // never leave an orphan behind, even when failing
				if !processGone(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if processGone(pid) {
				t.Fatalf("cloudflared %d not running", pid)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			waitGone(t, pid, 10*time.Second)
		})
	}
}
