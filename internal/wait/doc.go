// Package wait is the spin-then-park policy shared by bufring and mpring,
// written once.
//
// FreeBSD's rings spin without bound (cpu_spinwait) because the thread a
// waiter waits for runs inside critical_enter and cannot be preempted. A
// goroutine can be, and a waiter that spins on a descheduled peer burns its
// CPU until the Go scheduler happens to run that peer. Every wait in the
// rings therefore goes through the same three phases:
//
//  1. Spin: re-check the condition Spins times (an atomic load each). A peer
//     that is running finishes a publication in tens of nanoseconds, well
//     inside this budget.
//  2. Yield: call runtime.Gosched before each further check. A peer that was
//     preempted, or that shares this P (GOMAXPROCS below the number of
//     runnable goroutines), gets to run.
//  3. Park: after Yields yields, block on a Queue until the side that makes
//     the condition true wakes it, the caller's context is done, or the ring
//     is closed. A parked goroutine costs no CPU.
//
// Waits for a peer that is between reserving and publishing a slot (the
// in-order br_prod_tail and pidx_tail waits of buf_ring and mp_ring) use
// only phases 1 and 2: the peer is a few instructions from done unless it was
// preempted, and parking would make every publication pay for a wake-up
// check. Waits for another side's progress (a consumer waiting for items, a
// producer waiting for space, a sender waiting for a lock) use all three.
//
// BenchmarkSpinPolicy in bufring sweeps Spins and Yields on the fan-in
// benchmark; see Spins.
//
// # The wake-up handshake
//
// A Queue never loses a wake-up, by the same Dekker argument FreeBSD's
// sleepqueue users rely on, made with Go's sequentially consistent atomics:
// a waiter first registers (an atomic add to the queue's count, under the
// queue's mutex), then re-checks its condition, then blocks. The other side
// first makes the condition true (an atomic store or read-modify-write) and
// then loads the count. In the single total order of these atomic
// operations either the waker's load comes after the registration, and it
// wakes the waiter, or the waiter's re-check comes after the waker's store,
// and it sees the condition true and does not block.
package wait
