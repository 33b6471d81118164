package main

import (
	"fmt"
	"math"
	"strings"
)

// The verdict rule (docs/seeds.md, "How a verdict is reached"):
//
// Every claim rests on comparisons between two variants measured in the
// same rounds. For each round the advantage of the variant the claim
// favours is the ratio of the metric, oriented so that above 1 means it
// is better (a higher rate, or a lower cpu-ns/pkt). A comparison
//
//   - holds when the median advantage is above 1 and so many rounds agree
//     that a difference that does not exist would look this consistent at
//     most one time in eight (a one-sided sign test: every round of 3 to
//     5, all but one of 6 to 8, ...). A bound holds when the median cost
//     ratio is at most the bound and as many rounds stay within it;
//   - has the right size when its median effect (advantage − 1) is
//     between half the smallest and twice the largest effect FreeBSD
//     measured for it (always, when FreeBSD has no figure, and for bounds).
//
// A review is reproduced when every deciding comparison holds with the
// right size; its direction is reproduced when every deciding comparison
// holds; it is not reproducible on this many CPUs when every comparison
// that fails needs more CPUs than the measurement had (each review says
// how many its mechanism needs, and why); otherwise it is not reproduced.

// signLevel is the sign test's level: the largest chance, for a
// difference that does not exist, of as many rounds agreeing.
const signLevel = 1.0 / 8

// agreeEnough reports whether k agreeing rounds of n pass the sign test:
// P(X ≥ k) ≤ signLevel for X ~ Binomial(n, ½).
func agreeEnough(k, n int) bool {
	if n == 0 || k == 0 {
		return false
	}
	tail := 0.0
	for i := k; i <= n; i++ {
		tail += binom(n, i)
	}
	return tail/math.Pow(2, float64(n)) <= signLevel+1e-12
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// compare builds a comparison from the per-round samples of the two
// variants. Lower-is-better metrics (cpu-ns/pkt) are inverted so that an
// advantage above 1 always favours better.
func compare(name, better, worse, metric string, b, w Stat, freebsd []float64, needCPUs, cpus int) Comparison {
	c := Comparison{Name: name, Better: better, Worse: worse, Metric: metric, Kind: "gain",
		FreeBSD: freebsd, NeedCPUs: needCPUs, CPUs: cpus, Decides: true}
	n := min(len(b.Samples), len(w.Samples))
	adv := make([]float64, 0, n)
	for i := range n {
		num, den := b.Samples[i], w.Samples[i]
		if lowerIsBetter(metric) {
			num, den = den, num
		}
		if den <= 0 || num < 0 {
			continue
		}
		adv = append(adv, num/den)
	}
	c.Advantage = newStat(adv)
	above := 0
	for _, a := range adv {
		if a > 1 {
			above++
		}
	}
	c.Agree, c.Rounds = above, len(adv)
	c.Holds = len(adv) > 0 && c.Advantage.Median > 1 && agreeEnough(above, len(adv))
	c.SizeOK = sizeOK(c.Advantage.Median, freebsd)
	return c
}

// bound builds a "costs at most" comparison: the cost ratio Better/Worse
// of a lower-is-better metric must stay at or below limit.
func bound(name, better, worse, metric string, b, w Stat, freebsd []float64, limit float64, needCPUs, cpus int) Comparison {
	c := Comparison{Name: name, Better: better, Worse: worse, Metric: metric, Kind: "bound",
		FreeBSD: freebsd, Bound: limit, NeedCPUs: needCPUs, CPUs: cpus, Decides: true, SizeOK: true}
	n := min(len(b.Samples), len(w.Samples))
	cost := make([]float64, 0, n)
	for i := range n {
		if w.Samples[i] > 0 {
			cost = append(cost, b.Samples[i]/w.Samples[i])
		}
	}
	c.Advantage = newStat(cost)
	within := 0
	for _, v := range cost {
		if v <= limit {
			within++
		}
	}
	c.Agree, c.Rounds = within, len(cost)
	c.Holds = len(cost) > 0 && c.Advantage.Median <= limit && agreeEnough(within, len(cost))
	return c
}

func lowerIsBetter(metric string) bool { return metric == MCPU }

// sizeOK: the median effect is within [smallest/2, 2 × largest] of
// FreeBSD's effects.
func sizeOK(median float64, freebsd []float64) bool {
	if len(freebsd) == 0 {
		return true
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range freebsd {
		lo, hi = min(lo, f-1), max(hi, f-1)
	}
	const eps = 1e-9 // the limits themselves are inside
	e := median - 1
	return e >= lo/2-eps && e <= 2*hi+eps
}

// decide applies the rule to a review's deciding comparisons. cpuWhy says
// why the mechanism needs more CPUs than it had; otherWhy what else this
// run shows about a failure (either may be empty).
func decide(cs []Comparison, cpuWhy, otherWhy string) Verdict {
	var dec, failed []Comparison
	for _, c := range cs {
		if c.Decides {
			dec = append(dec, c)
			if !c.Holds {
				failed = append(failed, c)
			}
		}
	}
	if len(dec) == 0 {
		return Verdict{Result: NotMeasured, Why: "nothing was measured"}
	}
	if len(failed) == 0 {
		var wrongSize []string
		for _, c := range dec {
			if !c.SizeOK {
				wrongSize = append(wrongSize, fmt.Sprintf("%s %s against FreeBSD's %s", c.Name, effect(c.Advantage.Median), effectRange(c)))
			}
		}
		if len(wrongSize) == 0 {
			how := "held"
			for _, c := range dec {
				if c.Kind == "gain" && len(c.FreeBSD) > 0 {
					how += ", with a size within a factor of two of FreeBSD's"
					break
				}
			}
			return Verdict{Result: Reproduced, Why: fmt.Sprintf("every deciding comparison (%d) %s: %s", len(dec), how, summary(dec))}
		}
		return Verdict{Result: DirectionReproduced, Why: "every deciding comparison held, but the size differs: " + strings.Join(wrongSize, "; ")}
	}
	held := fmt.Sprintf("%d of %d comparisons held", len(dec)-len(failed), len(dec))
	var fails []string
	for i, c := range failed {
		if i == 3 {
			fails = append(fails, fmt.Sprintf("and %d more", len(failed)-3))
			break
		}
		fails = append(fails, fmt.Sprintf("%s %s, %d of %d rounds agreeing", c.Name, effect(c.Advantage.Median), c.Agree, c.Rounds))
	}
	detail := held + " (failed: " + strings.Join(fails, ", ") + ")"
	allCPU := true
	for _, c := range failed {
		if c.NeedCPUs <= c.CPUs {
			allCPU = false
		}
	}
	if allCPU && cpuWhy != "" {
		return Verdict{Result: NotOnTheseCPUs, Why: detail + "; " + cpuWhy}
	}
	noisy := true
	for _, c := range failed {
		if c.Kind == "bound" && c.Advantage.Median > c.Bound || c.Kind == "gain" && !(c.Advantage.Median > 1) {
			noisy = false
		}
	}
	if noisy {
		detail += "; the medians favour the claim but too few rounds agree: this run was too noisy to tell (more -rounds, or a quieter machine)"
	} else if otherWhy != "" {
		detail += "; " + otherWhy
	}
	return Verdict{Result: NotReproduced, Why: detail}
}

// effect renders an advantage (or a bound's cost ratio) as a percentage:
// "+7.1 %".
func effect(adv float64) string {
	if math.IsNaN(adv) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f %%", 100*(adv-1))
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

func summary(cs []Comparison) string {
	var s []string
	for i, c := range cs {
		if i == 3 {
			s = append(s, "...")
			break
		}
		s = append(s, fmt.Sprintf("%s %s (FreeBSD %s)", c.Name, effect(c.Advantage.Median), effectRange(c)))
	}
	return strings.Join(s, ", ")
}
