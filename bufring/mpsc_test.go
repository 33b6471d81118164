package bufring

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewMPSCBadSize(t *testing.T) {
	for _, size := range []int{0, 1, 3, 6, -1, -4, math.MaxInt} {
		q, err := NewMPSC[int](size)
		assert.Nil(t, q)
		require.ErrorIs(t, err, ErrInvalid, "NewMPSC(%d)", size)
		var ae *ConfigError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, size, ae.Value)
		assert.Equal(t, "NewMPSC(size)", ae.Field)
	}
	for _, size := range []int{2, 8, 1024} {
		q, err := NewMPSC[int](size)
		require.NoError(t, err)
		assert.Equal(t, size, q.Cap(), "capacity is the whole ring")
		assert.Equal(t, int(batchFor(size)), q.Batch())
	}
	assert.Equal(t, uint64(1), batchFor(2))
	assert.Equal(t, uint64(1), batchFor(8))
	assert.Equal(t, uint64(2), batchFor(16))
	assert.Equal(t, uint64(32), batchFor(1024))
	assert.Equal(t, uint64(32), batchFor(1<<20))
}

// TestMPSCSequence checks one goroutine's view: FIFO order across runs and
// the wrap of the slot array, full at exactly Cap once the consumer has
// released, the lazy release (full seen early by at most Batch−1), and
// Peek/Putback/Advance on empty and non-empty rings.
func TestMPSCSequence(t *testing.T) {
	q, err := NewMPSC[int](8) // batch 1: every read is released at once
	require.NoError(t, err)
	_, ok := q.Dequeue()
	assert.False(t, ok)
	assert.ErrorIs(t, q.Putback(1), ErrEmpty)
	q.Advance() // no-op on empty
	_, ok = q.Peek()
	assert.False(t, ok)

	n, err := q.EnqueueBurst([]int{1, 2, 3})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	require.NoError(t, q.Enqueue(4))
	n, err = q.EnqueueBurst([]int{5, 6, 7, 8, 9})
	assert.ErrorIs(t, err, ErrFull)
	assert.Equal(t, 4, n, "a prefix of the burst fits")
	assert.ErrorIs(t, q.Enqueue(10), ErrFull)
	assert.Equal(t, 8, q.Len())

	v, ok := q.Peek()
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	require.NoError(t, q.Putback(-1))
	v, _ = q.Dequeue()
	assert.Equal(t, -1, v)
	q.Advance() // drops 2
	dst := make([]int, 3)
	assert.Equal(t, 3, q.DequeueBurst(dst), "three items across two runs")
	assert.Equal(t, []int{3, 4, 5}, dst)
	// Wrap: five slots free, the new run straddles the end of the array.
	n, err = q.EnqueueBurst([]int{11, 12, 13, 14, 15})
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	big := make([]int, 20)
	assert.Equal(t, 8, q.DequeueBurst(big))
	assert.Equal(t, []int{6, 7, 8, 11, 12, 13, 14, 15}, big[:8])
	assert.Zero(t, q.DequeueBurst(big))
	assert.Zero(t, q.Len())
	for i, v := range q.vals {
		assert.Zero(t, v, "slot %d not cleared", i)
	}
}

// TestMPSCLazyRelease: on a large ring the consumer releases every Batch
// items, when it finds the ring empty, and when a burst comes up short.
func TestMPSCLazyRelease(t *testing.T) {
	q, err := NewMPSC[int](256) // batch 32
	require.NoError(t, err)
	for i := range 256 {
		require.NoError(t, q.Enqueue(i))
	}
	assert.ErrorIs(t, q.Enqueue(256), ErrFull)
	for range 31 {
		_, ok := q.Dequeue()
		require.True(t, ok)
	}
	assert.ErrorIs(t, q.Enqueue(256), ErrFull, "31 read slots are not released yet")
	assert.Equal(t, 256, q.Len())
	_, _ = q.Dequeue()
	assert.Equal(t, 224, q.Len(), "the 32nd read releases the batch")
	for range 224 {
		_, ok := q.Dequeue()
		require.True(t, ok)
	}
	assert.Zero(t, q.Len(), "256 reads are 8 whole batches")
	for i := range 5 {
		require.NoError(t, q.Enqueue(i))
	}
	for range 5 {
		_, ok := q.Dequeue()
		require.True(t, ok)
	}
	assert.Equal(t, 5, q.Len(), "5 reads are less than a batch")
	_, ok := q.Dequeue()
	assert.False(t, ok)
	assert.Zero(t, q.Len(), "finding the ring empty releases everything")
	require.NoError(t, q.Enqueue(1))
	dst := make([]int, 4)
	assert.Equal(t, 1, q.DequeueBurst(dst))
	assert.Zero(t, q.Len(), "a short burst releases")
}

// TestMPSCStress: 1, 2, 8 and 64 producers (single items, bursts, the
// waiting forms) into one consumer on a small ring, so that both sides
// wait; every item arrives exactly once and each producer's in order.
func TestMPSCStress(t *testing.T) {
	for _, producers := range []int{1, 2, 8, 64} {
		for _, mode := range []string{"single", "burst", "wait"} {
			t.Run(strconv.Itoa(producers)+"/"+mode, func(t *testing.T) {
				q, err := NewMPSC[uint64](16)
				require.NoError(t, err)
				n := stressItems(producers)
				ctx := context.Background()
				var wg sync.WaitGroup
				for p := range producers {
					wg.Go(func() {
						switch mode {
						case "single":
							for seq := 0; seq < n; seq++ {
								for q.Enqueue(item(p, seq)) != nil {
									runtime.Gosched()
								}
							}
						case "burst":
							buf := make([]uint64, 5)
							for seq := 0; seq < n; {
								k := min(len(buf), n-seq)
								for j := range k {
									buf[j] = item(p, seq+j)
								}
								took, _ := q.EnqueueBurst(buf[:k])
								seq += took
								if took == 0 {
									runtime.Gosched()
								}
							}
						case "wait":
							buf := make([]uint64, 3)
							for seq := 0; seq < n; {
								if seq%2 == 0 {
									assert.NoError(t, q.EnqueueWait(ctx, item(p, seq)))
									seq++
									continue
								}
								k := min(len(buf), n-seq)
								for j := range k {
									buf[j] = item(p, seq+j)
								}
								took, err := q.EnqueueBurstWait(ctx, buf[:k])
								assert.NoError(t, err)
								assert.Equal(t, k, took)
								seq += k
							}
						}
					})
				}
				go func() { wg.Wait(); q.Close() }()
				next := make([]int, producers)
				buf := make([]uint64, 7)
				total := 0
				for {
					var got []uint64
					if total%3 == 0 {
						v, err := q.DequeueWait(ctx)
						if errors.Is(err, ErrClosed) {
							break
						}
						require.NoError(t, err)
						buf[0] = v
						got = buf[:1]
					} else {
						k, err := q.DequeueBurstWait(ctx, buf)
						if errors.Is(err, ErrClosed) {
							break
						}
						require.NoError(t, err)
						got = buf[:k]
					}
					for _, v := range got {
						p, seq := int(v>>32), int(uint32(v))
						require.Less(t, p, producers)
						require.Equal(t, next[p], seq, "producer %d", p)
						next[p]++
					}
					total += len(got)
				}
				assert.Equal(t, producers*n, total)
				_, ok := q.Dequeue()
				assert.False(t, ok)
				assert.Zero(t, q.Len())
			})
		}
	}
}

// TestMPSCWaitsWake: a consumer parked on an empty ring wakes for an item,
// and a producer parked on a full ring wakes when the consumer makes room.
func TestMPSCWaitsWake(t *testing.T) {
	q, err := NewMPSC[int](2)
	require.NoError(t, err)
	got := make(chan int)
	go func() {
		v, err := q.DequeueWait(context.Background())
		assert.NoError(t, err)
		got <- v
	}()
	waitUntil(func() bool { return q.Parks() == 1 }) // parked, not spinning
	require.NoError(t, q.Enqueue(7))
	assert.Equal(t, 7, <-got)

	require.NoError(t, q.Enqueue(1))
	require.NoError(t, q.Enqueue(2))
	done := make(chan error)
	go func() { done <- q.EnqueueWait(context.Background(), 3) }()
	waitUntil(q.space.Waiting)
	v, ok := q.Dequeue()
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	require.NoError(t, <-done)
	dst := make([]int, 4)
	assert.Equal(t, 2, q.DequeueBurst(dst))
	assert.Equal(t, []int{2, 3}, dst[:2])
}

// TestMPSCContext: the waiting forms give up with ctx's error, and the
// items stay the caller's.
func TestMPSCContext(t *testing.T) {
	q, err := NewMPSC[int](2)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = q.DequeueWait(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	n, err := q.DequeueBurstWait(ctx, make([]int, 2))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, n)

	require.NoError(t, q.Enqueue(1))
	require.NoError(t, q.EnqueueWait(ctx, 2), "a wait that finds space succeeds whatever ctx says")
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer dcancel()
	assert.ErrorIs(t, q.EnqueueWait(dctx, 3), context.DeadlineExceeded)
	n, err = q.EnqueueBurstWait(ctx, []int{3, 4})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, n)
	assert.Equal(t, 2, q.Len())
	assert.False(t, q.space.Waiting(), "a cancelled waiter leaves the queue")
}

// TestMPSCClose: Close wakes parked producers with ErrClosed (their items
// stay theirs), refuses new items, and the consumer receives everything
// enqueued before Close and then ErrClosed. Every item is received or
// returned.
func TestMPSCClose(t *testing.T) {
	q, err := NewMPSC[int](4)
	require.NoError(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	var returned atomic.Int64
	for p := range 6 {
		wg.Go(func() {
			if err := q.EnqueueWait(ctx, p); err != nil {
				assert.ErrorIs(t, err, ErrClosed)
				returned.Add(1)
			}
		})
	}
	waitUntil(func() bool { return q.Len() == 4 && q.space.Waiting() })
	q.Close()
	q.Close() // twice is fine
	wg.Wait()
	assert.True(t, q.Closed())
	assert.ErrorIs(t, q.Enqueue(9), ErrClosed)
	n, err := q.EnqueueBurst([]int{9})
	assert.ErrorIs(t, err, ErrClosed)
	assert.Zero(t, n)
	received := 0
	for {
		_, err := q.DequeueWait(ctx)
		if err != nil {
			assert.ErrorIs(t, err, ErrClosed)
			break
		}
		received++
	}
	assert.Equal(t, 4, received)
	assert.Equal(t, int64(2), returned.Load())
	_, err = q.DequeueBurstWait(ctx, make([]int, 2))
	assert.ErrorIs(t, err, ErrClosed)

	// A consumer parked on an empty ring is woken by Close.
	q2, _ := NewMPSC[int](4)
	errc := make(chan error)
	go func() { _, err := q2.DequeueWait(ctx); errc <- err }()
	waitUntil(func() bool { return q2.Parks() == 1 })
	q2.Close()
	assert.ErrorIs(t, <-errc, ErrClosed)
}

func TestMPSCAllocatesNothing(t *testing.T) {
	q, err := NewMPSC[*int](64)
	require.NoError(t, err)
	v := new(int)
	ctx := context.Background()
	dst := make([]*int, 8)
	src := []*int{v, v, v}
	for name, f := range map[string]func(){
		"Enqueue/Dequeue":  func() { _ = q.Enqueue(v); q.Dequeue() },
		"bursts":           func() { _, _ = q.EnqueueBurst(src); q.DequeueBurst(dst) },
		"waits":            func() { _ = q.EnqueueWait(ctx, v); _, _ = q.DequeueWait(ctx) },
		"burst waits":      func() { _, _ = q.EnqueueBurstWait(ctx, src); _, _ = q.DequeueBurstWait(ctx, dst) },
		"Peek/Putback/Adv": func() { _ = q.Enqueue(v); q.Peek(); _ = q.Putback(v); q.Advance() },
	} {
		assert.Zero(t, testing.AllocsPerRun(1000, f), name)
	}
}
