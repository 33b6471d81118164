package bufring

import "github.com/goiflib/goiflib/internal/wait"

// reserve claims up to n slots for a producer by advancing prodHead. It
// returns the first reserved index and how many it took (0 when the ring is
// full). It is the reservation loop of buf_ring_enqueue, widened to n.
//
// Go-specific: before reserving, a producer waits (internal/wait's spin,
// then yielding) until no reservation is outstanding (prodTail == prodHead).
// In FreeBSD any number of producers may sit between reservation and
// publication, each spinning on br_prod_tail, which is cheap because none
// of them can be preempted. Here each of them can, and a chain of k
// outstanding reservations then needs k scheduler round trips to drain.
// Waiting before the CAS keeps the chain short. The slot store inside the window is a
// single copy, so little overlap is lost.
func (r *Ring[T]) reserve(n uint32) (head, took uint32) {
	var b wait.Backoff
	for {
		head = r.prodHead.Load()
		if head != r.prodTail.Load() {
			b.Pause()
			continue
		}
		ct := r.prodConsTail.Load()
		used := head - ct
		if used > r.mask || r.mask-used < n { // cache shows too little room (or is behind head): ask the consumers
			fresh := r.consTail.Load()
			if fresh != ct {
				r.prodConsTail.Store(fresh)
			}
			used = head - fresh
			if used > r.mask {
				// head is stale: consumers moved past it, so other
				// producers did too. Start over.
				continue
			}
			if used == r.mask { // full
				// FreeBSD re-reads both indices and drops only if neither
				// moved. consTail was read after head, so if prodHead still
				// equals head the ring was full at that read.
				if r.prodHead.Load() == head {
					return head, 0
				}
				continue
			}
		}
		took = min(n, r.mask-used)
		if r.prodHead.CompareAndSwap(head, head+took) {
			return head, took
		}
	}
}

// publish makes the reserved slots [head, head+n) visible to consumers once
// every earlier reservation is visible (the br_prod_tail spin and
// atomic_store_rel_32 of buf_ring_enqueue), then wakes up to n consumers
// parked in a Dequeue*Wait. If an earlier producer was preempted, this waits
// for the scheduler to run it (internal/wait: spin, then yield).
func (r *Ring[T]) publish(head, n uint32) {
	var b wait.Backoff
	for r.prodTail.Load() != head {
		b.Pause()
	}
	r.prodTail.Store(head + n)
	if r.items.Waiting() {
		r.items.Wake(int(n))
	}
}

// Enqueue adds v at the tail (buf_ring_enqueue). Any number of goroutines may
// call it concurrently. When the ring holds size−1 items it counts a drop and
// returns ErrFull; v then still belongs to the caller.
func (r *Ring[T]) Enqueue(v T) error {
	if !r.tryEnqueue(v) {
		r.drops.Add(1)
		return ErrFull
	}
	return nil
}

// tryEnqueue is Enqueue without the drop count, for callers that wait
// instead of dropping.
func (r *Ring[T]) tryEnqueue(v T) bool {
	head, took := r.reserve(1)
	if took == 0 {
		return false
	}
	r.slots[head&r.mask] = v
	r.publish(head, 1)
	return true
}

// EnqueueBurst adds as many of vs as fit, in order, with one reservation and
// one publication, and returns how many it took (a prefix of vs). The items
// it did not take are counted as drops and still belong to the caller. Any
// number of goroutines may call it concurrently.
func (r *Ring[T]) EnqueueBurst(vs []T) int {
	if len(vs) == 0 {
		return 0
	}
	want := uint32(min(len(vs), int(r.mask)))
	head, took := r.reserve(want)
	if took > 0 {
		i := head & r.mask
		n := copy(r.slots[i:], vs[:took])
		copy(r.slots, vs[n:took])
		r.publish(head, took)
	}
	if refused := len(vs) - int(took); refused > 0 {
		r.drops.Add(uint64(refused))
	}
	return int(took)
}
