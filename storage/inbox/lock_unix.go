//go:build unix

package inbox

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f without waiting. It reports
// ErrLocked when another process holds it: that process owns the inbox.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// syncDir makes the creation or removal of files in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
