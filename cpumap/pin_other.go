//go:build !linux

package cpumap

// PinCurrentThread pins the calling goroutine's OS thread to cpu. Outside
// Linux it is not implemented and returns a *PinError matching
// ErrPinUnsupported (or ErrCPURange for a number outside [0, MaxCPUs)).
func PinCurrentThread(cpu int) (unpin func() error, err error) {
	if cpu < 0 || cpu >= MaxCPUs {
		return nil, &PinError{CPU: cpu, Op: "sched_setaffinity", Err: ErrCPURange}
	}
	return nil, &PinError{CPU: cpu, Op: "sched_setaffinity", Err: ErrPinUnsupported}
}

// CurrentAffinity returns the CPUs the calling thread may run on. Outside
// Linux it returns ErrPinUnsupported.
func CurrentAffinity() (CPUSet, error) {
	return CPUSet{}, &PinError{CPU: -1, Op: "sched_getaffinity", Err: ErrPinUnsupported}
}
