package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/goiflib/goiflib/examples/seedbench"
)

// The text report. Every column and word is explained in the header or
// next to the table that uses it; docs/seeds.md says more.

func printHeader(w io.Writer, rep *Report) {
	m := rep.Machine
	fmt.Fprintln(w, "goiflib seeds: the measurements of the five FreeBSD reviews goiflib was founded on, reproduced on the simulated NIC (examples/simnic)")
	cpu := ""
	if m.CPUModel != "" {
		cpu = " (" + m.CPUModel + ")"
	}
	load := ""
	if len(m.LoadAvg) == 3 {
		load = fmt.Sprintf(", load average %.2f %.2f %.2f at start (other processes share these CPUs)", m.LoadAvg[0], m.LoadAvg[1], m.LoadAvg[2])
	}
	fmt.Fprintf(w, "machine: %d CPUs%s, GOMAXPROCS %d, %s %s/%s%s\n", m.CPUs, cpu, m.GOMAXPROCS, m.Go, m.OS, m.Arch, load)
	s := rep.Settings
	quick := ""
	if s.Quick {
		quick = " -quick: windows too short to measure anything; a smoke test."
	}
	fmt.Fprintf(w, "run: %d rounds; a cell is a %.0f ms window per round, measured in %d slices that alternate with the variants it is compared with,\n"+
		"     each after %.0f ms unmeasured; every rig warms up %.0f ms once built.%s\n",
		s.Rounds, s.WindowMs, s.Slices, s.SettleMs, s.WarmupMs, quick)
	fmt.Fprint(w, `how to read:
  a [b..c]     median of the rounds [lowest..highest]; the variants compared run interleaved, round by round
  cpu-ns/pkt   this process's CPU time (user+system, getrusage) over the measuring window, per packet of that
               window: senders or generator, iflib and the simulated NICs together (it moves little when other
               processes take CPU; rates do)
  Mpps, Gb/s   packets per second (millions); frames x length x 8 per second
  drop %       share of Transmit calls refused (ENOBUFS: the packet was freed and counted)
  lost         frames offered to NIC A that never left NIC B: refused by A's full receive FIFO, or dropped by iflib
  GOMAXPROCS   how many CPUs Go may run goroutines on at once in that measurement
  FreeBSD      the figures the review reports, from its machines: compare ratios and orderings, not absolute values
  verdict      reproduced / direction reproduced / not reproducible on this many CPUs / not reproduced, by the rule
               in docs/seeds.md (which also documents every field of -json)
`)
}

func fmtStat(s Stat, prec int) string {
	if math.IsNaN(s.Median) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f [%.*f..%.*f]", prec, s.Median, prec, s.Min, prec, s.Max)
}

// fmtAdv renders a comparison's median effect and its range over the
// rounds: "+7.1 % [+5.0..+9.2 %]".
func fmtAdv(c Comparison) string {
	s := c.Advantage
	if math.IsNaN(s.Median) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f %% [%+.1f..%+.1f %%]", 100*(s.Median-1), 100*(s.Min-1), 100*(s.Max-1))
}

func printReview(w io.Writer, rev *Review, o Options) {
	fmt.Fprintf(w, "\n== %s\n", rev.Title)
	fmt.Fprintf(w, "setup: %s\n", rev.Setup)
	printFreeBSD(w, rev)
	fmt.Fprintf(w, "claim: %s\n", rev.Claim)
	switch rev.ID {
	case SecDRBR:
		printFanIn(w, rev, o)
	case SecD24094:
		if rev.Placement != nil {
			fmt.Fprintln(w, "placement (cpumap.PlacementTable): the review's machine, an 8-core Atom C2758 whose cores share L2 in pairs, two 8-queue ports:")
			indent(w, rev.Placement.Fixture)
			fmt.Fprintln(w, "this machine, two devices with one queue pair per CPU:")
			indent(w, rev.Placement.Here)
			if rev.Placement.Pinned != "" {
				fmt.Fprintf(w, "pinned forwarding: %s\n", rev.Placement.Pinned)
			}
		}
		printPoints(w, rev, []string{MMpps, MCPU, MLost})
	case SecD17901:
		printPoints(w, rev, []string{MMpps, MCPU, MLost, MMapLoad})
	case SecD53674:
		printPoints(w, rev, []string{MGbps, MMpps, MCPU})
	case SecD27755:
		printPoints(w, rev, []string{MMpps, MCPU, MLost})
	}
	printComparisons(w, rev)
	for _, n := range rev.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "verdict: %s — %s\n", strings.ToUpper(rev.Verdict.Result), rev.Verdict.Why)
}

func indent(w io.Writer, s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

func printFreeBSD(w io.Writer, rev *Review) {
	if rev.ID == SecDRBR {
		fmt.Fprintf(w, "FreeBSD (%s, 1342-byte UDP with separate headers, one TX queue, worst of 3 runs), Gb/s at %s senders:\n",
			machineTurin, joinInts(seedbench.FanIns, "/"))
		for _, m := range seedbench.TxModes {
			var vs []string
			for _, v := range seedbench.FreeBSDFanInGbps[m.String()] {
				vs = append(vs, fmt.Sprintf("%g", v))
			}
			fmt.Fprintf(w, "    %-9s %s\n", modeName(m), strings.Join(vs, " "))
		}
		return
	}
	fmt.Fprintln(w, "FreeBSD:")
	byMachine := map[string][]string{}
	var order []string
	for _, f := range rev.FreeBSD {
		if _, ok := byMachine[f.Machine]; !ok {
			order = append(order, f.Machine)
		}
		byMachine[f.Machine] = append(byMachine[f.Machine], fmt.Sprintf("%s %s %s", f.Label, fmtFigure(f.Value), f.Unit))
	}
	for _, m := range order {
		fmt.Fprintf(w, "    %s: %s\n", m, strings.Join(byMachine[m], "; "))
	}
}

func fmtFigure(v float64) string {
	if v >= 100000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}

func joinInts(xs []int, sep string) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, sep)
}

// printFanIn prints the fan-in table of each GOMAXPROCS.
func printFanIn(w io.Writer, rev *Review, o Options) {
	for _, g := range o.Procs {
		fmt.Fprintf(w, "here, GOMAXPROCS=%d (Gb/s median [min..max]; cpu-ns/pkt and drop %% medians; FreeBSD's Gb/s on the right):\n", g)
		fmt.Fprintf(w, "%7s", "")
		for _, m := range seedbench.TxModes {
			fmt.Fprintf(w, " | %-32s", modeName(m))
		}
		fmt.Fprintf(w, " | FreeBSD Gb/s\n%7s", "senders")
		for range seedbench.TxModes {
			fmt.Fprintf(w, " | %-19s %6s %5s", "Gb/s", "cpu-ns", "drop%")
		}
		fmt.Fprintf(w, " | mp_ring/simple_tx/drbr\n")
		for _, n := range o.Senders {
			fmt.Fprintf(w, "%7d", n)
			for _, m := range seedbench.TxModes {
				p, ok := rev.find(m.String(), n, 0, g)
				if !ok {
					fmt.Fprintf(w, " | %-32s", "-")
					continue
				}
				fmt.Fprintf(w, " | %-19s %6.0f %5.1f", fmtStat(p.Metrics[MGbps], 1), p.Metrics[MCPU].Median, p.Metrics[MDrop].Median)
			}
			fb := "-"
			if i := slices.Index(seedbench.FanIns, n); i >= 0 {
				fb = fmt.Sprintf("%g/%g/%g", seedbench.FreeBSDFanInGbps["mpring"][i], seedbench.FreeBSDFanInGbps["simple"][i], seedbench.FreeBSDFanInGbps["drbr"][i])
			}
			fmt.Fprintf(w, " | %s\n", fb)
		}
	}
}

// printPoints prints one row per point with the given metrics.
func printPoints(w io.Writer, rev *Review, metrics []string) {
	if len(rev.Points) == 0 {
		return
	}
	fmt.Fprintf(w, "here, GOMAXPROCS=%d (median [min..max] of the rounds):\n", rev.Points[0].GOMAXPROCS)
	row := fmt.Sprintf("    %-26s", "variant")
	for _, m := range metrics {
		row += fmt.Sprintf(" %-24s", m)
	}
	fmt.Fprintln(w, strings.TrimRight(row, " "))
	for _, p := range rev.Points {
		name := p.Variant
		switch {
		case p.Senders > 0:
			name = fmt.Sprintf("%s, %d sender(s)", p.Variant, p.Senders)
		case p.Batch > 0:
			name = fmt.Sprintf("batch %2d, %s", p.Batch, p.Variant)
		}
		row := fmt.Sprintf("    %-26s", name)
		for _, m := range metrics {
			prec := 3
			switch m {
			case MCPU:
				prec = 0
			case MGbps:
				prec = 2
			}
			row += fmt.Sprintf(" %-24s", fmtStat(p.Metrics[m], prec))
		}
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
}

// printComparisons prints what the claim rests on, one line each.
func printComparisons(w io.Writer, rev *Review) {
	if len(rev.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(w, "what the claim rests on (the favoured variant's advantage in the metric, median [min..max] of the per-round ratios;")
	fmt.Fprintln(w, "for a bound, the extra cost; * = decides the verdict):")
	for _, c := range rev.Comparisons {
		mark := " "
		if c.Decides {
			mark = "*"
		}
		var flags []string
		if c.Holds {
			flags = append(flags, fmt.Sprintf("holds (%d of %d rounds agree)", c.Agree, c.Rounds))
		} else {
			flags = append(flags, fmt.Sprintf("does not hold (%d of %d rounds agree)", c.Agree, c.Rounds))
		}
		fb := ""
		switch {
		case c.Kind == "bound":
			fb = fmt.Sprintf(" (FreeBSD %s; bound %+.1f %%)", effectRange(c), 100*(c.Bound-1))
		case len(c.FreeBSD) > 0:
			fb = fmt.Sprintf(" (FreeBSD %s)", effectRange(c))
			if c.SizeOK {
				flags = append(flags, "size within 2x of FreeBSD's")
			} else {
				flags = append(flags, "size not within 2x of FreeBSD's")
			}
		}
		if c.NeedCPUs > c.CPUs {
			flags = append(flags, fmt.Sprintf("needs %d CPUs, had %d", c.NeedCPUs, c.CPUs))
		}
		fmt.Fprintf(w, "  %s %s, %s: %s%s: %s\n", mark, c.Name, c.Metric, fmtAdv(c), fb, strings.Join(flags, "; "))
	}
}

func printAFXDP(w io.Writer, sec *AFXDP) {
	fmt.Fprintf(w, "\n== AF_XDP forwarding over veth (a real kernel path, beside the simulated one)\n")
	if sec.Skipped != "" {
		fmt.Fprintf(w, "skipped: %s\n", sec.Skipped)
		return
	}
	fmt.Fprintf(w, "setup: %s\n", sec.Setup)
	fmt.Fprintf(w, "    %-20s %-26s %-26s %s\n", "mode/forwarder", MMpps, MCPU, "Mpps / hand's (medians)")
	hand := map[string]float64{}
	for _, p := range sec.Points {
		if mode, fw, _ := strings.Cut(p.Variant, "/"); fw == "hand" {
			hand[mode] = p.Metrics[MMpps].Median
		}
	}
	for _, p := range sec.Points {
		ratio := ""
		if mode, fw, _ := strings.Cut(p.Variant, "/"); fw != "hand" && hand[mode] > 0 {
			ratio = fmt.Sprintf("%.2f", p.Metrics[MMpps].Median/hand[mode])
		}
		row := fmt.Sprintf("    %-20s %-26s %-26s %s", p.Variant, fmtStat(p.Metrics[MMpps], 3), fmtStat(p.Metrics[MCPU], 0), ratio)
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
}

func printSummary(w io.Writer, rep *Report, files []string) {
	fmt.Fprintln(w, "\n== summary")
	for _, r := range rep.Reviews {
		fmt.Fprintf(w, "  %-8s %-34s %s\n", r.ID, r.Verdict.Result, r.Title)
	}
	if rep.AFXDP != nil {
		if rep.AFXDP.Skipped != "" {
			fmt.Fprintf(w, "  %-8s %-34s\n", SecAFXDP, "skipped")
		} else {
			fmt.Fprintf(w, "  %-8s %-34s\n", SecAFXDP, "measured")
		}
	}
	fmt.Fprintf(w, "took %.0f s.", rep.Seconds)
	if l := rep.Machine.LoadAvgEnd; len(l) == 3 {
		fmt.Fprintf(w, " load average %.2f %.2f %.2f at the end.", l[0], l[1], l[2])
	}
	for _, f := range files {
		fmt.Fprintf(w, " wrote %s.", f)
	}
	fmt.Fprintln(w)
}
