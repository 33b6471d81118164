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

// The producers' wait for space. With GOMAXPROCS > 1 a producer that
// finds the ring full spins, yields and then parks (internal/wait's
// policy), and each release by the consumer wakes one parked producer
// per slot freed: the consumer may be freeing slots on another P within
// the spins, and the woken run beside it.
//
// With GOMAXPROCS 1 both are wrong. Only the consumer frees slots and it
// cannot run while a producer spins; a yield lets it run only after every
// other runnable goroutine, and with many producers those are producers
// that find the ring full and yield in turn: at 64 producers that
// round-robin of yields, not the items, took most of the CPU. And a
// woken producer cannot run before the consumer stops, so waking one per
// slot freed at each of a drain's releases wakes every producer, most of
// which then find the ring full again (the first one fills it) and pay a
// park each. So with GOMAXPROCS 1 a producer that finds another one
// already parked parks at once (the first to wait still spins and yields
// first: alone, a yield hands the P to the consumer for less than a park
// and a wake-up), and a release wakes one producer, and none while a
// producer woken earlier has not yet run (waking is 1); that producer,
// when it runs, wakes the next if there is space (a chain that stops
// where the space does):
//
//	waker (wakeOne)                     woken producer (waitSpace)
//	if waking.CompareAndSwap(0, 1) {    return from park
//	   if space.Wake(1) == 0 {          if waking.Swap(0) != 0 &&
//	      waking.Store(0)                  space.Waiting() && hasSpace() {
//	      re-check, retry }}               wakeOne() }
//
// No wake-up is lost. Whoever sets waking either wakes a producer that
// will clear it after it returns from its park, or clears it itself; and
// whoever clears it re-checks space and waiters afterwards. A release that
// skips its wake because waking is 1 stored head before that load, so
// the later clear's re-check sees the release's space and every producer
// that registered before the release's check of the queue; one that
// registers after it re-checks the space itself (internal/wait's
// handshake). Extra wake-ups are harmless: a woken producer re-checks.

// spaceOrBlock is the re-check a producer makes after registering on
// space: true if it need not block; false (counted in producerParks) if
// it is about to.
func (q *MPSC[T]) spaceOrBlock() bool {
	if q.hasSpace() {
		return true
	}
	q.producerParks.Add(1)
	return false
}

// waitSpace waits until the ring has a free slot or is closed, or ctx is
// done (see above). b carries the wait's progress across retries.
func (q *MPSC[T]) waitSpace(ctx context.Context, b *wait.Backoff) error {
	if (q.oneP.Load() == 0 || !q.space.Waiting()) && b.Next() {
		return nil
	}
	b.Reset()
	err := q.space.Park(ctx, q.spaceOrBlock)
	if q.waking.Load() != 0 && q.waking.Swap(0) != 0 && q.space.Waiting() && q.hasSpace() {
		q.wakeOne()
	}
	return err
}

// wakeSpace is the consumer's wake-up of parked producers after freeing
// freed slots (see above).
//
// Preconditions: called by the consumer, after storing head, when
// space.Waiting() reported waiters.
func (q *MPSC[T]) wakeSpace(freed uint64) {
	if q.procs > 1 {
		q.space.Wake(int(min(freed, 1<<30)))
		return
	}
	q.wakeOne()
}

// wakeOne wakes one parked producer unless one woken earlier has not yet
// run (see above).
func (q *MPSC[T]) wakeOne() {
	for q.waking.Load() == 0 && q.waking.CompareAndSwap(0, 1) {
		if q.space.Wake(1) != 0 {
			return
		}
		q.waking.Store(0)
		if !q.space.Waiting() || !q.hasSpace() {
			return
		}
	}
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
