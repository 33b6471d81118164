package main

import (
	"math"
	"slices"
)

// The statistics behind the verdict rule: a distribution-free interval of
// the median of the per-round advantages (order statistics and the
// binomial distribution), a robust spread, and the smallest effect a
// number of rounds can detect. Nothing here assumes the advantages are
// normal except the minimum detectable effect, which is a planning figure.

// logBinomPMF is log P(X = k) for X ~ Binomial(n, p), 0 < p < 1.
func logBinomPMF(n, k int, p float64) float64 {
	ln, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lnk, _ := math.Lgamma(float64(n - k + 1))
	return ln - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

// binomAtLeast is P(X ≥ k) for X ~ Binomial(n, p).
func binomAtLeast(n int, p float64, k int) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	s := 0.0
	for i := k; i <= n; i++ {
		s += math.Exp(logBinomPMF(n, i, p))
	}
	return min(s, 1)
}

// ciIndex is the order statistic k (1-based) of the interval [x(k),
// x(n+1-k)] of the median of n rounds at two-sided level alpha: the
// largest k with P(X ≤ k-1) ≤ alpha/2 for X ~ Binomial(n, ½). It is 0
// when n is too small for any interval at that level.
func ciIndex(n int, alpha float64) int {
	k := 0
	for j := 1; j <= (n+1)/2; j++ {
		// P(X ≤ j-1) = P(X ≥ n-j+1) by symmetry.
		if binomAtLeast(n, 0.5, n-j+1) <= alpha/2+1e-12 {
			k = j
		} else {
			break
		}
	}
	return k
}

// medianCI is the interval of the median of xs at two-sided level alpha,
// or NaN, NaN when there are too few values.
func medianCI(xs []float64, alpha float64) (lo, hi float64) {
	k := ciIndex(len(xs), alpha)
	if k == 0 {
		return math.NaN(), math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[k-1], s[len(s)-k]
}

// spread is the standard deviation of xs, NaN below 3 values. It feeds
// the minimum detectable effect, a planning figure, where a few disturbed
// rounds should count: a robust spread (the median absolute deviation)
// of 7 rounds can come out far smaller than the interval shows.
func spread(xs []float64) float64 {
	if len(xs) < 3 {
		return math.NaN()
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

// normQuantile is the standard normal quantile function.
func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// mdeLog is the smallest shift δ of the log advantage that n rounds with
// spread sigma detect with probability power when the rule's interval at
// level alpha must exclude 0: each round then agrees with probability
// Φ(δ/σ), and the lower end of the interval, x(k), is above 0 when at
// least n+1-k rounds agree. +Inf when no shift is enough (too few rounds)
// and NaN without a spread.
func mdeLog(n int, sigma, alpha, power float64) float64 {
	if math.IsNaN(sigma) {
		return math.NaN()
	}
	k := ciIndex(n, alpha)
	if k == 0 {
		return math.Inf(1)
	}
	need := n + 1 - k
	lo, hi := 0.5, 1-1e-12
	if binomAtLeast(n, hi, need) < power {
		return math.Inf(1)
	}
	for range 60 {
		mid := (lo + hi) / 2
		if binomAtLeast(n, mid, need) >= power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return sigma * normQuantile(hi)
}

// looks is the rule's schedule: after rounds, then each time the rounds
// have doubled, up to most.
func looks(rounds, most int) []int {
	var out []int
	for n := rounds; n <= most; n *= 2 {
		out = append(out, n)
	}
	if len(out) == 0 {
		out = append(out, most)
	}
	return out
}
