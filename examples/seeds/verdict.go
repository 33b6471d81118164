package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The verdict rule (docs/seeds.md, "How a verdict is reached"):
//
// Every claim rests on comparisons between two variants measured in the
// same rounds. For each round the advantage of the variant the claim
// favours is the ratio of the metric, oriented so that above 1 means it
// is better (a higher rate, or a lower cpu-ns/pkt). The rule takes the
// interval of the median advantage at the per-look level (order
// statistics: no assumption about the shape of the noise). A gain
//
//   - holds when the interval lies above 1;
//   - is refuted when it lies below 1 + ½ × FreeBSD's smallest effect:
//     the run excludes the effect FreeBSD saw;
//   - is undecided otherwise: more rounds are needed, or the run cannot
//     tell at this noise.
//
// A bound (a claim that a cost is small) holds when the interval's upper
// end is within the bound and is refuted when its lower end is beyond it.
// A gain that holds has FreeBSD's size when its interval reaches FreeBSD's
// effects widened by a factor of two either way.
//
// A comparison that needs more CPUs than its measurement had is
// information only, whichever way it came out. A review is then
// reproduced when every deciding comparison holds with FreeBSD's size,
// its direction is reproduced when every one holds but a size differs,
// not reproduced when one is refuted, and inconclusive otherwise; not
// measurable on this many CPUs when every deciding comparison needed more
// CPUs than it had, and not measurable here when the review says this
// machine or this model cannot show its mechanism at all.
//
// A section measures a block of rounds, looks, and while the verdict is
// inconclusive measures another block of the comparisons still undecided
// (with the rigs rebuilt in a new order), looking again each time the
// rounds have doubled, up to a round and a time cap. The level is split
// evenly over the looks (Bonferroni), so that looking several times
// does not make a chance result likelier than Rule.Level.

// newRule is the rule of a run whose blocks have rounds rounds and whose
// comparisons get at most most rounds.
func newRule(rounds, most int) Rule {
	ls := looks(rounds, most)
	const level = 1.0 / 8
	return Rule{Level: level, Looks: ls, LevelPerLook: level / float64(len(ls)),
		Refute: 0.5, SizeLow: 0.5, SizeHigh: 2, BoundFactor: 2, Power: 0.8, BusyShare: 0.95}
}

// isLook reports whether the rule looks after n rounds.
func (ru Rule) isLook(n int) bool { return slices.Contains(ru.Looks, n) }

// cmpSpec says what a comparison compares; judge measures it.
type cmpSpec struct {
	name, better, worse, metric string
	senders, batch              int
	basis                       string // "total" (default) or "iflib"
	bound                       float64
	freebsd, freebsdNs          []float64
	need, cpus                  int
	info                        string // non-empty: information only, and why
}

func lowerIsBetter(metric string) bool { return metric == MCPU }

// effects are FreeBSD's effects (advantage − 1), smallest and largest.
func effects(freebsd []float64) (lo, hi float64, ok bool) {
	if len(freebsd) == 0 {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, f := range freebsd {
		lo, hi = min(lo, f-1), max(hi, f-1)
	}
	return lo, hi, true
}

// judge builds a comparison from the per-round values of the two variants
// (raw: the raw loop's per round, for the iflib basis; rounds beyond it,
// from blocks that did not measure it, use its median) and the CPUs busy
// of each, under the rule.
func (ru Rule) judge(sp cmpSpec, b, w, raw, busyB, busyW []float64) Comparison {
	c := Comparison{Name: sp.name, Better: sp.better, Worse: sp.worse, Senders: sp.senders, Batch: sp.batch, Metric: sp.metric,
		Basis: "total", Kind: "gain", FreeBSD: sp.freebsd, FreeBSDNs: sp.freebsdNs, NeedCPUs: sp.need, CPUs: sp.cpus, Decides: true,
		BusyBetter: Num(newStat(busyB).Median), BusyWorse: Num(newStat(busyW).Median), SavedNs: Num(math.NaN())}
	if sp.bound > 0 {
		c.Kind, c.Bound = "bound", sp.bound
	}
	n := min(len(b), len(w))
	rawAt := func(int) float64 { return 0 }
	if sp.basis == "iflib" {
		c.Basis = "iflib"
		if len(raw) == 0 {
			n = 0
		}
		pooled := newStat(raw).Median
		rawAt = func(i int) float64 {
			if i < len(raw) {
				return raw[i]
			}
			return pooled
		}
	}
	var adv, logs, saved []float64
	for i := range n {
		vb, vw := b[i], w[i]
		if c.Basis == "iflib" {
			vb, vw = vb-rawAt(i), vw-rawAt(i)
		}
		if vb <= 0 || vw <= 0 {
			continue
		}
		a := vb / vw
		if c.Kind == "gain" && lowerIsBetter(sp.metric) {
			a = vw / vb
		}
		adv = append(adv, a)
		logs = append(logs, math.Log(a))
		if c.Kind == "gain" && lowerIsBetter(sp.metric) {
			saved = append(saved, vw-vb)
		}
	}
	c.Advantage = newStat(adv)
	c.Rounds = len(adv)
	if len(saved) > 0 {
		c.SavedNs = Num(newStat(saved).Median)
	}
	lo, hi := medianCI(adv, ru.LevelPerLook)
	c.Lo, c.Hi = Num(lo), Num(hi)
	c.Sigma = Num(spread(logs))
	c.MDE = Num(math.Exp(mdeLog(len(adv), float64(c.Sigma), ru.LevelPerLook, ru.Power)) - 1)
	c.Outcome = Undecided
	switch c.Kind {
	case "gain":
		for _, a := range adv {
			if a > 1 {
				c.Agree++
			}
		}
		floor := 1.0
		if e, _, ok := effects(sp.freebsd); ok {
			floor = 1 + ru.Refute*e
		}
		switch {
		case lo > 1:
			c.Outcome = Holds
		case hi < floor:
			c.Outcome = Refuted
		}
		if elo, ehi, ok := effects(sp.freebsd); ok {
			wlo, whi := ru.SizeLow*elo, ru.SizeHigh*ehi
			ilo, ihi := lo-1, hi-1
			if math.IsNaN(lo) {
				ilo, ihi = c.Advantage.Median-1, c.Advantage.Median-1
			}
			c.Size = "agrees"
			if ihi < wlo-1e-9 || ilo > whi+1e-9 {
				c.Size = "differs"
			}
		}
	case "bound":
		for _, a := range adv {
			if a <= c.Bound {
				c.Agree++
			}
		}
		switch {
		case hi <= c.Bound:
			c.Outcome = Holds
		case lo > c.Bound:
			c.Outcome = Refuted
		}
	}
	switch {
	case sp.info != "":
		c.Decides, c.Why = false, sp.info
	case sp.need > sp.cpus:
		c.Decides, c.Why = false, fmt.Sprintf("needs %d CPUs, had %d", sp.need, sp.cpus)
	}
	return c
}

// reasons are what a review says about a verdict beyond its numbers.
type reasons struct {
	// cpu: why the mechanism needs the CPUs its comparisons ask for.
	cpu string
	// here, if set, is why this machine or this model cannot show the
	// mechanism at all (the result is then "not measurable here"), and
	// hereShort its few words for the summary.
	here, hereShort string
	// other: what else this run shows about a comparison that fails.
	other string
}

// decide applies the rule to a review's comparisons.
func (ru Rule) decide(cs []Comparison, quick bool, why reasons) Verdict {
	v := Verdict{CPUReason: why.cpu}
	var dec, excused, refuted, undecided, differs []Comparison
	for _, c := range cs {
		switch {
		case c.Decides:
			dec = append(dec, c)
			v.Rounds = max(v.Rounds, c.Rounds)
			switch c.Outcome {
			case Refuted:
				refuted = append(refuted, c)
			case Undecided:
				undecided = append(undecided, c)
			case Holds:
				if c.Size == "differs" {
					differs = append(differs, c)
				}
			}
		case c.NeedCPUs > c.CPUs:
			excused = append(excused, c)
		}
	}
	switch {
	case quick:
		v.Result, v.Short = SmokeTest, "-quick measures nothing"
		v.Why = "-quick runs every section with windows too short and rounds too few to measure anything: a smoke test, not a measurement"
		return v
	case why.here != "":
		v.Result, v.Short, v.HereReason = NotHere, why.hereShort, why.here
		v.Why = why.here + "; the comparisons below are information only"
		return v
	case len(dec) == 0 && len(excused) > 0:
		v.Result = NotOnTheseCPUs
		need := slices.MinFunc(excused, func(a, b Comparison) int { return a.NeedCPUs - b.NeedCPUs })
		v.Short = fmt.Sprintf("needs %d+ CPUs, had %d", need.NeedCPUs, need.CPUs)
		v.Why = fmt.Sprintf("every comparison the claim rests on needs more CPUs than its measurement had (%d of %d), so each is information only, "+
			"whichever way it came out; %s. %s", len(excused), len(excused), why.cpu, ru.excuseTest(excused))
		return v
	case len(dec) == 0:
		v.Result, v.Short, v.Why = NotMeasured, "nothing measured", "nothing was measured"
		return v
	}
	aside := ""
	if len(excused) > 0 {
		aside = fmt.Sprintf(" (%d comparison(s) needing more CPUs than they had are information only)", len(excused))
	}
	switch {
	case len(refuted) > 0:
		c := refuted[0]
		v.Result = NotReproduced
		v.Short = fmt.Sprintf("%s: %s", c.Name, fmtInterval(c))
		v.Why = fmt.Sprintf("%d of %d deciding comparisons exclude the claim%s: %s", len(refuted), len(dec), aside, joinCmp(refuted, describe))
		if why.other != "" {
			v.Why += "; " + why.other
		}
	case len(undecided) > 0:
		c := undecided[0]
		v.Result = Inconclusive
		v.Short = fmt.Sprintf("%s: detects %s, FreeBSD %s", c.Name, fmtMDE(c), effectRange(c))
		v.Why = fmt.Sprintf("%d of %d deciding comparisons neither hold nor exclude the claim after %d rounds%s: %s. "+
			"The run cannot tell at this noise: a rerun, more rounds (-max-rounds, -cap) or a quieter machine may",
			len(undecided), len(dec), v.Rounds, aside, joinCmp(undecided, describe))
	case len(differs) > 0:
		c := differs[0]
		v.Result = DirectionReproduced
		v.Short = fmt.Sprintf("size %s, FreeBSD %s", effect(c.Advantage.Median), effectRange(c))
		v.Why = fmt.Sprintf("every deciding comparison (%d) holds%s, but the size differs from FreeBSD's beyond a factor of two: %s",
			len(dec), aside, joinCmp(differs, describe))
	default:
		v.Result = Reproduced
		v.Short = fmt.Sprintf("%d rounds", v.Rounds)
		v.Why = fmt.Sprintf("every deciding comparison (%d) holds%s", len(dec), aside)
		for _, c := range dec {
			if c.Size != "" {
				v.Why += ", with FreeBSD's size within a factor of two"
				break
			}
		}
		v.Why += ": " + joinCmp(dec, describe)
	}
	return v
}

// excuseTest checks the CPU excuse against the run: where the variant the
// claim favours kept fewer CPUs busy than the other, it had idle CPU time
// and lacking CPUs does not explain how it did.
func (ru Rule) excuseTest(cs []Comparison) string {
	held := 0
	var against []string
	for _, c := range cs {
		b, w := float64(c.BusyBetter), float64(c.BusyWorse)
		if math.IsNaN(b) || math.IsNaN(w) {
			continue
		}
		if b >= ru.BusyShare*w {
			held++
			continue
		}
		if len(against) < 3 {
			against = append(against, fmt.Sprintf("%s: %s kept %.2f CPUs busy, %s %.2f", c.Name, c.Better, b, c.Worse, w))
		}
	}
	switch {
	case held+len(against) == 0:
		return "The run has no CPU figures to test the excuse with."
	case len(against) == 0:
		return fmt.Sprintf("Tested against this run: in all %d, the favoured variant kept the CPUs as busy as the other, as the excuse assumes.", held)
	}
	return fmt.Sprintf("Tested against this run, the excuse's premise (no idle CPU) does not hold for every comparison: the favoured variant had idle CPU time in %d of %d "+
		"(%s), so there, lacking CPUs is not what held it back.", len(cs)-held, len(cs), strings.Join(against, "; "))
}

// describe is one comparison in a verdict's explanation.
func describe(c Comparison) string {
	s := fmt.Sprintf("%s %s (%d rounds)", c.Name, fmtInterval(c), c.Rounds)
	switch {
	case c.Kind == "bound":
		s += fmt.Sprintf(", bound %s, FreeBSD %s", effect(c.Bound), effectRange(c))
	case len(c.FreeBSD) > 0:
		s += fmt.Sprintf(", FreeBSD %s", effectRange(c))
	}
	if c.Outcome == Undecided {
		s += fmt.Sprintf(", detects %s", fmtMDE(c))
	}
	return s
}

func joinCmp(cs []Comparison, f func(Comparison) string) string {
	var s []string
	for i, c := range cs {
		if i == 4 {
			s = append(s, fmt.Sprintf("and %d more", len(cs)-4))
			break
		}
		s = append(s, f(c))
	}
	return strings.Join(s, "; ")
}

// effect renders an advantage (or a bound's cost ratio) as a percentage:
// "+7.1 %".
func effect(adv float64) string {
	if math.IsNaN(adv) || math.IsInf(adv, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f %%", 100*(adv-1))
}

// fmtInterval renders a comparison's median effect and the interval of
// the median: "+7.1 % [+5.0..+9.2 %]".
func fmtInterval(c Comparison) string {
	m := c.Advantage.Median
	if math.IsNaN(m) {
		return "n/a"
	}
	lo, hi := float64(c.Lo), float64(c.Hi)
	if math.IsNaN(lo) {
		return fmt.Sprintf("%+.1f %% [too few rounds]", 100*(m-1))
	}
	return fmt.Sprintf("%+.1f %% [%+.1f..%+.1f %%]", 100*(m-1), 100*(lo-1), 100*(hi-1))
}

// fmtMDE renders a comparison's minimum detectable effect.
func fmtMDE(c Comparison) string {
	m := float64(c.MDE)
	switch {
	case math.IsNaN(m):
		return "n/a"
	case math.IsInf(m, 1):
		return "nothing (too few rounds)"
	case c.Kind == "bound":
		return fmt.Sprintf("±%.1f %% from the bound", 100*m)
	}
	return fmt.Sprintf("≥%+.1f %%", 100*m)
}

// effectRange renders FreeBSD's effect(s) for a comparison.
func effectRange(c Comparison) string {
	if len(c.FreeBSD) == 0 {
		return "none"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range c.FreeBSD {
		lo, hi = min(lo, f), max(hi, f)
	}
	if math.Abs(lo-hi) < 0.0005 {
		return effect(lo)
	}
	return fmt.Sprintf("%+.1f..%+.1f %%", 100*(lo-1), 100*(hi-1))
}
