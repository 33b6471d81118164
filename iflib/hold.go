package iflib

import (
	"sync"
	"time"
)

// Senders and Stop: who may free a TX queue.
//
// A sender (Transmit, TransmitBatch) works on a TX queue's state — the
// mp_ring it may become the consumer of, the txq lock, the DRBR lock, the
// maps and descriptors encap fills — without the context lock. Stop must
// free that state (purge the software ring, unload and free what is on the
// descriptor ring), and must never do it while a sender still uses it,
// however long the sender takes: a driver method or a callback that
// blocks for longer than Config.StopTimeout must not make Stop unload a
// map twice or free a packet the sender still encapsulates.
//
// Each TX queue has an admission word, hold: the senders inside the queue
// (entered and not yet left), holdClosed (Stop has closed the queue: no
// sender may enter until Init opens it again), and holdOwed (the device is
// stopped and the queue's teardown is owed). Stop closes every queue, waits
// up to StopTimeout for the senders inside to leave, stops the tasks and the
// device, and then owes each queue its teardown: whoever finds the queue
// closed, owed and empty performs it — Stop itself when no sender is
// inside, else the last sender as it leaves. Exactly one does (a CAS clears
// holdOwed), and it is the queue's only user while it does. Init and Detach
// wait for every owed teardown (Context.teardowns) before they reuse or
// free the queues.
//
// FreeBSD's iflib_stop frees the TX software descriptors after IFDI_STOP
// without waiting for transmitters ("make sure all transmitters have
// completed before proceeding XXX"); here that wait is the admission word.

const (
	holdClosed int64 = 1 << 62 // Stop closed the queue: enter fails
	holdOwed   int64 = 1 << 61 // the queue's teardown is owed (device stopped)
	holdUsers  int64 = holdOwed - 1
)

// enter admits a sender to q. It reports false when q is closed (the
// context stopped); the sender then drops its packet.
func (q *txq) enter() bool {
	if q.hold.Load()&holdClosed != 0 {
		return false
	}
	if q.hold.Add(1)&holdClosed != 0 {
		q.leave() // Stop closed it meanwhile
		return false
	}
	return true
}

// leave ends a sender's stay in q; the last sender out of a closed queue
// whose teardown is owed performs it.
func (q *txq) leave() {
	if v := q.hold.Add(-1); v == holdClosed|holdOwed {
		q.tryTeardown(v)
	}
}

// users returns how many senders are inside q.
func (q *txq) users() int64 { return q.hold.Load() & holdUsers }

// closeHold closes q to new senders (Stop).
func (q *txq) closeHold() { q.hold.Or(holdClosed) }

// openHold opens q to senders again (Init), once no teardown is owed.
func (q *txq) openHold() { q.hold.And(^holdClosed) }

// oweTeardown marks q's teardown owed (after IFDI_STOP) and performs it
// at once when no sender is inside.
func (q *txq) oweTeardown() {
	q.ctx.teardowns.add()
	if v := q.hold.Or(holdOwed) | holdOwed; v == holdClosed|holdOwed {
		q.tryTeardown(v)
	}
}

// tryTeardown performs q's owed teardown if the hold word is still v
// (closed, owed, nobody inside): the CAS makes exactly one caller do it.
func (q *txq) tryTeardown(v int64) {
	if !q.hold.CompareAndSwap(v, v&^holdOwed) {
		return
	}
	q.path.purge()
	q.freeAll()
	q.ctx.teardowns.done()
}

// teardownSet counts the TX queue teardowns owed and not yet done.
type teardownSet struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

func (t *teardownSet) add() {
	t.mu.Lock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *teardownSet) done() {
	t.mu.Lock()
	if t.n--; t.n == 0 {
		close(t.zero)
		t.zero = nil
	}
	t.mu.Unlock()
}

// pending reports whether a teardown is owed.
func (t *teardownSet) pending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n > 0
}

// wait waits until no teardown is owed or d passes (d ≤ 0: no limit). It
// reports whether none is owed.
func (t *teardownSet) wait(d time.Duration) bool {
	t.mu.Lock()
	z := t.zero
	t.mu.Unlock()
	if z == nil {
		return true
	}
	if d <= 0 {
		<-z
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-z:
		return true
	case <-tm.C:
		return false
	}
}
