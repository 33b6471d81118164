package mpring

// drainLockless is drain_ring_lockless(r, os, prev, budget): the consumer
// loop. The caller has just moved the flags to BUSY in os (whose cidx !=
// pidx_tail), so it is the only consumer; prev is the flags it replaced.
//
// Counters, exactly as FreeBSD keeps them: starts when prev is IDLE (not
// after STALLED or ABDICATED); on a stall, stalls unless prev was STALLED, in
// which case stalls and restarts only if this run consumed something; on
// leaving as IDLE or ABDICATED after prev STALLED, restarts; abdications for
// each ABDICATED publication. Each of stalls, restarts and abdications
// moves at most once per run, on the way out.
func (r *Ring[T]) drainLockless(os word, prev Flags, budget int) {
	if prev == Idle {
		r.starts.Add(1)
	}
	cidx, pidx := os.cidx(), os.pidxTail()
	pending, total := 0, 0
	for cidx != pidx {
		avail := r.IdxDiff(pidx, cidx)
		n := r.drain(r, cidx, pidx)
		if n <= 0 {
			r.stall(cidx, prev, total)
			return
		}
		if n > avail {
			n = avail
		}
		r.zeroSlots(cidx, n)
		cidx = incrementIdx(r.size, cidx, n)
		pending += n
		total += n

		// Publish cidx only when caught up, after publishBatch items,
		// or once over budget.
		if cidx != pidx && pending < publishBatch && total < budget {
			continue
		}
		// The CAS replaces atomic_fcmpset_acq_64: its acquire makes the
		// items up to the pidx_tail it observes visible to this consumer.
		o := word(r.state.Load())
		var ns word
		for {
			ns = o.withCidx(cidx)
			ns = ns.withFlags(stateToFlags(ns, total >= budget))
			if r.state.CompareAndSwap(uint64(o), uint64(ns)) {
				break
			}
			o = word(r.state.Load())
		}
		f := ns.flags()
		if f == Abdicated {
			r.abdications.Add(1)
		}
		if f != Busy {
			if prev == Stalled {
				r.restarts.Add(1)
			}
			return
		}
		pidx = ns.pidxTail()
		pending = 0
	}
}

// stall records a drain that returned 0: publish cidx with flags STALLED
// (a CAS replacing atomic_fcmpset_64 inside critical_enter) and count it.
// A stall right after a stall with nothing consumed counts nothing.
func (r *Ring[T]) stall(cidx int, prev Flags, total int) {
	o := word(r.state.Load())
	for {
		ns := o.withCidx(cidx).withFlags(Stalled)
		if r.state.CompareAndSwap(uint64(o), uint64(ns)) {
			break
		}
		o = word(r.state.Load())
	}
	if prev != Stalled {
		r.stalls.Add(1)
	} else if total > 0 {
		r.restarts.Add(1)
		r.stalls.Add(1)
	}
}

// zeroSlots zeroes the n consumed slots from cidx on so that the ring does not
// keep what they referenced alive for the garbage collector (FreeBSD leaves
// stale pointers in items[]). Producers cannot write these slots until the
// consumer publishes a cidx past them, which happens after this.
func (r *Ring[T]) zeroSlots(cidx, n int) {
	if first := r.size - cidx; n <= first {
		clear(r.items[cidx : cidx+n])
	} else {
		clear(r.items[cidx:])
		clear(r.items[:n-first])
	}
}

// CheckDrainage is ifmp_ring_check_drainage(r, budget): restart a STALLED
// ring if canDrain reports resources, or pick up an ABDICATED one, and drain
// it on this goroutine with the given budget. It does nothing when the ring
// is IDLE or BUSY, when a producer is mid-reservation (that producer will
// see the flags when it publishes), or when another goroutine wins the race
// to restart. iflib calls it from the TX task (budget 32), after a failed
// enqueue (32), from the admin task (8, IFLIB_RESTART_BUDGET), and to purge
// (Size).
func (r *Ring[T]) CheckDrainage(budget int) {
	os := word(r.state.Load())
	f := os.flags()
	if (f != Stalled && f != Abdicated) || os.pidxHead() != os.pidxTail() ||
		(f != Abdicated && !r.canDrain(r)) {
		return
	}
	ns := os.withFlags(Busy)
	// Replaces atomic_cmpset_acq_64: the acquire makes the items up to
	// pidx_tail visible to this new consumer.
	if !r.state.CompareAndSwap(uint64(os), uint64(ns)) {
		return
	}
	r.drainLockless(ns, f, budget)
}
