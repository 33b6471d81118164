package bufring

import (
	"context"
	"strconv"

	"github.com/goiflib/goiflib/internal/wait"
)

// Transmit hands v to d. A nil error means d owns v: it was sent now or is
// deferred, never dropped for lack of room. An error from Xmit means d owned
// v too, and Xmit dropped it during this call (the caller sent it directly).
// After Close it returns the close error (matching ErrClosed, and Close's
// cause) and v still belongs to the caller, to free and count; so does a
// sender blocked for ring space or for the lock when Close comes. It returns
// ErrUninitialized for a nil or zero DRBR.
//
// It is TransmitBurst of one item, with the direct send inline.
func (d *DRBR[T]) Transmit(v T) error {
	if d.ok() {
		// The common case inline: lock free, queue open and not stalled,
		// nothing deferred (drbr_needs_enqueue false): xmit v directly.
		s := d.state.Load()
		if s&(stLocked|stStalled|stClosed) == 0 && d.state.CompareAndSwap(s, s|stLocked) {
			if !d.hasStash && d.ring.unreserved() {
				d.cur = v
				err := d.cfg.Xmit(&d.cur)
				v = d.cur
				var zero T
				d.cur = zero
				if err != ErrRefused {
					d.h.direct++
					d.unrung++
					d.unlock(-1)
					return err // nil, or the drop of the caller's own item
				}
				d.h.refused++
				if !d.retryAfterRefusal() {
					d.stashItem(v)
					d.unlock(-1)
					return nil
				}
				// A restart came in: the general path below retries.
			}
			vs := [1]T{v}
			_, err := d.sendLocked(vs[:], nil)
			return err
		}
	}
	vs := [1]T{v}
	_, err := d.TransmitBurst(vs[:])
	return err
}

// TransmitBurst hands vs to d in order, with one decision for the whole
// burst: a sender that finds the lock free sends them all under it (after
// what was deferred before them), and a deferring sender puts them in the
// ring with as few reservations as the free space allows. It returns how
// many d took: len(vs) with a nil error (or with the first error Xmit
// returned for one of vs it dropped during this call), or n < len(vs) with
// the close error, in which case vs[n:] still belong to the caller. Items
// of one burst keep their order; another sender's items may go out between
// them.
//
// Xmit may have replaced an item (DRBRConfig.Xmit); the replacement is what
// d keeps. vs itself is not retained.
func (d *DRBR[T]) TransmitBurst(vs []T) (int, error) {
	return d.transmitBurst(vs, nil)
}

// TransmitBurstErrs is TransmitBurst reporting which items Xmit dropped
// during this call: errs[i] is Xmit's error for vs[i] when the caller's
// own call sent vs[i] directly and Xmit dropped it (d owned it: freed and
// counted), and nil for every other item d took (sent, or deferred, whose
// later drop is not the caller's to see). When it returns n < len(vs)
// with an error (the close error, or ErrUninitialized), errs[n:] are set
// to it and vs[n:] still belong to the caller. errs must be at least as long as vs, else it
// returns a *ConfigError matching ErrInvalid and takes nothing. It returns
// what TransmitBurst returns and allocates nothing.
func (d *DRBR[T]) TransmitBurstErrs(vs []T, errs []error) (int, error) {
	if len(errs) < len(vs) {
		return 0, &ConfigError{Pkg: "bufring", Field: "TransmitBurstErrs(errs)", Value: len(errs), Reason: "want len(errs) >= len(vs) (" + strconv.Itoa(len(vs)) + ")"}
	}
	errs = errs[:len(vs)]
	clear(errs)
	n, err := d.transmitBurst(vs, errs)
	if n < len(vs) {
		for i := n; i < len(vs); i++ {
			errs[i] = err
		}
	}
	return n, err
}

// transmitBurst is TransmitBurst; errs is nil or as long as vs, cleared,
// and receives each direct drop (sendLocked).
func (d *DRBR[T]) transmitBurst(vs []T, errs []error) (int, error) {
	if !d.ok() {
		return 0, ErrUninitialized
	}
	if len(vs) == 0 {
		return 0, nil
	}
	for {
		s := d.state.Load()
		switch {
		case s&stClosed != 0:
			d.returned.Add(uint64(len(vs)))
			return 0, d.closeErr()
		case s&(stLocked|stStalled) == 0:
			// The lock is free: send directly, no enqueue-then-kick.
			if d.state.CompareAndSwap(s, s|stLocked) {
				return d.sendLocked(vs, errs)
			}
		case s&stStalled != 0 || d.unlimited:
			// Stalled: defer without calling xmit (nobody may until a
			// restart), whatever the producer count.
			return d.deferItems(vs, false)
		case d.admit():
			return d.deferItems(vs, true)
		default:
			// Producer limit reached (or no deferral): block on the
			// lock, as simple_tx senders do on ift_mtx.
			d.lockWaits.Add(1)
			if err := d.lock(true); err != nil {
				d.returned.Add(uint64(len(vs)))
				return 0, err
			}
			return d.sendLocked(vs, errs)
		}
	}
}

// sendLocked sends vs after everything deferred before them and releases
// the lock. A refusal leaves the refused item in the stash (the head) and
// the rest go into the ring behind it, as they do when the ring could not
// be emptied first; if the ring has no room for them the
// sender releases the lock first and then waits for space like a deferring
// sender, because Restart (which makes room) only try-locks.
//
// errs, if not nil, is as long as vs: errs[i] receives Xmit's error for
// each of vs it dropped.
//
// Preconditions: stLocked held; released on return.
func (d *DRBR[T]) sendLocked(vs []T, errs []error) (int, error) {
	// drbr_needs_enqueue: bypass the ring only when it is empty. First
	// send what is deferred (unless the queue is stalled). A slot reserved
	// by another sender and not yet published hides the items behind it,
	// which may include this sender's own earlier ones; then this sender's
	// items queue behind, and the other sender's announcement drains them
	// all.
	queue := false
	if d.hasStash || !d.ring.unreserved() || d.state.Load()&stStalled != 0 {
		_, stalled := d.drainLocked(-1)
		queue = stalled || !d.ring.unreserved()
	}
	i := 0
	var dropped error // the first of the caller's own items xmit dropped
	for !queue && i < len(vs) {
		if d.state.Load()&stClosed != 0 {
			break
		}
		d.cur = vs[i]
		if err := d.cfg.Xmit(&d.cur); err != ErrRefused {
			if err != nil {
				if dropped == nil {
					dropped = err
				}
				if errs != nil {
					errs[i] = err
				}
			}
			d.h.direct++
			d.unrung++
			i++
			continue
		}
		d.h.refused++
		if d.retryAfterRefusal() {
			vs[i] = d.cur
			continue
		}
		// drainLocked emptied the stash (or it would have stalled).
		d.stashItem(d.cur)
		i++
		queue = true
	}
	var zero T
	d.cur = zero
	closed := d.state.Load()&stClosed != 0
	if i < len(vs) && !closed {
		n, _ := d.ring.EnqueueBurst(vs[i:])
		i += n
	}
	d.unlock(-1)
	switch {
	case i == len(vs):
		return i, dropped
	case closed:
		d.returned.Add(uint64(len(vs) - i))
		return i, d.closeErr()
	}
	n, err := d.deferItems(vs[i:], false)
	if err == nil {
		err = dropped
	}
	return i + n, err
}

// admit reports whether a sender that found the lock taken may defer under
// the MaxProducers limit, and if so counts it among the deferring senders.
func (d *DRBR[T]) admit() bool {
	if d.limit == 0 {
		return false
	}
	if uint64(d.producers.Add(1)) <= d.limit {
		return true
	}
	d.producers.Add(-1)
	return false
}

// deferItems puts vs in the ring, waiting for space as needed, and
// announces each run it published (announce). admitted says the caller
// holds a producer slot (admit), which it gives back at the end.
func (d *DRBR[T]) deferItems(vs []T, admitted bool) (int, error) {
	if admitted {
		defer d.producers.Add(-1)
	}
	var b wait.Backoff
	done := 0
	waited := false
	for {
		n, err := d.ring.EnqueueBurst(vs[done:])
		done += n
		if n > 0 {
			if d.testHookPublished != nil {
				d.testHookPublished()
			}
			d.announce()
		}
		switch err {
		case nil:
			return done, nil
		case ErrClosed:
			d.returned.Add(uint64(len(vs) - done))
			return done, d.closeErr()
		}
		if !waited {
			waited = true
			d.fullWaits.Add(1)
		}
		if n > 0 {
			b.Reset()
		}
		_ = d.ring.waitSpace(context.Background(), &b)
	}
}
