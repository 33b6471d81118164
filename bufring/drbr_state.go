package bufring

import (
	"context"

	"github.com/goiflib/goiflib/internal/wait"
)

// The lock word. Every change is a CompareAndSwap (or Or, for Close) on
// DRBR.state; Go's atomics are sequentially consistent, so all of them,
// and the ring's atomics, fall in one total order that every goroutine
// agrees on.
const (
	stLocked  = 1 << iota // a holder runs xmit and owns the ring's consumer side (ift_mtx held)
	stPending             // items were deferred while locked; the holder looks again before it releases
	stStalled             // xmit refused the head; nobody calls xmit until a restart
	stRestart             // Restart came while locked; the holder retries the head
	stClosed              // Close: nothing enters, nothing more is sent
)

// Why no item is stranded (left in the ring, not stalled and not closed,
// with the lock free and nobody about to look), under the Go memory model.
//
// A deferring sender publishes its item in the ring (MPSC.publish: an
// atomic Store) and then announces it with an atomic operation on state
// (announce): a CAS that sets stPending or takes the free lock, or, when
// the lock is held and stPending is already set, just a load. A holder
// clears stPending with a CAS before each look at the ring, and gives the
// lock up with a CAS that expects the state it last looked at (unlock).
// Go's atomics are sequentially consistent, so all of these fall in one
// total order, each load and each successful CAS seeing the value the
// operation before it left:
//
//   - If the sender's CAS sets stPending, the holder's release CAS, which
//     expects a state without it, fails; the holder re-reads, clears
//     stPending with a CAS and drains again. That drain comes after the
//     announcement, which comes after the publication, so it sees the
//     item (its load of the run's sequence word follows the sender's
//     store).
//   - If the sender's load sees stPending already set with the lock held,
//     the CAS that will clear it comes later in the order, and the drain
//     that follows that CAS sees the item, for the same reason.
//   - If the release comes first, the announcement's CAS sees the lock
//     free and takes it: the sender drains its own item.
//
// The one case where an announced item is not drained at once is the
// queue being stalled; then the item waits, by design, for the owner's
// Restart, which is itself a CAS on state that either finds the lock free
// (and drains, seeing every item announced before it) or sets stRestart
// for the holder. (A holder that leaves with stPending cleared because its
// Restart quota ran out reports more, and the owner calls again.) An item
// whose producer reserved its slot but has not published yet is invisible
// to a drain; that producer's own announcement, after its publication,
// triggers the drain that sends it and everything published behind it.
//
// What this replaces: mxge(4)'s and ixgbe's drbr code relies on the
// producer's mtx_trylock after drbr_enqueue; the previous version here used
// sync.Mutex.TryLock, and Go's memory model gives a failed TryLock no
// synchronizing effect (it starts with a plain load), so on arm64 the
// sender's TryLock and the holder's re-check could both miss.

// lock blocks until the caller holds the lock: spin, yield, then park on
// lockQ until a release wakes it. A sender (sender true) gives up with the
// close error once the DRBR is closed; an owner (Do, Flush) takes the lock
// regardless.
func (d *DRBR[T]) lock(sender bool) error {
	ready := func() bool {
		s := d.state.Load()
		return s&stLocked == 0 || sender && s&stClosed != 0
	}
	var b wait.Backoff
	for {
		s := d.state.Load()
		if sender && s&stClosed != 0 {
			return d.closeErr()
		}
		if s&stLocked == 0 {
			if d.state.CompareAndSwap(s, s|stLocked) {
				return nil
			}
			continue
		}
		if b.Next() {
			continue
		}
		_ = d.lockQ.Park(context.Background(), ready)
		b.Reset()
	}
}

// unlock is the holder's exit. Before it lets go it does the work it owes:
// a restart requested while it held the lock (stRestart) and items
// deferred meanwhile (stPending, unless stalled). budget bounds how many
// items it sends doing so (negative: no bound); when the budget runs out
// with work owed it clears the bits anyway and reports more, and the
// caller (Restart) must call again. Then it releases the ring's read
// slots, rings the doorbell, publishes its counters when due, clears
// stLocked with a CAS and wakes one goroutine blocked on the lock.
//
// Preconditions: stLocked held; released on return.
func (d *DRBR[T]) unlock(budget int) (sent int, more bool) {
	for {
		s := d.state.Load()
		owed := s&stClosed == 0 && (s&stRestart != 0 || s&(stPending|stStalled) == stPending)
		if owed && budget != 0 {
			if !d.state.CompareAndSwap(s, s&^(stPending|stRestart)) {
				continue
			}
			n, _ := d.drainLocked(budget)
			sent += n
			if budget > 0 {
				budget -= n
			}
			continue
		}
		d.ring.release()
		if d.unrung > 0 && d.cfg.Doorbell != nil {
			d.cfg.Doorbell()
			d.h.doorbells++
		}
		d.unrung = 0
		if d.holds++; d.holds >= statsEvery || d.wantStats.Load() {
			d.publishStats()
		}
		if d.testHookRelease != nil {
			d.testHookRelease()
		}
		if d.state.CompareAndSwap(s, s&^(stLocked|stPending|stRestart)) {
			if d.lockQ.Waiting() {
				d.lockQ.Wake(1)
			}
			return sent, owed
		}
	}
}

// announce is a deferring sender's step after publishing items in the
// ring: mark them pending for the holder, or take the free lock and send
// them. A stalled queue keeps the items for Restart, unless CanRestart says
// the descriptors are back.
//
// While a holder is draining, stPending is usually set already and the
// announcement is one load: the holder clears stPending before it looks at
// the ring again, so that look comes after this load and sees the items.
func (d *DRBR[T]) announce() {
	for {
		s := d.state.Load()
		ns := s
		switch {
		case s&stClosed != 0:
			return // Flush frees them.
		case s&stLocked != 0:
			ns |= stPending
			if s&stStalled != 0 && d.cfg.CanRestart != nil && d.cfg.CanRestart() {
				ns = ns&^stStalled | stRestart
			}
		case s&stStalled != 0 && (d.cfg.CanRestart == nil || !d.cfg.CanRestart()):
			return // Restart sends them.
		default:
			ns = ns&^(stStalled|stPending|stRestart) | stLocked
			if d.state.CompareAndSwap(s, ns) {
				d.drainLocked(-1)
				d.unlock(-1)
				return
			}
			continue
		}
		if ns == s || d.state.CompareAndSwap(s, ns) {
			return
		}
	}
}

// retryAfterRefusal is called by the holder after xmit refused: if a
// restart came in meanwhile it consumes it and reports true (retry the
// head now), else it marks the queue stalled and reports false.
//
// Preconditions: stLocked held.
func (d *DRBR[T]) retryAfterRefusal() bool {
	for {
		s := d.state.Load()
		if s&stRestart != 0 {
			if d.state.CompareAndSwap(s, s&^stRestart) {
				return true
			}
			continue
		}
		if d.state.CompareAndSwap(s, s|stStalled) {
			d.h.stalls++
			return false
		}
	}
}
