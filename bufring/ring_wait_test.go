package bufring

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRingWaits: Ring's waiting forms. A consumer parked on an empty ring
// wakes for an item and a producer parked on a full one wakes for space,
// without a drop; ctx ends a wait; Close wakes waiters with ErrClosed, the
// Dequeue waits then return what is left and then ErrClosed, and the plain
// operations keep working.
func TestRingWaits(t *testing.T) {
	ctx := context.Background()
	r, err := New[int](2) // capacity 1
	require.NoError(t, err)

	for _, c := range []struct {
		name string
		deq  func(context.Context) (int, error)
	}{
		{"DequeueSCWait", r.DequeueSCWait},
		{"DequeueMCWait", r.DequeueMCWait},
		{"DequeueBurstSCWait", func(ctx context.Context) (int, error) {
			var dst [2]int
			n, err := r.DequeueBurstSCWait(ctx, dst[:])
			assert.Equal(t, 1, n)
			return dst[0], err
		}},
	} {
		got := make(chan int)
		go func() {
			v, err := c.deq(ctx)
			assert.NoError(t, err, c.name)
			got <- v
		}()
		waitUntil(r.items.Waiting) // parked, not spinning
		require.NoError(t, r.Enqueue(7))
		assert.Equal(t, 7, <-got, c.name)
	}
	n, err := r.DequeueBurstSCWait(ctx, nil)
	assert.Zero(t, n)
	assert.NoError(t, err, "an empty dst returns at once")

	require.NoError(t, r.Enqueue(1))
	done := make(chan error)
	go func() { done <- r.EnqueueWait(ctx, 2) }()
	waitUntil(r.space.Waiting)
	v, ok := r.DequeueSC()
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	require.NoError(t, <-done)
	v, _ = r.DequeueSC()
	assert.Equal(t, 2, v)
	assert.Zero(t, r.Drops(), "EnqueueWait waited instead of dropping")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.DequeueSCWait(cctx)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = r.DequeueMCWait(cctx)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = r.DequeueBurstSCWait(cctx, make([]int, 1))
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, r.Enqueue(3))
	assert.ErrorIs(t, r.EnqueueWait(cctx, 4), context.Canceled)
	assert.Equal(t, 1, r.Count(), "the cancelled item was not taken")
	assert.False(t, r.items.Waiting() || r.space.Waiting(), "cancelled waiters leave the queues")

	go func() { done <- r.EnqueueWait(ctx, 5) }()
	waitUntil(r.space.Waiting)
	r.Close()
	r.Close() // twice is fine
	assert.ErrorIs(t, <-done, ErrClosed, "a parked producer is woken by Close")
	assert.ErrorIs(t, r.EnqueueWait(ctx, 6), ErrClosed)
	v, err = r.DequeueSCWait(ctx)
	require.NoError(t, err, "what was enqueued before Close is still delivered")
	assert.Equal(t, 3, v)
	_, err = r.DequeueSCWait(ctx)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = r.DequeueMCWait(ctx)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = r.DequeueBurstSCWait(ctx, make([]int, 1))
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, r.Enqueue(8), "the plain operations ignore Close")
	v, ok = r.DequeueMC()
	assert.True(t, ok)
	assert.Equal(t, 8, v)

	r2, err := New[int](4)
	require.NoError(t, err)
	errc := make(chan error)
	go func() { _, err := r2.DequeueSCWait(ctx); errc <- err }()
	waitUntil(r2.items.Waiting)
	r2.Close()
	assert.ErrorIs(t, <-errc, ErrClosed, "a parked consumer is woken by Close")
}
