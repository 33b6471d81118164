package mpring

import (
	"golang.org/x/sys/cpu"

	"github.com/goiflib/goiflib/internal/shm"
)

// Size limits: every index is a uint16, so size ≤ 65536, and the usable
// capacity is size−2, so size ≥ 3 holds at least one item.
// ifmp_ring_alloc accepts size 2, a ring on which every enqueue fails with
// ENOBUFS (a caller that retries, as a lossless fan-in must, never
// progresses); goiflib refuses it. size need not be a power of two, but
// iflib's drain callbacks mask with size−1 and iflib always uses 2048.
const (
	MinSize = 3
	MaxSize = 65536
)

// publishBatch = 64: the consumer publishes its cidx at least every 64
// consumed items even when neither caught up nor over budget (the literal 64
// in drain_ring_lockless, sys/net/mp_ring.c), bounding how far the real
// consumer position runs ahead of the one producers see as free space.
const publishBatch = 64

// DrainFunc is mp_ring_drain_t. It is called with the items in [cidx, pidx)
// (indices wrap at Size; read them with At or Slot) and returns how many it
// consumed from cidx on; 0 means it stalled for lack of resources and the
// ring becomes STALLED. A return above the number offered is treated as all
// of them and a negative one as 0. Only one goroutine runs it at a time: the
// one whose CAS stored BUSY.
type DrainFunc[T any] func(r *Ring[T], cidx, pidx int) int

// CanDrainFunc is mp_ring_can_drain_t: whether a STALLED ring may be
// restarted now. FreeBSD's header calls it "cheap, may be unreliable"; a
// false positive costs a drain call that returns 0, a false negative delays
// the restart until the next CheckDrainage.
type CanDrainFunc[T any] func(r *Ring[T]) bool

// Ring is FreeBSD's struct ifmp_ring (sys/net/mp_ring.c).
//
// Invariants, all over the state word s = {pidx_head, pidx_tail, cidx, flags}:
//   - Slots [cidx, pidx_tail) hold published items not yet consumed; slots
//     [pidx_tail, pidx_head) are reserved by producers that have not yet
//     published; at least one slot beyond pidx_head is always free, so
//     pidx_head never catches up with cidx from behind (usable capacity
//     size−2).
//   - pidx_tail moves only in reservation order: a producer publishes only
//     after pidx_tail has reached the start of its reservation.
//   - At most one goroutine is the consumer: the one whose CAS moved flags to
//     BUSY (a producer in Enqueue, or CheckDrainage). It alone calls drain,
//     reads and zeroes slots in [cidx, pidx_tail), and writes cidx.
//   - flags is STALLED or ABDICATED only while cidx != pidx_tail.
//
// Transitions each side may make (every one a CAS on state):
//   - Producer, reserving: pidx_head += n, only if n < space available.
//   - Producer, publishing: pidx_tail = end of its reservation, and flags:
//     without abdicate, any → BUSY (it becomes the consumer unless the old
//     flags were BUSY); with abdicate, IDLE → ABDICATED, others unchanged.
//   - Consumer: cidx forward, flags BUSY → IDLE (caught up), → ABDICATED
//     (budget spent while a producer is mid-reservation), → STALLED (drain
//     returned 0), or stays BUSY.
//   - CheckDrainage: STALLED or ABDICATED → BUSY when no producer is
//     mid-reservation (and, for STALLED, canDrain says yes); it then drains.
//
// Memory order: Go's atomics are sequentially consistent, so every CAS below
// is at least as strong as the FreeBSD atomic it replaces (named at each
// site); slot writes before a producer's publishing CAS are visible to the
// consumer whose CAS or load observed that pidx_tail.
type Ring[T any] struct {
	_ cpu.CacheLinePad // keeps state off whatever precedes the ring

	// state is union ring_state (volatile uint64_t state, cache-aligned in
	// FreeBSD). Written only by CompareAndSwap, by producers and by the
	// consumer; read by everyone with Load.
	state shm.Uint64

	_ cpu.CacheLinePad // prevents false sharing between state and the read-mostly fields

	size     int             // size; immutable
	drain    DrainFunc[T]    // drain; immutable
	canDrain CanDrainFunc[T] // can_drain; immutable
	items    []T             // items[size]; slot ownership as in the invariants

	// testHookReserved, when set (only by this package's tests, before any
	// goroutine uses the ring), runs in Enqueue between a successful
	// reservation and the wait for earlier producers: the point where FreeBSD
	// relies on critical_enter and a goroutine may be descheduled.
	testHookReserved func()

	_ cpu.CacheLinePad // prevents false sharing between the fields above and the producer counters

	// Producer-side counters (counter_u64_t in FreeBSD, which are per-CPU;
	// here one shared atomic each, written by every producer).
	enqueues shm.Uint64 // enqueues: items accepted
	drops    shm.Uint64 // drops: items refused with ErrFull

	_ cpu.CacheLinePad // prevents false sharing between producer and consumer counters

	// Consumer-side counters, written only by the current consumer (and by
	// ResetStats).
	starts      shm.Uint64 // starts: consumer started on an IDLE ring
	stalls      shm.Uint64 // stalls: drain returned 0
	restarts    shm.Uint64 // restarts: "recovered after stalling"
	abdications shm.Uint64 // abdications: consumer left work to another thread
}

// New is ifmp_ring_alloc: a ring of size slots (usable capacity size−2)
// whose consumer calls drain, restarted after a stall when canDrain says so.
// It returns a *ConfigError matching ErrInvalid unless
// MinSize ≤ size ≤ MaxSize and both callbacks are set.
func New[T any](size int, drain DrainFunc[T], canDrain CanDrainFunc[T]) (*Ring[T], error) {
	if size < MinSize || size > MaxSize {
		return nil, badSize(size)
	}
	if drain == nil {
		return nil, badArg("New(drain)", nil, "nil callback")
	}
	if canDrain == nil {
		return nil, badArg("New(canDrain)", nil, "nil callback")
	}
	return &Ring[T]{
		size:     size,
		drain:    drain,
		canDrain: canDrain,
		items:    make([]T, size),
	}, nil
}

// Size returns the number of slots (r->size). Indices passed to the drain
// callback are in [0, Size).
func (r *Ring[T]) Size() int { return r.size }

// At returns the item in slot i, for the drain callback reading [cidx, pidx).
// T is normally a pointer (iflib stores struct mbuf *), so this copies one
// word; for a large value type use Slot. Outside [0, Size) it returns the
// zero value.
func (r *Ring[T]) At(i int) T {
	if uint(i) >= uint(len(r.items)) {
		var zero T
		return zero
	}
	return r.items[i]
}

// Slot returns a pointer to slot i, as iflib's _ring_peek_one returns
// &items[idx]: the drain callback may read a large T without copying, or
// replace the item in place before retrying it (iflib_encap's defragment
// path does this with struct mbuf **). It is valid only inside the drain
// callback and only for i in the offered [cidx, pidx); outside [0, Size) it
// returns nil.
func (r *Ring[T]) Slot(i int) *T {
	if uint(i) >= uint(len(r.items)) {
		return nil
	}
	return &r.items[i]
}

// IncrementIdx is increment_idx: idx advanced by n slots, wrapping at Size.
// For 0 ≤ idx < Size and 0 ≤ n ≤ Size (what the drain callback passes) it
// is increment_idx exactly; any other idx and n give (idx + n) mod Size,
// always in [0, Size), never a slot outside the ring.
func (r *Ring[T]) IncrementIdx(idx, n int) int {
	if uint(idx) < uint(r.size) && uint(n) <= uint(r.size) {
		return incrementIdx(r.size, idx, n)
	}
	return mod(mod(idx, r.size)+mod(n, r.size), r.size)
}

// IdxDiff is IDXDIFF(pidx, cidx, size) from sys/net/iflib.c: how many slots
// lie in [cidx, pidx), wrapping at Size. Indices outside [0, Size) are taken
// modulo Size, so the answer is always in [0, Size).
func (r *Ring[T]) IdxDiff(pidx, cidx int) int {
	if uint(pidx) >= uint(r.size) || uint(cidx) >= uint(r.size) {
		pidx, cidx = mod(pidx, r.size), mod(cidx, r.size)
	}
	if pidx >= cidx {
		return pidx - cidx
	}
	return r.size - cidx + pidx
}

// mod is x mod m in [0, m) for any x (m > 0).
func mod(x, m int) int {
	if x %= m; x < 0 {
		x += m
	}
	return x
}
