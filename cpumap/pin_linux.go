package cpumap

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// PinCurrentThread locks the calling goroutine to its OS thread
// (runtime.LockOSThread) and sets that thread's CPU affinity to cpu alone
// (sched_setaffinity(2) on thread id 0, i.e. the caller). It is the
// goroutine-side counterpart of FreeBSD binding a grouptask thread with
// taskqgroup_attach_cpu.
//
// unpin restores the affinity the thread had before and unlocks the
// goroutine; it must be called on the same goroutine, once. If the
// goroutine exits while pinned, the runtime terminates the thread, so the
// narrowed affinity never leaks to other goroutines.
//
// Errors (*PinError): ErrCPURange for a number outside [0, MaxCPUs),
// ErrCPUNotOnline when the kernel refuses the CPU as offline or outside this
// process's allowed set (EINVAL), ErrPinNotPermitted on EPERM. On error the
// goroutine is not left locked and the affinity is unchanged.
func PinCurrentThread(cpu int) (unpin func() error, err error) {
	if cpu < 0 || cpu >= MaxCPUs {
		return nil, &PinError{CPU: cpu, Op: "sched_setaffinity", Err: ErrCPURange}
	}
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return nil, &PinError{CPU: cpu, Op: "sched_getaffinity", Err: classifyErrno(err)}
	}
	var want unix.CPUSet
	want.Set(cpu)
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		runtime.UnlockOSThread()
		return nil, &PinError{CPU: cpu, Op: "sched_setaffinity", Err: classifyErrno(err)}
	}
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		defer runtime.UnlockOSThread()
		if err := unix.SchedSetaffinity(0, &old); err != nil {
			return &PinError{CPU: cpu, Op: "sched_setaffinity (restore)", Err: classifyErrno(err)}
		}
		return nil
	}, nil
}

// CurrentAffinity returns the CPUs the calling OS thread may run on
// (sched_getaffinity(2)). Call it from a goroutine locked to its thread for
// a meaningful answer.
func CurrentAffinity() (CPUSet, error) {
	var cur unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cur); err != nil {
		return CPUSet{}, &PinError{CPU: -1, Op: "sched_getaffinity", Err: classifyErrno(err)}
	}
	var s CPUSet
	for c := 0; c < MaxCPUs; c++ {
		if cur.IsSet(c) {
			s.Set(c)
		}
	}
	return s, nil
}

func classifyErrno(err error) error {
	switch {
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%w: %w", ErrCPUNotOnline, err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: %w", ErrPinNotPermitted, err)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: %w", ErrPinUnsupported, err)
	}
	return err
}
