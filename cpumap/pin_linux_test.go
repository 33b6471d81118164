package cpumap

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinOnGoroutine pins a fresh goroutine to cpu, reads the affinity back,
// unpins and reads it again.
func pinOnGoroutine(cpu int) (before, pinned, after CPUSet, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if before, err = CurrentAffinity(); err != nil {
			return
		}
		var unpin func() error
		if unpin, err = PinCurrentThread(cpu); err != nil {
			return
		}
		pinned, err = CurrentAffinity()
		if uerr := unpin(); err == nil {
			err = uerr
		}
		if err == nil {
			after, err = CurrentAffinity()
		}
	}()
	<-done
	return
}

func TestPinReadBack(t *testing.T) {
	allowed, err := CurrentAffinity()
	if err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	for _, cpu := range allowed.List() {
		before, pinned, after, err := pinOnGoroutine(cpu)
		if errors.Is(err, ErrPinNotPermitted) || errors.Is(err, ErrPinUnsupported) {
			t.Skipf("pinning not permitted here: %v", err)
		}
		require.NoError(t, err, "cpu %d", cpu)
		assert.Equal(t, CPUSetOf(cpu), pinned, "cpu %d: affinity while pinned %s", cpu, pinned)
		assert.Equal(t, before, after, "cpu %d: affinity after unpin %s, before %s", cpu, after, before)
	}
}

func TestPinErrors(t *testing.T) {
	for _, cpu := range []int{-1, MaxCPUs} {
		_, err := PinCurrentThread(cpu)
		assert.ErrorIs(t, err, ErrCPURange, "PinCurrentThread(%d) = %v, want ErrCPURange", cpu, err)
	}
	allowed, err := CurrentAffinity()
	if err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	// The first CPU number this process may not use: offline, absent or
	// outside its cpuset. The kernel answers EINVAL.
	off := 0
	for allowed.Has(off) {
		off++
	}
	_, _, _, err = pinOnGoroutine(off)
	if errors.Is(err, ErrPinNotPermitted) {
		t.Skipf("not permitted: %v", err)
	}
	require.ErrorIs(t, err, ErrCPUNotOnline, "pin to disallowed cpu %d: %v, want ErrCPUNotOnline", off, err)
	var pe *PinError
	assert.False(t, !errors.As(err, &pe) || pe.CPU != off, "error %v is not a *PinError for cpu %d", err, off)
}

// Issue 20 (still open from the first rounds): nested pins released in any
// order leave the thread as the pins still held say: the CPU of the
// innermost one, and the affinity from before the outermost once all are
// released. Released outer-first, the thread used to stay pinned to the
// inner pin's CPU. An unpin on another goroutine is refused with
// ErrUnpinThread and changes nothing.
func TestNestedPinsAnyOrder(t *testing.T) {
	allowed, err := CurrentAffinity()
	if err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	cpus := allowed.List()
	c := func(i int) int { return cpus[i%len(cpus)] }
	for name, order := range map[string][]int{
		"inner-first": {2, 1, 0},
		"outer-first": {0, 1, 2},
		"middle":      {1, 0, 2},
		"middle-last": {0, 2, 1},
	} {
		t.Run(name, func(t *testing.T) {
			// The pins run on a goroutine of their own (it locks its
			// thread); it reports to the test goroutine.
			res := make(chan error, 1)
			go func() { res <- nestedPins(c, order) }()
			err := <-res
			if errors.Is(err, ErrPinNotPermitted) {
				t.Skipf("not permitted: %v", err)
			}
			require.NoError(t, err)
		})
	}
	t.Run("other-goroutine", func(t *testing.T) {
		unpinc := make(chan func() error)
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			unpin, err := PinCurrentThread(c(0))
			if err != nil {
				close(unpinc)
				done <- nil
				return
			}
			unpinc <- unpin
			<-release
			done <- unpin()
		}()
		unpin, ok := <-unpinc
		if !ok {
			t.Skip("pinning not possible here")
		}
		err := unpin()
		require.ErrorIs(t, err, ErrUnpinThread)
		var pe *PinError
		require.ErrorAs(t, err, &pe)
		close(release)
		require.NoError(t, <-done, "the unpin on the pinning goroutine")
	})
}

// nestedPins pins the calling goroutine three times (to c(0), c(1), c(2)),
// releases the pins in order and checks the affinity after each release.
func nestedPins(c func(int) int, order []int) error {
	before, err := CurrentAffinity()
	if err != nil {
		return err
	}
	var unpins [3]func() error
	for i := range unpins {
		if unpins[i], err = PinCurrentThread(c(i)); err != nil {
			return err
		}
	}
	held := map[int]bool{0: true, 1: true, 2: true}
	for _, i := range order {
		if err := unpins[i](); err != nil {
			return err
		}
		if err := unpins[i](); err != nil {
			return fmt.Errorf("a second unpin: %w", err)
		}
		delete(held, i)
		got, err := CurrentAffinity()
		if err != nil {
			return err
		}
		want := before
		for j := 2; j >= 0; j-- {
			if held[j] {
				want = CPUSetOf(c(j))
				break
			}
		}
		if got != want {
			return fmt.Errorf("after releasing pin %d of %v: affinity %s, want %s", i, order, got, want)
		}
	}
	return nil
}
