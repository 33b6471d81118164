package cpumap

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// PinCurrentThread locks the calling goroutine to its OS thread
// (runtime.LockOSThread) and sets that thread's CPU affinity to cpu alone
// (sched_setaffinity(2) on thread id 0, i.e. the caller). It is the
// goroutine-side counterpart of FreeBSD binding a grouptask thread with
// taskqgroup_attach_cpu.
//
// Pins nest, and their unpins may come in any order: the thread's affinity
// is always the CPU of the most recent pin still held, and once every pin
// is released, the affinity the thread had before the outermost one. (An
// unpin that simply restored the affinity its pin found would leave the
// thread bound to one CPU when an outer pin is released before an inner
// one.) Each pin also locks the goroutine to its thread once, and each
// unpin unlocks it once, so the goroutine is free again after the last.
//
// unpin must be called on the goroutine that pinned (elsewhere it returns a
// *PinError matching ErrUnpinThread and changes nothing); a second call
// returns nil. If the goroutine exits while pinned, the runtime terminates
// the thread, so the narrowed affinity never leaks to other goroutines.
// The nesting assumes nothing else changes the thread's affinity while it
// is pinned.
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
	var cur unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cur); err != nil {
		runtime.UnlockOSThread()
		return nil, &PinError{CPU: cpu, Op: "sched_getaffinity", Err: classifyErrno(err)}
	}
	tid := unix.Gettid()
	pins.mu.Lock()
	defer pins.mu.Unlock()
	st := pins.byThread[tid]
	if st != nil && !onlyCPU(&cur, st.held[len(st.held)-1].cpu) {
		// A pin stack left by a thread that died pinned (its goroutine
		// exited), whose id this thread reuses: start afresh.
		st = nil
	}
	var want unix.CPUSet
	want.Set(cpu)
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		runtime.UnlockOSThread()
		return nil, &PinError{CPU: cpu, Op: "sched_setaffinity", Err: classifyErrno(err)}
	}
	if st == nil {
		st = &pinStack{base: cur}
		if pins.byThread == nil {
			pins.byThread = map[int]*pinStack{}
		}
		pins.byThread[tid] = st
	}
	p := &pin{cpu: cpu}
	st.held = append(st.held, p)
	return func() error { return st.release(tid, p) }, nil
}

// pins are the pins held, per thread. A thread runs one locked goroutine,
// so a thread's stack is one goroutine's nesting.
var pins struct {
	mu       sync.Mutex
	byThread map[int]*pinStack // by thread id; guarded by mu
}

// pinStack is one thread's pins, guarded by pins.mu.
type pinStack struct {
	base unix.CPUSet // the affinity before the outermost pin
	held []*pin      // in the order they were made
}

type pin struct {
	cpu  int
	done bool
}

// release is unpin: drop p from the stack and set the affinity the pins
// still held call for.
func (st *pinStack) release(tid int, p *pin) error {
	pins.mu.Lock()
	defer pins.mu.Unlock()
	if p.done {
		return nil
	}
	if unix.Gettid() != tid {
		return &PinError{CPU: p.cpu, Op: "unpin", Err: ErrUnpinThread}
	}
	p.done = true
	st.held = slices.DeleteFunc(st.held, func(q *pin) bool { return q == p })
	target := st.base
	if len(st.held) == 0 {
		delete(pins.byThread, tid)
	} else {
		target = unix.CPUSet{}
		target.Set(st.held[len(st.held)-1].cpu)
	}
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetaffinity(0, &target); err != nil {
		return &PinError{CPU: p.cpu, Op: "sched_setaffinity (restore)", Err: classifyErrno(err)}
	}
	return nil
}

// onlyCPU reports whether s is {cpu}.
func onlyCPU(s *unix.CPUSet, cpu int) bool { return s.Count() == 1 && s.IsSet(cpu) }

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
