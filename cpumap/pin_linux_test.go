package cpumap

import (
	"errors"
	"runtime"
	"testing"

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
		if pinned != CPUSetOf(cpu) {
			t.Errorf("cpu %d: affinity while pinned %s", cpu, pinned)
		}
		if after != before {
			t.Errorf("cpu %d: affinity after unpin %s, before %s", cpu, after, before)
		}
	}
}

func TestPinErrors(t *testing.T) {
	for _, cpu := range []int{-1, MaxCPUs} {
		if _, err := PinCurrentThread(cpu); !errors.Is(err, ErrCPURange) {
			t.Errorf("PinCurrentThread(%d) = %v, want ErrCPURange", cpu, err)
		}
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
	if !errors.Is(err, ErrCPUNotOnline) {
		t.Fatalf("pin to disallowed cpu %d: %v, want ErrCPUNotOnline", off, err)
	}
	var pe *PinError
	if !errors.As(err, &pe) || pe.CPU != off {
		t.Errorf("error %v is not a *PinError for cpu %d", err, off)
	}
}
