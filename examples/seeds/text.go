package main

import (
	"fmt"
	"io"
	"math"
	"os"
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
	if s.Quick {
		fmt.Fprintf(w, "run: -quick: %d rounds of %.0f ms windows, too short and too few to measure anything: a smoke test, no verdicts.\n", s.Rounds, s.WindowMs)
	} else {
		fmt.Fprintf(w, "run: blocks of %d rounds, forwarding rigs rebuilt in a new order for every round, transmit rigs for every block; a verdict\n"+
			"     still undecided gets more blocks, looked at after %s rounds, up to %d rounds or %.0f s per section.\n",
			s.Rounds, joinInts(rep.Rule.Looks, ", "), s.MaxRounds, s.CapS)
		fmt.Fprintf(w, "     A cell is a %.0f ms window per round, measured in %d slices (transmit: %d) taken in turn with the variants it is compared\n"+
			"     with, in a new random order each (seed %#x), each after %.0f ms unmeasured; every rig warms up %.0f ms once built.\n",
			s.WindowMs, s.Slices, s.TxSlices, s.Seed, s.SettleMs, s.WarmupMs)
	}
	fmt.Fprint(w, `how to read:
  a [b..c]     median of the rounds [lowest..highest]; the variants compared run interleaved, round by round
  cpu-ns/pkt   this process's CPU time (user+system, getrusage) over the measuring window, per packet of that
               window: senders or generator, iflib and the simulated NICs together. It moves less than a rate
               when other processes take CPU, but it moves (docs/seeds.md, "Load")
  CPUs busy    CPU time over wall time: how many CPUs the process kept busy (Mpps x cpu-ns/pkt / 1000)
  Mpps, Gb/s   packets per second (millions); frames x length x 8 per second
  drop %       share of Transmit calls refused (ENOBUFS: the packet was freed and counted)
  stalls/pkt   times the generator found NIC A's receive FIFO full, per forwarded packet: each time it drops the
               frame it holds, parks until there is room and goes on (a stall, not a frame a wire would lose)
  drops/pkt    packets iflib dropped on the way, per forwarded packet
  invol/s      involuntary context switches per second: how often the OS gave this process's CPU to another
  raw          simnic's hand-written forwarder over the same rigs: what the generator and the simulated NICs
               cost without iflib. "iflib share" is cpu-ns/pkt less raw's in the same round
  GOMAXPROCS   how many CPUs Go may run goroutines on at once in that measurement
  FreeBSD      the figures the review reports, from its machines: compare ratios and orderings, not absolute values
  interval     [lo..hi] after an effect: where the median advantage lies, at the rule's level (order statistics)
  detects      the smallest effect these rounds detect 4 times in 5 at this noise (the minimum detectable effect)
  verdict      reproduced / direction reproduced / inconclusive / not reproduced / not measurable on this many
               CPUs / not measurable here, by the rule in docs/seeds.md (which also documents -json)
`)
}

func fmtStat(s Stat, prec int) string {
	if math.IsNaN(s.Median) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f [%.*f..%.*f]", prec, s.Median, prec, s.Min, prec, s.Max)
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
		printPoints(w, rev, []string{MMpps, MCPU, MBusy, MStalls})
	case SecD17901:
		printPoints(w, rev, []string{MMpps, MCPU, MBusy, MStalls, MMapLoad})
	case SecD53674:
		printPoints(w, rev, []string{MGbps, MMpps, MCPU, MBusy})
	case SecD27755:
		printPoints(w, rev, []string{MMpps, MCPU, MBusy, MStalls})
	}
	printLoad(w, rev)
	printComparisons(w, rev)
	for _, n := range rev.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "verdict: %s (%s) — %s\n", strings.ToUpper(rev.Verdict.Result), rev.Verdict.Short, rev.Verdict.Why)
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

// printFanIn prints the fan-in table of each GOMAXPROCS.
func printFanIn(w io.Writer, rev *Review, o Options) {
	for _, g := range o.Procs {
		fmt.Fprintf(w, "here, GOMAXPROCS=%d (Gb/s median [min..max]; cpu-ns/pkt, CPUs busy and drop %% medians; FreeBSD's Gb/s on the right):\n", g)
		fmt.Fprintf(w, "%7s", "")
		for _, m := range seedbench.TxModes {
			fmt.Fprintf(w, " | %-37s", modeName(m))
		}
		fmt.Fprintf(w, " | FreeBSD Gb/s\n%7s", "senders")
		for range seedbench.TxModes {
			fmt.Fprintf(w, " | %-19s %6s %4s %5s", "Gb/s", "cpu-ns", "busy", "drop%")
		}
		fmt.Fprintf(w, " | mp_ring/simple_tx/drbr\n")
		for _, n := range o.Senders {
			fmt.Fprintf(w, "%7d", n)
			for _, m := range seedbench.TxModes {
				p, ok := rev.find(m.String(), n, 0, g)
				if !ok {
					fmt.Fprintf(w, " | %-37s", "-")
					continue
				}
				fmt.Fprintf(w, " | %-19s %6.0f %4.2f %5.1f", fmtStat(p.Metrics[MGbps], 1), p.Metrics[MCPU].Median, p.Metrics[MBusy].Median, p.Metrics[MDrop].Median)
			}
			fb := "-"
			if i := slices.Index(seedbench.FanIns, n); i >= 0 {
				fb = fmt.Sprintf("%g/%g/%g", seedbench.FreeBSDFanInGbps["mpring"][i], seedbench.FreeBSDFanInGbps["simple"][i], seedbench.FreeBSDFanInGbps["drbr"][i])
			}
			fmt.Fprintf(w, " | %s\n", fb)
		}
	}
}

// pointName names a point in a table.
func pointName(p Point) string {
	switch {
	case p.Senders > 0:
		return fmt.Sprintf("%s, %d sender(s)", p.Variant, p.Senders)
	case p.Batch > 0:
		return fmt.Sprintf("budget %2d, %s", p.Batch, p.Variant)
	}
	return p.Variant
}

// printPoints prints one row per point with the given metrics.
func printPoints(w io.Writer, rev *Review, metrics []string) {
	if len(rev.Points) == 0 {
		return
	}
	fmt.Fprintf(w, "here, GOMAXPROCS=%d (median [min..max] of the rounds; rounds per row differ where more were needed to decide):\n", rev.Points[0].GOMAXPROCS)
	row := fmt.Sprintf("    %-28s %6s", "variant", "rounds")
	for _, m := range metrics {
		row += fmt.Sprintf(" %-24s", m)
	}
	fmt.Fprintln(w, strings.TrimRight(row, " "))
	for _, p := range rev.Points {
		row := fmt.Sprintf("    %-28s %6d", pointName(p), len(p.Counts))
		for _, m := range metrics {
			prec := 3
			switch m {
			case MCPU:
				prec = 0
			case MGbps, MBusy:
				prec = 2
			}
			st, ok := p.Metrics[m]
			if !ok {
				row += fmt.Sprintf(" %-24s", "-")
				continue
			}
			row += fmt.Sprintf(" %-24s", fmtStat(st, prec))
		}
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
}

// printLoad prints the section's load indicator and its rigs' drain.
func printLoad(w io.Writer, rev *Review) {
	var invol []float64
	unquiet, slices := 0, 0
	for _, p := range rev.Points {
		invol = append(invol, p.Metrics[MInvol].Samples...)
		for _, c := range p.Counts {
			unquiet += c.Unquiet
		}
	}
	for _, b := range rev.Blocks {
		slices += len(b.Orders)
	}
	if len(invol) == 0 {
		return
	}
	fmt.Fprintf(w, "load: %s involuntary context switches per second of this section's windows (median [min..max]); %d block(s) of rounds; "+
		"%d slice(s) of %d after which a rig had not drained within %v\n", fmtStat(newStat(invol), 0), len(rev.Blocks), unquiet, slices, quietLimit)
}

// printComparisons prints what the claim rests on, one line each.
func printComparisons(w io.Writer, rev *Review) {
	if len(rev.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(w, "what the claim rests on (the favoured variant's advantage per round: median [interval of the median], rounds; for a bound, the")
	fmt.Fprintln(w, "extra cost; on iflib's share where it says so; detects = the smallest effect these rounds detect; * = decides the verdict):")
	for _, c := range rev.Comparisons {
		mark := " "
		if c.Decides {
			mark = "*"
		}
		basis := ""
		if c.Basis == "iflib" {
			basis = " on iflib's share"
		}
		var flags []string
		flags = append(flags, fmt.Sprintf("%s (%d of %d rounds agree)", c.Outcome, c.Agree, c.Rounds))
		flags = append(flags, "detects "+fmtMDE(c))
		switch {
		case c.Kind == "bound":
			flags = append(flags, fmt.Sprintf("FreeBSD %s, bound %s", effectRange(c), effect(c.Bound)))
		case len(c.FreeBSD) > 0:
			f := "FreeBSD " + effectRange(c)
			if c.Size != "" {
				f += ", size " + c.Size
			}
			flags = append(flags, f)
		}
		if !math.IsNaN(float64(c.SavedNs)) {
			s := fmt.Sprintf("saves %.0f ns/pkt", float64(c.SavedNs))
			if len(c.FreeBSDNs) > 0 {
				s += " (FreeBSD " + fmtNsList(c.FreeBSDNs) + ")"
			}
			flags = append(flags, s)
		}
		if !math.IsNaN(float64(c.BusyBetter)) && c.CPUs > 1 {
			flags = append(flags, fmt.Sprintf("CPUs busy %.2f/%.2f of %d", float64(c.BusyBetter), float64(c.BusyWorse), c.CPUs))
		}
		if !c.Decides && c.Why != "" {
			flags = append(flags, "information only: "+c.Why)
		}
		name := c.Name
		if !strings.HasSuffix(name, ", "+c.Metric) {
			name += ", " + c.Metric
		}
		fmt.Fprintf(w, "  %s %s%s: %s: %s\n", mark, name, basis, fmtInterval(c), strings.Join(flags, "; "))
	}
}

func printAFXDP(w io.Writer, sec *AFXDP) {
	fmt.Fprintf(w, "\n== AF_XDP forwarding over veth (a real kernel path, beside the simulated one)\n")
	if sec.Skipped != "" {
		fmt.Fprintf(w, "skipped: %s\n", sec.Skipped)
		return
	}
	fmt.Fprintf(w, "setup: %s\n", sec.Setup)
	fmt.Fprintln(w, "(median [min..max] of the rounds; fwd-cpu is the forwarder alone, without the generator; x hand is Mpps over the hand loop's in the same round)")
	fmt.Fprintf(w, "    %-20s %-22s %-20s %-20s %-20s %s\n", "mode/forwarder", MMpps, MCPU, "fwd-cpu-ns/pkt", "offered Mpps", "x hand")
	pts := slices.Clone(sec.Points)
	rank := func(p Point) int {
		mode, fw, _ := strings.Cut(p.Variant, "/")
		r := slices.Index([]string{"iflib", "iflib-simple", "hand"}, fw)
		if mode == "generic" {
			r += 10
		}
		return r
	}
	slices.SortStableFunc(pts, func(a, b Point) int { return rank(a) - rank(b) })
	for _, p := range pts {
		ratio := ""
		if st, ok := p.Metrics[MToHand]; ok {
			ratio = fmtStat(st, 2)
		}
		row := fmt.Sprintf("    %-20s %-22s %-20s %-20s %-20s %s", p.Variant, fmtStat(p.Metrics[MMpps], 3), fmtStat(p.Metrics[MCPU], 0),
			fmtStat(p.Metrics[MFwdCPU], 0), fmtStat(p.Metrics[MOffered], 3), ratio)
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
}

func printSummary(w io.Writer, rep *Report, files []string) {
	fmt.Fprintln(w, "\n== summary")
	for _, r := range rep.Reviews {
		fmt.Fprintf(w, "  %-8s %-34s %-44s %s\n", r.ID, r.Verdict.Result, r.Verdict.Short, r.Title)
	}
	if rep.AFXDP != nil {
		if rep.AFXDP.Skipped != "" {
			fmt.Fprintf(w, "  %-8s %-34s\n", SecAFXDP, "skipped")
		} else {
			fmt.Fprintf(w, "  %-8s %-34s\n", SecAFXDP, "measured")
		}
	}
	if !rep.Settings.Quick {
		fmt.Fprintln(w, "A verdict speaks for this run: before quoting one, rerun (scripts: examples/seeds/rerun3.sh runs three and compares them).")
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

// compareRuns reads the reports of earlier runs and prints their verdicts
// side by side; it reports whether every review got the same result in
// every run.
func compareRuns(paths []string, w io.Writer) (bool, error) {
	var reps []*Report
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return false, err
		}
		r, err := readReport(f)
		_ = f.Close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", p, err)
		}
		reps = append(reps, r)
	}
	var ids []string
	for _, r := range reps {
		for _, rv := range r.Reviews {
			if !slices.Contains(ids, rv.ID) {
				ids = append(ids, rv.ID)
			}
		}
	}
	for i, r := range reps {
		load := ""
		if len(r.Machine.LoadAvg) == 3 {
			load = fmt.Sprintf(", load average %.2f at start", r.Machine.LoadAvg[0])
		}
		fmt.Fprintf(w, "run %d: %s, started %s, %.0f s%s\n", i+1, paths[i], r.Started.Format("2006-01-02 15:04:05Z"), r.Seconds, load)
	}
	agree := true
	for _, id := range ids {
		var results []string
		fmt.Fprintf(w, "%-8s", id)
		for _, r := range reps {
			v := "-"
			for _, rv := range r.Reviews {
				if rv.ID == id {
					v = rv.Verdict.Result
					fmt.Fprintf(w, " | %-34s %-40s", rv.Verdict.Result, rv.Verdict.Short)
				}
			}
			if v == "-" {
				fmt.Fprintf(w, " | %-75s", "-")
			}
			results = append(results, v)
		}
		same := !slices.ContainsFunc(results, func(s string) bool { return s != results[0] })
		if !same {
			agree = false
		}
		fmt.Fprintf(w, " | %s\n", map[bool]string{true: "same", false: "DIFFERS"}[same])
	}
	if agree {
		fmt.Fprintf(w, "every review got the same verdict in all %d runs\n", len(reps))
	} else {
		fmt.Fprintln(w, "the verdicts differ between runs")
	}
	return agree, nil
}
