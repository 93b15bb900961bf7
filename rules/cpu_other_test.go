//go:build !unix

package rules_test

import "time"

// cpuTime is not measured here (BenchmarkFind's cpu-ms/search reads 0).
func cpuTime() time.Duration { return 0 }
