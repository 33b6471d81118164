package main

import (
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func stat(xs ...float64) Stat { return newStat(xs) }

func TestNewStat(t *testing.T) {
	s := stat(3, 1, 2)
	assert.Equal(t, []float64{3, 1, 2}, s.Samples, "samples stay in round order")
	assert.Equal(t, 2.0, s.Median)
	assert.Equal(t, 1.0, s.Min)
	assert.Equal(t, 3.0, s.Max)
	assert.Equal(t, 2.5, stat(4, 1, 3, 2).Median)
	assert.True(t, math.IsNaN(stat().Median))
}

// TestCIIndex checks the order statistics of the median's interval
// against the binomial tails by hand.
func TestCIIndex(t *testing.T) {
	for _, tc := range []struct {
		n     int
		alpha float64
		want  int
	}{
		{3, 1.0 / 8, 0},   // P(X ≤ 0) = 1/8 > 1/16: no interval from 3 rounds
		{4, 1.0 / 8, 1},   // P(X ≤ 0) = 1/16
		{7, 1.0 / 8, 2},   // P(X ≤ 1) = 8/128 = 1/16: [x(2), x(6)], the 87.5 % interval
		{7, 1.0 / 48, 1},  // P(X ≤ 0) = 1/128 ≤ 1/96 < P(X ≤ 1)
		{14, 1.0 / 48, 3}, // P(X ≤ 2) = 106/16384 ≤ 1/96 < P(X ≤ 3) = 470/16384
		{1, 1.0 / 8, 0},
	} {
		assert.Equal(t, tc.want, ciIndex(tc.n, tc.alpha), "n=%d alpha=%v", tc.n, tc.alpha)
	}
	lo, hi := medianCI([]float64{7, 1, 6, 2, 5, 3, 4}, 1.0/8)
	assert.Equal(t, 2.0, lo)
	assert.Equal(t, 6.0, hi)
	lo, hi = medianCI([]float64{1, 2, 3}, 1.0/8)
	assert.True(t, math.IsNaN(lo) && math.IsNaN(hi))
}

// TestMDE: with 7 rounds and the 87.5 % interval (6 of 7 must agree) a
// round must agree with probability 0.88 for 80 % power, an effect of
// 1.17 σ; more rounds detect less, and the figure scales with σ.
func TestMDE(t *testing.T) {
	m := mdeLog(7, 1, 1.0/8, 0.8)
	assert.InDelta(t, 1.17, m, 0.02)
	assert.InDelta(t, 2*m, mdeLog(7, 2, 1.0/8, 0.8), 1e-9)
	assert.Less(t, mdeLog(28, 1, 1.0/8, 0.8), m)
	assert.Less(t, mdeLog(112, 1, 1.0/8, 0.8), mdeLog(28, 1, 1.0/8, 0.8))
	assert.True(t, math.IsInf(mdeLog(3, 1, 1.0/8, 0.8), 1), "3 rounds give no interval")
	assert.True(t, math.IsNaN(mdeLog(7, math.NaN(), 1.0/8, 0.8)))
}

func TestSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 4000)
	for i := range xs {
		xs[i] = 0.05 * r.NormFloat64()
	}
	assert.InDelta(t, 0.05, spread(xs), 0.003)
	assert.InDelta(t, math.Sqrt(0.5), spread([]float64{1, 1, 1, 2, 0}), 1e-9)
	assert.True(t, math.IsNaN(spread([]float64{1, 2})))
}

func TestLooks(t *testing.T) {
	assert.Equal(t, []int{7, 14, 28, 56, 112, 224}, looks(7, 224))
	assert.Equal(t, []int{7, 14}, looks(7, 20))
	assert.Equal(t, []int{3}, looks(3, 3))
	ru := newRule(7, 224)
	assert.InDelta(t, 1.0/48, ru.LevelPerLook, 1e-12)
	assert.True(t, ru.isLook(28))
	assert.False(t, ru.isLook(21))
}

// rounds returns n per-round values around level×(1+effect) with a
// deterministic spread of sd (relative), for the rule tests.
func rounds(n int, level, effect, sd float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = level * (1 + effect) * math.Exp(sd*r.NormFloat64())
	}
	return out
}

func TestJudgeGain(t *testing.T) {
	ru := newRule(7, 224)
	w := rounds(28, 100, 0, 0.001, 1)
	spec := cmpSpec{name: "x", better: "b", worse: "w", metric: MMpps, freebsd: []float64{1.10}, need: 1, cpus: 2}

	// 10 % better in every round, as FreeBSD: holds, with its size.
	c := ru.judge(spec, rounds(28, 110, 0, 0.001, 2), w, nil, nil, nil)
	assert.Equal(t, Holds, c.Outcome)
	assert.Equal(t, "agrees", c.Size)
	assert.Equal(t, 28, c.Agree)
	assert.InDelta(t, 1.1, c.Advantage.Median, 0.01)
	assert.Greater(t, float64(c.Lo), 1.0)
	assert.True(t, c.Decides)
	assert.Less(t, float64(c.MDE), 0.01, "this little noise detects less than 1 %")

	// 60 % better: holds, but beyond twice FreeBSD's effect.
	c = ru.judge(spec, rounds(28, 160, 0, 0.001, 2), w, nil, nil, nil)
	assert.Equal(t, Holds, c.Outcome)
	assert.Equal(t, "differs", c.Size)

	// No difference, little noise: the interval excludes +5 % (half of
	// FreeBSD's): refuted.
	c = ru.judge(spec, rounds(28, 100, 0, 0.01, 3), w, nil, nil, nil)
	assert.Equal(t, Refuted, c.Outcome)
	assert.Less(t, float64(c.Hi), 1.05)

	// No difference, much noise (rounds alternately 30 % below and 40 %
	// above): neither.
	noisy := make([]float64, 28)
	for i := range noisy {
		noisy[i] = []float64{70, 140}[i%2]
	}
	c = ru.judge(spec, noisy, w, nil, nil, nil)
	assert.Equal(t, Undecided, c.Outcome)
	assert.Greater(t, float64(c.MDE), 0.05)

	// cpu-ns/pkt: lower is better, and on iflib's share the raw loop's
	// cost comes off both: 200 against 150 over a raw 100 is +100 %.
	cspec := cmpSpec{name: "y", better: "b", worse: "w", metric: MCPU, basis: "iflib", freebsd: []float64{1.5, 2}, need: 1, cpus: 1}
	c = ru.judge(cspec, rounds(14, 150, 0, 0.001, 5), rounds(14, 200, 0, 0.001, 6), rounds(14, 100, 0, 0.001, 7), nil, nil)
	assert.Equal(t, "iflib", c.Basis)
	assert.InDelta(t, 2, c.Advantage.Median, 0.02)
	assert.InDelta(t, 50, float64(c.SavedNs), 1)
	assert.Equal(t, Holds, c.Outcome)

	// Rounds of later blocks, which do not measure the raw loop, use its
	// median: here 100 against a first-block 100, 90 and 110.
	c = ru.judge(cspec, rounds(14, 150, 0, 0.001, 5), rounds(14, 200, 0, 0.001, 6), []float64{100, 90, 110}, nil, nil)
	assert.Equal(t, 14, c.Rounds)
	assert.InDelta(t, 2, c.Advantage.Median, 0.02)
	assert.InDelta(t, 110.0/60, c.Advantage.Samples[1], 0.01, "round 2 uses its own raw (90): (200-90)/(150-90)")
	c = ru.judge(cspec, rounds(14, 150, 0, 0.001, 5), rounds(14, 200, 0, 0.001, 6), nil, nil, nil)
	assert.Zero(t, c.Rounds, "no raw loop, no share")

	// Too few CPUs: information only, whichever way it came out.
	spec.need = 4
	c = ru.judge(spec, rounds(28, 110, 0, 0.001, 2), w, nil, []float64{1.4, 1.5, 1.4}, []float64{1.9, 2, 1.9})
	assert.False(t, c.Decides)
	assert.Equal(t, "needs 4 CPUs, had 2", c.Why)
	assert.InDelta(t, 1.4, float64(c.BusyBetter), 1e-9)
	spec.need, spec.info = 1, "for scale"
	c = ru.judge(spec, rounds(28, 110, 0, 0.001, 2), w, nil, nil, nil)
	assert.False(t, c.Decides)
	assert.Equal(t, "for scale", c.Why)
}

func TestJudgeBound(t *testing.T) {
	ru := newRule(7, 224)
	spec := cmpSpec{name: "z", better: "batched", worse: "per", metric: MCPU, bound: 1.03, freebsd: []float64{1.015}, need: 1, cpus: 1}
	per := rounds(28, 100, 0, 0.001, 1)
	c := ru.judge(spec, rounds(28, 101, 0, 0.002, 2), per, nil, nil, nil)
	assert.Equal(t, "bound", c.Kind)
	assert.Equal(t, Holds, c.Outcome, "1 %% within a bound of 3 %%")
	assert.InDelta(t, 1.01, c.Advantage.Median, 0.005)
	assert.Empty(t, c.Size)
	c = ru.judge(spec, rounds(28, 106, 0, 0.002, 3), per, nil, nil, nil)
	assert.Equal(t, Refuted, c.Outcome, "6 %% beyond it")
	c = ru.judge(spec, rounds(28, 103, 0, 0.1, 4), per, nil, nil, nil)
	assert.Equal(t, Undecided, c.Outcome, "3 %% with 10 %% noise: cannot tell")
}

func TestDecide(t *testing.T) {
	ru := newRule(7, 224)
	holds := Comparison{Name: "h", Decides: true, Outcome: Holds, Size: "agrees", Kind: "gain", FreeBSD: []float64{1.1}, Rounds: 14, Advantage: stat(1.1), Lo: 1.05, Hi: 1.15}
	differs := holds
	differs.Size = "differs"
	undecided := Comparison{Name: "u", Decides: true, Outcome: Undecided, Kind: "gain", FreeBSD: []float64{1.1}, Rounds: 224, Advantage: stat(1.02), Lo: 0.9, Hi: 1.1, MDE: 0.2}
	refuted := Comparison{Name: "r", Decides: true, Outcome: Refuted, Kind: "gain", FreeBSD: []float64{1.1}, Rounds: 28, Advantage: stat(0.8), Lo: 0.7, Hi: 0.9}
	info := Comparison{Name: "i", Decides: false, Outcome: Refuted, Why: "for scale", NeedCPUs: 1, CPUs: 1}
	excused := func(busyB, busyW float64) Comparison {
		return Comparison{Name: "e", Better: "drbr", Worse: "mpring", Decides: false, Outcome: Refuted, NeedCPUs: 4, CPUs: 2, Why: "needs 4 CPUs, had 2",
			BusyBetter: Num(busyB), BusyWorse: Num(busyW)}
	}

	for _, tc := range []struct {
		name string
		cs   []Comparison
		why  reasons
		want string
	}{
		{"all hold with the size", []Comparison{holds, info}, reasons{}, Reproduced},
		{"a size differs", []Comparison{holds, differs}, reasons{}, DirectionReproduced},
		{"one cannot tell", []Comparison{holds, undecided}, reasons{}, Inconclusive},
		{"one refuted wins over undecided", []Comparison{undecided, refuted, holds}, reasons{}, NotReproduced},
		{"only excused comparisons", []Comparison{excused(1.9, 2), info}, reasons{cpu: "why CPUs"}, NotOnTheseCPUs},
		{"excused and deciding", []Comparison{excused(1.9, 2), holds}, reasons{}, Reproduced},
		{"not here wins", []Comparison{holds}, reasons{here: "the model cannot", hereShort: "in this model"}, NotHere},
		{"nothing", []Comparison{info}, reasons{}, NotMeasured},
	} {
		v := ru.decide(tc.cs, false, tc.why)
		assert.Equal(t, tc.want, v.Result, tc.name)
		assert.NotEmpty(t, v.Short, tc.name)
		assert.NotEmpty(t, v.Why, tc.name)
	}
	assert.Equal(t, SmokeTest, ru.decide([]Comparison{holds}, true, reasons{}).Result, "-quick gives no verdict")

	v := ru.decide([]Comparison{undecided}, false, reasons{})
	assert.Contains(t, v.Short, "detects ≥+20.0 %")
	assert.Contains(t, v.Short, "FreeBSD +10.0 %")
	assert.Equal(t, 224, v.Rounds)

	// The excuse is tested against the run: kept where the favoured
	// variant was as busy as the other, contradicted where it idled.
	v = ru.decide([]Comparison{excused(1.9, 2)}, false, reasons{cpu: "why CPUs"})
	assert.Contains(t, v.Why, "as the excuse assumes")
	assert.Equal(t, "why CPUs", v.CPUReason)
	v = ru.decide([]Comparison{excused(1.44, 1.95)}, false, reasons{cpu: "why CPUs"})
	assert.Equal(t, NotOnTheseCPUs, v.Result, "information only in both directions")
	assert.Contains(t, v.Why, "does not hold")
	assert.Contains(t, v.Why, "drbr kept 1.44 CPUs busy, mpring 1.95")

	v = ru.decide([]Comparison{holds}, false, reasons{here: "the model cannot", hereShort: "in this model"})
	assert.Equal(t, "the model cannot", v.HereReason)
	assert.Equal(t, "in this model", v.Short)
}

// TestSequential: blocks go on while a look asks for cells, at the rule's
// looks only, and stop at the round cap, at the time cap, or at once with
// -quick.
func TestSequential(t *testing.T) {
	run := func(o Options, undecidedUntil int) (blocks []int, lookedAt []int) {
		r := newRunner(o, &progress{w: io.Discard, start: time.Now()})
		n := 0
		err := r.sequential([]int{0, 1, 2}, func(first bool, cells []int) error {
			assert.Equal(t, first, n == 0)
			if !first {
				assert.Equal(t, []int{1}, cells, "only what is undecided")
			}
			blocks = append(blocks, len(cells))
			n += o.Rounds
			return nil
		}, func(at int) []int {
			lookedAt = append(lookedAt, at)
			if at >= undecidedUntil {
				return nil
			}
			return []int{1}
		})
		require.NoError(t, err)
		return blocks, lookedAt
	}
	o := Options{Rounds: 7, MaxRounds: 224, Cap: time.Hour}
	blocks, looked := run(o, 0)
	assert.Equal(t, []int{3}, blocks, "decided at the first look")
	assert.Equal(t, []int{7}, looked)

	blocks, looked = run(o, 20)
	assert.Equal(t, []int{3, 1, 1, 1}, blocks)
	assert.Equal(t, []int{7, 14, 28}, looked, "looks when the rounds have doubled")

	blocks, looked = run(o, 1000)
	assert.Len(t, blocks, 32)
	assert.Equal(t, []int{7, 14, 28, 56, 112, 224}, looked, "stops at -max-rounds")

	o.MaxRounds = 40
	_, looked = run(o, 1000)
	assert.Equal(t, []int{7, 14, 28, 35}, looked, "the round cap: a last look where it stopped")

	o.MaxRounds, o.Cap = 224, 0
	blocks, looked = run(o, 1000)
	assert.Equal(t, []int{3}, blocks, "the time cap")
	assert.Equal(t, []int{7}, looked)

	o.Quick, o.Cap = true, time.Hour
	blocks, looked = run(o, 1000)
	assert.Equal(t, []int{3}, blocks)
	assert.Empty(t, looked, "-quick does not look")
}
