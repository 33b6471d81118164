package mpring

// Stats holds the six counters of struct ifmp_ring (counter_u64_t each in
// FreeBSD), counted exactly where mp_ring.c counts them.
type Stats struct {
	Enqueues    uint64 // enqueues: items accepted by Enqueue
	Drops       uint64 // drops: items refused with ErrFull
	Starts      uint64 // starts: a consumer began on an IDLE ring
	Stalls      uint64 // stalls: the drain callback returned 0 (not again after a stall with no progress)
	Restarts    uint64 // restarts: a consumer that started on a STALLED ring consumed something
	Abdications uint64 // abdications: the consumer left work to another thread
}

// Stats returns the counters. Each is read atomically but the six are not
// one snapshot, as with counter_u64_fetch.
func (r *Ring[T]) Stats() Stats {
	return Stats{
		Enqueues:    r.enqueues.Load(),
		Drops:       r.drops.Load(),
		Starts:      r.starts.Load(),
		Stalls:      r.stalls.Load(),
		Restarts:    r.restarts.Load(),
		Abdications: r.abdications.Load(),
	}
}

// ResetStats is ifmp_ring_reset_stats: zero all six counters (iflib calls it
// from iflib_stop). Increments racing with it may survive.
func (r *Ring[T]) ResetStats() {
	r.enqueues.Store(0)
	r.drops.Store(0)
	r.starts.Store(0)
	r.stalls.Store(0)
	r.restarts.Store(0)
	r.abdications.Store(0)
}

// State returns the decoded state word, the four values iflib's
// mp_ring_state_handler prints.
func (r *Ring[T]) State() State { return word(r.state.Load()).decode() }

// IsIdle is ifmp_ring_is_idle: nothing reserved, published or unconsumed,
// and flags IDLE.
func (r *Ring[T]) IsIdle() bool {
	s := word(r.state.Load())
	return s.pidxHead() == s.pidxTail() && s.pidxTail() == s.cidx() && s.flags() == Idle
}

// IsStalled is ifmp_ring_is_stalled: no producer mid-reservation and flags
// STALLED.
func (r *Ring[T]) IsStalled() bool {
	s := word(r.state.Load())
	return s.pidxHead() == s.pidxTail() && s.flags() == Stalled
}
