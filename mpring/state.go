package mpring

import "fmt"

// Flags is the consumer state held in the flags field of union ring_state
// (sys/net/mp_ring.c).
type Flags uint16

// The four consumer states, with FreeBSD's values and meanings.
const (
	// Idle (IDLE): the consumer ran to completion; nothing more to do.
	Idle Flags = 0
	// Busy (BUSY): a consumer is running, or will be shortly. Only the
	// goroutine whose CAS stored Busy may call the drain callback.
	Busy Flags = 1
	// Stalled (STALLED): the consumer stopped for lack of resources (its
	// drain callback returned 0).
	Stalled Flags = 2
	// Abdicated (ABDICATED): the consumer stopped although work remains,
	// wanting another goroutine to take over.
	Abdicated Flags = 3
)

var flagNames = [...]string{"IDLE", "BUSY", "STALLED", "ABDICATED"}

// String returns the name iflib's mp_ring_state_handler prints
// (ring_states[] in sys/net/iflib.c), or "Flags(n)" for an unknown value.
func (f Flags) String() string {
	if int(f) < len(flagNames) {
		return flagNames[f]
	}
	return fmt.Sprintf("Flags(%d)", uint16(f))
}

// State is a decoded snapshot of union ring_state.
type State struct {
	PidxHead uint16 // pidx_head: end of space reserved by producers
	PidxTail uint16 // pidx_tail: end of space published (items visible)
	Cidx     uint16 // cidx: consumer position as published to others
	Flags    Flags  // flags: consumer state
}

// String formats the state as iflib's mp_ring_state_handler does:
// "pidx_head: %04hd pidx_tail: %04hd cidx: %04hd state: %s".
func (s State) String() string {
	return fmt.Sprintf("pidx_head: %04d pidx_tail: %04d cidx: %04d state: %s",
		s.PidxHead, s.PidxTail, s.Cidx, s.Flags)
}

// word is union ring_state as one uint64, laid out as the C union is on a
// little-endian host: pidx_head in bits 0–15, pidx_tail 16–31, cidx 32–47,
// flags 48–63.
type word uint64

const (
	headShift  = 0
	tailShift  = 16
	cidxShift  = 32
	flagsShift = 48
	field      = 0xffff
)

func (w word) pidxHead() int { return int(w >> headShift & field) }
func (w word) pidxTail() int { return int(w >> tailShift & field) }
func (w word) cidx() int     { return int(w >> cidxShift & field) }
func (w word) flags() Flags  { return Flags(w >> flagsShift & field) }

func (w word) set(shift uint, v int) word {
	return w&^(field<<shift) | word(uint16(v))<<shift
}

func (w word) withPidxHead(v int) word { return w.set(headShift, v) }
func (w word) withPidxTail(v int) word { return w.set(tailShift, v) }
func (w word) withCidx(v int) word     { return w.set(cidxShift, v) }
func (w word) withFlags(f Flags) word  { return w.set(flagsShift, int(f)) }

func (w word) decode() State {
	return State{
		PidxHead: uint16(w.pidxHead()),
		PidxTail: uint16(w.pidxTail()),
		Cidx:     uint16(w.cidx()),
		Flags:    w.flags(),
	}
}

// spaceAvailable is space_available: size−1 minus the slots in use between
// cidx and pidx_head. Enqueue fails when n >= spaceAvailable, so at most
// size−2 slots can ever be used.
func spaceAvailable(size int, s word) int {
	x := size - 1
	c, h := s.cidx(), s.pidxHead()
	switch {
	case c == h:
		return x
	case c > h:
		return c - h - 1
	default:
		return x - h + c
	}
}

// incrementIdx is increment_idx: idx advanced by n (n ≤ size) modulo size,
// by comparison rather than a mask, so size need not be a power of two.
func incrementIdx(size, idx, n int) int {
	x := size - idx
	if x > n {
		return idx + n
	}
	return n - x
}

// stateToFlags is state_to_flags, the flags a consumer stores with its
// published cidx: IDLE when caught up with pidx_tail; ABDICATED when asked to
// abdicate (budget spent) while a producer is mid-reservation
// (pidx_tail != pidx_head); otherwise BUSY.
func stateToFlags(s word, abdicate bool) Flags {
	switch {
	case s.cidx() == s.pidxTail():
		return Idle
	case abdicate && s.pidxTail() != s.pidxHead():
		return Abdicated
	default:
		return Busy
	}
}
