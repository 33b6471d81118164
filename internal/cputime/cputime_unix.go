//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Supported reports whether Process measures anything on this platform.
const Supported = true

// Process returns the process's user+system CPU time
// (getrusage(RUSAGE_SELF)), or 0 if getrusage fails.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
