package inbox

import (
	"os"
	"syscall"
)

// datasync makes f's written data durable. fdatasync skips the inode's
// times, and on a segment whose blocks were all written before (a zeroed
// spare or a recycled segment) it has no metadata to journal at all:
// measured at 90-140 µs here against 250-350 µs for an appending write.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
