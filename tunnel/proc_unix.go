//go:build unix

package tunnel

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// guardScript runs cloudflared ("$@") in place of the shell, after leaving
// a watcher behind in its process group. The watcher holds the read end of
// a pipe whose only write end Hookscope holds: when Hookscope dies, however
// it dies, the kernel closes that end, the watcher reads end-of-file and
// ends the whole group (SIGTERM, then SIGKILL after 5 s). This covers what
// a parent-death signal cannot: a cloudflared wrapper script that runs the
// real program without exec (its child never gets the signal), and Unix
// systems without one. A home-grown guard because no library does this and
// an orphaned cloudflared keeps a public URL pointing at a dead receiver.
const guardScript = `{ read -r _ <&3; trap '' TERM; kill -TERM 0; sleep 5; kill -KILL 0; } >/dev/null 2>&1 &
exec "$@" 3<&-`

// guardShell runs guardScript; without it cloudflared runs unguarded.
const guardShell = "/bin/sh"

// procGuard is what keeps one cloudflared from outliving Hookscope.
type procGuard struct {
	r, w *os.File // the watcher's pipe; nil when unguarded
}

// guardedCommand builds the command that runs path with args in its own
// process group (so a terminal's Ctrl-C reaches only Hookscope, which stops
// cloudflared in order, and the group can be signalled as one), under the
// guard script where a shell exists, with the platform's parent-death
// signal (sysProcAttr).
func guardedCommand(path string, args []string) (*exec.Cmd, *procGuard, error) {
	if _, err := os.Stat(guardShell); err != nil {
		cmd := exec.Command(path, args...)
		cmd.SysProcAttr = sysProcAttr()
		return cmd, &procGuard{}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("guard pipe: %w", err)
	}
	cmd := exec.Command(guardShell, append([]string{"-c", guardScript, "hookscope-cloudflared-guard", path}, args...)...)
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = sysProcAttr()
	return cmd, &procGuard{r: r, w: w}, nil
}

// started is called once cmd has started (or failed to): the child has its
// copy of the read end.
func (g *procGuard) started(*exec.Cmd) error {
	if g.r != nil {
		return g.r.Close()
	}
	return nil
}

// reaped is called once cmd was waited for: whatever is left of its group
// (the watcher, a wrapper's children) is killed, and the pipe closed.
func (g *procGuard) reaped(cmd *exec.Cmd) {
	_ = kill(cmd)
	if g.w != nil {
		_ = g.w.Close()
	}
}

// abandon releases the guard of a command that never started.
func (g *procGuard) abandon() {
	for _, f := range []*os.File{g.r, g.w} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// terminate asks cloudflared's process group to shut down gracefully.
func terminate(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }

// kill ends cloudflared's process group at once.
func kill(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
