package mpring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
)

// item encodes (producer, sequence) so the consumer can check per-producer
// order and exactly-once delivery.
func item(p, seq int) uint64 { return uint64(p)<<32 | uint64(seq) }

// checker is a drain callback that verifies exclusivity, order and
// exactly-once delivery, and stalls every stallEvery-th call.
type checker struct {
	t          *testing.T
	busy       atomic.Bool
	next       []int // per producer: next expected sequence
	delivered  atomic.Int64
	calls      int
	stallEvery int
	maxBatch   int
}

func (c *checker) drain(r *Ring[uint64], cidx, pidx int) int {
	assert.True(c.t, c.busy.CompareAndSwap(false, true), "two goroutines in the drain callback")
	defer c.busy.Store(false)
	c.calls++
	if c.stallEvery > 0 && c.calls%c.stallEvery == 0 {
		return 0
	}
	n := min(r.IdxDiff(pidx, cidx), c.maxBatch)
	for i, k := cidx, 0; k < n; i, k = r.IncrementIdx(i, 1), k+1 {
		v := *r.Slot(i)
		p, seq := int(v>>32), int(uint32(v))
		assert.Equal(c.t, c.next[p], seq, "producer %d: got seq %d, want %d", p, seq, c.next[p])
		c.next[p] = seq + 1
	}
	c.delivered.Add(int64(n))
	return n
}

// produce enqueues perProducer items from each of producers goroutines,
// retrying on ErrFull (after a CheckDrainage, as iflib_if_transmit does),
// and returns the number of items refused along the way.
func produce(t *testing.T, r *Ring[uint64], producers, perProducer int, abdicate func(p, seq int) bool) (refused uint64) {
	t.Helper()
	var wg sync.WaitGroup
	var drops atomic.Uint64
	for p := range producers {
		wg.Go(func() {
			batch := make([]uint64, 0, 3)
			for seq := 0; seq < perProducer; {
				n := min(1+seq%3, perProducer-seq)
				batch = batch[:0]
				for k := range n {
					batch = append(batch, item(p, seq+k))
				}
				var err error
				if n == 1 {
					err = r.EnqueueOne(batch[0], 32, abdicate(p, seq))
				} else {
					err = r.Enqueue(batch, 32, abdicate(p, seq))
				}
				switch {
				case err == nil:
					seq += n
				case errors.Is(err, ErrFull):
					drops.Add(uint64(n))
					r.CheckDrainage(32)
					runtime.Gosched()
				default:
					assert.Fail(t, fmt.Sprint(err))
					return
				}
			}
		})
	}
	wg.Wait()
	return drops.Load()
}

// finish drains whatever a stalled or abdicated ring still holds, as
// iflib's purge does with budget r->size.
func finish(r *Ring[uint64]) {
	for !r.IsIdle() {
		r.CheckDrainage(r.Size())
		runtime.Gosched()
	}
}

func TestStressStallingConsumer(t *testing.T) {
	producers, perProducer := 8, 20000
	if testing.Short() || race.Enabled {
		perProducer = 6000
	}
	c := &checker{t: t, next: make([]int, producers), stallEvery: 7, maxBatch: 8}
	var canDrainCalls atomic.Int64
	r, err := New(16, c.drain, func(*Ring[uint64]) bool {
		// "cheap, may be unreliable": say no every third time.
		return canDrainCalls.Add(1)%3 != 0
	})
	require.NoError(t, err)

	// The TX task: CheckDrainage from a timer goroutine.
	stop := make(chan struct{})
	var timer sync.WaitGroup
	timer.Go(func() {
		tick := time.NewTicker(50 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				r.CheckDrainage(32)
			}
		}
	})
	// Half the producers abdicate, half drain inline.
	refused := produce(t, r, producers, perProducer, func(p, _ int) bool { return p%2 == 0 })
	close(stop)
	timer.Wait()
	finish(r)

	total := producers * perProducer
	got := c.delivered.Load()
	require.Equal(t, int64(total), got, "delivered %d, want %d", got, total)
	for p, n := range c.next {
		assert.Equal(t, perProducer, n, "producer %d: delivered up to %d, want %d", p, n, perProducer)
	}
	st := r.Stats()
	assert.False(t, st.Enqueues != uint64(total) || st.Drops != refused, "Enqueues %d Drops %d, want %d %d", st.Enqueues, st.Drops, total, refused)
	assert.False(t, st.Restarts > st.Stalls || st.Restarts == 0, "Stalls %d Restarts %d: want 0 < restarts ≤ stalls", st.Stalls, st.Restarts)
	t.Logf("%+v", st)
}

// TestPreemptionGOMAXPROCS1 runs 64 producers on one P, and every third
// producer yields the P between reserving and publishing, standing in for
// a preemption inside FreeBSD's critical section. The producers queued
// behind it must not livelock: they yield after wait.Spins loads, so the
// descheduled one gets to publish.
func TestPreemptionGOMAXPROCS1(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	producers, perProducer := 64, 2000
	if testing.Short() || race.Enabled {
		perProducer = 300
	}
	c := &checker{t: t, next: make([]int, producers), maxBatch: 32}
	r, err := New(128, c.drain, func(*Ring[uint64]) bool { return true })
	require.NoError(t, err)
	var reservations atomic.Uint64
	r.testHookReserved = func() {
		if reservations.Add(1)%3 == 0 {
			runtime.Gosched()
		}
	}
	refused := produce(t, r, producers, perProducer, func(p, seq int) bool { return (p+seq)%5 == 0 })
	finish(r)
	total := producers * perProducer
	got := c.delivered.Load()
	require.Equal(t, int64(total), got, "delivered %d, want %d", got, total)
	st := r.Stats()
	require.Equal(t, uint64(total), st.Enqueues, "stats %+v, want %d enqueues and %d drops", st, total, refused)
	require.Equal(t, refused, st.Drops, "stats %+v, want %d enqueues and %d drops", st, total, refused)
	t.Logf("%+v after %d reservations", st, reservations.Load())
}
