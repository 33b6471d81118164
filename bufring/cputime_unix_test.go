//go:build unix

package bufring

import "syscall"

// cpuTime returns the process's user+system CPU time in nanoseconds
// (getrusage(RUSAGE_SELF)).
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
