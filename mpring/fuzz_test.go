package mpring

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSequence drives one goroutine through Enqueue, EnqueueOne and
// CheckDrainage with a drain callback whose appetite and can_drain answer the
// input also chooses, and checks after every step what must hold without
// concurrency: nothing is mid-reservation, the flags are never left BUSY,
// the ring holds exactly accepted − delivered items and is IDLE exactly when
// empty, ErrFull happens exactly when n ≥ size−1−used, items come out once
// and in order, and the counters agree with what was accepted and refused.
func FuzzSequence(f *testing.F) {
	f.Add([]byte{6, 0, 3, 3, 0, 0, 4, 1, 1, 2, 9})
	f.Add([]byte{0, 0, 0x84, 1, 1, 2, 3, 3, 0x45, 2, 0})
	f.Add([]byte{8, 3, 0, 0, 3, 0, 3, 1, 0, 3, 0x40, 2, 30, 0, 2, 1, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		size := MinSize + int(in[0])%9
		in = in[1:]
		appetite, can := 5, true // 0 stalls; 5 takes everything offered
		var delivered, accepted, refused, inlineEnqueues int
		next := 1
		r, err := New(size, func(r *Ring[int], cidx, pidx int) int {
			n := r.IdxDiff(pidx, cidx)
			if appetite < 5 {
				n = min(n, appetite)
			}
			for i, k := cidx, 0; k < n; i, k = r.IncrementIdx(i, 1), k+1 {
				v := r.At(i)
				require.Equal(t, delivered+1, v, "consumed %d, want %d", v, delivered+1)
				delivered++
			}
			return n
		}, func(*Ring[int]) bool { return can })
		require.NoError(t, err)
		enqueue := func(n int, budget int, abdicate, one bool) {
			full := n >= size-1-(accepted-delivered)
			if one {
				err = r.EnqueueOne(next, budget, abdicate)
			} else {
				items := make([]int, n)
				for i := range items {
					items[i] = next + i
				}
				err = r.Enqueue(items, budget, abdicate)
			}
			switch {
			case n == 0:
				require.ErrorIs(t, err, ErrNoItems, "empty enqueue: %v", err)
			case full:
				require.ErrorIs(t, err, ErrFull, "enqueue %d with %d used of size %d: %v, want ErrFull", n, accepted-delivered, size, err)
				refused += n
			default:
				require.NoError(t, err, "enqueue %d with %d used of size %d", n, accepted-delivered, size)
				accepted += n
				next += n
				if !abdicate {
					inlineEnqueues++
				}
			}
		}
		check := func() {
			s := r.State()
			used := accepted - delivered
			require.Equal(t, s.PidxTail, s.PidxHead, "mid-reservation with no producer: %v", s)
			require.NotEqual(t, Busy, s.Flags, "left BUSY: %v", s)
			require.Equal(t, used, r.IdxDiff(int(s.PidxTail), int(s.Cidx)), "%v holds %d, want %d", s, r.IdxDiff(int(s.PidxTail), int(s.Cidx)), used)
			require.Equal(t, used == 0, s.Flags == Idle, "%v with %d used", s, used)
			require.Equal(t, used == 0, r.IsIdle(), "%v with %d used", s, used)
			st := r.Stats()
			require.Equal(t, uint64(accepted), st.Enqueues, "%+v: accepted %d refused %d inline %d", st, accepted, refused, inlineEnqueues)
			require.Equal(t, uint64(refused), st.Drops, "%+v: accepted %d refused %d inline %d", st, accepted, refused, inlineEnqueues)
			require.Zero(t, st.Abdications, "%+v: accepted %d refused %d inline %d", st, accepted, refused, inlineEnqueues)
			require.LessOrEqual(t, st.Restarts, st.Stalls, "%+v: accepted %d refused %d inline %d", st, accepted, refused, inlineEnqueues)
			require.LessOrEqual(t, st.Starts, uint64(inlineEnqueues), "%+v: accepted %d refused %d inline %d", st, accepted, refused, inlineEnqueues)
		}
		for len(in) >= 2 {
			op, arg := in[0]%4, int(in[1])
			in = in[2:]
			switch op {
			case 0:
				enqueue(arg%5, arg>>5&3*8, arg&0x80 != 0, false)
			case 1:
				enqueue(1, 32, arg&1 != 0, true)
			case 2:
				r.CheckDrainage(arg % 40)
			case 3:
				appetite, can = arg%6, arg&0x40 != 0
			}
			check()
		}
		appetite, can = 5, true
		r.CheckDrainage(size)
		check()
		require.Equal(t, accepted, delivered, "delivered %d of %d", delivered, accepted)
	})
}
