package bufring

import "context"

// avail returns how many published items are readable from next, without
// crossing into the next run: end−next while inside a run, else what the
// run starting at next holds (0 while its producer has not published it).
//
// seqs[next&mask] holds either the end of the run that starts at next, or
// a stale end from an earlier lap, which is ≤ next because that run started
// at least size positions earlier and held at most size items.
//
// Preconditions: called by the consumer.
func (q *MPSC[T]) avail() uint64 {
	if q.next != q.end {
		return q.end - q.next
	}
	s := q.seqs[q.next&q.mask].Load() // atomic_load_acq_32(&br->br_prod_tail)
	if s <= q.next {
		return 0
	}
	q.end = s
	return s - q.next
}

// release publishes head = next (br_cons_tail's atomic_store_rel_32) and
// wakes parked producers, one per slot released.
//
// Preconditions: called by the consumer.
func (q *MPSC[T]) release() {
	if q.next != q.pub {
		q.publishHead()
	}
}

// publishHead is release's slow path.
func (q *MPSC[T]) publishHead() {
	freed := q.next - q.pub
	q.head.Store(q.next)
	q.pub = q.next
	if q.space.Waiting() {
		q.wakeSpace(freed)
	}
}

// advance moves past n read slots and releases them when a batch is due.
//
// Preconditions: called by the consumer; the n slots are zeroed.
func (q *MPSC[T]) advance(n uint64) {
	q.next += n
	if q.next-q.pub >= q.batch {
		q.release()
	}
}

// Dequeue removes and returns the head item; ok is false when none is
// published (the consumer then releases everything it has read).
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) Dequeue() (v T, ok bool) {
	if q.avail() == 0 {
		q.release()
		return v, false
	}
	i := q.next & q.mask
	v = q.vals[i]
	var zero T
	q.vals[i] = zero
	q.advance(1)
	return v, true
}

// DequeueBurst removes up to len(dst) items into dst, across as many
// published runs as there are, and returns how many.
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) DequeueBurst(dst []T) int {
	n := 0
	for n < len(dst) {
		a := q.avail()
		if a == 0 {
			break
		}
		k := min(a, uint64(len(dst)-n))
		i := q.next & q.mask
		e := min(i+k, q.mask+1)
		c := copy(dst[n:], q.vals[i:e])
		clear(q.vals[i:e])
		rest := int(k) - c
		copy(dst[n+c:], q.vals[:rest])
		clear(q.vals[:rest])
		n += int(k)
		q.next += k
	}
	if n < len(dst) || q.next-q.pub >= q.batch {
		q.release()
	}
	return n
}

// peekPtr returns a pointer to the head slot, or nil when no item is
// published there. The caller may replace the item through it
// (buf_ring_putback_sc) before an Advance.
//
// Preconditions: called by the consumer.
func (q *MPSC[T]) peekPtr() *T {
	if q.avail() == 0 {
		q.release()
		return nil
	}
	return &q.vals[q.next&q.mask]
}

// Peek returns the head item without removing it (buf_ring_peek); ok is
// false when none is published.
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) Peek() (v T, ok bool) {
	if p := q.peekPtr(); p != nil {
		return *p, true
	}
	return v, false
}

// Putback replaces the head item with v (buf_ring_putback_sc). It returns
// ErrEmpty, changing nothing, when no item is published at the head.
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) Putback(v T) error {
	p := q.peekPtr()
	if p == nil {
		return ErrEmpty
	}
	*p = v
	return nil
}

// Advance removes the head item after a Peek (buf_ring_advance_sc); on an
// empty ring it does nothing.
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) Advance() {
	p := q.peekPtr()
	if p == nil {
		return
	}
	var zero T
	*p = zero
	q.advance(1)
}

// unreserved reports whether every reserved slot has been read: no item is
// published and unread, and no producer is between reserving and
// publishing. It is the emptiness drbr_needs_enqueue asks about.
//
// Preconditions: called by the consumer.
func (q *MPSC[T]) unreserved() bool { return q.tail.Load()&^closedBit == q.next }

// drained reports whether the ring is closed and the consumer has read
// every item reserved before Close.
//
// Preconditions: called by the consumer.
func (q *MPSC[T]) drained() bool {
	t := q.tail.Load()
	return t&closedBit != 0 && t&^closedBit == q.next
}

// DequeueWait removes and returns the head item, waiting while the ring is
// empty. After Close it keeps returning the items enqueued before Close and
// then ErrClosed; it returns ctx.Err() if ctx ends the wait.
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) DequeueWait(ctx context.Context) (T, error) {
	for {
		if v, ok := q.Dequeue(); ok {
			return v, nil
		}
		if err := q.awaitItems(ctx); err != nil {
			var zero T
			return zero, err
		}
	}
}

// DequeueBurstWait removes up to len(dst) items into dst, waiting until at
// least one is there, and returns how many. After Close it returns what was
// enqueued before Close and then 0, ErrClosed; it returns 0, ctx.Err() if
// ctx ends the wait. An empty dst returns 0, nil at once.
//
// Preconditions: no other consumer runs concurrently.
func (q *MPSC[T]) DequeueBurstWait(ctx context.Context, dst []T) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	for {
		if n := q.DequeueBurst(dst); n > 0 {
			return n, nil
		}
		if err := q.awaitItems(ctx); err != nil {
			return 0, err
		}
	}
}
