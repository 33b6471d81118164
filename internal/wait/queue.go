package wait

import (
	"context"
	"sync"

	"github.com/goiflib/goiflib/internal/shm"
)

// Queue is a list of parked goroutines, in the role of a sleepqueue
// (sys/kern/subr_sleepqueue.c) keyed by one condition of one ring. The zero
// value is empty and ready to use.
//
// A waker calls Waiting (one atomic load) after making the condition true
// and Wake only when it reports waiters, so a Queue nobody parks on costs its
// wakers one load.
type Queue struct {
	// n counts goroutines registered in list (Add under mu by Park and by
	// Wake; Load by wakers, without mu). See the package doc for why the
	// order "register, re-check" against "make true, load n" loses no
	// wake-up.
	n shm.Int32

	mu   shm.Mutex
	list []*waiter // guarded by mu; FIFO
}

// waiter is one parked goroutine. p holds at most one token: Wake leaves one
// while it holds mu, and removes the waiter from the list in the same
// critical section, so a waiter is given at most one. (shm.Parker is a
// channel of capacity 1; under goiflib_vsched, parking is a scheduling
// point of the virtual scheduler.)
type waiter struct{ p *shm.Parker }

// waiters recycles waiter values so that a park allocates nothing in the
// steady state.
var waiters = sync.Pool{New: func() any { return &waiter{p: shm.NewParker()} }}

// Waiting reports whether any goroutine is registered to park.
func (q *Queue) Waiting() bool { return q.n.Load() != 0 }

// Len returns how many goroutines are registered to park: a snapshot.
func (q *Queue) Len() int { return int(q.n.Load()) }

// Park registers the caller, re-checks ready and, unless it reports true,
// blocks until Wake picks the caller or ctx is done. It returns ctx.Err()
// when ctx ended the wait and nil otherwise; the caller re-checks its
// condition either way (a wake-up is a hint, not a promise). ready must be
// safe to call concurrently with the waker and must read the condition with
// atomic loads.
//
// A waiter whose context ends after Wake picked it passes the wake-up on to
// the next waiter, so that cancellation never swallows a wake-up meant for
// someone who can use it.
func (q *Queue) Park(ctx context.Context, ready func() bool) error {
	w := waiters.Get().(*waiter)
	q.mu.Lock()
	q.list = append(q.list, w)
	q.n.Add(1)
	q.mu.Unlock()

	var err error
	if !ready() {
		if err = w.p.ParkContext(ctx); err == nil {
			waiters.Put(w)
			return nil
		}
	}
	if !q.remove(w) {
		// Wake already picked w and sent its token: take it, and pass
		// the wake-up on if we are leaving because of ctx.
		w.p.Park()
		if err != nil {
			q.Wake(1)
		}
	}
	waiters.Put(w)
	return err
}

// remove takes w off the list if it is still there.
func (q *Queue) remove(w *waiter) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.list {
		if x == w {
			copy(q.list[i:], q.list[i+1:])
			q.list[len(q.list)-1] = nil
			q.list = q.list[:len(q.list)-1]
			q.n.Add(-1)
			return true
		}
	}
	return false
}

// Wake wakes up to k parked goroutines, oldest first (k ≤ 0 wakes none),
// and returns how many it woke.
func (q *Queue) Wake(k int) int {
	if k <= 0 {
		return 0
	}
	q.mu.Lock()
	k = q.wakeLocked(k)
	q.mu.Unlock()
	return k
}

// wakeLocked is Wake for k > 0 with q.mu held.
func (q *Queue) wakeLocked(k int) int {
	k = min(k, len(q.list))
	for i := 0; i < k; i++ {
		q.list[i].p.Unpark()
	}
	n := copy(q.list, q.list[k:])
	clear(q.list[n:])
	q.list = q.list[:n]
	q.n.Add(int32(-k))
	return k
}

// WakeAll wakes every parked goroutine.
func (q *Queue) WakeAll() { q.Wake(int(^uint(0) >> 1)) }
