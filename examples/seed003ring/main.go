// Command seed003ring reproduces, at ring level, the fan-in comparison of
// the FreeBSD review "simple_tx with drbr deferral" (buf_ring/drbr deferred
// transmit ported from mxge(4) to iflib's simple_tx): 1, 2, 4, 8, 16, 32
// and 64 sender goroutines into one transmit queue whose consumer pays a
// fixed encap cost per packet, for iflib's mp_ring (with and without
// tx_abdicate), the drbr deferred simple_tx (bufring.DRBR, max producers 1
// and unlimited), and the plain mutex simple_tx. It prints, per variant and
// fan-in, the median of -count runs of Mitems/s and of process CPU time per
// packet (getrusage, user+system, senders' packet building included),
// beside the review's Gb/s, all normalised to simple_tx at fan-in 1 so the
// shapes can be compared, and then the review's three modes side by side.
//
// The same comparison runs as a benchmark:
//
//	go test -run '^$' -bench Seed003 -count 5 ./examples/seed003ring/
//
// With more senders than CPUs, mp_ring is bimodal. Either the ring fills and
// most senders fail fast with ErrFull, holding no reservation (high items/s,
// many drops); or senders hold reservations while yielding in waitTurn, so
// every publication waits for one particular descheduled goroutine (a convoy:
// items/s falls about in half per doubling of fan-in, no drops). Longer runs
// settle in the convoy, so -items changes what mpring reports at fan-in ≥ 16.
//
// A package of its own because the leaf packages mpring and bufring must not
// import each other.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goiflib/goiflib/examples/seedbench"
)

func main() {
	items := flag.Int("items", 1<<20, "packets per run")
	count := flag.Int("count", 3, "runs per variant and fan-in (the median is printed)")
	encap := flag.Int("encap", defaultRounds, "encap cost, in rounds of hash per packet")
	gen := flag.Int("gen", defaultRounds, "sender's packet-building cost, in rounds of hash per packet")
	flag.Parse()
	if *items < 1 || *count < 1 || *encap < 0 || *gen < 0 {
		fmt.Fprintln(os.Stderr, "seed003ring: -items and -count must be ≥ 1, -encap and -gen ≥ 0")
		os.Exit(2)
	}
	c := cost{encap: *encap, gen: *gen}
	start := time.Now()
	now := func() float64 { return time.Since(start).Seconds() }

	rate := make(map[string][]float64) // variant → median items/s per fan-in
	cpu := make(map[string][]float64)  // variant → median CPU ns per packet per fan-in
	drop := make(map[string][]float64) // variant → median drop fraction per fan-in
	spread := make(map[string][]string)
	for _, fanIn := range fanIns {
		for _, v := range variants {
			var rates, cpus, drops []float64
			for range *count {
				res, err := run(v, fanIn, *items, c, now)
				if err != nil {
					fmt.Fprintf(os.Stderr, "seed003ring: %s fan-in %d: %v\n", v.name, fanIn, err)
					os.Exit(1)
				}
				rates = append(rates, res.itemsPerSec())
				cpus = append(cpus, res.cpuNsPerItem())
				drops = append(drops, res.dropFraction())
			}
			rate[v.name] = append(rate[v.name], median(rates))
			cpu[v.name] = append(cpu[v.name], median(cpus))
			drop[v.name] = append(drop[v.name], median(drops))
			spread[v.name] = append(spread[v.name], fmt.Sprintf("%.1f..%.1f", slices.Min(rates)/1e6, slices.Max(rates)/1e6))
		}
	}

	fmt.Printf("simple_tx with drbr deferral, at ring level: %d packets per run, median of %d, encap %d / gen %d rounds, %s\n\n",
		*items, *count, c.encap, c.gen, describeCPUs())
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"variant", "unit"}
	for _, f := range fanIns {
		header = append(header, fmt.Sprint(f))
	}
	fmt.Fprintln(w, strings.Join(header, "\t")+"\t")
	base := rate["simple_tx"][0]
	reviewBase := seedbench.FreeBSDFanInGbps["simple"][0] // the review's simple_tx at fan-in 1
	for _, v := range variants {
		row(w, v.name, "Mitems/s", rate[v.name], func(x float64) string { return fmt.Sprintf("%.2f", x/1e6) })
		cells := append([]string{"", "min..max"}, spread[v.name]...)
		fmt.Fprintln(w, strings.Join(cells, "\t")+"\t")
		row(w, "", "cpu-ns/item", cpu[v.name], func(x float64) string { return fmt.Sprintf("%.0f", x) })
		row(w, "", "÷ simple_tx@1", rate[v.name], func(x float64) string { return fmt.Sprintf("%.2f", x/base) })
		if slices.ContainsFunc(drop[v.name], func(x float64) bool { return x > 0 }) {
			row(w, "", "drop %", drop[v.name], func(x float64) string { return fmt.Sprintf("%.0f", 100*x) })
		}
		if v.review != nil {
			row(w, "", "review Gb/s", v.review, func(x float64) string { return fmt.Sprintf("%.0f", x) })
			row(w, "", fmt.Sprintf("review ÷ %g", reviewBase), v.review, func(x float64) string { return fmt.Sprintf("%.2f", x/reviewBase) })
		}
	}
	w.Flush()

	fmt.Printf("\nThe review's three modes, side by side (drbr = drbr-max1):\n\n")
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, strings.Join(header, "\t")+"\t")
	ratio := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] / b[i]
		}
		return out
	}
	two := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	row(w, "drbr ÷ mpring", "items/s", ratio(rate["drbr-max1"], rate["mpring"]), two)
	row(w, "drbr ÷ simple_tx", "items/s", ratio(rate["drbr-max1"], rate["simple_tx"]), two)
	row(w, "drbr ÷ simple_tx", "cpu-ns/item", ratio(cpu["drbr-max1"], cpu["simple_tx"]), two)
	row(w, "drbr ÷ mpring", "cpu-ns/item", ratio(cpu["drbr-max1"], cpu["mpring"]), two)
	w.Flush()
}

func row(w *tabwriter.Writer, name, unit string, xs []float64, f func(float64) string) {
	cells := []string{name, unit}
	for _, x := range xs {
		cells = append(cells, f(x))
	}
	fmt.Fprintln(w, strings.Join(cells, "\t")+"\t")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
