//go:build unix && !linux

package tunnel

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts cloudflared in its own process group so the group can be
// signalled as one. These systems have no parent-death signal; an orderly
// Hookscope exit still stops cloudflared through Stop, and cloudflared
// itself exits when its stdio pipes close.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate asks cloudflared's process group to shut down gracefully.
func terminate(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }

// kill ends cloudflared's process group at once.
func kill(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// afterStart has nothing to do here.
func afterStart(*exec.Cmd) (func(), error) { return func() {}, nil }
