package bufring

// drainLocked sends items from the ring's head until it is empty, quota
// items were sent (quota < 0: no limit) or xmit refuses one, which then
// stays at the head. It is the drbr_peek → xmit → drbr_advance loop of
// ixgbe_mq_start_locked (reference §1.6). stalled reports a refusal.
//
// Preconditions: d.mu held.
func (d *DRBR[T]) drainLocked(quota int) (sent int, stalled bool) {
	for quota < 0 || sent < quota {
		v, ok := d.ring.Peek()
		if !ok {
			return sent, false
		}
		if !d.xmit(v) {
			d.refused.Add(1)
			return sent, true
		}
		d.ring.Advance()
		d.drained.Add(1)
		sent++
		if d.waiters.Load() > 0 {
			d.wakeSpace()
		}
	}
	return sent, false
}

// sendLocked sends v after everything deferred before it, then releases the
// lock.
//
// Preconditions: d.mu held; released on return.
func (d *DRBR[T]) sendLocked(v T) {
	if _, stalled := d.drainLocked(-1); !stalled {
		if d.xmit(v) {
			d.direct.Add(1)
			d.release(false)
			return
		}
		d.refused.Add(1)
	}
	// No descriptors: v joins the ring behind the stalled head (or becomes
	// it). The owner's Drain sends both.
	if d.ring.tryEnqueue(v) {
		d.deferred.Add(1)
		d.release(true)
		return
	}
	// The ring filled up while we held the lock. Never sleep holding it.
	d.release(true)
	d.enqueueWait(v)
	d.kick()
}

// release unlocks mu and then, unless this holder saw xmit refuse, re-checks
// the ring: a producer may have deferred an item after the holder's last
// look and failed its TryLock because the holder still had the lock. If the
// holder saw a refusal the ring's head is waiting for descriptors and the
// owner's Drain is responsible for it and everything behind it.
//
// Preconditions: d.mu held; released on return.
func (d *DRBR[T]) release(stalled bool) {
	d.mu.Unlock()
	for !stalled && !d.ring.Empty() && d.mu.TryLock() {
		_, stalled = d.drainLocked(-1)
		d.mu.Unlock()
	}
}

// kick is a deferring producer's part of the no-stranding rule: after
// publishing its item it drains if the lock is free. If the lock is taken,
// its holder re-checks on release.
func (d *DRBR[T]) kick() {
	if d.mu.TryLock() {
		_, stalled := d.drainLocked(-1)
		d.release(stalled)
	}
}

// enqueueWait puts v in the ring, sleeping for space while it is full
// (drbr_enqueue_nodrop). It never holds mu.
func (d *DRBR[T]) enqueueWait(v T) {
	if !d.ring.tryEnqueue(v) {
		d.fullWaits.Add(1)
		for {
			d.waitSpace()
			if d.ring.tryEnqueue(v) {
				break
			}
		}
	}
	d.deferred.Add(1)
}

// waitSpace sleeps until the ring is not full.
func (d *DRBR[T]) waitSpace() {
	d.spaceMu.Lock()
	d.waiters.Add(1)
	for d.ring.Full() {
		d.space.Wait()
	}
	d.waiters.Add(-1)
	d.spaceMu.Unlock()
}

// wakeSpace wakes every producer asleep on space.
func (d *DRBR[T]) wakeSpace() {
	d.spaceMu.Lock()
	d.space.Broadcast()
	d.spaceMu.Unlock()
}

// Drain is the TX task's side (the drbr drain of _task_fn_tx under simple_tx,
// seed 003): it try-locks, never waiting for another drainer, sends at most
// quota items from the ring and reports whether items remain. If the lock is
// taken it returns at once; the holder re-checks the ring when it unlocks.
// quota ≤ 0 returns an *ArgError matching ErrInvalid.
//
// more is true while the ring is not empty: the caller should call Drain
// again (FreeBSD re-enqueues the task). If xmit refused (Stats().Refused
// grew and DrainSent reports no progress), the caller should wait for
// descriptors to free up rather than spin.
func (d *DRBR[T]) Drain(quota int) (more bool, err error) {
	_, more, err = d.DrainSent(quota)
	return more, err
}

// DrainSent is Drain that also returns how many items it sent.
func (d *DRBR[T]) DrainSent(quota int) (sent int, more bool, err error) {
	if d == nil || d.ring == nil {
		return 0, false, ErrUninitialized
	}
	if quota <= 0 {
		return 0, false, &ArgError{Func: "Drain", Arg: "quota", Value: quota, Want: "> 0"}
	}
	if d.mu.TryLock() {
		sent, _ = d.drainLocked(quota)
		d.mu.Unlock()
	}
	return sent, !d.ring.Empty(), nil
}

// Flush is drbr_flush for teardown: it takes the lock, hands every queued
// item to free (nil free discards them) and returns how many there were.
// Producers asleep on a full ring are woken and may enqueue again; stop the
// senders before flushing if the ring must stay empty.
func (d *DRBR[T]) Flush(free func(T)) int {
	if d == nil || d.ring == nil {
		return 0
	}
	n := 0
	d.mu.Lock()
	for {
		v, ok := d.ring.DequeueSC()
		if !ok {
			break
		}
		if free != nil {
			free(v)
		}
		n++
	}
	d.mu.Unlock()
	if n > 0 {
		d.wakeSpace()
	}
	return n
}
