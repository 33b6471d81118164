package mpring

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The expected counters in this file are derived by hand from
// ifmp_ring_enqueue, drain_ring_lockless and ifmp_ring_check_drainage
// (sys/net/mp_ring.c, 14e0010729d0); each step says which rule applies.

func TestOneAtATimeVersusBatched(t *testing.T) {
	t.Run("one at a time", func(t *testing.T) {
		s := &scripted{rest: all}
		r := newScripted(t, 16, s)
		for i := 1; i <= 5; i++ {
			// Each enqueue finds IDLE: prev == IDLE → starts++.
			require.NoError(t, r.EnqueueOne(i, 32, false))
		}
		wantGot(t, s, 1, 2, 3, 4, 5)
		wantStats(t, r, Stats{Enqueues: 5, Starts: 5})
		wantState(t, r, State{5, 5, 5, Idle})
		require.Equal(t, 5, s.calls, "calls %d idle %v, want 5 true", s.calls, r.IsIdle())
		require.True(t, r.IsIdle(), "calls %d idle %v, want 5 true", s.calls, r.IsIdle())
	})
	t.Run("batched", func(t *testing.T) {
		s := &scripted{rest: all}
		r := newScripted(t, 16, s)
		mustEnqueue(t, r, []int{1, 2, 3, 4, 5}, 32, false)
		wantGot(t, s, 1, 2, 3, 4, 5)
		wantStats(t, r, Stats{Enqueues: 5, Starts: 1})
		require.Equal(t, 1, s.calls, "calls %d, want 1", s.calls)
	})
	t.Run("batched, drain takes two per call", func(t *testing.T) {
		// Like iflib_txq_drain's MIN(avail, TX_BATCH_SIZE): the loop
		// calls again with the rest; cidx is published only on catch-up.
		s := &scripted{rest: 2}
		r := newScripted(t, 16, s)
		mustEnqueue(t, r, []int{1, 2, 3, 4, 5}, 32, false)
		wantGot(t, s, 1, 2, 3, 4, 5)
		wantStats(t, r, Stats{Enqueues: 5, Starts: 1})
		want := [][2]int{{0, 5}, {2, 5}, {4, 5}}
		require.True(t, slices.Equal(s.offers, want), "offers %v, want %v", s.offers, want)
		if want := []uint16{0, 0, 0}; !slices.Equal(s.published, want) {
			require.FailNow(t, fmt.Sprintf("published cidx seen %v, want %v", s.published, want))
		}
	})
}

func TestStallThenRestart(t *testing.T) {
	s := &scripted{steps: []int{0}, rest: all}
	r := newScripted(t, 8, s)
	mustEnqueue(t, r, []int{10, 11, 12}, 32, false)
	// prev IDLE → starts++; drain returns 0 and prev != STALLED → stalls++.
	wantStats(t, r, Stats{Enqueues: 3, Starts: 1, Stalls: 1})
	wantState(t, r, State{3, 3, 0, Stalled})
	require.True(t, r.IsStalled(), "IsStalled %v IsIdle %v, want true false", r.IsStalled(), r.IsIdle())
	require.False(t, r.IsIdle(), "IsStalled %v IsIdle %v, want true false", r.IsStalled(), r.IsIdle())

	// can_drain says no: nothing happens.
	r.CheckDrainage(32)
	require.Equal(t, 1, s.calls, "calls %d canCalls %d, want 1 1", s.calls, s.canCalls)
	require.Equal(t, 1, s.canCalls, "calls %d canCalls %d, want 1 1", s.calls, s.canCalls)
	wantState(t, r, State{3, 3, 0, Stalled})

	// can_drain says yes: drain from STALLED, no start; leaving IDLE after
	// prev == STALLED → restarts++.
	s.can = true
	r.CheckDrainage(32)
	wantGot(t, s, 10, 11, 12)
	wantStats(t, r, Stats{Enqueues: 3, Starts: 1, Stalls: 1, Restarts: 1})
	wantState(t, r, State{3, 3, 3, Idle})

	// An idle ring is not touched by CheckDrainage.
	r.CheckDrainage(32)
	require.Equal(t, 2, s.calls, "calls %d, want 2", s.calls)
}

func TestEnqueueRestartsStalledRing(t *testing.T) {
	s := &scripted{steps: []int{0}, rest: all}
	r := newScripted(t, 8, s)
	mustEnqueue(t, r, []int{1}, 32, false)
	wantStats(t, r, Stats{Enqueues: 1, Starts: 1, Stalls: 1})
	// A producer without abdicate finds STALLED (not BUSY): it becomes
	// the consumer with prev == STALLED, so no start, and a restart when
	// it leaves IDLE. can_drain is not consulted on this path.
	mustEnqueue(t, r, []int{2}, 32, false)
	wantGot(t, s, 1, 2)
	wantStats(t, r, Stats{Enqueues: 2, Starts: 1, Stalls: 1, Restarts: 1})
	require.Zero(t, s.canCalls, "canCalls %d, want 0", s.canCalls)
}

func TestDrainStallsTwice(t *testing.T) {
	s := &scripted{steps: []int{0, 0, 1, 0}, rest: 1, can: true}
	r := newScripted(t, 8, s)
	mustEnqueue(t, r, []int{1, 2, 3, 4}, 32, false)
	wantStats(t, r, Stats{Enqueues: 4, Starts: 1, Stalls: 1})

	// Stall after a stall with nothing consumed: counts nothing.
	r.CheckDrainage(32)
	wantStats(t, r, Stats{Enqueues: 4, Starts: 1, Stalls: 1})
	wantState(t, r, State{4, 4, 0, Stalled})

	// Consume one, then stall: prev == STALLED and total > 0 →
	// restarts++ and stalls++.
	r.CheckDrainage(32)
	wantStats(t, r, Stats{Enqueues: 4, Starts: 1, Stalls: 2, Restarts: 1})
	wantState(t, r, State{4, 4, 1, Stalled})

	// Consume the rest one per call; leave IDLE after prev == STALLED →
	// restarts++.
	r.CheckDrainage(32)
	wantStats(t, r, Stats{Enqueues: 4, Starts: 1, Stalls: 2, Restarts: 2})
	wantState(t, r, State{4, 4, 4, Idle})
	wantGot(t, s, 1, 2, 3, 4)
	require.Equal(t, 7, s.calls, "calls %d, want 7", s.calls)
}

func TestFullRingDrops(t *testing.T) {
	// size 4 → usable capacity 2 (space_available is size−1 minus the
	// slots in use, and enqueue needs n < space).
	s := &scripted{rest: 0}
	r := newScripted(t, 4, s)
	require.NoError(t, r.EnqueueOne(1, 32, false))
	wantStats(t, r, Stats{Enqueues: 1, Starts: 1, Stalls: 1})
	require.NoError(t, r.EnqueueOne(2, 32, false))
	// Second producer drained from STALLED and stalled again at once.
	wantStats(t, r, Stats{Enqueues: 2, Starts: 1, Stalls: 1})
	wantState(t, r, State{2, 2, 0, Stalled})

	// Full: drops += n, and a STALLED ring gets check_drainage(0), which
	// asks can_drain (no).
	err := r.EnqueueOne(3, 32, false)
	require.ErrorIs(t, err, ErrFull, "EnqueueOne into full ring: %v, want ErrFull", err)
	err = r.Enqueue([]int{4, 5}, 32, true)
	require.ErrorIs(t, err, ErrFull, "Enqueue into full ring: %v, want ErrFull", err)
	wantStats(t, r, Stats{Enqueues: 2, Drops: 3, Starts: 1, Stalls: 1})
	require.Equal(t, 2, s.canCalls, "canCalls %d calls %d, want 2 2", s.canCalls, s.calls)
	require.Equal(t, 2, s.calls, "canCalls %d calls %d, want 2 2", s.canCalls, s.calls)

	// Resources come back. The failing enqueue's check_drainage(0) drains
	// with budget 0: cidx is published after every call (so the second
	// call sees cidx 1), flags stay BUSY while no producer is
	// mid-reservation, and leaving IDLE after STALLED → restarts++. The
	// item itself is still dropped.
	s.can, s.rest = true, 1
	err = r.EnqueueOne(6, 32, false)
	require.ErrorIs(t, err, ErrFull, "EnqueueOne: %v, want ErrFull", err)
	wantGot(t, s, 1, 2)
	want := []uint16{0, 0, 0, 1}
	require.True(t, slices.Equal(s.published, want), "published cidx seen %v, want %v", s.published, want)
	wantStats(t, r, Stats{Enqueues: 2, Drops: 4, Starts: 1, Stalls: 1, Restarts: 1})
	wantState(t, r, State{2, 2, 2, Idle})

	require.NoError(t, r.EnqueueOne(7, 32, false))
	wantStats(t, r, Stats{Enqueues: 3, Drops: 4, Starts: 2, Stalls: 1, Restarts: 1})
}

func TestAbdicateThenCheckDrainage(t *testing.T) {
	s := &scripted{rest: all}
	r := newScripted(t, 8, s)
	mustEnqueue(t, r, []int{1, 2, 3}, 32, true)
	// IDLE → ABDICATED, and the producer never drains.
	wantStats(t, r, Stats{Enqueues: 3})
	wantState(t, r, State{3, 3, 0, Abdicated})
	require.Zero(t, s.calls, "calls %d idle %v stalled %v", s.calls, r.IsIdle(), r.IsStalled())
	require.False(t, r.IsIdle(), "calls %d idle %v stalled %v", s.calls, r.IsIdle(), r.IsStalled())
	require.False(t, r.IsStalled(), "calls %d idle %v stalled %v", s.calls, r.IsIdle(), r.IsStalled())
	// ABDICATED stays ABDICATED under another abdicating producer.
	require.NoError(t, r.EnqueueOne(4, 32, true))
	wantState(t, r, State{4, 4, 0, Abdicated})

	// check_drainage picks it up without asking can_drain; draining
	// after ABDICATED counts no start, and abdications counts only
	// consumers that abdicate.
	r.CheckDrainage(32)
	wantGot(t, s, 1, 2, 3, 4)
	wantStats(t, r, Stats{Enqueues: 4})
	wantState(t, r, State{4, 4, 4, Idle})
	require.Zero(t, s.canCalls, "canCalls %d calls %d, want 0 1", s.canCalls, s.calls)
	require.Equal(t, 1, s.calls, "canCalls %d calls %d, want 0 1", s.canCalls, s.calls)

	// A producer without abdicate takes over an ABDICATED ring inline,
	// again without a start.
	require.NoError(t, r.EnqueueOne(5, 32, true))
	require.NoError(t, r.EnqueueOne(6, 32, false))
	wantGot(t, s, 1, 2, 3, 4, 5, 6)
	wantStats(t, r, Stats{Enqueues: 6})
}

func TestAbdicatingProducerLeavesStalledRing(t *testing.T) {
	s := &scripted{steps: []int{0}, rest: all, can: true}
	r := newScripted(t, 8, s)
	mustEnqueue(t, r, []int{1}, 32, false)
	require.NoError(t, r.EnqueueOne(2, 32, true))
	wantState(t, r, State{2, 2, 0, Stalled})
	r.CheckDrainage(32)
	wantGot(t, s, 1, 2)
	wantStats(t, r, Stats{Enqueues: 2, Starts: 1, Stalls: 1, Restarts: 1})
}

func TestBudgetOnlyMattersMidReservation(t *testing.T) {
	// With no producer mid-reservation, a consumer over budget publishes
	// after every call but stays BUSY and drains everything.
	s := &scripted{rest: 1}
	r := newScripted(t, 16, s)
	mustEnqueue(t, r, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 2, false)
	wantGot(t, s, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	wantStats(t, r, Stats{Enqueues: 10, Starts: 1})
	// Nothing published before total reaches the budget (after call 2).
	want := []uint16{0, 0, 2, 3, 4, 5, 6, 7, 8, 9}
	require.True(t, slices.Equal(s.published, want), "published cidx seen %v, want %v", s.published, want)
}

func TestPublishEvery64(t *testing.T) {
	s := &scripted{rest: 1}
	r := newScripted(t, 256, s)
	items := make([]int, 200)
	mustEnqueue(t, r, items, 1000, false)
	require.Equal(t, 200, s.calls, "calls %d, want 200", s.calls)
	for k, c := range s.published {
		want := uint16(k / publishBatch * publishBatch)
		require.Equal(t, want, c, "call %d saw published cidx %d, want %d", k, c, want)
	}
	wantState(t, r, State{200, 200, 200, Idle})
}

func TestWrapAroundOddSize(t *testing.T) {
	// size 5 is not a power of two: increment_idx wraps by comparison.
	// Many cycles with uneven batches and uneven drains; items come out
	// once each, in order, and consumed slots are zeroed.
	steps := []int{1, 3, 2, 0, 2, 1}
	var next int
	s := &scripted{can: true}
	r := newScripted(t, 5, s)
	want := 1
	for round := range 400 {
		s.steps = append(s.steps[:0], steps[round%len(steps)], all)
		n := 1 + round%3
		batch := make([]int, n)
		for i := range batch {
			next++
			batch[i] = next
		}
		if err := r.Enqueue(batch, 32, round%4 == 0); err != nil {
			require.ErrorIs(t, err, ErrFull, err)
			next -= n
		}
		r.CheckDrainage(32)
		for _, v := range s.got {
			require.Equal(t, want, v, "round %d: got %d, want %d", round, v, want)
			want++
		}
		s.got = s.got[:0]
	}
	require.True(t, r.IsIdle(), "ring not idle at end: %v", r.State())
	for i := range r.Size() {
		require.Zero(t, r.At(i), "slot %d not zeroed: %d", i, r.At(i))
	}
	st := r.Stats()
	require.Equal(t, uint64(next), st.Enqueues, "stats %+v with %d enqueued", st, next)
	require.LessOrEqual(t, st.Restarts, st.Stalls, "stats %+v with %d enqueued", st, next)
}
