//go:build !unix

package storage

import (
	"errors"
	"os"
)

// lockFile is not implemented here: without a lock two processes could
// both write one inbox, so the inbox is not used and inserts go to SQLite
// directly (correct, only slower).
func lockFile(f *os.File) error { return errors.ErrUnsupported }

func syncDir(dir string) error { return nil }
