package mpring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWordFieldsAreIndependent(t *testing.T) {
	var w word
	w = w.withPidxHead(0xffff).withPidxTail(0x1234).withCidx(0xfffe).withFlags(Abdicated)
	require.Equal(t, 0xffff, w.pidxHead(), "decoded %v", w.decode())
	require.Equal(t, 0x1234, w.pidxTail(), "decoded %v", w.decode())
	require.Equal(t, 0xfffe, w.cidx(), "decoded %v", w.decode())
	require.Equal(t, Abdicated, w.flags(), "decoded %v", w.decode())
	// Little-endian union layout: pidx_head in the low 16 bits.
	want := word(0x0003_fffe_1234_ffff)
	require.Equal(t, want, w, "word %#x, want %#x", uint64(w), uint64(want))
	w = w.withPidxTail(0).withPidxHead(1)
	require.Equal(t, State{1, 0, 0xfffe, Abdicated}, w.decode(), "decoded %v", w.decode())
}

func TestIncrementIdx(t *testing.T) {
	for _, c := range []struct{ size, idx, n, want int }{
		{5, 0, 1, 1}, {5, 3, 1, 4}, {5, 4, 1, 0}, {5, 3, 2, 0}, {5, 3, 4, 2}, {5, 3, 5, 3},
		{MaxSize, MaxSize - 1, 1, 0}, {MaxSize, 10, MaxSize, 10}, {2, 1, 1, 0},
	} {
		got := incrementIdx(c.size, c.idx, c.n)
		assert.Equal(t, c.want, got, "increment_idx(size %d, %d, %d) = %d, want %d", c.size, c.idx, c.n, got, c.want)
	}
}

func TestSpaceAvailable(t *testing.T) {
	for _, c := range []struct{ size, cidx, head, want int }{
		{8, 0, 0, 7}, {8, 5, 5, 7}, {8, 0, 6, 1}, {8, 3, 1, 1}, {8, 2, 1, 0}, {8, 6, 2, 3},
		{MaxSize, 0, MaxSize - 2, 1}, {MaxSize, 0, MaxSize - 1, 0},
	} {
		s := word(0).withCidx(c.cidx).withPidxHead(c.head)
		got := spaceAvailable(c.size, s)
		assert.Equal(t, c.want, got, "space_available(size %d, cidx %d, head %d) = %d, want %d", c.size, c.cidx, c.head, got, c.want)
	}
}

func TestStateToFlags(t *testing.T) {
	mk := func(head, tail, cidx int) word { return word(0).withPidxHead(head).withPidxTail(tail).withCidx(cidx) }
	for _, c := range []struct {
		s        word
		abdicate bool
		want     Flags
	}{
		{mk(3, 3, 3), true, Idle},
		{mk(4, 3, 3), true, Idle}, // caught up beats mid-reservation
		{mk(4, 3, 1), true, Abdicated},
		{mk(4, 3, 1), false, Busy},
		{mk(3, 3, 1), true, Busy}, // nobody mid-reservation: keep draining
	} {
		got := stateToFlags(c.s, c.abdicate)
		assert.Equal(t, c.want, got, "state_to_flags(%v, %v) = %v, want %v", c.s.decode(), c.abdicate, got, c.want)
	}
}

func TestStrings(t *testing.T) {
	for f, want := range map[Flags]string{Idle: "IDLE", Busy: "BUSY", Stalled: "STALLED", Abdicated: "ABDICATED", 7: "Flags(7)"} {
		got := f.String()
		assert.Equal(t, want, got, "Flags(%d).String() = %q, want %q", uint16(f), got, want)
	}
	s := State{PidxHead: 12, PidxTail: 12, Cidx: 7, Flags: Stalled}
	got, want := s.String(), "pidx_head: 0012 pidx_tail: 0012 cidx: 0007 state: STALLED"
	assert.Equal(t, want, got, "String() = %q, want %q", got, want)
	got, want = badArg("New(drain)", nil, "nil callback").Error(), "mpring: invalid New(drain): nil callback"
	assert.Equal(t, want, got, "Error() = %q, want %q", got, want)
}
