//go:build linux

package tunnel

import "syscall"

// sysProcAttr starts cloudflared in its own process group and asks the
// kernel to send it SIGTERM (a graceful stop) when Hookscope dies.
// Pdeathsig fires when the OS thread that started the child exits, so the
// supervisor holds that thread (LockOSThread) until the child is reaped.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
