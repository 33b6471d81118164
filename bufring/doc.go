// Package bufring models FreeBSD's buf_ring (sys/sys/buf_ring.h, the 2024
// Arm Ltd revision with free-running uint32 indices) and the drbr_* wrappers
// of sys/net/ifq.h, plus the producer-limited deferred transmit that the
// seed-003 review ports from mxge(4) to iflib's simple_tx.
//
// # Ring
//
// [Ring] is struct buf_ring: a bounded, power-of-two ring of capacity size−1
// with a multi-producer [Ring.Enqueue], a multi-consumer [Ring.DequeueMC] and
// the single-consumer operations ([Ring.DequeueSC], [Ring.Peek],
// [Ring.Putback], [Ring.Advance]) that FreeBSD runs under the driver's TX
// lock. Burst forms move many items per index publication.
//
// # DRBR
//
// [DRBR] is the deferred-transmit layer around a transmit callback that runs
// with the queue lock held:
//
//	Transmit(v) ──TryLock ok──▶ drain ring (order) ─▶ xmit(v) ─▶ unlock ─▶ re-check ring
//	     │
//	     ├─lock busy, < MaxProducers deferring──▶ ring (wait if full) ─▶ TryLock ─▶ drain
//	     └─lock busy, producer limit reached────▶ Lock (block) ─▶ drain ring ─▶ xmit(v)
//	Drain(quota) (TX task / completion path) ──TryLock──▶ send ≤ quota from the ring
//
// # Hazards
//
// The main hazard of the ring is preemption. FreeBSD wraps the window between
// reserving a slot (CAS on br_prod_head) and publishing it (store to
// br_prod_tail) in critical_enter, so the producer cannot be descheduled and
// later producers spin only for nanoseconds. Go has no such thing: a producer
// can be preempted inside that window and every later producer must wait for
// it. Every wait in this package therefore spins a bounded number of times
// and then calls runtime.Gosched, so a stalled publisher costs the waiters a
// scheduler round trip (microseconds) instead of a spin of unbounded length.
//
// The main hazard of DRBR is a stranded item: one put in the ring by a
// producer that found the lock taken, after the lock holder had already
// looked at the ring for the last time. Whoever releases the lock re-checks
// the ring, and a deferring producer tries the lock once after publishing.
package bufring
