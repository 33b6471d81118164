package bufring

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/testutil"
)

// TestMPSCProducerParksAndIsWoken: a producer that finds the ring full
// parks (producerParks counts it, the space queue holds it) rather than
// spinning, and the consumer's release wakes it; at GOMAXPROCS 1 (where
// the producer parks at once and the consumer wakes one producer per
// release) and at 2.
func TestMPSCProducerParksAndIsWoken(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run("procs="+strconv.Itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			q, err := NewMPSC[int](4)
			require.NoError(t, err)
			for i := range 4 {
				require.NoError(t, q.Enqueue(i))
			}
			done := make(chan error, 1)
			go func() { done <- q.EnqueueWait(context.Background(), 99) }()
			testutil.Eventually(t, "the producer parks on the full ring", func() bool { return q.producerParks.Load() == 1 && q.space.Len() == 1 })
			select {
			case err := <-done:
				require.FailNow(t, "EnqueueWait returned on a full ring", "err %v", err)
			default:
			}
			v, ok := q.Dequeue() // batch 1: releases the slot and wakes the producer
			require.True(t, ok)
			assert.Equal(t, 0, v)
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				require.FailNow(t, "the parked producer was not woken by the release")
			}
			for _, want := range []int{1, 2, 3, 99} {
				v, ok := q.Dequeue()
				require.True(t, ok)
				assert.Equal(t, want, v)
			}
			assert.Equal(t, uint64(1), q.producerParks.Load())
			assert.Zero(t, q.waking.Load(), "no wake-up left marked in flight")
		})
	}
}

// TestMPSCParkedProducersAllWoken: many producers park on a full ring;
// at GOMAXPROCS 1 each release wakes only one of them, and the woken ones
// pass the wake-up on, so a consumer that only dequeues receives every
// item, in each producer's order, and no producer stays parked.
func TestMPSCParkedProducersAllWoken(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run("procs="+strconv.Itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			const producers, per = 16, 200
			q, err := NewMPSC[int](8)
			require.NoError(t, err)
			for i := range 8 {
				require.NoError(t, q.Enqueue(-1-i))
			}
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for i := range per {
						if err := q.EnqueueWait(context.Background(), p*per+i); err != nil {
							panic(err)
						}
					}
				})
			}
			testutil.Eventually(t, "every producer parks on the full ring", func() bool { return q.space.Len() == producers })
			next := make([]int, producers)
			for range 8 {
				_, err := q.DequeueWait(context.Background())
				require.NoError(t, err)
			}
			for got := 0; got < producers*per; got++ {
				v, err := q.DequeueWait(context.Background())
				require.NoError(t, err)
				p, i := v/per, v%per
				require.Equal(t, next[p], i, "producer %d out of order", p)
				next[p]++
			}
			wg.Wait()
			assert.Zero(t, q.space.Len())
			assert.GreaterOrEqual(t, q.producerParks.Load(), uint64(producers))
		})
	}
}

// TestMPSCParkedProducersCancelStress: producers parked on a full ring at
// GOMAXPROCS 1 and 2 keep leaving their parks on short contexts and
// re-entering them, so that wake-ups meet waiters that are leaving (the
// path where a wake picks no one and waking is restored); the consumer
// still receives every item once, in each producer's order, and no
// producer stays parked with space free (a lost wake-up hangs the test).
func TestMPSCParkedProducersCancelStress(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run("procs="+strconv.Itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			const producers, per = 8, 300
			q, err := NewMPSC[int](4)
			require.NoError(t, err)
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for i := 0; i < per; {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+(p+i)%5)*time.Microsecond)
						err := q.EnqueueWait(ctx, p*per+i)
						cancel()
						if err == nil {
							i++
						} else if err != context.DeadlineExceeded {
							panic(err)
						}
					}
				})
			}
			next := make([]int, producers)
			for got := 0; got < producers*per; got++ {
				v, err := q.DequeueWait(context.Background())
				require.NoError(t, err)
				p, i := v/per, v%per
				require.Equal(t, next[p], i, "producer %d out of order", p)
				next[p]++
				if got%7 == 0 {
					runtime.Gosched() // let producers park and time out
				}
			}
			wg.Wait()
			assert.Zero(t, q.space.Len())
			_, ok := q.Dequeue()
			assert.False(t, ok, "nothing duplicated")
			assert.NotZero(t, q.producerParks.Load(), "producers parked")
		})
	}
}
