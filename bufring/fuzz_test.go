package bufring

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzRing drives one ring from a byte string of operations and checks every
// answer against a slice model: FIFO order, exact full/empty/count, drops,
// peek/putback. The first byte picks the starting index near the uint32 wrap.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 1, 1})
	f.Add([]byte{3, 0, 2, 3, 4, 5, 6, 7, 2, 1, 5})
	f.Add([]byte{255, 4, 4, 4, 0, 6, 6, 7, 7, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		r := newRingAt[int](t, 8, math.MaxUint32-uint32(ops[0]))
		var model []int
		var drops uint64
		next := 0
		buf := make([]int, 8)
		for _, op := range ops[1:] {
			k := int(op>>3) % 8 // burst length
			switch op % 8 {
			case 0: // Enqueue
				next++
				err := r.Enqueue(next)
				if len(model) < 7 {
					model = append(model, next)
					require.NoError(t, err, "Enqueue with %d items", len(model)-1)
				} else if err != ErrFull {
					require.FailNow(t, fmt.Sprintf("Enqueue on full ring: %v", err))
				} else {
					drops++
				}
			case 1, 2: // DequeueSC, DequeueMC
				var v int
				var ok bool
				if op%8 == 1 {
					v, ok = r.DequeueSC()
				} else {
					v, ok = r.DequeueMC()
				}
				require.Equal(t, len(model) > 0, ok, "dequeue = %d, %v; model %v", v, ok, model)
				require.False(t, ok && v != model[0], "dequeue = %d, %v; model %v", v, ok, model)
				if ok {
					model = model[1:]
				}
			case 3: // EnqueueBurst of k
				vs := make([]int, k)
				for i := range vs {
					next++
					vs[i] = next
				}
				fit := min(k, 7-len(model))
				n := r.EnqueueBurst(vs)
				require.Equal(t, fit, n, "EnqueueBurst(%d) = %d, want %d", k, n, fit)
				model = append(model, vs[:fit]...)
				drops += uint64(k - fit)
			case 4, 5: // DequeueBurstSC / MC into k
				var n int
				if op%8 == 4 {
					n = r.DequeueBurstSC(buf[:k])
				} else {
					n = r.DequeueBurstMC(buf[:k])
				}
				if want := min(k, len(model)); n != want || !equal(buf[:n], model[:n]) {
					require.FailNow(t, fmt.Sprintf("burst dequeue %d = %v, model %v", k, buf[:n], model))
				}
				model = model[n:]
			case 6: // Peek + Putback
				v, ok := r.Peek()
				require.Equal(t, len(model) > 0, ok, "Peek = %d, %v; model %v", v, ok, model)
				require.False(t, ok && v != model[0], "Peek = %d, %v; model %v", v, ok, model)
				err := r.TryPutback(-k)
				require.Equal(t, err == nil, ok, "TryPutback = %v with %d items", err, len(model))
				if ok {
					model[0] = -k
				}
			case 7: // Advance
				r.Advance()
				if len(model) > 0 {
					model = model[1:]
				}
			}
			require.Equal(t, len(model), r.Count(), "count %d full %v empty %v drops %d; model %v drops %d", r.Count(), r.Full(), r.Empty(), r.Drops(), model, drops)
			require.Equal(t, len(model) == 7, r.Full(), "count %d full %v empty %v drops %d; model %v drops %d", r.Count(), r.Full(), r.Empty(), r.Drops(), model, drops)
			require.Equal(t, len(model) == 0, r.Empty(), "count %d full %v empty %v drops %d; model %v drops %d", r.Count(), r.Full(), r.Empty(), r.Drops(), model, drops)
			require.Equal(t, drops, r.Drops(), "count %d full %v empty %v drops %d; model %v drops %d", r.Count(), r.Full(), r.Empty(), r.Drops(), model, drops)
		}
	})
}

// FuzzMPSC drives one MPSC from a byte string of operations and checks
// every answer against a model that includes the consumer's lazy release:
// FIFO order, Len, exact full (the slots read but not yet released count
// as used until a batch completes, the ring is found empty, or a burst
// comes up short), peek/putback/advance.
func FuzzMPSC(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 1, 1, 1, 1})
	f.Add([]byte{3 | 7<<3, 3 | 7<<3, 3 | 7<<3, 3 | 7<<3, 3 | 7<<3, 4 | 3<<3, 0, 1, 1, 1, 2})
	f.Add([]byte{3 | 5<<3, 6 | 2<<3, 7, 4 | 7<<3, 1, 0, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const size = 32
		q, err := NewMPSC[int](size)
		require.NoError(t, err)
		batch := int(q.batch)
		var model []int
		unreleased := 0
		read := func(n int, short bool) {
			unreleased += n
			if short || unreleased >= batch {
				unreleased = 0
			}
		}
		next := 0
		buf := make([]int, 8)
		for _, op := range ops {
			k := int(op>>3)%8 + 1 // burst length 1..8
			switch op % 8 {
			case 0: // Enqueue
				next++
				err := q.Enqueue(next)
				if len(model)+unreleased < size {
					require.NoError(t, err, "Enqueue with %d used", len(model)+unreleased)
					model = append(model, next)
				} else if err != ErrFull {
					require.FailNow(t, fmt.Sprintf("Enqueue on a full ring: %v", err))
				}
			case 1: // Dequeue
				v, ok := q.Dequeue()
				require.Equal(t, len(model) > 0, ok, "Dequeue = %d, %v; model %v", v, ok, model)
				require.False(t, ok && v != model[0], "Dequeue = %d, %v; model %v", v, ok, model)
				if ok {
					model = model[1:]
					read(1, false)
				} else {
					read(0, true)
				}
			case 2: // Advance
				q.Advance()
				if len(model) > 0 {
					model = model[1:]
					read(1, false)
				} else {
					read(0, true)
				}
			case 3: // EnqueueBurst of k
				vs := make([]int, k)
				for i := range vs {
					next++
					vs[i] = next
				}
				fit := min(k, size-len(model)-unreleased)
				n, err := q.EnqueueBurst(vs)
				require.Equal(t, fit, n, "EnqueueBurst(%d) = %d, %v; want %d", k, n, err, fit)
				require.Equal(t, fit == k, err == nil, "EnqueueBurst(%d) = %d, %v; want %d", k, n, err, fit)
				model = append(model, vs[:fit]...)
			case 4, 5: // DequeueBurst into k
				n := q.DequeueBurst(buf[:k])
				want := min(k, len(model))
				if n != want || !equal(buf[:n], model[:n]) {
					require.FailNow(t, fmt.Sprintf("DequeueBurst(%d) = %v; model %v", k, buf[:n], model))
				}
				model = model[n:]
				read(n, n < k)
			case 6: // Peek + Putback
				v, ok := q.Peek()
				require.Equal(t, len(model) > 0, ok, "Peek = %d, %v; model %v", v, ok, model)
				require.False(t, ok && v != model[0], "Peek = %d, %v; model %v", v, ok, model)
				err := q.Putback(-k)
				require.Equal(t, err == nil, ok, "Putback = %v with %d items", err, len(model))
				if ok {
					model[0] = -k
				} else {
					read(0, true)
				}
			case 7: // Len
			}
			require.Equal(t, len(model)+unreleased, q.Len(), "Len %d; model %d items + %d unreleased", q.Len(), len(model), unreleased)
		}
	})
}
