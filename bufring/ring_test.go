package bufring

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRingAt returns a ring whose indices (and cached copies) all start at
// start, to exercise the uint32 wrap near 2^32 (FreeBSD's overflow case).
func newRingAt[T any](t testing.TB, size int, start uint32) *Ring[T] {
	t.Helper()
	r, err := New[T](size)
	require.NoError(t, err)
	for _, idx := range []interface{ Store(uint32) }{&r.prodHead, &r.prodTail, &r.prodConsTail, &r.consHead, &r.consTail, &r.consProdTail} {
		idx.Store(start)
	}
	r.scProdTail = start
	return r
}

// starts are the initial index values every ring test runs from: zero, and
// just below the uint32 wrap so that the indices overflow mid-test.
var starts = []uint32{0, math.MaxUint32 - 5, math.MaxUint32}

// dequeuers are the four ways to take one item, as in buf_ring_test.c
// (dequeue_sc, dequeue_mc, peek+advance), plus the two burst forms.
var dequeuers = []struct {
	name string
	fn   func(*Ring[int]) (int, bool)
}{
	{"DequeueSC", (*Ring[int]).DequeueSC},
	{"DequeueMC", (*Ring[int]).DequeueMC},
	{"PeekAdvance", func(r *Ring[int]) (int, bool) {
		v, ok := r.Peek()
		if ok {
			r.Advance()
		}
		return v, ok
	}},
	{"DequeueBurstSC", func(r *Ring[int]) (int, bool) {
		var b [1]int
		return b[0], r.DequeueBurstSC(b[:]) == 1
	}},
	{"DequeueBurstMC", func(r *Ring[int]) (int, bool) {
		var b [1]int
		return b[0], r.DequeueBurstMC(b[:]) == 1
	}},
}

// TestBufRingCases is ported from FreeBSD's tests/sys/sys/buf_ring_test.c
// (MC_SC_TEST), run for each dequeue flavour and from each start index.
func TestBufRingCases(t *testing.T) {
	for _, dq := range dequeuers {
		for _, start := range starts {
			r := newRingAt[int](t, 4, start)
			at := func(step string) string { return dq.name + " start " + hex(start) + " " + step }
			check := func(step string, count int, full, empty bool) {
				t.Helper()
				require.Equal(t, count, r.Count(), "%s: Count", at(step))
				require.Equal(t, full, r.Full(), "%s: Full", at(step))
				require.Equal(t, empty, r.Empty(), "%s: Empty", at(step))
			}
			want := func(v int, ok bool) {
				t.Helper()
				got, gotOK := dq.fn(r)
				require.Equal(t, ok, gotOK, "%s: dequeue ok", at(""))
				require.Equal(t, v, got, "%s: dequeued value", at(""))
			}
			want(0, false)
			check("new", 0, false, true)
			for v := 1; v <= 3; v++ {
				require.NoError(t, r.Enqueue(v), "%s: Enqueue(%d)", dq.name, v)
			}
			require.ErrorIs(t, r.Enqueue(4), ErrFull, "%s: fourth Enqueue", dq.name)
			require.Equal(t, uint64(1), r.Drops())
			check("filled", 3, true, false)
			want(1, true)
			want(2, true)
			check("partly emptied", 1, false, false)
			require.NoError(t, r.Enqueue(5))
			check("refilled", 2, false, false)
			want(3, true)
			want(5, true)
			want(0, false)
			check("emptied", 0, false, true)
			for i := 0; i < 8; i++ {
				for _, base := range []int{100, 200, 300} {
					require.NoError(t, r.Enqueue(base+i))
				}
				check("wrap fill", 3, true, false)
				want(100+i, true)
				want(200+i, true)
				want(300+i, true)
				check("wrap empty", 0, false, true)
			}
		}
	}
}

func hex(v uint32) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

func TestNewBadSize(t *testing.T) {
	for _, size := range []int{0, 1, 3, 6, -1, -4, math.MaxInt} {
		r, err := New[int](size)
		assert.Nil(t, r, "New(%d)", size)
		assert.ErrorIs(t, err, ErrInvalid, "New(%d)", size)
		var ae *ConfigError
		if assert.ErrorAs(t, err, &ae, "New(%d)", size) {
			assert.Equal(t, size, ae.Value)
			assert.Equal(t, "New(size)", ae.Field)
		}
	}
	for _, size := range []int{2, 4, 1024} {
		r, err := New[int](size)
		if assert.NoError(t, err, "New(%d)", size) {
			assert.Equal(t, size-1, r.Cap(), "New(%d)", size)
		}
	}
}

func TestPeekPutbackAdvance(t *testing.T) {
	for _, start := range starts {
		r := newRingAt[int](t, 4, start)
		require.ErrorIs(t, r.TryPutback(7), ErrEmpty, "TryPutback on empty")
		r.Putback(7) // FreeBSD asserts; here a no-op that must not corrupt
		r.Advance()  // no-op on empty, as in buf_ring_advance_sc
		require.True(t, r.Empty(), "ring not empty after Putback/Advance on empty")
		require.Zero(t, r.Count())
		_, ok := r.Peek()
		require.False(t, ok, "Peek on empty returned an item")
		for v := 1; v <= 3; v++ {
			require.NoError(t, r.Enqueue(v))
		}
		v, ok := r.Peek()
		require.True(t, ok)
		require.Equal(t, 1, v, "Peek")
		v, ok = r.Peek()
		require.True(t, ok)
		require.Equal(t, 1, v, "second Peek")
		require.Equal(t, 3, r.Count(), "Peek does not remove")
		r.Putback(10)
		v, _ = r.Peek()
		require.Equal(t, 10, v, "Peek after Putback")
		v, _ = r.DequeueSC()
		require.Equal(t, 10, v, "DequeueSC after Putback")
		r.Advance() // drops 2 from the head
		v, ok = r.DequeueSC()
		require.True(t, ok)
		require.Equal(t, 3, v)
		require.True(t, r.Empty(), "ring not empty at the end")
		require.False(t, r.Full())
		require.Zero(t, r.Count())
		require.NoError(t, r.Enqueue(4))
		v, _ = r.DequeueMC()
		require.Equal(t, 4, v, "ring unusable after misuse")
	}
}

// TestBurstBoundaries checks partial bursts at the exact free count, bursts
// straddling the end of the slot array and the uint32 wrap, and drops.
func TestBurstBoundaries(t *testing.T) {
	for _, start := range starts {
		r := newRingAt[int](t, 8, start) // capacity 7
		require.Zero(t, r.EnqueueBurst(nil), "EnqueueBurst(nil)")
		require.Equal(t, 3, r.EnqueueBurst([]int{1, 2, 3}), "EnqueueBurst 3")
		// Exactly the free count: all taken, ring full, no drops.
		require.Equal(t, 4, r.EnqueueBurst([]int{4, 5, 6, 7}), "EnqueueBurst at free count")
		require.True(t, r.Full())
		require.Zero(t, r.Drops())
		require.Zero(t, r.EnqueueBurst([]int{8}), "EnqueueBurst on full")
		require.Equal(t, uint64(1), r.Drops())
		dst := make([]int, 5)
		require.Equal(t, 5, r.DequeueBurstSC(dst))
		require.Equal(t, []int{1, 2, 3, 4, 5}, dst)
		// Free is 5; offer 6: a prefix of 5 is taken, 1 dropped. These slots
		// wrap around the end of the slot array.
		require.Equal(t, 5, r.EnqueueBurst([]int{8, 9, 10, 11, 12, 13}), "partial EnqueueBurst")
		require.Equal(t, uint64(2), r.Drops())
		big := make([]int, 20)
		require.Equal(t, 3, r.DequeueBurstMC(big[:3]))
		require.Equal(t, []int{6, 7, 8}, big[:3])
		require.Equal(t, 4, r.DequeueBurstSC(big), "DequeueBurstSC rest")
		require.Equal(t, []int{9, 10, 11, 12}, big[:4])
		require.Zero(t, r.DequeueBurstSC(big), "burst dequeue from empty ring")
		require.Zero(t, r.DequeueBurstMC(big))
		require.Zero(t, r.DequeueBurstSC(nil))
		require.True(t, r.Empty())
		// Slots are cleared after reading.
		for i, v := range r.slots {
			require.Zero(t, v, "slot %d after everything was dequeued", i)
		}
	}
}

// TestClearsSlots checks that consumed slots release their references.
func TestClearsSlots(t *testing.T) {
	r, _ := New[*int](4)
	for i := 0; i < 3; i++ {
		v := i
		_ = r.Enqueue(&v)
	}
	r.DequeueSC()
	r.DequeueMC()
	r.Peek()
	r.Advance()
	for i, p := range r.slots {
		require.Nil(t, p, "slot %d still holds a reference", i)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Issue 20 §2 item 4 (every field, every package): a size in range whose
// slots would take more than 1 TiB (size × element size, the product) is an
// *ConfigError, not a panic in make: New, NewMPSC and NewDRBRWith alike. A
// DRBR without Xmit is refused before its ring is allocated.
func TestSizeTimesElementBounded(t *testing.T) {
	type big [1 << 10]byte // 2^31 slots of 1 KiB: 2 TiB
	_, err := New[big](1 << 31)
	var ae *ConfigError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "New(size)", ae.Field)
	assert.Equal(t, 1<<31, ae.Value)
	_, err = NewMPSC[big](1 << 31)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewDRBRWith(DRBRConfig[big]{Size: 1 << 31, Xmit: func(*big) error { return nil }})
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "DRBRConfig.Size", ae.Field)
	_, err = NewDRBRWith(DRBRConfig[big]{Size: 1 << 31})
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "DRBRConfig.Xmit", ae.Field, "Xmit is checked before the ring is allocated")
	// The bound is the product: 2^31 slots of a byte are fine (not
	// allocated here: 2^20 stands in).
	r, err := New[byte](1 << 20)
	require.NoError(t, err)
	assert.Equal(t, 1<<20-1, r.Cap())
}
