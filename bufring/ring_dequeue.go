package bufring

import "github.com/goiflib/goiflib/internal/wait"

// availableMC returns how many published items lie at and after head, from
// the multi-consumers' cached prodTail when it shows at least want, else
// from prodTail itself. For a caller whose head is stale the count can
// exceed the capacity; its CAS then fails and it retries.
func (r *Ring[T]) availableMC(head, want uint32) uint32 {
	cached := r.consProdTail.Load()
	if n := cached - head; n >= want && n <= r.mask {
		return n
	}
	pt := r.prodTail.Load() // atomic_load_acq_32(&br->br_prod_tail)
	if pt != cached {
		r.consProdTail.Store(pt)
	}
	return pt - head
}

// availableSC is availableMC for the single consumer, whose cache is a
// plain field.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) availableSC(head, want uint32) uint32 {
	if n := r.scProdTail - head; n >= want && n <= r.mask {
		return n
	}
	pt := r.prodTail.Load() // atomic_load_acq_32(&br->br_prod_tail)
	r.scProdTail = pt
	return pt - head
}

// release hands slots [head, head+n) back to producers after earlier
// multi-consumer reservations did (the br_cons_tail spin and
// atomic_store_rel_32 of buf_ring_dequeue_mc).
func (r *Ring[T]) release(head, n uint32) {
	var b wait.Backoff
	for r.consTail.Load() != head {
		b.Pause()
	}
	r.consTail.Store(head + n)
	r.wakeSpace(n)
}

// releaseSC is release for the single consumer, which has no earlier
// reservation to wait for: it moves consHead and consTail past n slots.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) releaseSC(head, n uint32) {
	r.consHead.Store(head + n)
	r.consTail.Store(head + n) // atomic_store_rel_32(&br->br_cons_tail)
	r.wakeSpace(n)
}

// wakeSpace wakes up to n producers parked in EnqueueWait. It is one atomic
// load when nobody waits.
func (r *Ring[T]) wakeSpace(n uint32) {
	if r.space.Waiting() {
		r.space.Wake(int(n))
	}
}

// take copies slots [head, head+n) into dst and clears them.
func (r *Ring[T]) take(dst []T, head, n uint32) {
	i := head & r.mask
	end := min(i+n, r.mask+1)
	c := copy(dst, r.slots[i:end])
	clear(r.slots[i:end])
	rest := int(n) - c
	copy(dst[c:], r.slots[:rest])
	clear(r.slots[:rest])
}

// DequeueMC removes and returns the head item (buf_ring_dequeue_mc); ok is
// false when the ring is empty. Any number of goroutines may call it.
func (r *Ring[T]) DequeueMC() (v T, ok bool) {
	var head uint32
	for {
		head = r.consHead.Load()
		if r.availableMC(head, 1) == 0 {
			return v, false
		}
		if r.consHead.CompareAndSwap(head, head+1) {
			break
		}
	}
	i := head & r.mask
	v = r.slots[i]
	var zero T
	r.slots[i] = zero
	r.release(head, 1)
	return v, true
}

// DequeueSC removes and returns the head item (buf_ring_dequeue_sc); ok is
// false when the ring is empty.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) DequeueSC() (v T, ok bool) {
	head := r.consHead.Load()
	if r.availableSC(head, 1) == 0 {
		return v, false
	}
	i := head & r.mask
	v = r.slots[i]
	var zero T
	r.slots[i] = zero
	r.releaseSC(head, 1)
	return v, true
}

// DequeueBurstMC removes up to len(dst) items into dst with one reservation
// and one release, and returns how many. Any number of goroutines may call it.
func (r *Ring[T]) DequeueBurstMC(dst []T) int {
	if len(dst) == 0 {
		return 0
	}
	want := uint32(min(len(dst), int(r.mask)))
	var head, n uint32
	for {
		head = r.consHead.Load()
		n = min(r.availableMC(head, want), want)
		if n == 0 {
			return 0
		}
		if r.consHead.CompareAndSwap(head, head+n) {
			break
		}
	}
	r.take(dst, head, n)
	r.release(head, n)
	return int(n)
}

// DequeueBurstSC removes up to len(dst) items into dst with one index
// publication and returns how many.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) DequeueBurstSC(dst []T) int {
	if len(dst) == 0 {
		return 0
	}
	want := uint32(min(len(dst), int(r.mask)))
	head := r.consHead.Load()
	n := min(r.availableSC(head, want), want)
	if n == 0 {
		return 0
	}
	r.take(dst, head, n)
	r.releaseSC(head, n)
	return int(n)
}

// Peek returns the head item without removing it (buf_ring_peek); ok is
// false when the ring is empty.
//
// Preconditions: no other consumer runs concurrently ("race-prone if not
// protected by a lock", buf_ring.h).
func (r *Ring[T]) Peek() (v T, ok bool) {
	head := r.consHead.Load()
	if r.availableSC(head, 1) == 0 {
		return v, false
	}
	return r.slots[head&r.mask], true
}

// Putback replaces the head item with v (buf_ring_putback_sc), typically
// after a Peek whose item the caller modified but could not send. On an
// empty ring, where FreeBSD asserts, it does nothing: use TryPutback to
// learn that it happened.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) Putback(v T) { _ = r.TryPutback(v) }

// TryPutback is Putback that returns ErrEmpty, leaving the ring unchanged,
// when there is no head item to replace.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) TryPutback(v T) error {
	head := r.consHead.Load()
	if r.availableSC(head, 1) == 0 {
		return ErrEmpty
	}
	r.slots[head&r.mask] = v
	return nil
}

// Advance removes the head item after a Peek (buf_ring_advance_sc). On an
// empty ring it does nothing, as in FreeBSD.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) Advance() {
	head := r.consHead.Load()
	if r.availableSC(head, 1) == 0 {
		return
	}
	var zero T
	r.slots[head&r.mask] = zero
	r.releaseSC(head, 1)
}
