package bufring

import (
	"errors"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"

	"github.com/goiflib/goiflib/internal/shm"
	"github.com/goiflib/goiflib/internal/wait"
)

// Defaults of the deferred simple_tx ("simple_tx with drbr deferral",
// FreeBSD main 2025, which ports mxge(4)'s buf_ring/drbr deferral to
// iflib). Its sysctls are named in that review; the mechanism could not be
// read in any FreeBSD tree, so these are the review's stated defaults.
const (
	// DefaultDRBRSize = 256 slots (net.iflib.simple_txbr_size). The
	// review does not state its default. The ring only has to hold what
	// senders defer while the holder sends, and what they defer while the
	// queue is stalled on a full descriptor ring; beyond that a deeper
	// ring adds no throughput, only packets that were built by their
	// senders and wait until the device reads them from memory that has
	// left the cache. With 2048 slots (the mp_ring size, this default
	// before) iflib's drbr mode cost 0.85–1.9 µs of CPU per packet, with
	// 256 slots 0.7–1.35 µs and less at every fan-in from 1 to 64 and at
	// GOMAXPROCS 1 and 2 (medians of 5, side by side in one run on a
	// shared 2-CPU machine; BenchmarkDRBRRounds, drbr against
	// drbr-2048):
	//
	//	go test -run '^$' -bench '^BenchmarkDRBRRounds$' -benchtime 200000x -cpu 1,2 -count 5 ./examples/seedbench/
	DefaultDRBRSize = 256
	// DefaultMaxProducers = 1 (net.iflib.simple_max_producers): at most
	// one sender at a time defers into the ring while the lock is held;
	// the rest block on the lock. The review measured 1 best "by a fairly
	// wide margin" on a 96-core AMD Turin.
	DefaultMaxProducers = 1
	// DefaultDrainQuota = 8 (net.iflib.simple_drain_quota): the most items
	// one Restart sends, so that the TX task cannot starve RX on a shared
	// taskqueue or ithread.
	DefaultDrainQuota = 8
)

// DRBRConfig configures a DRBR. Xmit is required; every other field's zero
// value means its default, resolved once by NewDRBRWith (Config returns the
// resolved values).
type DRBRConfig[T any] struct {
	// Size is the deferral ring's slot count (net.iflib.simple_txbr_size):
	// a power of two in [2, 2^31]; 0 means DefaultDRBRSize. The ring holds
	// Size items.
	Size int
	// MaxProducers (net.iflib.simple_max_producers) bounds how many
	// senders defer into the ring at once while another holds the lock;
	// the others block on the lock. 0 means DefaultMaxProducers; negative
	// means no deferral at all, every sender takes the lock (plain
	// simple_tx, the review's setting 0); a value above GOMAXPROCS at
	// construction means unlimited deferral (mxge(4)'s original drbr).
	MaxProducers int
	// DrainQuota (net.iflib.simple_drain_quota) is the most items one
	// Restart sends. 0 means DefaultDrainQuota; negative means no limit.
	DrainQuota int
	// Xmit sends one item with the queue lock held (iflib_encap plus the
	// doorbell decision of iflib_simple_transmit). It returns nil when it
	// sent *v, ErrRefused when it lacked descriptors (the item then stays at
	// the head and the queue is stalled until Restart), or another error
	// when it dropped *v itself (it owns it: freed and counted). Transmit and
	// TransmitBurst return such an error to the caller when the dropped item
	// was the caller's own, sent in its own call, so that a drop happening
	// inside the caller's call is reported as a direct send would report it.
	// Xmit may replace *v before returning ErrRefused (m_defrag), and the
	// replacement is what stays queued (drbr_putback). It must not call
	// Transmit, TransmitBurst, Restart, Do, TryDo, Flush or Close on the same
	// DRBR; Pending, Stalled and Stats are safe.
	Xmit func(v *T) error
	// Doorbell, if set, is called with the lock held once after each run
	// of Xmit calls that sent at least one item, before the lock is
	// released: iflib rings the NIC's doorbell (ift_txd_flush through
	// iflib_txd_db_check) once per run instead of once per packet.
	Doorbell func()
	// CanRestart, if set, is mp_ring's can_drain for a stalled queue:
	// cheap, may be unreliable. A sender that defers into a stalled queue
	// calls it and, if it reports true, restarts the queue itself instead
	// of leaving the items for the owner's Restart. A false positive
	// costs one refused Xmit; nil leaves restarting to Restart alone.
	CanRestart func() bool
}

// DRBRStats are DRBR's counters. Every item handed to Transmit or
// TransmitBurst ends in exactly one of Direct (sent by xmit during the
// caller's own call), Deferred (left in the ring or the stash) or Returned
// (handed back with the close error). Every deferred item leaves through
// Drained (sent later, by whichever goroutine held the lock) or Flushed,
// or is still Pending:
//
//	items offered = Direct + Deferred + Returned
//	Deferred      = Drained + Flushed + Pending()
//
// Both hold exactly once every call has returned.
type DRBRStats struct {
	Direct    uint64 // items xmit accepted from their own Transmit call
	Deferred  uint64 // items put in the ring (or the stash) instead
	Drained   uint64 // deferred items xmit accepted later
	Flushed   uint64 // deferred items removed by Flush
	Returned  uint64 // items handed back to their callers after Close
	LockWaits uint64 // calls that blocked on the lock (producer limit reached, or no deferral)
	FullWaits uint64 // calls that waited for ring space (nothing is ever dropped)
	Refused   uint64 // xmit calls that returned ErrRefused (no descriptors)
	Stalls    uint64 // times the queue stalled: a refusal with no Restart pending
	Doorbells uint64 // Doorbell calls
}

// holderStats are the counters only the lock holder writes. It keeps them
// in plain fields and publishes them (one Store each) every statsEvery lock
// holds, or at the next release after Stats asked for them, instead of one
// atomic add per item; Stats itself publishes them when it can take the
// lock, so a snapshot of a quiet DRBR is exact.
type holderStats struct {
	direct, drained, refused, stalls, doorbells, stashed uint64
}

// statsEvery = 64 lock holds between publications of holderStats: at most
// 64 holds' worth of counts behind while the lock is never free.
const statsEvery = 64

// DRBR is the producer-limited deferred transmit of iflib's simple_tx
// ("simple_tx with drbr deferral", FreeBSD main 2025, ported from
// mxge(4)'s drbr use): a per-queue lock (ift_mtx) around a transmit
// callback, and a ring (the buf_ring of drbr_enqueue, drbr_peek,
// drbr_advance) where senders that find the lock taken leave their items
// instead of waiting.
//
// Flow of one Transmit, and of the owner's calls:
//
//	lock free, not stalled ──▶ take it ─▶ send deferred items (order) ─▶ xmit(v) ─▶ Doorbell ─▶ release
//	                                                       xmit refused: stall, keep v at the head
//	lock held, < MaxProducers deferring, or stalled ──▶ ring (wait if full) ─▶ announce
//	lock held, producer limit reached ──▶ block on the lock ─▶ as the first line
//	announce: lock held → mark "pending", the holder sends it before it releases
//	          lock free → take it and send; stalled → leave it for Restart
//	Restart (owner's completion path, after descriptors came back) ─▶ clear the stall, send ≤ DrainQuota
//	Do(f) (owner's reclaim) ─▶ f under the same lock, then send what was deferred meanwhile
//	Close(cause) / Flush(free) / Reopen() ─▶ stop: blocked senders get their items back
//
// The lock is a word of state changed only by compare-and-swap, so every
// hand-off between a sender and the holder is ordered by atomics on one
// word (see drbr_state.go for the proof that no item is stranded):
//
//	locked   — a holder runs xmit (and owns the ring's consumer side)
//	pending  — items were deferred while locked: the holder looks again
//	stalled  — xmit refused the head: nobody calls xmit until Restart
//	restart  — Restart came while locked: the holder retries the head
//	closed   — Close: nothing enters, nothing more is sent
//
// A separate counter bounds the deferring senders by MaxProducers.
//
// Invariants:
//   - xmit runs only with the lock held, so the ring has one consumer at a
//     time (MPSC's consumer side) and the stash (a refused item of a
//     sender that held the lock) has one owner.
//   - Order: a holder sends the stash, then the ring, then its own items;
//     a refused item stays at the head; so each sender's items leave in
//     the order it passed them.
//   - Nothing is dropped: a sender that finds the ring full waits for
//     space; a holder never waits for space while it holds the lock.
//   - Stalled: after a refusal, senders defer without calling xmit until
//     the owner's Restart (or CanRestart) says descriptors came back.
//
// Concurrency: Transmit and TransmitBurst from any number of goroutines;
// Restart, Do, TryDo, Flush, Close and Reopen from any goroutine,
// concurrently with senders and with each other (Do and Flush block on
// the lock; Restart and TryDo never block). Pending, Stalled, Stats, Cap
// and Config are safe anywhere. After Close every Transmit returns its
// items with the close error; Restart returns it too; Do, TryDo and Flush
// keep working; Reopen undoes Close.
type DRBR[T any] struct {
	// Read-only after construction.
	ring      *MPSC[T]
	cfg       DRBRConfig[T] // the resolved configuration, with the callbacks
	limit     uint64        // most deferring senders; 0 = never defer
	unlimited bool          // defer without counting

	// Set only by this package's tests, before the DRBR is used: run
	// between a deferring sender's publication and its announcement, and
	// just before a holder's releasing CAS, the two sides of the
	// no-stranding handshake.
	testHookPublished, testHookRelease func()

	_ cpu.CacheLinePad // the lock word below changes on every hand-off

	// state is the lock word (stLocked …). Changed only by
	// CompareAndSwap and Or.
	state shm.Uint64

	_ cpu.CacheLinePad // the deferring senders' count is written only by them

	// producers counts senders admitted to defer (net.iflib's
	// simple_max_producers bounds it): Add by deferring senders only, on
	// a line of its own so that the holder's CASes on state and the
	// senders' counting do not share a cache line.
	producers shm.Int64

	_ cpu.CacheLinePad // holder-owned fields below; written only with stLocked held

	stash    T    // a refused item of a holder's own call (guarded by stLocked)
	hasStash bool // guarded by stLocked
	cur      T    // the holder's own item while xmit looks at it (guarded by stLocked)
	unrung   int  // items sent since the last Doorbell (guarded by stLocked)
	holds    int  // lock holds since the last publication (guarded by stLocked)
	h        holderStats

	_ cpu.CacheLinePad // published counters below

	stashed   shm.Bool // mirror of hasStash for Pending
	direct    shm.Uint64
	drained   shm.Uint64
	refused   shm.Uint64
	stalls    shm.Uint64
	doorbells shm.Uint64
	stashes   shm.Uint64
	lockWaits shm.Uint64
	fullWaits shm.Uint64
	returned  shm.Uint64
	flushed   shm.Uint64
	cause     shm.Pointer[error] // what a closed DRBR returns; set before stClosed
	wantStats shm.Bool           // Stats could not take the lock: the next release publishes

	_ cpu.CacheLinePad

	lockQ wait.Queue // senders and owners blocked on the lock
}

// NewDRBRWith returns a DRBR configured by cfg, with defaults resolved.
// A bad field returns a *ConfigError matching ErrInvalid that names it.
func NewDRBRWith[T any](cfg DRBRConfig[T]) (*DRBR[T], error) {
	if cfg.Xmit == nil {
		return nil, &ConfigError{Pkg: "bufring", Field: "DRBRConfig.Xmit", Reason: "want a non-nil func"}
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultDRBRSize
	}
	r, err := NewMPSC[T](cfg.Size)
	if err != nil {
		var ce *ConfigError
		_ = errors.As(err, &ce)
		return nil, &ConfigError{Pkg: "bufring", Field: "DRBRConfig.Size", Value: cfg.Size, Reason: "want 0 or " + strings.TrimPrefix(ce.Reason, "want ")}
	}
	if cfg.MaxProducers == 0 {
		cfg.MaxProducers = DefaultMaxProducers
	}
	if cfg.DrainQuota == 0 {
		cfg.DrainQuota = DefaultDrainQuota
	}
	if cfg.DrainQuota < 0 {
		cfg.DrainQuota = -1
	}
	d := &DRBR[T]{ring: r}
	switch {
	case cfg.MaxProducers < 0:
		cfg.MaxProducers = -1
	case cfg.MaxProducers > runtime.GOMAXPROCS(0):
		d.unlimited = true
	default:
		d.limit = uint64(cfg.MaxProducers)
	}
	d.cfg = cfg
	return d, nil
}

// ok reports whether d was made by a constructor.
func (d *DRBR[T]) ok() bool { return d != nil && d.ring != nil }

// Config returns the configuration with defaults resolved: Size,
// MaxProducers (−1: no deferral) and DrainQuota (−1: no limit) as in
// effect.
func (d *DRBR[T]) Config() DRBRConfig[T] {
	if !d.ok() {
		return DRBRConfig[T]{}
	}
	return d.cfg
}

// Cap returns how many items the ring can defer (Size).
func (d *DRBR[T]) Cap() int {
	if !d.ok() {
		return 0
	}
	return d.ring.Cap()
}

// Pending returns how many deferred items wait to be sent (drbr_inuse): in
// the ring and in the stash. It is a snapshot, exact once no call is in
// progress.
func (d *DRBR[T]) Pending() int {
	if !d.ok() {
		return 0
	}
	n := d.ring.Len()
	if d.stashed.Load() {
		n++
	}
	return n
}

// Stalled reports whether xmit refused the head and the queue waits for
// Restart.
func (d *DRBR[T]) Stalled() bool {
	return d.ok() && d.state.Load()&stStalled != 0
}

// Stats returns a snapshot of the counters. It is exact once no call is in
// progress: it takes the lock, without waiting, to read the holder's
// counters (and, like any holder, sends what was deferred meanwhile before
// it lets go). While the lock is busy, the holder's counters (Direct,
// Drained, Refused, Stalls, Doorbells and the stash part of Deferred) may
// be up to statsEvery lock holds behind.
func (d *DRBR[T]) Stats() DRBRStats {
	if !d.ok() {
		return DRBRStats{}
	}
	if !d.TryDo(d.publishStats) {
		d.wantStats.Store(true)
	}
	return DRBRStats{
		Direct:    d.direct.Load(),
		Deferred:  d.ring.entered() + d.stashes.Load(),
		Drained:   d.drained.Load(),
		Flushed:   d.flushed.Load(),
		Returned:  d.returned.Load(),
		LockWaits: d.lockWaits.Load(),
		FullWaits: d.fullWaits.Load(),
		Refused:   d.refused.Load(),
		Stalls:    d.stalls.Load(),
		Doorbells: d.doorbells.Load(),
	}
}

// publishStats stores the holder's counters. It runs once every statsEvery
// lock holds or when Stats asks, so it stores all six rather than track
// which of them changed.
//
// Preconditions: stLocked held.
func (d *DRBR[T]) publishStats() {
	d.holds = 0
	if d.wantStats.Load() {
		d.wantStats.Store(false)
	}
	d.direct.Store(d.h.direct)
	d.drained.Store(d.h.drained)
	d.refused.Store(d.h.refused)
	d.stalls.Store(d.h.stalls)
	d.doorbells.Store(d.h.doorbells)
	d.stashes.Store(d.h.stashed)
}

// closeErr is what a closed DRBR returns.
func (d *DRBR[T]) closeErr() error {
	if p := d.cause.Load(); p != nil {
		return *p
	}
	return ErrClosed
}
