package bufring

import (
	"runtime"
	"sync/atomic"
)

// spinLimit is how many times a waiter re-loads an index before it starts
// yielding the processor. FreeBSD spins with cpu_spinwait for as long as it
// takes because the thread it waits for runs inside critical_enter and cannot
// be preempted. A goroutine can be, so after spinLimit loads (a few hundred
// nanoseconds: long enough for a running publisher to finish its store) the
// waiter calls runtime.Gosched on every further check, letting a preempted
// publisher run on this P. The cost of a stalled publisher is then one or
// more scheduler round trips (about a microsecond each) per waiter.
const spinLimit = 64

// waitFor returns once idx holds want. It is the
// "while (atomic_load_32(&br->br_prod_tail) != prod_head) cpu_spinwait();"
// loop of buf_ring_enqueue (and its cons_tail twin in buf_ring_dequeue_mc).
func waitFor(idx *atomic.Uint32, want uint32) {
	for i := 0; idx.Load() != want; i++ {
		if i >= spinLimit {
			runtime.Gosched()
		}
	}
}
