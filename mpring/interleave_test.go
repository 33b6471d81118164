package mpring

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTwoProducersOneAbdication holds producer B between its reservation and
// its publication (the window FreeBSD closes with critical_enter) while
// producer A, as consumer, spends its budget. A must abdicate exactly once,
// and B, on publishing, must take over the ABDICATED ring (no start) or, when
// B abdicates too, leave it for CheckDrainage.
func TestTwoProducersOneAbdication(t *testing.T) {
	for _, bAbdicates := range []bool{false, true} {
		name := "B drains inline"
		if bAbdicates {
			name = "B abdicates, CheckDrainage drains"
		}
		t.Run(name, func(t *testing.T) {
			reserved := make(chan struct{})
			release := make(chan struct{})
			bDone := make(chan error)
			var r *Ring[int]
			var got []int
			var seen []State
			calls := 0
			drain := func(r *Ring[int], cidx, pidx int) int {
				calls++
				if calls == 1 {
					// A is the consumer; start B and wait until
					// it holds a reservation.
					go func() { bDone <- r.EnqueueOne(3, 32, bAbdicates) }()
					<-reserved
				}
				got = append(got, r.At(cidx))
				return 1
			}
			r, err := New(8, drain, func(*Ring[int]) bool { return true })
			require.NoError(t, err)
			r.testHookReserved = func() {
				if r.State().PidxHead == 3 { // B's reservation [2, 3)
					reserved <- struct{}{}
					<-release
				}
			}

			// A: two items, budget 1. After consuming one, total ≥
			// budget with B mid-reservation (pidx_tail 2 != pidx_head 3)
			// and work left (cidx 1 != pidx_tail 2): ABDICATED.
			mustEnqueue(t, r, []int{1, 2}, 1, false)
			seen = append(seen, r.State())
			want := (State{3, 2, 1, Abdicated})
			require.Equal(t, want, seen[0], "after A: %v, want %v", seen[0], want)
			wantStats(t, r, Stats{Enqueues: 2, Starts: 1, Abdications: 1})

			close(release)
			require.NoError(t, <-bDone)
			if bAbdicates {
				// B leaves ABDICATED alone and does not drain.
				wantState(t, r, State{3, 3, 1, Abdicated})
				r.CheckDrainage(32)
			}
			require.True(t, slices.Equal(got, []int{1, 2, 3}), "consumed %v, want [1 2 3]", got)
			wantState(t, r, State{3, 3, 3, Idle})
			// The take-over after ABDICATED counts no start and no
			// second abdication.
			wantStats(t, r, Stats{Enqueues: 3, Starts: 1, Abdications: 1})
		})
	}
}
