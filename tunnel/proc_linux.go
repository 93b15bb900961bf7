//go:build linux

package tunnel

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts cloudflared in its own process group (so a terminal's
// Ctrl-C reaches Hookscope, which then stops it in order, and so the whole
// group can be signalled) and asks the kernel to kill it if Hookscope dies
// without cleaning up. Pdeathsig is tied to the creating OS thread; the Go
// runtime only retires threads locked with LockOSThread, which the
// supervisor never does.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// terminate asks cloudflared's process group to shut down gracefully.
func terminate(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }

// kill ends cloudflared's process group at once.
func kill(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// afterStart has nothing to do on Linux: Pdeathsig is set at start.
func afterStart(*exec.Cmd) (func(), error) { return func() {}, nil }
