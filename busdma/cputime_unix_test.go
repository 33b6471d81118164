//go:build unix

package busdma_test

import (
	"syscall"
	"time"
)

// cpuNow is the process's user+system CPU time (getrusage(RUSAGE_SELF)).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
