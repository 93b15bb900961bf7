//go:build windows

package tunnel

import (
	"os/exec"
	"syscall"
)

// createNewProcessGroup keeps console Ctrl-C events for Hookscope, which
// then stops cloudflared in order.
const createNewProcessGroup = 0x00000200

// setProcAttrs starts cloudflared in a new process group.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: createNewProcessGroup}
}

// terminate stops cloudflared. Windows has no SIGTERM for console
// programs started without a console of their own, so this is a kill.
func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// kill ends cloudflared at once.
func kill(cmd *exec.Cmd) error { return cmd.Process.Kill() }
