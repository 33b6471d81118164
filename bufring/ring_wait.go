package bufring

import (
	"context"

	"github.com/goiflib/goiflib/internal/wait"
)

// Close wakes every goroutine waiting in EnqueueWait or a Dequeue*Wait and
// makes later waits fail: EnqueueWait returns ErrClosed, and the Dequeue
// waits return the items still in the ring and then ErrClosed. The plain
// operations keep working (see the type doc). Calling it more than once is
// fine.
func (r *Ring[T]) Close() {
	r.closed.Store(true)
	r.items.WakeAll()
	r.space.WakeAll()
}

// hasSpace is EnqueueWait's wake-up condition.
func (r *Ring[T]) hasSpace() bool { return r.closed.Load() || !r.Full() }

// hasItems is the Dequeue waits' wake-up condition.
func (r *Ring[T]) hasItems() bool { return r.closed.Load() || !r.Empty() }

// EnqueueWait adds v at the tail like Enqueue, but waits while the ring is
// full instead of dropping (nothing is counted in Drops). It returns
// ErrClosed after Close and ctx.Err() if ctx ends the wait; v then still
// belongs to the caller. Any number of goroutines may call it.
func (r *Ring[T]) EnqueueWait(ctx context.Context, v T) error {
	var b wait.Backoff
	for {
		if r.closed.Load() {
			return ErrClosed
		}
		if r.tryEnqueue(v) {
			return nil
		}
		if b.Next() {
			continue
		}
		if err := r.space.Park(ctx, r.hasSpace); err != nil {
			return err
		}
		b.Reset()
	}
}

// waitItems waits (spin, yield, park) once for an item, returning ErrClosed
// when the ring is closed, empty and no producer is mid-publication.
func (r *Ring[T]) waitItems(ctx context.Context, b *wait.Backoff) error {
	if r.closed.Load() {
		pt := r.prodTail.Load()
		if r.consHead.Load() == pt && r.prodHead.Load() == pt {
			return ErrClosed
		}
	}
	if b.Next() {
		return nil
	}
	defer b.Reset()
	return r.items.Park(ctx, r.hasItems)
}

// DequeueSCWait is DequeueSC that waits while the ring is empty. After
// Close it returns the remaining items and then ErrClosed; it returns
// ctx.Err() if ctx ends the wait.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) DequeueSCWait(ctx context.Context) (T, error) {
	var b wait.Backoff
	for {
		if v, ok := r.DequeueSC(); ok {
			return v, nil
		}
		if err := r.waitItems(ctx, &b); err != nil {
			var zero T
			return zero, err
		}
	}
}

// DequeueMCWait is DequeueMC that waits while the ring is empty, with
// DequeueSCWait's errors. Any number of goroutines may call it.
func (r *Ring[T]) DequeueMCWait(ctx context.Context) (T, error) {
	var b wait.Backoff
	for {
		if v, ok := r.DequeueMC(); ok {
			return v, nil
		}
		if err := r.waitItems(ctx, &b); err != nil {
			var zero T
			return zero, err
		}
	}
}

// DequeueBurstSCWait is DequeueBurstSC that waits until at least one item
// is there, with DequeueSCWait's errors. An empty dst returns 0, nil.
//
// Preconditions: no other consumer runs concurrently.
func (r *Ring[T]) DequeueBurstSCWait(ctx context.Context, dst []T) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	var b wait.Backoff
	for {
		if n := r.DequeueBurstSC(dst); n > 0 {
			return n, nil
		}
		if err := r.waitItems(ctx, &b); err != nil {
			return 0, err
		}
	}
}
