package mpring

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// all, as a script step, consumes everything the drain callback is offered.
const all = -1

// scripted is a drain/can-drain pair for single-goroutine tests. Each drain
// call pops the next step (all, or consume min(step, offered); 0 stalls);
// once the script is used up, rest applies. It records what it consumed and
// the published cidx it saw on entry to each call.
type scripted struct {
	steps     []int
	rest      int
	can       bool
	calls     int
	canCalls  int
	got       []int
	offers    [][2]int
	published []uint16
}

func (s *scripted) drain(r *Ring[int], cidx, pidx int) int {
	s.calls++
	s.offers = append(s.offers, [2]int{cidx, pidx})
	s.published = append(s.published, r.State().Cidx)
	step := s.rest
	if len(s.steps) > 0 {
		step, s.steps = s.steps[0], s.steps[1:]
	}
	avail := r.IdxDiff(pidx, cidx)
	if step == all || step > avail {
		step = avail
	}
	for i, k := cidx, 0; k < step; i, k = r.IncrementIdx(i, 1), k+1 {
		s.got = append(s.got, r.At(i))
	}
	return step
}

func (s *scripted) canDrain(*Ring[int]) bool {
	s.canCalls++
	return s.can
}

func newScripted(t *testing.T, size int, s *scripted) *Ring[int] {
	t.Helper()
	r, err := New(size, s.drain, s.canDrain)
	require.NoError(t, err, "New(%d)", size)
	return r
}

func wantStats(t *testing.T, r *Ring[int], want Stats) {
	t.Helper()
	require.Equal(t, want, r.Stats(), "Stats()")
}

func wantState(t *testing.T, r *Ring[int], want State) {
	t.Helper()
	require.Equal(t, want, r.State(), "State()")
}

func wantGot(t *testing.T, s *scripted, want ...int) {
	t.Helper()
	require.Equal(t, want, s.got, "consumed")
}

func mustEnqueue(t *testing.T, r *Ring[int], items []int, budget int, abdicate bool) {
	t.Helper()
	require.NoError(t, r.Enqueue(items, budget, abdicate), "Enqueue(%v, %d, %v)", items, budget, abdicate)
}
