//go:build goiflib_vsched

package mpring

import (
	"errors"
	"fmt"
	"testing"

	"github.com/goiflib/goiflib/internal/shm"
	"github.com/goiflib/goiflib/internal/vsched"
	"github.com/goiflib/goiflib/internal/vsched/vschedtest"
)

// Interleaving exploration of the ring under the virtual scheduler
// (internal/vsched): every atomic operation on the state word and the
// counters is a scheduling point, and the explorer enumerates the orders in
// which producers, the consumer they become and CheckDrainage can run them.
//
//	go test -tags goiflib_vsched -run '^TestExplore' -v ./mpring/
//
// runs the bounded budget CI runs. Longer runs:
//
//	VSCHED_PREEMPTIONS=4 VSCHED_SCHEDULES=0 VSCHED_RANDOM=100000 \
//	    go test -tags goiflib_vsched -run '^TestExplore' -v -timeout 0 ./mpring/
//
// (0 schedules: no cap on the exhaustive mode). A failure prints the
// schedule string (and, for random runs, the seed); VSCHED_REPLAY=<string>
// with -run naming the case runs just that schedule.

// exploreCase is one small configuration of the ring.
type exploreCase struct {
	name      string
	size      int  // slots (usable size−2)
	producers int  // goroutines calling EnqueueOne
	items     int  // items per producer
	budget    int  // drain budget passed to Enqueue
	abdicate  bool // producers abdicate; a TX task thread drains
	perCall   int  // items the drain callback takes per call
	stallOnce bool // the first drain call returns 0 (STALLED)
}

func (c exploreCase) total() int { return c.producers * c.items }

// setup builds one run of c: the ring, the producers and (with abdicate)
// a TX task thread, and the check of the invariants after they finish.
func (c exploreCase) setup(s *vsched.Sim) func() error {
	var (
		inDrain  bool
		calls    shm.Uint64 // a scheduling point inside the drain callback
		stalled  bool
		got      []int
		overlap  error
		done     shm.Uint64 // producers finished
		drops    int
		accepted int
	)
	drain := func(r *Ring[int], cidx, pidx int) int {
		if inDrain {
			overlap = errors.New("two goroutines in the drain callback at once")
		}
		inDrain = true
		defer func() { inDrain = false }()
		calls.Add(1)
		if c.stallOnce && !stalled {
			stalled = true
			return 0
		}
		n := min(r.IdxDiff(pidx, cidx), c.perCall)
		for i, k := cidx, 0; k < n; i, k = r.IncrementIdx(i, 1), k+1 {
			got = append(got, r.At(i))
		}
		return n
	}
	r, err := New(c.size, drain, func(*Ring[int]) bool { return true })
	if err != nil {
		panic(err)
	}
	for p := range c.producers {
		s.Go(func() {
			for k := range c.items {
				v := p*1000 + k
				for {
					err := r.EnqueueOne(v, c.budget, c.abdicate)
					if err == nil {
						accepted++
						break
					}
					if !errors.Is(err, ErrFull) {
						panic(err)
					}
					drops++
					// iflib_if_transmit's full-ring path: offer a
					// restart, then try again later.
					r.CheckDrainage(c.budget)
					shm.Yield()
				}
			}
			done.Add(1)
		})
	}
	if c.abdicate {
		// iflib's TX task: picks up ABDICATED (and STALLED) rings until
		// every producer has finished and the ring is idle.
		s.Go(func() {
			for done.Load() != uint64(c.producers) || !r.IsIdle() {
				r.CheckDrainage(c.budget)
				shm.Yield()
			}
		})
	}
	return func() error {
		if overlap != nil {
			return overlap
		}
		if c.stallOnce && r.IsStalled() {
			// A stall leaves items for CheckDrainage (the TX task's
			// job in iflib); run it now, outside the schedule.
			r.CheckDrainage(c.size)
		}
		st := r.State()
		if !r.IsIdle() {
			return fmt.Errorf("stranded: ring not idle after every producer returned: %v (consumed %d of %d)", st, len(got), c.total())
		}
		if len(got) != c.total() {
			return fmt.Errorf("consumed %d items, produced %d: %v", len(got), c.total(), got)
		}
		next := make([]int, c.producers)
		for _, v := range got {
			p, k := v/1000, v%1000
			if k != next[p] {
				return fmt.Errorf("producer %d: consumed item %d, want %d (lost, duplicated or out of order): %v", p, k, next[p], got)
			}
			next[p]++
		}
		want := Stats{Enqueues: uint64(accepted), Drops: uint64(drops)}
		if got := r.Stats(); got.Enqueues != want.Enqueues || got.Drops != want.Drops {
			return fmt.Errorf("stats %+v, want enqueues %d drops %d", got, want.Enqueues, want.Drops)
		}
		if accepted != c.total() {
			return fmt.Errorf("accepted %d, want %d", accepted, c.total())
		}
		return nil
	}
}

var exploreCases = []exploreCase{
	{name: "2x2/size4/budget1", size: 4, producers: 2, items: 2, budget: 1, perCall: 1},
	// Room for every item: no ErrFull, so no CheckDrainage on the full
	// path rescues an item a wrong hand-off strands.
	{name: "2x2/size6/budget1", size: 6, producers: 2, items: 2, budget: 1, perCall: 1},
	{name: "3x1/size4/budget1", size: 4, producers: 3, items: 1, budget: 1, perCall: 1},
	{name: "2x2/size3/full", size: 3, producers: 2, items: 2, budget: 32, perCall: 2},
	{name: "2x2/size5/abdicate", size: 5, producers: 2, items: 2, budget: 1, perCall: 1, abdicate: true},
	{name: "2x2/size4/stall", size: 4, producers: 2, items: 2, budget: 1, perCall: 1, stallOnce: true},
}

// TestExploreExhaustive runs every schedule of each small case with at most
// VSCHED_PREEMPTIONS (default 3) preemptions, capped at VSCHED_SCHEDULES
// (default 100000, 0 for no cap) per case.
func TestExploreExhaustive(t *testing.T) {
	for _, c := range exploreCases {
		t.Run(c.name, func(t *testing.T) { vschedtest.Exhaustive(t, "mpring "+c.name, 3, c.setup) })
	}
}

// TestExploreRandom runs VSCHED_RANDOM (default 2000) seeded random
// schedules of a larger case: 4 producers of 16 items on a ring of 8 slots.
func TestExploreRandom(t *testing.T) {
	for _, c := range []exploreCase{
		{name: "4x16/size8/budget4", size: 8, producers: 4, items: 16, budget: 4, perCall: 3},
		{name: "4x16/size8/abdicate", size: 8, producers: 4, items: 16, budget: 4, perCall: 3, abdicate: true},
	} {
		t.Run(c.name, func(t *testing.T) { vschedtest.Random(t, "mpring "+c.name, 2000, c.setup) })
	}
}
