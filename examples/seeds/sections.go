package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/examples/seedbench"
	"github.com/goiflib/goiflib/iflib"
)

// runner runs the sections, interleaving the rounds of the variants that
// are compared, and reports progress.
type runner struct {
	o    Options
	prog *progress
	full int // GOMAXPROCS at start: "all of this machine's CPUs"
}

// progress prints one line per measured cell to stderr, with an estimate
// of the time left.
type progress struct {
	w     io.Writer
	total int
	done  int
	start time.Time
}

func (p *progress) step(format string, args ...any) {
	p.done++
	el := time.Since(p.start)
	left := "?"
	if p.done > 0 && p.done <= p.total {
		left = (el / time.Duration(p.done) * time.Duration(p.total-p.done)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "[%3d/%d  %5.1fs, about %s left] %s\n", p.done, p.total, el.Seconds(), left, fmt.Sprintf(format, args...))
}

func (p *progress) note(format string, args ...any) {
	fmt.Fprintf(p.w, "[%3d/%d  %5.1fs] %s\n", p.done, p.total, time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// cells is how many progress steps a run of these options takes.
func (r *runner) cells(xdpOK bool) int {
	n, R := 0, r.o.Rounds
	for _, s := range r.o.Only {
		switch s {
		case SecDRBR:
			n += len(r.o.Procs) * R * len(seedbench.TxModes) * len(r.o.Senders)
		case SecD17901:
			n += R * 4
		case SecD24094:
			if r.full >= 2 {
				n += R * 3
			}
		case SecD53674:
			n += R * 2 * len(prefetchSenders)
		case SecD27755:
			n += R * 2 * len(batchSizes)
		case SecAFXDP:
			if xdpOK {
				n += R
			}
		}
	}
	return n
}

// acc collects the samples of a review's points, in the order first seen.
type acc struct {
	keys []pkey
	data map[pkey]map[string][]float64
}

type pkey struct {
	variant              string
	senders, batch, proc int
}

func (a *acc) add(k pkey, metric string, v float64) {
	if a.data == nil {
		a.data = map[pkey]map[string][]float64{}
	}
	m, ok := a.data[k]
	if !ok {
		m = map[string][]float64{}
		a.data[k] = m
		a.keys = append(a.keys, k)
	}
	m[metric] = append(m[metric], v)
}

func (a *acc) points() []Point {
	var out []Point
	for _, k := range a.keys {
		p := Point{Variant: k.variant, Senders: k.senders, Batch: k.batch, GOMAXPROCS: k.proc, Metrics: map[string]Stat{}}
		for m, s := range a.data[k] {
			p.Metrics[m] = newStat(s)
		}
		out = append(out, p)
	}
	return out
}

// turn is the order in which round i measures n variants: from variant
// i mod n on, so that no variant always runs first.
func turn(n, i int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = (i + k) % n
	}
	return order
}

// withProcs runs f at GOMAXPROCS n and restores the previous value.
func withProcs(n int, f func() error) error {
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	return f()
}

// build runs f on a goroutine of its own and waits for it: a rig built
// there carries its own simnictest label (inherited by every goroutine it
// starts), so that several rigs can be alive at once and each teardown
// checks only its own goroutines.
func build[T any](f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	res := <-ch
	return res.v, res.err
}

// quickZone is the packet zone of -quick's rigs.
const quickZone = 4096

// fwdVariant is one forwarding configuration of a section.
type fwdVariant struct {
	key  pkey
	opts seedbench.ForwardOpts
}

// forwardRounds builds one forwarding rig per variant (paused), warms each
// up, then measures them round after round. A round measures each variant
// for one window, cut into Slices slices taken in turn (A B C A B C ...):
// each slice resumes a rig, lets it settle, measures, pauses it and waits
// for it to drain before the next rig runs. Interleaving this finely puts
// the variants a comparison pairs within a fraction of a second of each
// other, so that what other processes do to the CPUs hits both alike.
func (r *runner) forwardRounds(procs int, vs []fwdVariant, built func(v fwdVariant, rig *seedbench.ForwardRig),
	record func(v fwdVariant, round int, res seedbench.ForwardResult)) error {
	return withProcs(procs, func() (err error) {
		rigs := make([]*seedbench.ForwardRig, 0, len(vs))
		defer func() {
			for _, rig := range rigs {
				if cerr := rig.Close(); cerr != nil {
					err = errors.Join(err, fmt.Errorf("rig teardown: %w", cerr))
				}
			}
		}()
		for _, v := range vs {
			o := v.opts
			o.Paused = true
			if r.o.Quick && o.Config.RxZoneSize == 0 {
				o.Config.RxZoneSize = quickZone
			}
			rig, err := build(func() (*seedbench.ForwardRig, error) { return seedbench.NewForwardRig(o) })
			if err != nil {
				return fmt.Errorf("%s: %w", v.key.variant, err)
			}
			rigs = append(rigs, rig)
			if built != nil {
				built(v, rig)
			}
			rig.Resume()
			time.Sleep(r.o.Warmup)
			rig.Pause()
			rig.WaitQuiet(time.Second)
		}
		for round := range r.o.Rounds {
			sums := make([]seedbench.ForwardResult, len(vs))
			for sl := range r.o.Slices {
				for _, i := range turn(len(vs), round+sl) {
					rig := rigs[i]
					rig.Resume()
					time.Sleep(r.o.Settle)
					res := rig.Run(r.o.Window/time.Duration(r.o.Slices), time.Hour, nil)
					rig.Pause()
					rig.WaitQuiet(time.Second)
					sums[i] = sums[i].Plus(res)
				}
			}
			for i, v := range vs {
				record(v, round, sums[i])
			}
		}
		return nil
	})
}

// txRigs builds one transmit rig per configuration, each on its own
// goroutine, warms each up with two senders, and returns them with a
// function that closes them all.
func (r *runner) txRigs(opts []seedbench.TxOptions) ([]*seedbench.TxRig, func() error, error) {
	var rigs []*seedbench.TxRig
	closeAll := func() error {
		var errs []error
		for _, rig := range rigs {
			if err := rig.Close(); err != nil {
				errs = append(errs, fmt.Errorf("rig teardown: %w", err))
			}
		}
		return errors.Join(errs...)
	}
	for _, o := range opts {
		if r.o.Quick && o.ZonePkts == 0 {
			o.ZonePkts = quickZone // smaller rigs build faster; -quick measures nothing
		}
		rig, err := build(func() (*seedbench.TxRig, error) { return seedbench.NewTxRig(o) })
		if err != nil {
			return nil, nil, errors.Join(err, closeAll())
		}
		rigs = append(rigs, rig)
		rig.RunSenders(2, r.o.Warmup)
	}
	return rigs, closeAll, nil
}

// txRound measures one round of n senders on each transmit rig: a window
// per rig, cut into Slices slices taken in turn, each after an unmeasured
// settle; it returns each rig's sum.
func (r *runner) txRound(rigs []*seedbench.TxRig, n, round int) []seedbench.TxResult {
	sums := make([]seedbench.TxResult, len(rigs))
	for sl := range r.o.Slices {
		for _, i := range turn(len(rigs), round+sl) {
			sums[i] = sums[i].Plus(rigs[i].RunSendersWarm(n, r.o.Settle, r.o.Window/time.Duration(r.o.Slices)))
		}
	}
	return sums
}

// modeName is the name the reviews use for a transmit mode.
func modeName(m iflib.TxMode) string {
	switch m {
	case iflib.TxModeMPRing:
		return "mp_ring"
	case iflib.TxModeSimple:
		return "simple_tx"
	}
	return m.String()
}

// ---- simple_tx with drbr deferral -------------------------------------

func (r *runner) drbr() (Review, error) {
	rev := Review{
		ID:    SecDRBR,
		Title: "simple_tx with buf_ring/drbr deferral",
		Setup: fmt.Sprintf("one TX queue, %d-byte UDP frames as a 42-byte header buffer plus a payload buffer, S sending goroutines, %v per cell",
			seedbench.FanInFrameLen, r.o.Window),
		Claim: "drbr beats mp_ring at every fan-in (1.9–9×) and is never below simple_tx: drbr ≥ simple_tx ≥ mp_ring at 2 senders and more",
	}
	for _, mode := range seedbench.TxModes {
		for j, n := range seedbench.FanIns {
			rev.FreeBSD = append(rev.FreeBSD, Figure{Label: fmt.Sprintf("%s, %d senders", modeName(mode), n),
				Value: seedbench.FreeBSDFanInGbps[mode.String()][j], Unit: "Gb/s", Machine: machineTurin})
		}
	}
	var a acc
	for _, g := range r.o.Procs {
		err := withProcs(g, func() error {
			var opts []seedbench.TxOptions
			for _, mode := range seedbench.TxModes {
				opts = append(opts, seedbench.TxOptions{Config: iflib.Config{TxMode: mode}})
			}
			rigs, closeAll, err := r.txRigs(opts)
			if err != nil {
				return err
			}
			for _, n := range r.o.Senders {
				for round := range r.o.Rounds {
					sums := r.txRound(rigs, n, round)
					for i, mode := range seedbench.TxModes {
						res := sums[i]
						k := pkey{variant: mode.String(), senders: n, proc: g}
						a.add(k, MGbps, res.Gbps())
						a.add(k, MMpps, res.PPS()/1e6)
						a.add(k, MCPU, res.CPUNsPerPkt())
						a.add(k, MDrop, res.DropPct())
						r.prog.step("%s GOMAXPROCS=%d %2d senders round %d/%d %-9s %6.2f Gb/s %6.0f cpu-ns/pkt  drop %4.1f %%",
							SecDRBR, g, n, round+1, r.o.Rounds, modeName(mode), res.Gbps(), res.CPUNsPerPkt(), res.DropPct())
					}
				}
			}
			return closeAll()
		})
		if err != nil {
			return rev, err
		}
	}
	rev.Points = a.points()

	// The comparisons: at the widest GOMAXPROCS, at each fan-in of 2 or
	// more that FreeBSD measured, each pair of the ordering for which
	// FreeBSD's own figures show a gain of more than 5 %.
	g := slices.Max(r.o.Procs)
	pairs := []struct{ better, worse iflib.TxMode }{
		{iflib.TxModeDRBR, iflib.TxModeMPRing}, {iflib.TxModeDRBR, iflib.TxModeSimple}, {iflib.TxModeSimple, iflib.TxModeMPRing},
	}
	for _, n := range r.o.Senders {
		fi := slices.Index(seedbench.FanIns, n)
		if fi < 0 || n < 2 {
			continue
		}
		for _, pr := range pairs {
			fb := seedbench.FreeBSDFanInGbps[pr.better.String()][fi] / seedbench.FreeBSDFanInGbps[pr.worse.String()][fi]
			if fb <= 1.05 {
				continue
			}
			b, _ := rev.find(pr.better.String(), n, 0, g)
			w, _ := rev.find(pr.worse.String(), n, 0, g)
			rev.Comparisons = append(rev.Comparisons, compare(
				fmt.Sprintf("%s/%s at %d senders", modeName(pr.better), modeName(pr.worse), n),
				pr.better.String(), pr.worse.String(), MGbps, b.Metrics[MGbps], w.Metrics[MGbps], []float64{fb}, n+2, g))
		}
	}
	cpuWhy := fmt.Sprintf("drbr wins by letting senders leave packets in the buf_ring and move on while one core encapsulates and the NIC sends; "+
		"here the senders, that core and the simulated NIC share %d CPU(s), so deferral has no idle core to overlap with (FreeBSD had 96)", g)
	at2 := cpuAt2Senders(&rev)
	if at2 != "" {
		cpuWhy += "; " + at2
	}
	rev.Verdict = decide(rev.Comparisons, cpuWhy, at2)
	rev.Notes = []string{
		"drbr never shows drops: a sender that finds the buf_ring full waits for room (FreeBSD's non-dropping drbr enqueue) instead of having its packet refused. " +
			"mp_ring and simple_tx refuse what does not fit (drop %) and their senders yield, then try again with a new packet. All three run flat out, " +
			"so Gb/s compares what reached the wire; drop % is work the other modes threw away, and a drbr sender is slowed down rather than told.",
		"FreeBSD's NIC is hardware and its 96 cores give each sender its own; here the NIC is a goroutine sharing this machine's CPUs with the senders: " +
			"compare orderings and ratios, not Gb/s.",
	}
	return rev, nil
}

// cpuAt2Senders states the CPU cost of each mode at 2 senders at
// GOMAXPROCS=1, where no parallelism exists, if it was measured.
func cpuAt2Senders(rev *Review) string {
	var parts []string
	for _, m := range seedbench.TxModes {
		p, ok := rev.find(m.String(), 2, 0, 1)
		if !ok {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", modeName(m), p.Metrics[MCPU].Median))
	}
	return "at GOMAXPROCS=1 and 2 senders the cpu-ns/pkt are " + strings.Join(parts, ", ")
}

// ---- D17901 -------------------------------------------------------------

func (r *runner) d17901() (Review, error) {
	rev := Review{
		ID:    SecD17901,
		Title: "D17901: use busdma unconditionally in iflib (ifsd_ba reuse)",
		Setup: fmt.Sprintf("forwarding 64-byte frames NIC A → iflib RX → input callback → iflib TX → NIC B, mp_ring, GOMAXPROCS=1, %v per cell; "+
			"reuse off (Config.NoRxReuse) loads and unloads every RX cluster's map; the IOMMU variant adds %v of CPU per unmap (busdma.StrictUnmapTime)",
			r.o.Window, busdma.StrictUnmapTime),
		FreeBSD: []Figure{
			{Label: "busdma, every cluster re-mapped at refill", Value: 13.9, Unit: "Mpps forwarded", Machine: machineHaswell},
			{Label: "busdma with ifsd_ba reuse", Value: 16.4, Unit: "Mpps forwarded", Machine: machineHaswell},
			{Label: "re-mapped → reuse", Value: 1.96, Unit: "% pps", Machine: machineAPU2},
			{Label: "re-mapped → reuse", Value: 1.74, Unit: "% pps", Machine: machineC2558},
			{Label: "re-mapped → reuse", Value: 1.50, Unit: "% pps", Machine: machineC2758},
		},
		Claim: "reposting a cluster by its kept bus address (ifsd_ba) instead of re-mapping it forwards faster: +18 % on a Haswell Xeon, +1.5–2 % on small Atom/AMD boxes",
	}
	var vs []fwdVariant
	for _, v := range []struct {
		name         string
		iommu, reuse bool
	}{{"plain/reuse=on", false, true}, {"plain/reuse=off", false, false}, {"iommu/reuse=on", true, true}, {"iommu/reuse=off", true, false}} {
		o := seedbench.ForwardOpts{Config: iflib.Config{NoRxReuse: !v.reuse}}
		if v.iommu {
			o.IOMMU, o.UnmapTime = true, busdma.StrictUnmapTime
		}
		vs = append(vs, fwdVariant{key: pkey{variant: v.name, proc: 1}, opts: o})
	}
	var a acc
	err := r.forwardRounds(1, vs, nil, func(v fwdVariant, round int, res seedbench.ForwardResult) {
		a.add(v.key, MMpps, res.Mpps())
		a.add(v.key, MCPU, res.CPUNsPerPkt())
		a.add(v.key, MLost, res.LostMpps())
		a.add(v.key, MMapLoad, res.MapLoadsPerPacket())
		r.prog.step("%s round %d/%d %-16s %6.3f Mpps %6.0f cpu-ns/pkt  map loads/pkt %.3f",
			SecD17901, round+1, r.o.Rounds, v.key.variant, res.Mpps(), res.CPUNsPerPkt(), res.MapLoadsPerPacket())
	})
	if err != nil {
		return rev, err
	}
	rev.Points = a.points()
	get := func(v string) Stat { p, _ := rev.find(v, 0, 0, 1); return p.Metrics[MCPU] }
	rev.Comparisons = []Comparison{
		compare("reuse on/off, plain space", "plain/reuse=on", "plain/reuse=off", MCPU, get("plain/reuse=on"), get("plain/reuse=off"),
			[]float64{16.4 / 13.9, 1.0196, 1.0174, 1.0150}, 1, 1),
	}
	iommu := compare("reuse on/off, strict IOMMU", "iommu/reuse=on", "iommu/reuse=off", MCPU, get("iommu/reuse=on"), get("iommu/reuse=off"), nil, 1, 1)
	iommu.Decides = false
	rev.Comparisons = append(rev.Comparisons, iommu)
	saved := get("plain/reuse=off").Median - get("plain/reuse=on").Median
	savedIOMMU := get("iommu/reuse=off").Median - get("iommu/reuse=on").Median
	rev.Verdict = decide(rev.Comparisons, "", "with reuse on the median cpu-ns/pkt is "+signedNs(-saved)+" on the plain space")
	rev.Notes = []string{
		fmt.Sprintf("Median cpu-ns/pkt with reuse on, against off: %s on the plain simulated space (where off adds a bus_dmamap_load and unload per packet), %s under the IOMMU model, "+
			"where each unmap also waits for an IOTLB invalidation (%v, a published measurement of Linux's strict mode; see docs/seeds.md).",
			signedNs(-saved), signedNs(-savedIOMMU), busdma.StrictUnmapTime),
		"The IOMMU comparison is a model with a cost taken from the literature, shown for scale; it does not decide the verdict. " +
			"The review's figures do not mention an IOMMU (FreeBSD's DMAR driver is off by default); it expected the bug to cost more on systems with IOMMUs.",
	}
	return rev, nil
}

// signedNs renders a difference in ns: "-112 ns", "+3 ns".
func signedNs(v float64) string { return fmt.Sprintf("%+.0f ns", v) }

// ---- D24094 -------------------------------------------------------------

func (r *runner) d24094() (Review, error) {
	rev := Review{
		ID:    SecD24094,
		Title: "D24094: fix allocation of queues to CPUs in iflib",
		Setup: fmt.Sprintf("forwarding 64-byte frames as in D17901, mp_ring, GOMAXPROCS=%d, %v per cell, queue tasks pinned (Config.PinTasks, CoreOffset) or not",
			r.full, r.o.Window),
		FreeBSD: []Figure{
			{Label: "before D24094 (TX queue on the L2 neighbour of its RX queue's core)", Value: 3.670, Unit: "Mpps forwarded", Machine: machineC2758},
			{Label: "with D24094 (TX and RX queue on one core)", Value: 4.066, Unit: "Mpps forwarded", Machine: machineC2758},
			{Label: "before, hyperthreading_allowed=0", Value: 3.666, Unit: "Mpps forwarded", Machine: machineC2758},
			{Label: "with D24094, hyperthreading_allowed=0", Value: 4.042, Unit: "Mpps forwarded", Machine: machineC2758},
		},
		Claim: "placing each TX queue on its RX queue's core (D24094) rather than on an L2 neighbour forwards about 11 % more packets",
	}
	pl, err := placementTables()
	if err != nil {
		return rev, err
	}
	rev.Placement = pl
	if r.full < 2 {
		rev.Verdict = Verdict{Result: NotOnTheseCPUs, Why: "with one CPU there is nowhere else to place a TX queue"}
		return rev, nil
	}
	aff, err := affinity()
	if err != nil {
		rev.Verdict = Verdict{Result: NotMeasured, Why: "this process's CPU affinity is unknown: " + err.Error()}
		return rev, nil
	}
	cpus := aff.List()
	if len(cpus) < 2 {
		rev.Verdict = Verdict{Result: NotOnTheseCPUs, Why: "this process may run on one CPU only"}
		return rev, nil
	}
	if err := tryPin(cpus[1]); err != nil {
		rev.Verdict = Verdict{Result: NotMeasured, Why: "this process cannot pin threads to CPUs: " + err.Error()}
		return rev, nil
	}
	c0, c1 := cpus[0], cpus[1]
	var vs []fwdVariant
	for _, v := range []struct {
		name string
		pin  bool
		cpuB int
	}{{"tx-on-rx-cpu", true, c0}, {"tx-on-other-cpu", true, c1}, {"unpinned", false, 0}} {
		cfgA := iflib.Config{PinTasks: v.pin, CoreOffset: coreOffset(c0, v.pin)}
		cfgB := iflib.Config{PinTasks: v.pin, CoreOffset: coreOffset(v.cpuB, v.pin)}
		vs = append(vs, fwdVariant{key: pkey{variant: v.name, proc: r.full}, opts: seedbench.ForwardOpts{Config: cfgA, ConfigB: &cfgB}})
	}
	var a acc
	var placed []string
	err = r.forwardRounds(r.full, vs, func(v fwdVariant, rig *seedbench.ForwardRig) {
		if v.opts.Config.PinTasks {
			placed = append(placed, fmt.Sprintf("%s: A's rxq0 on CPU %s, B's txq0 on CPU %s", v.key.variant,
				queueCPU(rig.CtxA.Placement(), "rxq0"), queueCPU(rig.CtxB.Placement(), "txq0")))
		}
	}, func(v fwdVariant, round int, res seedbench.ForwardResult) {
		a.add(v.key, MMpps, res.Mpps())
		a.add(v.key, MCPU, res.CPUNsPerPkt())
		a.add(v.key, MLost, res.LostMpps())
		r.prog.step("%s round %d/%d %-16s %6.3f Mpps %6.0f cpu-ns/pkt  lost %6.3f Mpps",
			SecD24094, round+1, r.o.Rounds, v.key.variant, res.Mpps(), res.CPUNsPerPkt(), res.LostMpps())
	})
	if err != nil {
		return rev, err
	}
	rev.Placement.Pinned = "iflib placed the pinned tasks so (Context.Placement): " + strings.Join(placed, "; ")
	rev.Points = a.points()
	get := func(v, m string) Stat { p, _ := rev.find(v, 0, 0, r.full); return p.Metrics[m] }
	rev.Comparisons = []Comparison{
		compare("TX on RX's CPU / on another CPU", "tx-on-rx-cpu", "tx-on-other-cpu", MMpps,
			get("tx-on-rx-cpu", MMpps), get("tx-on-other-cpu", MMpps), []float64{4.066 / 3.670, 4.042 / 3.666}, 5, r.full),
	}
	cpu := compare("TX on RX's CPU / on another CPU, CPU per packet", "tx-on-rx-cpu", "tx-on-other-cpu", MCPU,
		get("tx-on-rx-cpu", MCPU), get("tx-on-other-cpu", MCPU), nil, 5, r.full)
	cpu.Decides = false
	unp := compare("TX on RX's CPU / unpinned", "tx-on-rx-cpu", "unpinned", MMpps, get("tx-on-rx-cpu", MMpps), get("unpinned", MMpps), nil, 5, r.full)
	unp.Decides = false
	rev.Comparisons = append(rev.Comparisons, cpu, unp)
	rev.Verdict = decide(rev.Comparisons,
		fmt.Sprintf("the generator, the two simulated NICs and the two queue tasks each want a CPU; with %d, where B's TX task runs decides how much CPU A's RX task gets "+
			"rather than how warm its caches stay (FreeBSD: 8 queue pairs on 8 cores with hardware NICs)", r.full), "")
	if !pl.HereDiffers {
		rev.Notes = append(rev.Notes, "On this machine no two CPUs share an L2 cache, so iflib places the queues the same before and after D24094 (table above): "+
			"the change itself moves nothing here. The pinned variants place B's TX task by hand to measure the effect the change has elsewhere.")
	}
	return rev, nil
}

// queueCPU finds the CPU of a queue ("rxq0") in a placement map
// (cpumap.Placement.Map: one line per CPU, the CPU number first and the
// queues placed on it last).
func queueCPU(placement, queue string) string {
	for _, l := range strings.Split(placement, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && slices.Contains(f[1:], queue) {
			return f[0]
		}
	}
	return "?"
}

// coreOffset is Config.CoreOffset for CPU c: 0 is "automatic" there, so
// CPU 0 is asked for with a negative value.
func coreOffset(c int, pin bool) int {
	switch {
	case !pin:
		return 0
	case c == 0:
		return -1
	}
	return c
}

// affinity is the CPUs this process's threads may run on, read on a
// thread of its own.
func affinity() (cpumap.CPUSet, error) {
	return build(func() (cpumap.CPUSet, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		return cpumap.CurrentAffinity()
	})
}

// tryPin pins a throwaway thread to cpu to see whether pinning works here.
func tryPin(cpu int) error {
	_, err := build(func() (struct{}, error) {
		runtime.LockOSThread() // the thread ends with the goroutine, affinity and all
		unpin, err := cpumap.PinCurrentThread(cpu)
		if err == nil {
			err = unpin()
		}
		return struct{}{}, err
	})
	return err
}

// placementTables renders D24094's placement for the review's machine (an
// 8-core Atom C2758, cores sharing L2 in pairs, with a dual-port 82599 of
// 8 queue pairs) before and after the change, and for this machine with
// two devices of one queue pair per CPU (at most 8).
func placementTables() (*Placement, error) {
	atom, err := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 8, ThreadsPerCore: 1, L2CoresPerGroup: 2})
	if err != nil {
		return nil, err
	}
	ix := []cpumap.Request{{Device: "ix0", RxQueues: 8, TxQueues: 8}, {Device: "ix1", RxQueues: 8, TxQueues: 8}}
	fix, err := cpumap.PlacementTable(atom, ix, cpumap.BeforeD24094, cpumap.FreeBSD)
	if err != nil {
		return nil, err
	}
	here, err := cpumap.Discover()
	if err != nil {
		return nil, err
	}
	q := min(max(here.Online().Count(), 1), 8)
	reqs := []cpumap.Request{{Device: "simnic0", RxQueues: q, TxQueues: q}, {Device: "simnic1", RxQueues: q, TxQueues: q}}
	tab, err := cpumap.PlacementTable(here, reqs, cpumap.BeforeD24094, cpumap.FreeBSD)
	if err != nil {
		return nil, err
	}
	differs := false
	before := cpumap.NewAllocator(here, cpumap.AllocatorOptions{Behavior: cpumap.BeforeD24094})
	after := cpumap.NewAllocator(here, cpumap.AllocatorOptions{Behavior: cpumap.FreeBSD})
	for _, req := range reqs {
		b, err1 := before.Place(req)
		f, err2 := after.Place(req)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("placement on this machine: %v %v", err1, err2)
		}
		if !slices.Equal(b.RxCPU, f.RxCPU) || !slices.Equal(b.TxCPU, f.TxCPU) {
			differs = true
		}
	}
	return &Placement{Fixture: fix, Here: tab, HereDiffers: differs}, nil
}

// ---- D53674 -------------------------------------------------------------

// prefetchSenders are the sender counts of D53674's measurement (1 and 3
// threads).
var prefetchSenders = []int{1, 3}

func (r *runner) d53674() (Review, error) {
	rev := Review{
		ID:    SecD53674,
		Title: "D53674: iflib: remove transmit prefetching",
		Setup: fmt.Sprintf("transmit only, mp_ring, full-MTU 1514-byte UDP frames (header buffer + payload buffer), 1 and 3 sending goroutines, "+
			"iflib's prefetch points on or off (Config.Prefetch), GOMAXPROCS=1 (CPU cost per packet, the senders and the simulated NIC taking turns on one CPU), %v per cell", r.o.Window),
		FreeBSD: []Figure{
			{Label: "ice, 1 thread, prefetch on", Value: 31.2, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "ice, 1 thread, prefetch off", Value: 31.6, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "ice, 3 threads, prefetch on", Value: 82.5, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "ice, 3 threads, prefetch off", Value: 84.4, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "bnxt, 1 thread, prefetch on", Value: 30.7, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "bnxt, 1 thread, prefetch off", Value: 31.1, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "bnxt, 3 threads, prefetch on", Value: 82, Unit: "Gb/s", Machine: machineEPYC},
			{Label: "bnxt, 3 threads, prefetch off", Value: 88.8, Unit: "Gb/s", Machine: machineEPYC},
		},
		Claim: "transmit prefetching costs bandwidth: without it the same senders move 2–4 % more (1.3 % with 1 thread, 2.3–8.3 % with 3)",
	}
	var a acc
	err := withProcs(1, func() error {
		ons := []bool{false, true}
		var opts []seedbench.TxOptions
		for _, on := range ons {
			opts = append(opts, seedbench.TxOptions{Config: iflib.Config{TxMode: iflib.TxModeMPRing, Prefetch: on}, FrameLen: 1514})
		}
		rigs, closeAll, err := r.txRigs(opts)
		if err != nil {
			return err
		}
		for _, n := range prefetchSenders {
			for round := range r.o.Rounds {
				sums := r.txRound(rigs, n, round)
				for i, on := range ons {
					res := sums[i]
					k := pkey{variant: prefetchName(on), senders: n, proc: 1}
					a.add(k, MGbps, res.Gbps())
					a.add(k, MMpps, res.PPS()/1e6)
					a.add(k, MCPU, res.CPUNsPerPkt())
					a.add(k, MDrop, res.DropPct())
					r.prog.step("%s %d sender(s) round %d/%d %-12s %6.2f Gb/s %6.0f cpu-ns/pkt",
						SecD53674, n, round+1, r.o.Rounds, prefetchName(on), res.Gbps(), res.CPUNsPerPkt())
				}
			}
		}
		return closeAll()
	})
	if err != nil {
		return rev, err
	}
	rev.Points = a.points()
	get := func(v string, n int, m string) Stat { p, _ := rev.find(v, n, 0, 1); return p.Metrics[m] }
	fb := map[int][]float64{1: {31.6 / 31.2, 31.1 / 30.7}, 3: {84.4 / 82.5, 88.8 / 82}}
	for _, n := range prefetchSenders {
		rev.Comparisons = append(rev.Comparisons, compare(fmt.Sprintf("off/on, %d sender(s)", n), "prefetch=off", "prefetch=on", MCPU,
			get("prefetch=off", n, MCPU), get("prefetch=on", n, MCPU), fb[n], needPrefetch(n), 1))
	}
	for _, n := range prefetchSenders {
		c := compare(fmt.Sprintf("off/on Gb/s, %d sender(s)", n), "prefetch=off", "prefetch=on", MGbps,
			get("prefetch=off", n, MGbps), get("prefetch=on", n, MGbps), fb[n], needPrefetch(n), 1)
		c.Decides = false
		rev.Comparisons = append(rev.Comparisons, c)
	}
	rev.Verdict = decide(rev.Comparisons,
		"FreeBSD's 3 threads each had a core and shared memory bandwidth with each other and the NIC's DMA, which is what prefetching wasted; here they take turns on one CPU",
		"what FreeBSD measured was prefetching wasting L3 and memory bandwidth beside a NIC's DMA; here the frame a sender has just written is still in its CPU's cache "+
			"and the device is a goroutine copying from it, so a prefetch costs and saves other things than it did there")
	rev.Notes = []string{"The verdict uses cpu-ns/pkt at GOMAXPROCS=1: FreeBSD's packet blaster was CPU-bound, a prefetch is a cost per packet, and one CPU measures that cost with the least disturbance from the simulator and from other load; Gb/s is shown beside it."}
	return rev, nil
}

// needPrefetch is how many CPUs D53674's effect needs at n senders: one
// for a single sender's cost per packet; with several, one each, since
// what prefetching wasted was memory bandwidth shared between cores.
func needPrefetch(n int) int { return n }

func prefetchName(on bool) string {
	if on {
		return "prefetch=on"
	}
	return "prefetch=off"
}

// ---- D27755 -------------------------------------------------------------

// batchSizes are the RX batch sizes (rx budgets) of the batching section.
var batchSizes = []int{1, 4, 16, 32}

func (r *runner) d27755() (Review, error) {
	rev := Review{
		ID:    SecD27755,
		Title: "D27755: add batched packet processing support",
		Setup: fmt.Sprintf("forwarding 64-byte frames as in D17901, GOMAXPROCS=1, rx budget (the most packets per RX pass) 1, 4, 16, 32; "+
			"the whole batch handed to the input callback at once, or packet by packet (Config.RxPerPacket); the callback transmits what it is given; %v per cell", r.o.Window),
		FreeBSD: []Figure{
			{Label: "per-packet input", Value: 903309, Unit: "pps forwarded", Machine: machineSmall},
			{Label: "batched input, batches of one", Value: 889997, Unit: "pps forwarded", Machine: machineSmall},
			{Label: "per-packet input", Value: 33139005, Unit: "pps forwarded", Machine: machineBig},
			{Label: "batched input, batches of one", Value: 32638309, Unit: "pps forwarded", Machine: machineBig},
			{Label: "per-packet input", Value: 33133842, Unit: "pps forwarded", Machine: machineE5v4},
			{Label: "batched input, batches of one", Value: 32983818, Unit: "pps forwarded", Machine: machineE5v4},
		},
		Claim: "the batching code costs about 1.5 % when each batch holds one packet (0.5–1.5 % measured)",
	}
	var vs []fwdVariant
	for _, b := range batchSizes {
		for _, per := range []bool{false, true} {
			vs = append(vs, fwdVariant{key: pkey{variant: batchName(per), batch: b, proc: 1},
				opts: seedbench.ForwardOpts{Config: iflib.Config{RxBudget: b, RxPerPacket: per}}})
		}
	}
	var a acc
	err := r.forwardRounds(1, vs, nil, func(v fwdVariant, round int, res seedbench.ForwardResult) {
		a.add(v.key, MMpps, res.Mpps())
		a.add(v.key, MCPU, res.CPUNsPerPkt())
		a.add(v.key, MLost, res.LostMpps())
		r.prog.step("%s round %d/%d batch %2d %-10s %6.3f Mpps %6.0f cpu-ns/pkt",
			SecD27755, round+1, r.o.Rounds, v.key.batch, v.key.variant, res.Mpps(), res.CPUNsPerPkt())
	})
	if err != nil {
		return rev, err
	}
	rev.Points = a.points()
	get := func(v string, b int) Stat { p, _ := rev.find(v, 0, b, 1); return p.Metrics[MCPU] }
	costs := []float64{903309.0 / 889997, 33139005.0 / 32638309, 33133842.0 / 32983818}
	limit := 1 + 2*(slices.Max(costs)-1)
	for _, b := range batchSizes {
		if b == 1 {
			rev.Comparisons = append(rev.Comparisons, bound("batched/per-packet cost at batch 1", "batched", "per-packet", MCPU,
				get("batched", 1), get("per-packet", 1), costs, limit, 1, 1))
			continue
		}
		c := compare(fmt.Sprintf("batched/per-packet at batch %d", b), "batched", "per-packet", MCPU, get("batched", b), get("per-packet", b), nil, 1, 1)
		c.Decides = false
		rev.Comparisons = append(rev.Comparisons, c)
	}
	rev.Verdict = decide(rev.Comparisons, "", "")
	rev.Notes = []string{fmt.Sprintf("A bound: the claim is that batching costs little when batches are of one packet, so it holds when the cost stays within twice FreeBSD's largest (%.1f %%). "+
		"The larger batches show what the batching is for; FreeBSD's thread has no figure for them.", 100*(limit-1))}
	return rev, nil
}

func batchName(per bool) string {
	if per {
		return "per-packet"
	}
	return "batched"
}

// The machines of FreeBSD's figures, as the reviews give them.
const (
	machineTurin   = "96-core AMD Turin, 400G bnxt"
	machineHaswell = "Haswell Xeon E5-2697 v3, dual 40G ixl"
	machineAPU2    = "PC Engines APU2: 4-core AMD GX-412TC, i210 (1G)"
	machineC2558   = "Netgate RCC-VE 4860: 4-core Atom C2558, i350 (1G)"
	machineC2758   = "SuperMicro 5018A-FTN4: 8-core Atom C2758, 82599 (10G)"
	machineEPYC    = "AMD EPYC 7502P, 100G ice and bnxt"
	machineE5v4    = "16-core Xeon E5-2697A v4, ConnectX-4 (100G)"
	machineSmall   = "a \"small device\" (not named in the review)"
	machineBig     = "a \"big device\" (not named in the review)"
)
