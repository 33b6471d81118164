package mpring

import (
	"github.com/goiflib/goiflib/internal/shm"
	"github.com/goiflib/goiflib/internal/wait"
)

// The waits below follow internal/wait's policy, shared with bufring:
// waitTurn spins wait.Spins loads of the state word and then yields on every
// further load (FreeBSD spins without bound, cpu_spinwait, because the
// producer it waits for cannot be preempted), and reserve's hold-back
// yields at most wait.Yields times.

// Enqueue is ifmp_ring_enqueue(r, items, n, budget, abdicate): it adds the
// items in order, as one contiguous run, or none of them.
//
// Without abdicate, a producer that finds no BUSY consumer becomes the
// consumer and runs the drain callback on this goroutine before returning;
// budget is how many items it should drain before it may abdicate (iflib
// passes 32, TX_BATCH_SIZE). The budget is honoured only while another
// producer is mid-reservation; otherwise the consumer keeps draining as long
// as published work keeps appearing. A budget ≤ 0 publishes after every drain
// call (FreeBSD passes 0 from qflush and from the full-ring restart).
// With abdicate (iflib's tx_abdicate), it never drains: it marks an IDLE
// ring ABDICATED and the caller must arrange a CheckDrainage.
//
// Errors: ErrNoItems for an empty slice; ErrFull when len(items) is not less
// than the space available, in which case all of them are counted as drops,
// a STALLED ring is offered a restart (CheckDrainage(0)), and the caller
// keeps ownership of the items. On success the ring owns copies of the items
// until the drain callback consumes them. items is not retained, so a
// caller-owned or stack slice may be reused at once.
func (r *Ring[T]) Enqueue(items []T, budget int, abdicate bool) error {
	n := len(items)
	if n == 0 {
		return ErrNoItems
	}
	start, stop, ok := r.reserve(n)
	if !ok {
		return ErrFull
	}
	r.waitTurn(start)
	if first := r.size - start; n <= first {
		copy(r.items[start:], items)
	} else {
		copy(r.items[start:], items[:first])
		copy(r.items, items[first:])
	}
	r.publish(stop, n, budget, abdicate)
	return nil
}

// EnqueueOne is Enqueue of the single item, as iflib_if_transmit calls
// ifmp_ring_enqueue with n = 1, without building a slice.
func (r *Ring[T]) EnqueueOne(item T, budget int, abdicate bool) error {
	start, stop, ok := r.reserve(1)
	if !ok {
		return ErrFull
	}
	r.waitTurn(start)
	r.items[start] = item
	r.publish(stop, 1, budget, abdicate)
	return nil
}

// reserve is step 1 of ifmp_ring_enqueue: move pidx_head forward by n. The
// CAS replaces atomic_fcmpset_64 (relaxed in FreeBSD). It counts the drops
// and reports !ok when there is no room.
func (r *Ring[T]) reserve(n int) (start, stop int, ok bool) {
	os := word(r.state.Load())
	// Go-specific: while another producer is mid-reservation, hold back
	// (bounded) before joining the queue of reservations. Each reserving
	// producer must wait for all earlier ones to publish, and any of them
	// may be descheduled (no critical_enter), so a long chain of
	// reservations turns every publication into a wait for one particular
	// goroutine to be scheduled: a convoy that grows with the number of
	// runnable senders. Holding back keeps the chain short. It changes no
	// outcome FreeBSD allows: a producer may always be delayed before its
	// reservation.
	for backoff := 0; backoff < wait.Yields && os.pidxHead() != os.pidxTail(); backoff++ {
		shm.Yield()
		os = word(r.state.Load())
	}
	for {
		if n >= spaceAvailable(r.size, os) {
			r.drops.Add(uint64(n))
			// FreeBSD asserts os.flags != IDLE here; a ring whose
			// producers hold every free slot mid-reservation can be
			// IDLE, and that simply fails like any full ring.
			if os.flags() == Stalled {
				r.CheckDrainage(0)
			}
			return 0, 0, false
		}
		ns := os.withPidxHead(incrementIdx(r.size, os.pidxHead(), n))
		if r.state.CompareAndSwap(uint64(os), uint64(ns)) {
			if r.testHookReserved != nil {
				r.testHookReserved()
			}
			return os.pidxHead(), ns.pidxHead(), true
		}
		os = word(r.state.Load())
	}
}

// waitTurn is step 2 of ifmp_ring_enqueue: wait until every earlier
// reservation has been published (pidx_tail == start). Bounded spins on an
// atomic load, then shm.Yield (runtime.Gosched), since the producer being waited for may
// have been preempted (see the package doc).
func (r *Ring[T]) waitTurn(start int) {
	var b wait.Backoff
	for word(r.state.Load()).pidxTail() != start {
		b.Pause()
	}
}

// publish is steps 4 and 5 of ifmp_ring_enqueue: move pidx_tail to stop,
// set the flags, and become the consumer if none is BUSY and !abdicate. The
// CAS replaces atomic_fcmpset_rel_64: it releases the slot writes to the
// consumer that observes the new pidx_tail.
func (r *Ring[T]) publish(stop, n, budget int, abdicate bool) {
	os := word(r.state.Load())
	var ns word
	for {
		ns = os.withPidxTail(stop)
		if !abdicate {
			ns = ns.withFlags(Busy)
		} else if os.flags() == Idle {
			ns = ns.withFlags(Abdicated)
		}
		if r.state.CompareAndSwap(uint64(os), uint64(ns)) {
			break
		}
		os = word(r.state.Load())
	}
	r.enqueues.Add(uint64(n)) // one Add per call, whatever n
	if !abdicate && os.flags() != Busy {
		r.drainLockless(ns, os.flags(), budget)
	}
}
