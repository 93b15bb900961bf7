//go:build unix && !linux

package tunnel

import "syscall"

// sysProcAttr starts cloudflared in its own process group. These systems
// have no parent-death signal; the guard script ends cloudflared when
// Hookscope dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
