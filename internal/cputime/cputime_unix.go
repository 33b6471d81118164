//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Supported reports whether Process and Read measure anything on this
// platform.
const Supported = true

// Process returns the process's user+system CPU time
// (getrusage(RUSAGE_SELF)), or 0 if getrusage fails. It is Read().CPU.
func Process() time.Duration { return Read().CPU }

// Read returns the process's CPU time and involuntary context switches
// from one getrusage(RUSAGE_SELF), or the zero Usage if it fails.
func Read() Usage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return Usage{}
	}
	return Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), InvolSwitches: uint64(ru.Nivcsw)}
}
