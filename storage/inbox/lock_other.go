//go:build !unix

package inbox

import (
	"errors"
	"os"
)

// lockFile reports errors.ErrUnsupported off Unix: without flock two
// processes could both write one inbox, so there the store keeps the
// inbox off and inserts go to SQLite directly (correct, only slower).
func lockFile(f *os.File) error { return errors.ErrUnsupported }

func syncDir(dir string) error { return nil }
