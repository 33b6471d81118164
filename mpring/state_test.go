package mpring

import "testing"

func TestWordFieldsAreIndependent(t *testing.T) {
	var w word
	w = w.withPidxHead(0xffff).withPidxTail(0x1234).withCidx(0xfffe).withFlags(Abdicated)
	if w.pidxHead() != 0xffff || w.pidxTail() != 0x1234 || w.cidx() != 0xfffe || w.flags() != Abdicated {
		t.Fatalf("decoded %v", w.decode())
	}
	// Little-endian union layout: pidx_head in the low 16 bits.
	if want := word(0x0003_fffe_1234_ffff); w != want {
		t.Fatalf("word %#x, want %#x", uint64(w), uint64(want))
	}
	w = w.withPidxTail(0).withPidxHead(1)
	if w.decode() != (State{1, 0, 0xfffe, Abdicated}) {
		t.Fatalf("decoded %v", w.decode())
	}
}

func TestIncrementIdx(t *testing.T) {
	for _, c := range []struct{ size, idx, n, want int }{
		{5, 0, 1, 1}, {5, 3, 1, 4}, {5, 4, 1, 0}, {5, 3, 2, 0}, {5, 3, 4, 2}, {5, 3, 5, 3},
		{MaxSize, MaxSize - 1, 1, 0}, {MaxSize, 10, MaxSize, 10}, {2, 1, 1, 0},
	} {
		if got := incrementIdx(c.size, c.idx, c.n); got != c.want {
			t.Errorf("increment_idx(size %d, %d, %d) = %d, want %d", c.size, c.idx, c.n, got, c.want)
		}
	}
}

func TestSpaceAvailable(t *testing.T) {
	for _, c := range []struct{ size, cidx, head, want int }{
		{8, 0, 0, 7}, {8, 5, 5, 7}, {8, 0, 6, 1}, {8, 3, 1, 1}, {8, 2, 1, 0}, {8, 6, 2, 3},
		{MaxSize, 0, MaxSize - 2, 1}, {MaxSize, 0, MaxSize - 1, 0},
	} {
		s := word(0).withCidx(c.cidx).withPidxHead(c.head)
		if got := spaceAvailable(c.size, s); got != c.want {
			t.Errorf("space_available(size %d, cidx %d, head %d) = %d, want %d", c.size, c.cidx, c.head, got, c.want)
		}
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
		if got := stateToFlags(c.s, c.abdicate); got != c.want {
			t.Errorf("state_to_flags(%v, %v) = %v, want %v", c.s.decode(), c.abdicate, got, c.want)
		}
	}
}

func TestStrings(t *testing.T) {
	for f, want := range map[Flags]string{Idle: "IDLE", Busy: "BUSY", Stalled: "STALLED", Abdicated: "ABDICATED", 7: "Flags(7)"} {
		if got := f.String(); got != want {
			t.Errorf("Flags(%d).String() = %q, want %q", uint16(f), got, want)
		}
	}
	s := State{PidxHead: 12, PidxTail: 12, Cidx: 7, Flags: Stalled}
	if got, want := s.String(), "pidx_head: 0012 pidx_tail: 0012 cidx: 0007 state: STALLED"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := (&ConfigError{Param: "drain"}).Error(), "mpring: drain callback is nil (EINVAL)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
