package bufring

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/goiflib/goiflib/internal/shm"
	"github.com/goiflib/goiflib/internal/wait"
)

// Ring is FreeBSD's struct buf_ring (sys/sys/buf_ring.h, 2024 revision): a
// bounded ring of size slots, size a power of two, holding at most size−1
// items.
//
// Invariants. All index arithmetic is uint32 modulo 2^32; indices run freely
// and are masked only to address a slot, so the high bits act as FreeBSD's
// "epoch" against ABA on the CAS. At every instant
//
//	consTail ≤ consHead ≤ prodTail ≤ prodHead ≤ consTail + size − 1
//
// Slots [consTail, consHead) are being read by consumers that reserved them;
// [consHead, prodTail) hold published items; [prodTail, prodHead) are
// reserved by producers that have not published yet. All other slots are
// free and hold the zero T: consumers clear what they read, so the ring keeps
// no references alive.
//
// Producers publish in reservation order: prodTail moves from h to h+n only
// by the producer that reserved [h, h+n). Consumers release slots in
// reservation order the same way through consTail.
//
// Enqueue, EnqueueBurst, DequeueMC and DequeueBurstMC may run concurrently
// from any number of goroutines. DequeueSC, DequeueBurstSC, Peek, Putback,
// TryPutback and Advance are single-consumer: the caller must exclude every
// other consumer (FreeBSD: the driver's TX lock), though producers may run
// concurrently with them. Mixing single- and multi-consumer operations on
// one ring is allowed as long as they never overlap in time. Count, Full
// and Empty are advisory snapshots, as in FreeBSD.
//
// The waiting forms (EnqueueWait, DequeueSCWait, DequeueMCWait,
// DequeueBurstSCWait) are not in FreeBSD: they spin, yield and then park
// (internal/wait's policy), and the other side wakes them at its next
// publication or release, which costs it one atomic load when nobody
// waits. Close wakes every waiter with ErrClosed. The plain operations are
// unaffected by Close (a buf_ring cannot be closed); for a fan-in whose
// shutdown must account for every item use MPSC, whose Close is ordered
// with every reservation.
//
// Go's sync/atomic operations are sequentially consistent, so every Load
// below is at least the acquire and every Store at least the release that
// FreeBSD uses; the comments name the FreeBSD operation each replaces.
type Ring[T any] struct {
	// Read-only after New; shared by both sides.
	slots []T    // br_ring[]
	mask  uint32 // br_prod_mask == br_cons_mask (size − 1, also the capacity)

	_ cpu.CacheLinePad // keeps the producer line off the read-only header

	// Producer line (br_prod_*).

	// prodHead is br_prod_head: the next slot to reserve. Written only by
	// producers, with CompareAndSwap (FreeBSD: relaxed atomic_cmpset_32;
	// its atomic_load_acq_32 read becomes Load).
	prodHead shm.Uint32
	// prodTail is br_prod_tail: items before it are published. Written only
	// by the producer whose reservation starts at its current value (Store
	// replaces atomic_store_rel_32); consumers read it with Load
	// (atomic_load_acq_32), which makes the slot contents visible.
	prodTail shm.Uint32
	// prodConsTail is the producers' cached copy of consTail (not in
	// FreeBSD). Producers trust it while it shows free space and re-read
	// consTail (a cache-line transfer from the consumers) only when it
	// shows the ring full. Any producer may Store it; it only ever holds
	// an older value of consTail, so it can under-report free space but
	// never over-report it.
	prodConsTail shm.Uint32
	// drops is br_drops: items refused because the ring was full. Written
	// by producers with Add (FreeBSD: a plain br_drops++).
	drops shm.Uint64

	_ cpu.CacheLinePad // prevents false sharing between producers and consumers

	// Consumer line (br_cons_*).

	// consHead is br_cons_head: the next slot to read. Multi-consumer
	// dequeues CAS it (atomic_cmpset_32 in FreeBSD); single-consumer
	// operations Store it (a plain store in buf_ring_dequeue_sc).
	consHead shm.Uint32
	// consTail is br_cons_tail: slots before it are free for producers.
	// Written by the consumer whose reservation starts at its value (Store
	// replaces atomic_store_rel_32); producers Load it (atomic_load_acq_32
	// in the full check), which orders the slot clearing before reuse.
	consTail shm.Uint32
	// consProdTail is the multi-consumer operations' cached copy of
	// prodTail, the mirror of prodConsTail: trusted while it shows items,
	// refreshed from prodTail only when it shows the ring empty. Any
	// multi-consumer may Store it.
	consProdTail shm.Uint32

	_ cpu.CacheLinePad // keeps the single consumer's private field off the shared consumer line

	// scProdTail is the single consumer's cached copy of prodTail (not in
	// FreeBSD): a plain field, because only the single consumer (the
	// holder of the driver's TX lock) reads or writes it. Like
	// consProdTail it only ever holds an older prodTail, so it can
	// under-report items but never over-report them (short of 2^32 items
	// taken by multi-consumer operations with no single-consumer one in
	// between, the same epoch limit as the CAS on br_prod_head).
	scProdTail uint32

	_ cpu.CacheLinePad // the waiters below are written only when someone parks

	closed shm.Bool   // set by Close; read by the waiting forms
	items  wait.Queue // consumers parked in a Dequeue*Wait, woken after a publication
	_      cpu.CacheLinePad
	space  wait.Queue // producers parked in EnqueueWait, woken after a release

	_ cpu.CacheLinePad // keeps the ring's state off whatever follows
}

// New returns an empty ring of size slots (buf_ring_alloc): size must be a
// power of two ≥ 2 and at most 2^31, and the ring holds at most size−1
// items. Other sizes return a *ConfigError matching ErrInvalid.
func New[T any](size int) (*Ring[T], error) {
	if err := checkSize("New", size, unsafe.Sizeof(*new(T))); err != nil {
		return nil, err
	}
	return &Ring[T]{slots: make([]T, size), mask: uint32(size - 1)}, nil
}

// Cap returns the number of items the ring can hold: size − 1.
func (r *Ring[T]) Cap() int { return int(r.mask) }

// Drops returns br_drops: how many items Enqueue and EnqueueBurst refused
// because the ring was full.
func (r *Ring[T]) Drops() uint64 { return r.drops.Load() }

// Count returns the number of published items not yet released by consumers
// (buf_ring_count). It is a snapshot.
func (r *Ring[T]) Count() int {
	ct := r.consTail.Load()
	n := r.prodTail.Load() - ct
	if n > r.mask { // consumers moved past our consTail snapshot's window
		n = r.mask
	}
	return int(n)
}

// Full reports whether every slot is reserved or occupied (buf_ring_full:
// br_prod_head == br_cons_tail + size − 1). It is a snapshot.
func (r *Ring[T]) Full() bool {
	ct := r.consTail.Load()
	return r.prodHead.Load()-ct >= r.mask
}

// Empty reports whether no published item is waiting (buf_ring_empty:
// br_cons_head == br_prod_tail). It is a snapshot.
func (r *Ring[T]) Empty() bool {
	return r.consHead.Load() == r.prodTail.Load()
}
