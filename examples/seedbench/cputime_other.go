//go:build !unix

package seedbench

import "time"

// CPUTimeSupported reports whether CPUTime measures anything on this
// operating system.
const CPUTimeSupported = false

// CPUTime is 0 where getrusage does not exist: cpu-ns/pkt then reads 0.
func CPUTime() time.Duration { return 0 }
