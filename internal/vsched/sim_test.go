package vsched

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// word is a shared variable whose every access is a scheduling point, as
// internal/shm's are under the build tag.
type word struct{ v int }

func (w *word) load() int   { Point(OpLoad, addrOf(w)); return w.v }
func (w *word) store(v int) { Point(OpStore, addrOf(w)); w.v = v }

// addrOf gives each test word a distinct fake address on its own line.
var addrs = map[*word]uintptr{}

func addrOf(w *word) uintptr {
	a, ok := addrs[w]
	if !ok {
		a = uintptr(len(addrs)+1) * 64
		addrs[w] = a
	}
	return a
}

// racyIncrements is the lost update: two threads each load and store a
// counter k times without a lock.
func racyIncrements(k int) Setup {
	return func(s *Sim) func() error {
		w := &word{}
		for range 2 {
			s.Go(func() {
				for range k {
					w.store(w.load() + 1)
				}
			})
		}
		return func() error {
			if w.v != 2*k {
				return fmt.Errorf("counter %d, want %d", w.v, 2*k)
			}
			return nil
		}
	}
}

func TestExhaustiveCountsInterleavings(t *testing.T) {
	// Two threads of k+1 steps each (the start and k accesses): with no
	// bound on preemptions every interleaving runs once, C(2k+2, k+1).
	for k, want := range map[int]int{1: 6, 2: 20, 3: 70} {
		setup := func(s *Sim) func() error {
			a, b := &word{}, &word{}
			s.Go(func() {
				for range k {
					a.load()
				}
			})
			s.Go(func() {
				for range k {
					b.load()
				}
			})
			return nil
		}
		rep, err := Exhaustive(Config{}, 1<<20, 0, setup)
		require.NoError(t, err)
		assert.True(t, rep.Complete)
		assert.Equal(t, want, rep.Schedules, "k=%d", k)
	}
}

func TestExhaustiveFindsLostUpdateAndReplays(t *testing.T) {
	// Without preemption each thread runs to completion: no lost update.
	rep, err := Exhaustive(Config{}, 0, 0, racyIncrements(2))
	require.NoError(t, err)
	assert.True(t, rep.Complete)

	// One preemption (between a load and its store) loses an update.
	_, err = Exhaustive(Config{}, 1, 0, racyIncrements(2))
	var f *Failure
	require.ErrorAs(t, err, &f)
	assert.Contains(t, f.Error(), "counter 2, want 4")
	assert.NotEmpty(t, f.Schedule)

	// The schedule string replays the failure exactly.
	pol, err := Replay(f.Schedule)
	require.NoError(t, err)
	_, err = Run(Config{}, pol, racyIncrements(2))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "counter 2, want 4")
}

func TestRandomIsDeterministic(t *testing.T) {
	var last []string
	for range 2 {
		var got []string
		for seed := range uint64(20) {
			res, _ := Run(Config{}, Random(seed, 0.5), racyIncrements(3))
			got = append(got, res.Schedule)
		}
		if last != nil {
			assert.Equal(t, last, got)
		}
		last = got
	}
	// Random schedules find the lost update too, and the seed replays it.
	_, err := RandomSchedules(Config{}, 1, 200, 0.3, racyIncrements(3))
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.True(t, f.HasSeed)
	_, err = Run(Config{}, Random(f.Seed, 0.3), racyIncrements(3))
	require.Error(t, err)
}

func TestDeadlockAndPanicAreFailures(t *testing.T) {
	_, err := Run(Config{}, Random(1, 0), func(s *Sim) func() error {
		s.Go(func() { Block(1) })
		return nil
	})
	assert.ErrorIs(t, err, ErrDeadlock)

	_, err = Run(Config{}, Random(1, 0), func(s *Sim) func() error {
		w := &word{}
		s.Go(func() { w.load(); panic("boom") })
		s.Go(func() { w.load(); Block(2) })
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")

	_, err = Run(Config{MaxSteps: 100}, Random(1, 0), func(s *Sim) func() error {
		w := &word{}
		s.Go(func() {
			for w.load() == 0 {
				Yield()
			}
		})
		return nil
	})
	assert.ErrorIs(t, err, ErrStepLimit)
}

func TestBlockWake(t *testing.T) {
	// A flag and a wake-up: the waiter re-checks after Block, so no
	// schedule loses the wake-up (the check would deadlock otherwise).
	rep, err := Exhaustive(Config{}, 3, 0, func(s *Sim) func() error {
		flag := &word{}
		s.Go(func() {
			for flag.load() == 0 {
				Block(addrOf(flag))
			}
		})
		s.Go(func() {
			flag.store(1)
			Wake(addrOf(flag))
		})
		return nil
	})
	require.NoError(t, err)
	assert.True(t, rep.Complete)

	// Waking before storing loses it in some schedule: a deadlock.
	_, err = Exhaustive(Config{}, 3, 0, func(s *Sim) func() error {
		flag := &word{}
		s.Go(func() {
			for flag.load() == 0 {
				Block(addrOf(flag))
			}
		})
		s.Go(func() {
			Wake(addrOf(flag))
			flag.store(1)
		})
		return nil
	})
	assert.True(t, errors.Is(err, ErrDeadlock), "%v", err)
}

var testCosts = Costs{Name: "test", L1: 1, Locked: 10, XferCore: 50, XferCCX: 200, Fill: 100, CCXSize: 2, Yield: 30, ContextSwitch: 150, Wake: 1000}

func TestCostModel(t *testing.T) {
	rmwLoop := func(n int, same bool) Setup {
		return func(s *Sim) func() error {
			for i := range 2 {
				a := uintptr(4096)
				if !same {
					a += uintptr(i) * 64
				}
				s.Go(func() {
					for range n {
						Point(OpRMW, a)
					}
				})
			}
			return nil
		}
	}
	// Private lines: one fill each, then locked hits, in parallel.
	res, err := Run(Config{Costs: &testCosts}, Timed(1), rmwLoop(10, false))
	require.NoError(t, err)
	assert.InDelta(t, 100+10*10, res.Time, 1e-9)
	assert.Equal(t, 18, res.Hits)

	// One shared line, two CPUs of one CCX: the line moves on (nearly)
	// every access and the accesses serialise: 2n accesses of transfer +
	// locked op each, less the first fill's difference.
	res, err = Run(Config{Costs: &testCosts}, Timed(1), rmwLoop(10, true))
	require.NoError(t, err)
	assert.Equal(t, 19, res.Transfers)
	assert.InDelta(t, 100+10+19*(50+10), res.Time, 1e-9)

	// Across CCXs (CPUs 0 and 2 of 4 with CCXSize 2): dearer transfers.
	far := testCosts
	far.CCXSize = 1
	res, err = Run(Config{Costs: &far}, Timed(1), rmwLoop(10, true))
	require.NoError(t, err)
	assert.InDelta(t, 100+10+19*(200+10), res.Time, 1e-9)
}

func TestTimeSharing(t *testing.T) {
	// Two threads on one CPU: a spinning waiter and the thread it waits
	// for. Without yields the waiter would spin until the step limit; with
	// them the CPU switches (a context switch each way).
	res, err := Run(Config{CPUs: 1, Costs: &testCosts}, Timed(1), func(s *Sim) func() error {
		flag := &word{}
		s.Go(func() {
			for flag.load() == 0 {
				Yield()
			}
		})
		s.Go(func() { flag.store(1) })
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, res.Time, 2*testCosts.ContextSwitch)
}

func TestPresetsTopology(t *testing.T) {
	// On Turin two CPUs of one CCD pass a contended line faster than two
	// of different CCDs; the presets are complete (no zero cost but
	// CCXSize on this machine).
	pingPong := func(a, b int) Setup {
		return func(s *Sim) func() error {
			for _, c := range []int{a, b} {
				s.GoOn(c, func() {
					for range 50 {
						Point(OpRMW, 4096)
					}
				})
			}
			return nil
		}
	}
	near, err := Run(Config{Costs: &Turin}, Timed(1), pingPong(0, 1))
	require.NoError(t, err)
	far, err := Run(Config{Costs: &Turin}, Timed(1), pingPong(0, 8))
	require.NoError(t, err)
	assert.Less(t, near.Time, far.Time)
	// Every access but the first moves the line and then locks it.
	assert.InDelta(t, (Turin.XferCCX+Turin.Locked)/(Turin.XferCore+Turin.Locked), (far.Time-Turin.Fill)/(near.Time-Turin.Fill), 0.05)
	for _, c := range []Costs{ThisMachine, Turin} {
		for name, v := range map[string]float64{"L1": c.L1, "Locked": c.Locked, "XferCore": c.XferCore, "XferCCX": c.XferCCX,
			"Fill": c.Fill, "Yield": c.Yield, "ContextSwitch": c.ContextSwitch, "Wake": c.Wake, "Quantum": c.Quantum} {
			assert.Positive(t, v, "%s.%s", c.Name, name)
		}
	}
}
