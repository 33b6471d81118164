package vsched

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/goiflib/goiflib/cpumap"
)

// The cost model's parameters for the machine the repository runs on come
// from these benchmarks (ThisMachine cites each):
//
//	go test -run '^$' -bench 'Machine' -count 5 ./internal/vsched/
//
// Each reports ns per operation; run them on a quiet machine and take the
// median.

// padded keeps each word on its own cache line.
type padded struct {
	_ cpu.CacheLinePad
	v atomic.Uint64
	_ cpu.CacheLinePad
}

// BenchmarkMachineLoadHit is Costs.L1: an atomic load of a line this CPU
// holds (the loop's other work is an add and a compare).
func BenchmarkMachineLoadHit(b *testing.B) {
	var w padded
	var sum uint64
	for b.Loop() {
		sum += w.v.Load()
	}
	_ = sum
}

// BenchmarkMachineLockedAdd is Costs.Locked: an uncontended LOCK XADD on a
// line this CPU holds modified.
func BenchmarkMachineLockedAdd(b *testing.B) {
	var w padded
	for b.Loop() {
		w.v.Add(1)
	}
}

// BenchmarkMachineLockedCAS is Costs.Locked measured with LOCK CMPXCHG, the
// instruction of mp_ring's state word.
func BenchmarkMachineLockedCAS(b *testing.B) {
	var w padded
	for b.Loop() {
		x := w.v.Load()
		w.v.CompareAndSwap(x, x+1)
	}
}

// BenchmarkMachineLinePingPong is Costs.XferCore: two goroutines pinned to
// CPUs 0 and 1 (cpumap.PinCurrentThread) take turns incrementing one word,
// each waiting for the other's increment, so every increment moves the
// line from one core's cache to the other's. It reports ns per one-way
// transfer (the round trip halved) over the whole run, and best-ns/transfer:
// the fastest batch of 256 round trips, which a descheduled player (a
// loaded machine) does not inflate; the hardware figure is the latter. It
// skips on a machine with one CPU or where pinning is refused.
func BenchmarkMachineLinePingPong(b *testing.B) {
	if runtime.NumCPU() < 2 || runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs 2 CPUs and GOMAXPROCS ≥ 2")
	}
	var w padded
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	n := uint64(b.N)
	const batch = 256
	best := int64(-1)
	player := func(cpuID int, parity uint64) {
		defer wg.Done()
		unpin, err := cpumap.PinCurrentThread(cpuID)
		if err != nil {
			errs <- err
			return
		}
		defer func() { _ = unpin() }()
		last := time.Now()
		for {
			x := w.v.Load()
			if x >= 2*n {
				return
			}
			if x%2 == parity {
				if parity == 0 && x%(2*batch) == 0 && x > 0 {
					now := time.Now()
					if d := now.Sub(last).Nanoseconds(); best < 0 || d < best {
						best = d
					}
					last = now
				}
				w.v.Store(x + 1)
			}
		}
	}
	b.ResetTimer()
	wg.Add(2)
	go player(0, 0)
	go player(1, 1)
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Skip("cannot pin:", err)
	}
	// b.N round trips of two transfers each: report per transfer.
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/transfer")
	if best > 0 {
		b.ReportMetric(float64(best)/(2*batch), "best-ns/transfer")
	}
}

// BenchmarkMachineGosched is Costs.Yield: runtime.Gosched with no other
// goroutine waiting for this P.
func BenchmarkMachineGosched(b *testing.B) {
	for b.Loop() {
		runtime.Gosched()
	}
}

// BenchmarkMachineSwitch is Costs.ContextSwitch: two goroutines on one P
// (GOMAXPROCS 1 for the benchmark) yielding to each other, one goroutine
// switch per Gosched.
func BenchmarkMachineSwitch(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		for !stop.Load() {
			runtime.Gosched()
		}
		close(done)
	}()
	for b.Loop() {
		runtime.Gosched()
	}
	stop.Store(true)
	<-done
}

// BenchmarkMachineWake is Costs.Wake: a hand-off through a parked
// goroutine, as internal/wait's Queue and shm.Parker do it (a channel of
// capacity 1): one goroutine unparks the other and parks until unparked
// back, so each operation is one wake-up of a parked goroutine.
func BenchmarkMachineWake(b *testing.B) {
	ping, pong := make(chan struct{}, 1), make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
		close(done)
	}()
	for b.Loop() {
		ping <- struct{}{}
		<-pong
	}
	close(ping)
	<-done
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/wake")
}
