//go:build !unix

package prove

import "time"

// cpuTime is not measured here; cpu-ms/op then reads 0.
func cpuTime() time.Duration { return 0 }
