//go:build unix

package seedbench

import (
	"syscall"
	"time"
)

// CPUTimeSupported reports whether CPUTime measures anything on this
// operating system.
const CPUTimeSupported = true

// CPUTime is the process's CPU time so far, user plus system
// (getrusage(RUSAGE_SELF)): every goroutine of the process, the simulated
// devices and the generator included. The difference over a window,
// divided by the packets of that window, is the cpu-ns/pkt of every
// measurement here; unlike a rate, it hardly moves when other processes
// take a share of the CPUs.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
