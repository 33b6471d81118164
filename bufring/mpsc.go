package bufring

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/goiflib/goiflib/internal/shm"
	"github.com/goiflib/goiflib/internal/wait"
)

// closedBit marks an MPSC closed. It lives in the tail word so that closing
// and reserving are ordered by the same atomic: once Close has set it, no
// reservation can succeed, and every reservation that did succeed came
// before it. Positions are uint64 counts and never reach bit 63.
const closedBit = 1 << 63

// MPSC is a bounded multi-producer, single-consumer ring in which every
// reservation is published on its own: a producer never waits for another
// producer. It is the ring DRBR defers into and the one to pick for a
// fan-in where one goroutine consumes (a worker's inbox).
//
// It differs from FreeBSD's buf_ring ([Ring]) in three ways, each
// measured against it (BenchmarkFanIn, BenchmarkEnqueueDequeue):
//
//   - Publication. buf_ring makes a producer wait until every earlier
//     reservation is published and then advances br_prod_tail, so a
//     preempted producer (Go has no critical_enter) stalls every producer
//     behind it. Here a producer stores the end of its reservation into a
//     sequence word belonging to the reservation's first slot; the consumer
//     reads runs of slots in reservation order by following those words.
//     A preempted producer delays only the consumer, and only at its own
//     slot.
//   - One consumer. The consumer's position is private to it (plain
//     fields, no atomics per item), and it publishes how far it has read
//     lazily: every Batch items, when it finds the ring empty, at the end of
//     a burst that emptied it, and before it parks. So producers may see
//     the ring full up to Batch−1 items early while the consumer is busy
//     between calls. A blocking producer never waits on those slots for
//     longer than the consumer's next call.
//   - Waiting (not in buf_ring). DequeueWait and DequeueBurstWait wait
//     only when nothing is published at the consumer's position
//     (DequeueBurstWait takes every published item that fits in dst,
//     across runs, in one call); on an empty ring the consumer polls the
//     head slot briefly, yields, and only then
//     parks, raising a flag that producers load after each publication:
//     a producer pays for a wake-up only when the consumer is parked or
//     about to park, so a stream of single items does not fall into a
//     park and a wake-up per item (mpsc_wait.go has the protocol and why
//     no wake-up is lost; Parks counts the parks). EnqueueWait and
//     EnqueueBurstWait spin, yield, then park (internal/wait's policy);
//     each release by the consumer wakes one of them per slot released.
//     With GOMAXPROCS 1 a producer parks at once when another is parked
//     already, and a release wakes one producer, which wakes the next if
//     space is left (mpsc_enqueue.go has the protocol and why no wake-up
//     is lost). Close wakes everyone.
//
// The order of items is the order of reservations (the CAS on the tail).
// An Enqueue that returned is visible to the consumer once every
// reservation before it is published, so "Enqueue(x) returned, then the
// consumer found the ring empty" is possible while an earlier producer is
// between its reservation and its publication. That is the weakening
// against buf_ring, where Enqueue returns only after all earlier
// reservations are published; it is why this is a separate type.
//
// Invariants, with positions as free-running uint64 counts (never wrap):
//
//	head ≤ next ≤ end ≤ tail ≤ head + size
//
// [head, next) are read by the consumer but not yet released to producers;
// [next, end) are published and unread; [end, tail) are reserved, each run
// published when its producer stores seqs[start&mask] = start+n. Slots
// outside [head, tail) hold the zero T.
//
// What the waiting forms guarantee: DequeueWait and DequeueBurstWait
// return only with at least one item (which then belongs to the caller),
// with ErrClosed once the ring is closed and every item enqueued before
// Close has been returned, or with ctx.Err() when ctx ends the wait; an
// item published while the consumer waits is never missed, and an idle
// consumer is parked (blocked in the runtime, using no CPU), not
// spinning. EnqueueWait and EnqueueBurstWait return nil only once every
// item is in the ring (the ring owns them, the consumer receives them);
// with ErrClosed or ctx.Err() the items not taken still belong to the
// caller. A waiting producer is woken when the consumer releases slots.
//
// Concurrency: Enqueue, EnqueueBurst and their Wait forms may run from any
// number of goroutines at once. Dequeue, DequeueBurst, their Wait forms,
// Peek, Putback and Advance are the consumer's: one goroutine at a time
// (or callers that serialize them with a lock, as DRBR does). Close may be
// called from anywhere, any number of times. Len and Cap are safe anywhere.
//
// Go's atomics are sequentially consistent; each one below names the
// FreeBSD buf_ring barrier it stands in for.
type MPSC[T any] struct {
	// Read-only after NewMPSC.
	vals  []T
	seqs  []shm.Uint64 // seqs[p&mask]: p+n once the reservation [p, p+n) is published
	mask  uint64
	batch uint64        // the consumer publishes head at least every batch items
	wake  chan struct{} // capacity 1: the token that unparks the consumer (mpsc_wait.go)

	_ cpu.CacheLinePad // producers' line below; the header above is read-only

	// tail is the next position to reserve (br_prod_head), plus closedBit.
	// Producers CompareAndSwap it (atomic_cmpset_32 in buf_ring_enqueue);
	// Close sets closedBit with Or.
	tail shm.Uint64

	_ cpu.CacheLinePad // prevents false sharing between producers and the consumer's release index

	// head is how far the consumer has released slots (br_cons_tail).
	// The consumer Stores it (atomic_store_rel_32: the slots' zeroing
	// happens before a producer reuses them); producers Load it
	// (atomic_load_acq_32) when checking for space.
	head shm.Uint64

	_ cpu.CacheLinePad // keeps the consumer's private fields off head's line

	// Consumer-private: only the consumer reads or writes these. Between
	// successive consumers (DRBR's lock holders) the caller's exclusion
	// orders them.
	next uint64 // next position to read (br_cons_head)
	end  uint64 // end of the published run that next is in; next == end: look at seqs
	pub  uint64 // the value last stored in head
	// procs is GOMAXPROCS as the consumer last read it (at NewMPSC and at
	// each park): whether polling before a park can help.
	procs int

	_ cpu.CacheLinePad // the consumer's flag below, written only when it parks

	// sleeping is 1 while the consumer is parked or about to park: the
	// flag producers load after each publication (mpsc_wait.go).
	sleeping shm.Uint32
	// parks counts the consumer's parks (Parks).
	parks shm.Uint64
	// oneP is 1 while GOMAXPROCS is 1 (read at NewMPSC, refreshed by the
	// consumer at each park): producers waiting for space then park at
	// once when another is parked already (mpsc_enqueue.go).
	oneP shm.Uint32
	// producerParks counts producers that blocked on space (after their
	// re-check on the queue found the ring still full).
	producerParks shm.Uint64

	_ cpu.CacheLinePad // producers' waiters below

	space wait.Queue // producers parked until the consumer releases slots
	// waking is 1 while a producer the consumer woke (with GOMAXPROCS 1)
	// has not yet returned from its park (mpsc_enqueue.go).
	waking shm.Uint32

	_ cpu.CacheLinePad
}

// NewMPSC returns an empty MPSC of size slots, all usable: size must be a
// power of two in [2, 2^31]. Other sizes return a *ConfigError matching
// ErrInvalid.
func NewMPSC[T any](size int) (*MPSC[T], error) {
	if err := checkSize("NewMPSC", size, unsafe.Sizeof(*new(T))+8); err != nil {
		return nil, err
	}
	q := &MPSC[T]{
		vals:  make([]T, size),
		seqs:  make([]shm.Uint64, size),
		mask:  uint64(size - 1),
		batch: batchFor(size),
		wake:  make(chan struct{}, 1),
	}
	q.setProcs()
	return q, nil
}

// setProcs reads GOMAXPROCS into procs (the consumer's) and oneP (the
// producers'), storing oneP only when it changes.
func (q *MPSC[T]) setProcs() {
	q.procs = runtime.GOMAXPROCS(0)
	var one uint32
	if q.procs == 1 {
		one = 1
	}
	if q.oneP.Load() != one {
		q.oneP.Store(one)
	}
}

// batchFor is the consumer's publication batch for a ring of size slots:
// size/8, at least 1 and at most 32, so that lazy publication hides at
// most an eighth of a small ring from producers and at most 32 slots
// (TX_BATCH_SIZE) of a large one.
func batchFor(size int) uint64 { return uint64(min(max(size/8, 1), 32)) }

// Cap returns how many items the ring holds when full: its size.
func (q *MPSC[T]) Cap() int { return int(q.mask + 1) }

// Batch returns how many read slots the consumer may hold back from
// producers between publications (see the type doc).
func (q *MPSC[T]) Batch() int { return int(q.batch) }

// Len returns how many slots are reserved, published or read but not yet
// released: a snapshot that counts up to Batch−1 items the consumer has
// already taken. After the consumer has found the ring empty, it is exact.
func (q *MPSC[T]) Len() int {
	h := q.head.Load()
	t := q.tail.Load() &^ closedBit
	return int(t - h)
}

// entered returns how many items have ever been reserved: the number of
// successful enqueues, counted per item.
func (q *MPSC[T]) entered() uint64 { return q.tail.Load() &^ closedBit }

// Closed reports whether Close has been called.
func (q *MPSC[T]) Closed() bool { return q.tail.Load()&closedBit != 0 }

// Close closes the ring: every later Enqueue fails with ErrClosed, every
// waiting producer returns ErrClosed with its items, and the consumer
// receives what was enqueued before Close and then ErrClosed from the Wait
// forms (the non-blocking forms keep returning false). Calling it more than
// once is fine.
func (q *MPSC[T]) Close() {
	q.tail.Or(closedBit)
	q.wakeConsumer()
	q.space.WakeAll()
}

// reopen undoes Close for DRBR.Reopen. Items are not touched.
func (q *MPSC[T]) reopen() { q.tail.And(^uint64(closedBit)) }
