package bufring

import (
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// Defaults of the deferred simple_tx (seed 003). The sysctls are named in
// the review text; the mechanism could not be checked against FreeBSD source
// (reference §1.6), so these are the review's stated defaults.
const (
	// DefaultMaxProducers = 1 (net.iflib.simple_max_producers, seed 003):
	// at most one sender at a time defers into the ring while the lock is
	// held; the rest block on the lock.
	DefaultMaxProducers = 1
	// DefaultDrainQuota = 8 (net.iflib.simple_drain_quota, seed 003): the
	// most items one Drain call sends, so the TX task cannot starve RX on a
	// shared taskqueue.
	DefaultDrainQuota = 8
)

// XmitFunc is called with the queue lock held, one item at a time. It returns true when it
// took ownership of v (sent it), false when it lacked descriptors: v then stays queued at the
// head of the ring (peek/putback) and goes out on a later Drain. It must not call back into d.
//
// It plays iflib_encap plus the doorbell of iflib_simple_transmit. "Call
// back into d" means Transmit, Drain or Flush; Pending and Stats are safe.
// A false return obliges the owner to call Drain once descriptors free up
// (from its completion or reclaim path): until then the ring is stalled,
// like mp_ring's STALLED state.
type XmitFunc[T any] func(v T) bool

// DRBRStats are DRBR's counters. Every Transmit ends in exactly one of
// Direct (sent by xmit from Transmit itself) or Deferred (put in the ring);
// every item put in the ring leaves it through Drained (accepted by xmit
// from the ring, whichever goroutine drained it) or Flush, or is still
// Pending. So Direct+Deferred = Transmit calls and Deferred = Drained +
// flushed + Pending.
type DRBRStats struct {
	Direct    uint64 // items xmit accepted straight from Transmit
	Deferred  uint64 // items put in the ring (by deferring producers, or by a lock holder whose item had to queue)
	LockWaits uint64 // Transmit calls that blocked on the queue lock (producer limit reached, or MaxProducers 0)
	FullWaits uint64 // items whose producer found the ring full and slept for space (never dropped)
	Drained   uint64 // items xmit accepted from the ring
	Refused   uint64 // xmit calls that returned false (no descriptors)
}

// DRBR is the drbr deferred transmit of iflib's simple_tx (seed 003: "Port
// buf_ring/drbr deferred transmit from mxge(4) to iflib"): a per-queue mutex
// (ift_mtx) around a transmit callback, plus a buf_ring (the ring of
// drbr_enqueue/drbr_peek/drbr_advance) where senders that find the mutex
// taken leave their items instead of waiting.
//
// Invariants:
//   - xmit runs only with mu held, so the ring has one consumer at a time:
//     the lock holder uses the single-consumer Peek/Advance (drbr_peek,
//     drbr_advance). Producers enqueue concurrently (multi-producer).
//   - Order: a lock holder sends everything already in the ring before its
//     own item, and an item refused by xmit stays at the ring's head, so the
//     items of any one sender leave in the order it called Transmit.
//   - No stranding: a producer publishes its item and then tries the lock;
//     if that fails, the holder it lost to re-checks the ring after
//     unlocking (release). The only items left in the ring with the lock
//     free are behind a refused head; the owner's Drain sends them.
//   - Nothing is dropped: a producer that finds the ring full sleeps on
//     space (drbr_enqueue_nodrop, see Transmit). A lock holder never sleeps
//     on space while holding mu.
//   - producers counts senders admitted to defer that have not yet
//     published; it never exceeds maxProducers for more than the instant
//     between an Add and its undo.
type DRBR[T any] struct {
	ring *Ring[T] // ift_br: multi-producer enqueue, single consumer = holder of mu
	xmit XmitFunc[T]
	// maxProducers is net.iflib.simple_max_producers; unlimited when it
	// exceeded GOMAXPROCS at NewDRBR (the producers counter is then unused).
	maxProducers int32
	unlimited    bool

	mu sync.Mutex // ift_mtx: serializes xmit and ring consumption

	// Lock-holder counters: written (Add) by the holder of mu only.
	direct  atomic.Uint64
	drained atomic.Uint64
	refused atomic.Uint64

	_ cpu.CacheLinePad // producer-side state below is written without mu

	// producers is the number of senders deferring now. Written with Add by
	// senders that found mu taken; in FreeBSD a counter bounding the
	// producers that spin on br_prod_tail (mechanism unverified, §1.6).
	producers atomic.Int32
	// waiters counts producers asleep on space. A drainer that frees a slot
	// Loads it after its consTail Store and wakes them if non-zero; a
	// sleeper Adds to it before re-checking Full, so one of the two sees
	// the other (sequential consistency) and no wakeup is lost.
	waiters atomic.Int32
	spaceMu sync.Mutex // guards the sleep on space; not held while sending
	space   sync.Cond  // signalled (Broadcast) after items leave the ring

	deferred  atomic.Uint64
	lockWaits atomic.Uint64
	fullWaits atomic.Uint64
}

// NewDRBR returns a DRBR with a ring of size slots (size a power of two ≥ 2,
// net.iflib.simple_txbr_size; capacity size−1) that sends through xmit.
// maxProducers bounds how many senders defer at once when the lock is taken:
// 0 means every sender takes the lock (plain simple_tx), and a value above
// GOMAXPROCS means unlimited deferral (mxge(4)'s original drbr behaviour).
// Bad arguments return an *ArgError matching ErrInvalid.
func NewDRBR[T any](size, maxProducers int, xmit XmitFunc[T]) (*DRBR[T], error) {
	r, err := New[T](size)
	if err != nil {
		return nil, &ArgError{Func: "NewDRBR", Arg: "size", Value: size, Want: "a power of two in [2, 2^31]"}
	}
	if maxProducers < 0 {
		return nil, &ArgError{Func: "NewDRBR", Arg: "maxProducers", Value: maxProducers, Want: "≥ 0"}
	}
	if xmit == nil {
		return nil, &ArgError{Func: "NewDRBR", Arg: "xmit", Value: 0, Want: "a non-nil XmitFunc"}
	}
	d := &DRBR[T]{ring: r, xmit: xmit}
	if maxProducers > runtime.GOMAXPROCS(0) {
		d.unlimited = true
	} else {
		d.maxProducers = int32(maxProducers)
	}
	d.space.L = &d.spaceMu
	return d, nil
}

// Transmit hands v to d; a nil error means d owns v: it was sent now or is
// deferred in the ring, never dropped. (It returns ErrUninitialized only for
// a nil or zero DRBR.)
//
// A sender that gets the lock with TryLock first sends what earlier senders
// deferred, then v, then unlocks and re-checks the ring. A sender that finds
// the lock taken defers v into the ring if fewer than MaxProducers senders
// are deferring, else blocks on the lock and sends like a holder. A
// deferring sender that finds the ring full sleeps until a drain frees a
// slot: this is the drbr_enqueue_nodrop of seed 003, which does not exist in
// any FreeBSD tree we could read (drbr_enqueue frees the mbuf on ENOBUFS);
// here it is a modelling choice.
//
// When xmit refuses, the refused item stays at the ring's head and v goes
// into the ring behind everything already there (its own sender's earlier
// items included), so order holds. If that ring is full while the lock is
// held, Transmit unlocks first and then sleeps for space like a deferring
// producer: sleeping with the lock held would deadlock against Drain, which
// only try-locks. Such a Transmit returns only after the owner's Drain has
// made room, so the owner must not wait for it to return before draining.
func (d *DRBR[T]) Transmit(v T) error {
	if d == nil || d.ring == nil {
		return ErrUninitialized
	}
	if d.mu.TryLock() {
		d.sendLocked(v)
		return nil
	}
	if d.admit() {
		d.enqueueWait(v)
		if !d.unlimited {
			d.producers.Add(-1)
		}
		d.kick()
		return nil
	}
	d.lockWaits.Add(1)
	d.mu.Lock()
	d.sendLocked(v)
	return nil
}

// admit reports whether a sender that found the lock taken may defer, and
// if so counts it among the deferring producers.
func (d *DRBR[T]) admit() bool {
	if d.unlimited {
		return true
	}
	if d.maxProducers == 0 {
		return false
	}
	if d.producers.Add(1) <= d.maxProducers {
		return true
	}
	d.producers.Add(-1)
	return false
}

// Pending returns how many items are deferred in the ring (drbr_inuse). A
// non-zero value with no sender active means xmit refused the head: call
// Drain when descriptors free up.
func (d *DRBR[T]) Pending() int {
	if d == nil || d.ring == nil {
		return 0
	}
	return d.ring.Count()
}

// Cap returns how many items the ring can defer (size − 1).
func (d *DRBR[T]) Cap() int {
	if d == nil || d.ring == nil {
		return 0
	}
	return d.ring.Cap()
}

// Stats returns a snapshot of the counters.
func (d *DRBR[T]) Stats() DRBRStats {
	if d == nil || d.ring == nil {
		return DRBRStats{}
	}
	return DRBRStats{
		Direct:    d.direct.Load(),
		Deferred:  d.deferred.Load(),
		LockWaits: d.lockWaits.Load(),
		FullWaits: d.fullWaits.Load(),
		Drained:   d.drained.Load(),
		Refused:   d.refused.Load(),
	}
}
