// Package cputime reads the process's CPU time, for benchmarks and
// example commands that report CPU time per item beside wall-clock rates.
package cputime

import "time"

// Usage is the process's resource use from one getrusage(RUSAGE_SELF):
// user+system CPU time, and involuntary context switches (ru_nivcsw: how
// often the kernel took the CPU from a runnable thread of the process, a
// sign that other load competed for the CPUs during a measurement).
type Usage struct {
	CPU           time.Duration
	InvolSwitches uint64
}

// Sub returns u − v, field by field (the use between two reads).
func (u Usage) Sub(v Usage) Usage {
	return Usage{CPU: u.CPU - v.CPU, InvolSwitches: u.InvolSwitches - v.InvolSwitches}
}
