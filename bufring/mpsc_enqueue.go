package bufring

import (
	"context"

	"github.com/goiflib/goiflib/internal/wait"
)

// reserve claims up to n (≥ 1) positions from tail. It returns the first
// one and how many it took: 0 when the ring is full, or ErrClosed.
func (q *MPSC[T]) reserve(n uint64) (start, took uint64, err error) {
	size := q.mask + 1
	t := q.tail.Load()
	for {
		if t&closedBit != 0 {
			return 0, 0, ErrClosed
		}
		used := t - q.head.Load() // atomic_load_acq_32(&br->br_cons_tail)
		if used >= size {
			// Full, unless tail moved since we read it (buf_ring_enqueue
			// re-reads both indices before it drops).
			if t2 := q.tail.Load(); t2 != t {
				t = t2
				continue
			}
			return t, 0, nil
		}
		took = min(n, size-used)
		if q.tail.CompareAndSwap(t, t+took) {
			return t, took, nil
		}
		t = q.tail.Load()
	}
}

// publish makes the reservation [start, start+n) visible to the consumer
// (the slot stores are ordered before it; atomic_store_rel_32 of
// br_prod_tail in buf_ring_enqueue, here into the run's own word) and wakes
// the consumer if it is parked or about to park: one load of its flag
// otherwise (mpsc_wait.go has the protocol).
func (q *MPSC[T]) publish(start, n uint64) {
	q.seqs[start&q.mask].Store(start + n)
	if q.sleeping.Load() != 0 {
		q.wakeConsumer()
	}
}

// Enqueue adds v at the tail without waiting. It returns ErrFull when the
// ring has no free slot (see the type doc for the Batch−1 slots the
// consumer may not have released yet) and ErrClosed after Close; v then
// still belongs to the caller. Any number of goroutines may call it.
func (q *MPSC[T]) Enqueue(v T) error {
	start, took, err := q.reserve(1)
	if err != nil {
		return err
	}
	if took == 0 {
		return ErrFull
	}
	q.vals[start&q.mask] = v
	q.publish(start, 1)
	return nil
}

// EnqueueBurst adds as many of vs as fit, in order, with one reservation
// and one publication, and returns how many it took (a prefix of vs). The
// error is nil when it took them all, ErrFull when it took fewer, and
// ErrClosed (with 0) after Close. Items not taken still belong to the
// caller.
func (q *MPSC[T]) EnqueueBurst(vs []T) (int, error) {
	if len(vs) == 0 {
		return 0, nil
	}
	start, took, err := q.reserve(uint64(len(vs)))
	if err != nil {
		return 0, err
	}
	if took > 0 {
		i := start & q.mask
		c := copy(q.vals[i:], vs[:took])
		copy(q.vals, vs[c:took])
		q.publish(start, took)
	}
	if int(took) < len(vs) {
		return int(took), ErrFull
	}
	return int(took), nil
}

// hasSpace is the producers' wake-up condition: a free slot, or closed.
func (q *MPSC[T]) hasSpace() bool {
	t := q.tail.Load()
	return t&closedBit != 0 || t-q.head.Load() <= q.mask
}

// waitSpace waits (spin, yield, park) until the ring has a free slot or is
// closed, or ctx is done. b carries the wait's progress across retries.
func (q *MPSC[T]) waitSpace(ctx context.Context, b *wait.Backoff) error {
	if b.Next() {
		return nil
	}
	defer b.Reset()
	return q.space.Park(ctx, q.hasSpace)
}

// EnqueueWait adds v at the tail, waiting while the ring is full. It
// returns ErrClosed if the ring is or becomes closed, and ctx.Err() if ctx
// ends the wait; v then still belongs to the caller. ctx bounds only the
// wait: a call that finds space succeeds even with ctx already done.
func (q *MPSC[T]) EnqueueWait(ctx context.Context, v T) error {
	var b wait.Backoff
	for {
		err := q.Enqueue(v)
		if err != ErrFull {
			return err
		}
		if err := q.waitSpace(ctx, &b); err != nil {
			return err
		}
	}
}

// EnqueueBurstWait adds all of vs in order, waiting for space as needed; a
// burst larger than the free space goes in as several runs, and another
// producer's items may land between them. It returns how many it added:
// len(vs) with a nil error, or fewer with ErrClosed or ctx.Err(), the rest
// still belonging to the caller.
func (q *MPSC[T]) EnqueueBurstWait(ctx context.Context, vs []T) (int, error) {
	var b wait.Backoff
	done := 0
	for done < len(vs) {
		n, err := q.EnqueueBurst(vs[done:])
		done += n
		if err != ErrFull {
			return done, err
		}
		if n > 0 {
			b.Reset()
		}
		if err := q.waitSpace(ctx, &b); err != nil {
			return done, err
		}
	}
	return done, nil
}
