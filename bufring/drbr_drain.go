package bufring

import "github.com/goiflib/goiflib/internal/wait"

// drainLocked sends deferred items, the stash first and then the ring's
// head, until there are none, quota were sent (quota < 0: no limit), the
// queue is stalled or closed, or xmit refuses one (which stays at the head
// and stalls the queue unless a restart came in meanwhile). It is the
// drbr_peek → xmit → drbr_advance (or drbr_putback) loop of
// ixgbe_mq_start_locked.
//
// Preconditions: stLocked held.
func (d *DRBR[T]) drainLocked(quota int) (sent int, stalled bool) {
	for quota < 0 || sent < quota {
		if s := d.state.Load(); s&(stClosed|stStalled) != 0 {
			return sent, s&stStalled != 0
		}
		fromStash := d.hasStash
		var p *T
		if fromStash {
			p = &d.stash
		} else if p = d.ring.peekPtr(); p == nil {
			return sent, false
		}
		if d.cfg.Xmit(p) == ErrRefused {
			d.h.refused++
			if d.retryAfterRefusal() {
				continue
			}
			return sent, true
		}
		if fromStash {
			d.unstash()
		} else {
			var zero T
			*p = zero
			d.ring.advance(1)
		}
		d.h.drained++
		d.unrung++
		sent++
	}
	return sent, false
}

// stashItem makes v the head of the deferred items: a holder's own item
// that xmit refused, which no other sender's item may overtake.
//
// Preconditions: stLocked held; the stash is empty.
func (d *DRBR[T]) stashItem(v T) {
	d.stash, d.hasStash = v, true
	d.stashed.Store(true)
	d.h.stashed++
}

// unstash empties the stash.
//
// Preconditions: stLocked held.
func (d *DRBR[T]) unstash() {
	var zero T
	d.stash, d.hasStash = zero, false
	d.stashed.Store(false)
}

// Restart is the owner's call once descriptors came back (from its
// completion or reclaim path, the TX task's drain of "simple_tx with drbr
// deferral"): it clears the stall and sends up to DrainQuota deferred
// items. It never waits for the lock: if another goroutine holds it,
// Restart leaves the work to that holder (which retries the head before
// it releases) and returns at once.
//
// more is true when the quota ran out with items left: call Restart again
// (FreeBSD re-enqueues the task). It is false when the queue is empty,
// handed to the holder, or stalled again, in which case the next Restart
// should wait for the next completion, not spin. After Close it returns
// the close error.
func (d *DRBR[T]) Restart() (sent int, more bool, err error) {
	if !d.ok() {
		return 0, false, ErrUninitialized
	}
	return d.restart(d.cfg.DrainQuota)
}

// restart is Restart with an explicit quota (< 0: no limit).
func (d *DRBR[T]) restart(quota int) (sent int, more bool, err error) {
	for {
		s := d.state.Load()
		if s&stClosed != 0 {
			return 0, false, d.closeErr()
		}
		if s&stLocked != 0 {
			if d.state.CompareAndSwap(s, s&^stStalled|stRestart) {
				return 0, false, nil
			}
			continue
		}
		if d.state.CompareAndSwap(s, s&^(stStalled|stRestart|stPending)|stLocked) {
			break
		}
	}
	sent, stalled := d.drainLocked(quota)
	left := !stalled && sent == quota && (d.hasStash || d.ring.peekPtr() != nil)
	budget := -1
	if quota >= 0 {
		budget = quota - sent
	}
	n, owed := d.unlock(budget)
	return sent + n, (left || owed) && !d.Stalled(), nil
}

// Do runs f with the queue lock held, blocking until it can take it, so
// that the owner's own work on the queue (iflib's reclaim,
// iflib_completed_tx_reclaim) is serialized with xmit without a second
// lock. Items deferred while f runs are sent before the lock is released,
// and Doorbell is rung if any were. f must not call back into d (as
// Xmit). Do works after Close too (f runs; nothing is sent). It returns
// ErrUninitialized for a nil or zero DRBR.
func (d *DRBR[T]) Do(f func()) error {
	if !d.ok() {
		return ErrUninitialized
	}
	_ = d.lock(false)
	f()
	d.unlock(-1)
	return nil
}

// TryDo is Do that does not wait: it runs f only if the lock is free and
// reports whether it did.
func (d *DRBR[T]) TryDo(f func()) bool {
	if !d.ok() {
		return false
	}
	for {
		s := d.state.Load()
		if s&stLocked != 0 {
			return false
		}
		if d.state.CompareAndSwap(s, s|stLocked) {
			break
		}
	}
	f()
	d.unlock(-1)
	return true
}

// Flush is drbr_flush: it takes the lock (waiting for it), hands every
// deferred item to free (nil discards them), counts them as Flushed and
// returns how many there were. On a closed DRBR it also waits for senders
// that reserved ring slots before Close to publish them, so that after
// Close and Flush the ring is empty and stays so until Reopen. On an open
// DRBR senders may defer again at once.
func (d *DRBR[T]) Flush(free func(T)) int {
	if !d.ok() {
		return 0
	}
	_ = d.lock(false)
	n := 0
	if d.hasStash {
		if free != nil {
			free(d.stash)
		}
		d.unstash()
		n++
	}
	var b wait.Backoff
	for {
		if v, ok := d.ring.Dequeue(); ok {
			if free != nil {
				free(v)
			}
			n++
			b.Reset()
			continue
		}
		if !d.ring.Closed() || d.ring.entered() == d.ring.next {
			break
		}
		b.Pause() // a sender reserved before Close and is publishing
	}
	d.flushed.Add(uint64(n))
	d.unlock(-1)
	return n
}

// Close stops d for a stopping interface (iflib_stop clearing
// IFF_DRV_RUNNING): every later Transmit, and every sender blocked for ring
// space or for the lock, returns its items with an error matching ErrClosed
// (and cause, if not nil, through *ClosedError); holders stop calling xmit
// after the item in hand; Restart returns the error. Deferred items stay
// until Flush or Reopen. Close never waits for the device, so a stop cannot
// hang on senders blocked behind a queue that no longer completes. Calling
// it again keeps the first cause.
func (d *DRBR[T]) Close(cause error) {
	if !d.ok() {
		return
	}
	err := ErrClosed
	if cause != nil {
		err = &ClosedError{Cause: cause}
	}
	if d.state.Load()&stClosed == 0 {
		d.cause.CompareAndSwap(nil, &err)
	}
	d.state.Or(stClosed)
	d.ring.Close()
	d.lockQ.WakeAll()
}

// Reopen undoes Close after the interface is initialized again: it clears
// the closed and stalled states (a re-initialized queue has its
// descriptors back) and sends whatever is still deferred.
func (d *DRBR[T]) Reopen() {
	if !d.ok() {
		return
	}
	d.ring.reopen()
	for {
		s := d.state.Load()
		if d.state.CompareAndSwap(s, s&^(stClosed|stStalled)) {
			break
		}
	}
	d.cause.Store(nil)
	_, _, _ = d.restart(-1)
}
