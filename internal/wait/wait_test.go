package wait

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
)

func TestBackoffPhases(t *testing.T) {
	var b Backoff
	for i := 0; i < Spins+Yields; i++ {
		require.True(t, b.Next(), "check %d is still spinning or yielding", i)
	}
	assert.False(t, b.Next(), "then it is time to park")
	assert.False(t, b.Next())
	b.Reset()
	assert.True(t, b.Next(), "Reset starts a new wait")

	var p Backoff
	for i := 0; i < 3*Spins; i++ {
		p.Pause() // never parks; must return
	}
	assert.Equal(t, Spins, p.n)
}

// TestQueueNoLostWakeup: a waiter that parks on a condition a waker makes
// true concurrently is always woken (the register/re-check against
// make-true/load handshake). Each round, one waiter and one waker race;
// a lost wake-up hangs the test.
func TestQueueNoLostWakeup(t *testing.T) {
	rounds := 20000
	if testing.Short() || race.Enabled {
		rounds = 2000
	}
	var q Queue
	var cond atomic.Bool
	ready := func() bool { return cond.Load() }
	for range rounds {
		cond.Store(false)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !cond.Load() {
				_ = q.Park(context.Background(), ready)
			}
		}()
		runtime.Gosched()
		cond.Store(true)
		if q.Waiting() {
			q.Wake(1)
		}
		<-done
	}
	assert.False(t, q.Waiting())
}

// TestQueueWakeCounts: Wake(k) wakes k waiters, oldest first, and WakeAll
// the rest.
func TestQueueWakeCounts(t *testing.T) {
	var q Queue
	woken := make(chan int, 5)
	for i := range 5 {
		go func() {
			_ = q.Park(context.Background(), func() bool { return false })
			woken <- i
		}()
		waitUntil(func() bool { return q.n.Load() == int32(i+1) })
	}
	q.Wake(0)
	q.Wake(-3)
	assert.Equal(t, int32(5), q.n.Load(), "Wake of 0 or less wakes nobody")
	q.Wake(2)
	assert.Equal(t, map[int]bool{0: true, 1: true}, map[int]bool{<-woken: true, <-woken: true}, "the two oldest")
	assert.Equal(t, int32(3), q.n.Load())
	q.WakeAll()
	got := map[int]bool{<-woken: true, <-woken: true, <-woken: true}
	assert.Equal(t, map[int]bool{2: true, 3: true, 4: true}, got)
	assert.False(t, q.Waiting())
	q.WakeAll() // nobody left: fine
}

// TestQueueCancel: a waiter leaves on ctx's end with its error; if Wake had
// already picked it, the wake-up goes to the next waiter instead of being
// lost.
func TestQueueCancel(t *testing.T) {
	var q Queue
	never := func() bool { return false }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, q.Park(ctx, never), context.DeadlineExceeded)
	assert.False(t, q.Waiting())

	// A waiter that Wake picks after its ctx ended passes the wake-up on.
	// The first waiter's ctx is cancelled and Wake picks it under one hold
	// of q.mu, so it cannot have left the list on its own first. It then
	// returns either nil (it took the wake-up) or ctx's error, and in the
	// second case the wake-up must reach the second waiter. Rounds repeat
	// until that case has run.
	passedOn := false
	for round := 0; round < 100 && !passedOn; round++ {
		cctx, ccancel := context.WithCancel(context.Background())
		first := make(chan error)
		go func() { first <- q.Park(cctx, never) }()
		waitUntil(func() bool { return q.n.Load() == 1 })
		second := make(chan error)
		go func() { second <- q.Park(context.Background(), never) }()
		waitUntil(func() bool { return q.n.Load() == 2 })
		q.mu.Lock()
		ccancel()
		q.wakeLocked(1)
		q.mu.Unlock()
		if err := <-first; err != nil {
			assert.ErrorIs(t, err, context.Canceled)
			passedOn = true
		} else {
			q.Wake(1) // the first waiter took it; release the second
		}
		select {
		case err := <-second:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			require.FailNow(t, "the wake-up of a cancelled waiter was lost")
		}
		assert.False(t, q.Waiting())
	}
	assert.True(t, passedOn, "no round had the picked waiter leave by ctx")
}

// TestQueueStress: producers and consumers on a counter guarded only by
// atomics, parking through one Queue each way; every unit is consumed.
func TestQueueStress(t *testing.T) {
	const workers = 4
	n := 20000
	if testing.Short() || race.Enabled {
		n = 2000
	}
	var avail atomic.Int64
	var items Queue
	var wg sync.WaitGroup
	var consumed atomic.Int64
	for range workers {
		wg.Go(func() {
			var b Backoff
			for consumed.Load() < int64(workers*n) {
				a := avail.Load()
				if a > 0 && avail.CompareAndSwap(a, a-1) {
					consumed.Add(1)
					b.Reset()
					continue
				}
				if b.Next() {
					continue
				}
				_ = items.Park(context.Background(), func() bool {
					return avail.Load() > 0 || consumed.Load() >= int64(workers*n)
				})
				b.Reset()
			}
			items.WakeAll()
		})
		wg.Go(func() {
			for range n {
				avail.Add(1)
				if items.Waiting() {
					items.Wake(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(workers*n), consumed.Load())
	assert.Zero(t, avail.Load())
}

func TestParkAllocatesNothing(t *testing.T) {
	var q Queue
	yes := func() bool { return true }
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = q.Park(context.Background(), yes) }))
}

func waitUntil(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}
