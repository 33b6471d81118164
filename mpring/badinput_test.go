package mpring

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRejects(t *testing.T) {
	drain := func(*Ring[int], int, int) int { return 0 }
	can := func(*Ring[int]) bool { return false }
	// Size 2 (ifmp_ring_alloc's minimum) holds no item: usable capacity
	// is size−2.
	for _, size := range []int{-1, 0, 1, 2, MaxSize + 1} {
		r, err := New(size, drain, can)
		assert.Nil(t, r, "New(%d)", size)
		assert.ErrorIs(t, err, ErrInvalid, "New(%d)", size)
		var ce *ConfigError
		if assert.ErrorAs(t, err, &ce, "New(%d)", size) {
			assert.Equal(t, "New(size)", ce.Field)
			assert.Equal(t, size, ce.Value)
		}
	}
	for _, size := range []int{MinSize, 3, 2048, MaxSize} {
		r, err := New(size, drain, can)
		if assert.NoError(t, err, "New(%d)", size) {
			assert.Equal(t, size, r.Size())
		}
	}
	var ce *ConfigError
	_, err := New(8, nil, can)
	assert.ErrorIs(t, err, ErrInvalid, "nil drain")
	if assert.ErrorAs(t, err, &ce) {
		assert.Equal(t, "New(drain)", ce.Field)
	}
	_, err = New[int](8, drain, nil)
	assert.ErrorIs(t, err, ErrInvalid, "nil canDrain")
	if assert.ErrorAs(t, err, &ce) {
		assert.Equal(t, "New(canDrain)", ce.Field)
	}
	_, err = New(1, drain, can)
	assert.EqualError(t, err, fmt.Sprintf("mpring: invalid New(size) = 1: want %d..%d", MinSize, MaxSize))
}

func TestEmptyEnqueueChangesNothing(t *testing.T) {
	s := &scripted{rest: all}
	r := newScripted(t, 8, s)
	for _, items := range [][]int{nil, {}} {
		for _, abdicate := range []bool{false, true} {
			err := r.Enqueue(items, 32, abdicate)
			require.ErrorIs(t, err, ErrNoItems, "Enqueue(%v): %v, want ErrNoItems", items, err)
		}
	}
	wantStats(t, r, Stats{})
	wantState(t, r, State{})
	require.Zero(t, s.calls, "drain called %d times", s.calls)
}

func TestBudgetZero(t *testing.T) {
	// Budget 0 (qflush, the full-ring restart) publishes after every call;
	// as with any budget, it abdicates only when a producer is
	// mid-reservation, so a lone producer drains everything.
	s := &scripted{rest: 1}
	r := newScripted(t, 8, s)
	mustEnqueue(t, r, []int{1, 2, 3}, 0, false)
	wantGot(t, s, 1, 2, 3)
	wantStats(t, r, Stats{Enqueues: 3, Starts: 1})
	want := []uint16{0, 1, 2}
	require.False(t, len(s.published) != 3 || s.published[1] != want[1] || s.published[2] != want[2], "published cidx seen %v, want %v", s.published, want)
	// A negative budget behaves like 0, as total >= budget does in C.
	s.published = s.published[:0]
	mustEnqueue(t, r, []int{4, 5}, -7, false)
	want = []uint16{3, 4}
	require.False(t, s.published[0] != want[0] || s.published[1] != want[1], "published cidx seen %v, want %v", s.published, want)
}

func TestCapacityIsSizeMinusTwo(t *testing.T) {
	for _, size := range []int{MinSize, 8, MaxSize} {
		s := &scripted{rest: 0}
		r := newScripted(t, size, s)
		err := r.Enqueue(make([]int, size-1), 32, true)
		require.ErrorIs(t, err, ErrFull, "size %d: %d items: %v, want ErrFull", size, size-1, err)
		mustEnqueue(t, r, make([]int, size-2), 32, true)
		err = r.EnqueueOne(0, 32, true)
		require.ErrorIs(t, err, ErrFull, "size %d: one more: %v, want ErrFull", size, err)
		wantStats(t, r, Stats{Enqueues: uint64(size - 2), Drops: uint64(size)})
	}
}

func TestDrainReturnOutOfRange(t *testing.T) {
	var ret int
	calls := 0
	r, err := New(8, func(*Ring[int], int, int) int { calls++; return ret },
		func(*Ring[int]) bool { return true })
	require.NoError(t, err)
	// More than offered counts as everything offered.
	ret = 1000
	mustEnqueue(t, r, []int{1, 2, 3}, 32, false)
	wantState(t, r, State{3, 3, 3, Idle})
	// Negative counts as a stall.
	ret = -5
	mustEnqueue(t, r, []int{4}, 32, false)
	wantState(t, r, State{4, 4, 3, Stalled})
	wantStats(t, r, Stats{Enqueues: 4, Starts: 2, Stalls: 1})
	ret = 1
	r.CheckDrainage(32)
	wantState(t, r, State{4, 4, 4, Idle})
	require.Equal(t, 3, calls, "calls %d, want 3", calls)
}

func TestAtAndSlotOutOfRange(t *testing.T) {
	r, err := New(4, func(*Ring[*int], int, int) int { return 1 }, func(*Ring[*int]) bool { return true })
	require.NoError(t, err)
	for _, i := range []int{-1, 4, math.MaxInt} {
		assert.False(t, r.At(i) != nil || r.Slot(i) != nil, "At/Slot(%d) not nil", i)
	}
	assert.NotNil(t, r.Slot(3), "Slot(3) is nil")
}

func TestResetStats(t *testing.T) {
	s := &scripted{steps: []int{0}, rest: all, can: true}
	r := newScripted(t, 4, s)
	mustEnqueue(t, r, []int{1, 2}, 32, false)
	_ = r.EnqueueOne(3, 32, true)
	r.CheckDrainage(32)
	require.NotEqual(t, Stats{}, r.Stats(), "no counters to reset")
	r.ResetStats()
	wantStats(t, r, Stats{})
}

func TestEnqueueAllocatesNothing(t *testing.T) {
	r, err := New(2048, func(r *Ring[*int], cidx, pidx int) int { return min(r.IdxDiff(pidx, cidx), 32) },
		func(*Ring[*int]) bool { return true })
	require.NoError(t, err)
	v := new(int)
	n := testing.AllocsPerRun(1000, func() { _ = r.EnqueueOne(v, 32, false) })
	assert.False(t, n != 0, "EnqueueOne: %v allocs/op", n)
	n = testing.AllocsPerRun(1000, func() { _ = r.Enqueue([]*int{v, v}, 32, false) })
	assert.False(t, n != 0, "Enqueue of a stack slice: %v allocs/op", n)
	n = testing.AllocsPerRun(1000, func() {
		_ = r.EnqueueOne(v, 32, true)
		r.CheckDrainage(32)
	})
	assert.False(t, n != 0, "abdicate + CheckDrainage: %v allocs/op", n)
}

// Issue 20 §2 item 4: IncrementIdx and IdxDiff take any int and answer in
// [0, Size): exactly increment_idx and IDXDIFF for the indices a drain
// callback is given, and modulo Size for the others (they used to return
// indices outside the ring, or negative counts).
func TestIndexHelpersAnyInput(t *testing.T) {
	r, err := New(16, func(r *Ring[int], cidx, pidx int) int { return r.IdxDiff(pidx, cidx) }, func(*Ring[int]) bool { return true })
	if !assert.NoError(t, err) {
		return
	}
	for _, c := range []struct{ idx, n, want int }{
		{0, 0, 0}, {15, 1, 0}, {3, 16, 3}, {10, 9, 3}, // increment_idx's range
		{-1, 0, 15}, {16, 0, 0}, {0, -1, 15}, {5, 17, 6}, {math.MaxInt, 1, 0}, {math.MinInt, 0, 0}, {math.MaxInt, math.MaxInt, 14},
	} {
		assert.Equal(t, c.want, r.IncrementIdx(c.idx, c.n), "IncrementIdx(%d, %d)", c.idx, c.n)
	}
	for _, c := range []struct{ pidx, cidx, want int }{
		{5, 3, 2}, {3, 5, 14}, {0, 0, 0}, // IDXDIFF's range
		{-1, 0, 15}, {16, 15, 1}, {math.MaxInt, math.MinInt, 15}, {3, 19, 0},
	} {
		got := r.IdxDiff(c.pidx, c.cidx)
		assert.Equal(t, c.want, got, "IdxDiff(%d, %d)", c.pidx, c.cidx)
	}
}
