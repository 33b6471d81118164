package bufring

import (
	"context"

	"github.com/goiflib/goiflib/internal/shm"
)

// The consumer's wait. A ring with one consumer does not need a wait
// queue for it: one flag and one token are enough, and they make the
// producers' side of the hand-off a single load in the common case.
//
// The protocol (the Dekker-style sleeping flag of production MPSC
// queues, with Go's sequentially consistent atomics):
//
//	consumer                          producer
//	sleeping.Store(1)                 seqs[p].Store(p+n)   (publish)
//	check seqs[next] and closed       if sleeping.Load() != 0 &&
//	park on wake unless either set       sleeping.Swap(0) != 0 { send a token }
//
// In the single order of these atomics either the producer's load of
// sleeping comes after the consumer's store, and it sees 1 (or a token is
// already on its way from the producer that swapped it to 0), or the
// consumer's check comes after the producer's publication and it does not
// park. Close does the same after setting closedBit. So no publication is
// missed, and a producer pays for a wake-up only when the consumer is
// parked or about to park, never while it is polling.
//
// The token channel has capacity 1 and every send is non-blocking. A
// token can be left over (the consumer saw an item and did not park
// after a producer had already swapped the flag, or ctx ended the park),
// and then the next park returns at once: a spurious wake-up, which the
// consumer's loop re-checks like any other. A token is never missing
// where one is needed, because a full channel already holds one.
//
// Before it parks, the consumer polls: mpscPolls loads of the head slot's
// sequence word (only when GOMAXPROCS > 1: with one P no producer can run
// while it polls), then a runtime.Gosched, mpscYields times. A running
// producer publishes within the polls; one that shares the consumer's P
// runs during the yield. Only when neither brought an item does it park.
// That bound is what keeps an idle consumer from burning a CPU, and the
// polling before it is what keeps a stream of single items from paying a
// park and a wake-up per item (the ping-pong).
var (
	// mpscPolls is how many times the consumer re-reads the head slot's
	// sequence word before each yield, when GOMAXPROCS > 1. A variable
	// only so that BenchmarkMPSCConsumerPolicy can sweep it.
	mpscPolls = 64
	// mpscYields is how many polling rounds, each ending in
	// runtime.Gosched, the consumer makes before it parks. A variable
	// only so that BenchmarkMPSCConsumerPolicy can sweep it.
	mpscYields = 8
)

// yieldOnce lets other goroutines run: the one scheduling point of the
// consumer's wait.
func yieldOnce() { shm.Yield() }

// wakeConsumer is the producers' (and Close's) side of the hand-off: if
// the consumer is parked or about to park, take the flag and leave it a
// token. Called after the publication (or closedBit) it signals.
func (q *MPSC[T]) wakeConsumer() {
	if q.sleeping.Swap(0) != 0 {
		select {
		case q.wake <- struct{}{}:
		default: // a token is already there; it will wake the consumer
		}
	}
}

// published reports whether the run at next is published (or the ring is
// closed): the consumer's wake-up condition.
//
// Preconditions: called by the consumer, with next == end.
func (q *MPSC[T]) published() bool {
	return q.seqs[q.next&q.mask].Load() > q.next || q.Closed()
}

// awaitItems returns when an item may be published at next, after Close,
// or when ctx is done (then ctx.Err()). It polls, yields and then parks
// (see above). A nil return is a hint: the caller re-checks.
//
// Preconditions: called by the consumer after it found the ring empty
// (so next == end and head == next, released).
func (q *MPSC[T]) awaitItems(ctx context.Context) error {
	if q.drained() {
		return ErrClosed
	}
	seq := &q.seqs[q.next&q.mask]
	for range mpscYields {
		if q.procs > 1 {
			for range mpscPolls {
				if seq.Load() > q.next {
					return nil
				}
			}
		}
		yieldOnce()
		if q.published() {
			return nil
		}
	}
	return q.park(ctx)
}

// park blocks the consumer until a producer or Close wakes it or ctx is
// done, unless the re-check after raising the flag finds an item.
//
// Preconditions: called by the consumer.
func (q *MPSC[T]) park(ctx context.Context) error {
	q.setProcs() // refreshed here, off the item path
	q.sleeping.Store(1)
	if q.published() {
		q.sleeping.Store(0)
		return nil
	}
	q.parks.Add(1)
	var err error
	if done := ctx.Done(); done == nil {
		<-q.wake
	} else {
		select {
		case <-q.wake:
		case <-done:
			err = ctx.Err()
		}
	}
	q.sleeping.Store(0)
	return err
}

// Parks returns how many times the consumer has parked in DequeueWait or
// DequeueBurstWait (blocked until a producer or Close woke it): with a
// steady stream of items it stays far below the item count; each park
// costs a producer one wake-up.
func (q *MPSC[T]) Parks() uint64 { return q.parks.Load() }
