//go:build windows

package tunnel

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGuard holds the job object that ends cloudflared with Hookscope.
type procGuard struct {
	job windows.Handle
}

// guardedCommand starts cloudflared in a new process group, which keeps
// console Ctrl-C events for Hookscope; Hookscope then stops it in order.
func guardedCommand(path string, args []string) (*exec.Cmd, *procGuard, error) {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
	return cmd, &procGuard{}, nil
}

// started puts cloudflared in a job object that kills it when the job's
// last handle closes. Hookscope holds that handle, so when Hookscope dies,
// however it dies, Windows closes the handle and ends cloudflared: the
// Windows counterpart of the Unix guard. (A wrapper's children started
// before the assignment are not in the job.)
func (g *procGuard) started(cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("configure job object: %w", err)
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("open cloudflared process: %w", err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("assign cloudflared to job object: %w", err)
	}
	g.job = job
	return nil
}

// reaped closes the job handle once cloudflared was waited for, ending
// whatever is left in the job.
func (g *procGuard) reaped(*exec.Cmd) {
	if g.job != 0 {
		windows.CloseHandle(g.job)
		g.job = 0
	}
}

// abandon releases the guard of a command that never started.
func (g *procGuard) abandon() {}

// terminate stops cloudflared. A process in its own group has no console
// signal Hookscope can send it, so this is a kill.
func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// kill ends cloudflared at once.
func kill(cmd *exec.Cmd) error { return cmd.Process.Kill() }
