//go:build unix

package storage

import (
	"os"
	"path/filepath"
	"syscall"
)

// legacyInboxInUse reports whether an older Hookscope still holds the
// inbox in dir (its lock file, flock'ed while it runs).
func legacyInboxInUse(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
