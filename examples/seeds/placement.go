package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/examples/seedbench"
	"github.com/goiflib/goiflib/iflib"
)

// ---- D24094 -------------------------------------------------------------
//
// FreeBSD's measurement: 8 queue pairs on 8 cores, all carrying traffic;
// before D24094 each TX queue ran on the L2 neighbour of its RX queue's
// core, after it on the same core. Both layouts keep the same work on the
// same cores; only where each TX queue's work runs relative to the packets
// it sends changes. Here: two queue pairs on two CPUs, 64 flows spread
// over both by NIC A's RSS hash, every queue task pinned (Config.PinTasks)
// with queue pair i on CPU i of the pair. "tx-on-own-cpu" (after) sends
// what A's RX queue i received on B's TX queue i, on the same CPU;
// "tx-on-other-cpu" (before) sends it on B's TX queue 1-i, on the other
// CPU of the pair. The same threads are pinned to the same CPUs in both:
// only locality differs. It decides only where the pair shares an L2
// cache, as FreeBSD's did.

// d24094Flows spreads the generator's traffic over both queue pairs.
const d24094Flows = 64

// d24094Need is the CPUs D24094's layout needs: the two CPUs of the queue
// pairs, and one each for the generator and the two simulated NICs (a
// hardware NIC's work, which FreeBSD's cores did not do).
const d24094Need = 5

func (r *runner) d24094() (Review, error) {
	start := time.Now()
	rev := Review{
		ID:    SecD24094,
		Title: "D24094: fix allocation of queues to CPUs in iflib",
		Setup: fmt.Sprintf("forwarding 64-byte frames as in D17901 over two queue pairs (%d flows spread by NIC A's RSS hash), mp_ring, GOMAXPROCS=%d, %v per cell; "+
			"every queue task pinned (Config.PinTasks), queue pair i on CPU i of a pair of CPUs; tx-on-own-cpu sends what A's RX queue i received on B's TX queue i (after D24094), "+
			"tx-on-other-cpu on B's TX queue 1-i, on the other CPU (before); unpinned for scale", d24094Flows, r.full, r.o.Window),
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
		rev.Verdict = Verdict{Result: NotOnTheseCPUs, Short: "one CPU", Why: "with one CPU there is nowhere else to place a TX queue"}
		return rev, nil
	}
	aff, err := affinity()
	if err != nil {
		rev.Verdict = Verdict{Result: NotMeasured, Short: "CPU affinity unknown", Why: "this process's CPU affinity is unknown: " + err.Error()}
		return rev, nil
	}
	topo, err := cpumap.Discover()
	if err != nil {
		return rev, err
	}
	pair, l2 := l2Pair(topo, aff)
	if len(pair) < 2 {
		rev.Verdict = Verdict{Result: NotOnTheseCPUs, Short: "one CPU", Why: "this process may run on one CPU only"}
		return rev, nil
	}
	if err := tryPin(pair[1]); err != nil {
		rev.Verdict = Verdict{Result: NotMeasured, Short: "cannot pin", Why: "this process cannot pin threads to CPUs: " + err.Error()}
		return rev, nil
	}
	pl.Pair, pl.L2 = pair, l2
	alloc, err := pairAllocator(pair)
	if err != nil {
		return rev, err
	}
	same, cross := func(rxq int) int { return rxq }, func(rxq int) int { return 1 - rxq }
	pinned := iflib.Config{PinTasks: true, CoreOffset: -1} // from the pair's first CPU
	cells := []fwdCell{
		{key: pkey{variant: "tx-on-own-cpu", proc: r.full}, opts: seedbench.ForwardOpts{Queues: 2, Flows: d24094Flows, TxQueue: same, CPUs: alloc, Config: pinned}},
		{key: pkey{variant: "tx-on-other-cpu", proc: r.full}, opts: seedbench.ForwardOpts{Queues: 2, Flows: d24094Flows, TxQueue: cross, CPUs: alloc, Config: pinned}},
		{key: pkey{variant: "unpinned", proc: r.full}, opts: seedbench.ForwardOpts{Queues: 2, Flows: d24094Flows, TxQueue: same}},
	}
	var a acc
	var placed []string
	record := func(c fwdCell, round int, res seedbench.ForwardResult, unquiet int) {
		a.addForward(c.key, res, unquiet, c.opts.Raw)
		r.prog.step("%s round %d %-16s %6.3f Mpps %6.0f cpu-ns/pkt %4.2f CPUs busy",
			SecD24094, len(a.samples(c.key, MMpps)), c.key.variant, res.Mpps(), res.CPUNsPerPkt(), res.CPUsBusy())
	}
	built := func(c fwdCell, rig *seedbench.ForwardRig) {
		if c.opts.Config.PinTasks && len(placed) < 2 {
			placed = append(placed, fmt.Sprintf("%s: A's rxq0 on CPU %s, rxq1 on CPU %s; B's txq0 on CPU %s, txq1 on CPU %s; A's rxq i sends on B's txq %s",
				c.key.variant, queueCPU(rig.CtxA.Placement(), "rxq0"), queueCPU(rig.CtxA.Placement(), "rxq1"),
				queueCPU(rig.CtxB.Placement(), "txq0"), queueCPU(rig.CtxB.Placement(), "txq1"), map[bool]string{true: "i", false: "1-i"}[c.key.variant == "tx-on-own-cpu"]))
		}
	}
	s := func(v, m string) []float64 { return a.samples(pkey{variant: v, proc: r.full}, m) }
	comps := func() []Comparison {
		return []Comparison{
			r.rule.judge(cmpSpec{name: "TX on its RX queue's CPU / on the other CPU", better: "tx-on-own-cpu", worse: "tx-on-other-cpu", metric: MMpps,
				freebsd: []float64{4.066 / 3.670, 4.042 / 3.666}, need: d24094Need, cpus: r.full},
				s("tx-on-own-cpu", MMpps), s("tx-on-other-cpu", MMpps), nil, s("tx-on-own-cpu", MBusy), s("tx-on-other-cpu", MBusy)),
			r.rule.judge(cmpSpec{name: "TX on its RX queue's CPU / on the other CPU, CPU per packet", better: "tx-on-own-cpu", worse: "tx-on-other-cpu", metric: MCPU,
				need: d24094Need, cpus: r.full, info: "CPU cost beside FreeBSD's measure"},
				s("tx-on-own-cpu", MCPU), s("tx-on-other-cpu", MCPU), nil, s("tx-on-own-cpu", MBusy), s("tx-on-other-cpu", MBusy)),
			r.rule.judge(cmpSpec{name: "TX on its RX queue's CPU / unpinned", better: "tx-on-own-cpu", worse: "unpinned", metric: MMpps,
				need: d24094Need, cpus: r.full, info: "the cost of pinning, for scale"},
				s("tx-on-own-cpu", MMpps), s("unpinned", MMpps), nil, s("tx-on-own-cpu", MBusy), s("unpinned", MBusy)),
		}
	}
	why := func() reasons {
		w := reasons{cpu: "the two CPUs of the queue pairs, and one each for the generator and the two simulated NICs, whose work FreeBSD's hardware NICs did"}
		if !l2 {
			w.here = fmt.Sprintf("no two CPUs this process may use share an L2 cache (the pair measured, CPUs %d and %d, does not), so the layout FreeBSD measured before D24094 "+
				"(each TX queue on the L2 neighbour of its RX queue's core) does not exist here; the rows show what sending from a CPU that shares no L2 costs, another question", pair[0], pair[1])
			w.hereShort = "no L2 neighbours"
		}
		return w
	}
	err = r.sequential([]int{0, 1, 2}, func(first bool, idx []int) error {
		var cs []fwdCell
		for _, i := range idx {
			cs = append(cs, cells[i])
		}
		if !first {
			r.prog.plan(r.o.Rounds * len(cs))
		}
		return r.forwardBlock(r.full, cs, r.addBlock(&rev), built, record)
	}, func(int) []int {
		return r.needed(comps(), why(), func(v string, _ Comparison) []int { return cellIndex(cells, v, 0) })
	})
	if err != nil {
		return rev, err
	}
	rev.Placement.Pinned = "iflib placed the pinned tasks so (Context.Placement): " + strings.Join(placed, "; ")
	r.finish(&rev, &a, comps, why, start)
	rev.Notes = []string{"The pinned rows cost more CPU per packet than the unpinned one in both layouts: a pinned queue task runs on an OS thread of its own " +
		"(runtime.LockOSThread and sched_setaffinity), so every wake-up of it is a hand-off between OS threads instead of a goroutine switch. " +
		"Both pinned rows pay that alike; only the CPU each TX queue's work runs on differs."}
	if !pl.HereDiffers {
		rev.Notes = append(rev.Notes, "On this machine iflib places the queues the same before and after D24094 (table above): the change itself moves nothing here.")
	}
	return rev, nil
}

// l2Pair picks the two CPUs for D24094's queue pairs from the CPUs this
// process may use: two that share an L2 cache (l2 true) if there are,
// otherwise the first two.
func l2Pair(topo *cpumap.Topology, aff cpumap.CPUSet) (pair []int, l2 bool) {
	cpus := aff.List()
	for _, c := range cpus {
		if n := topo.L2Neighbor(c); n >= 0 && aff.Has(n) {
			return []int{min(c, n), max(c, n)}, true
		}
	}
	return cpus[:min(2, len(cpus))], false
}

// pairAllocator is a placement registry over the two CPUs of pair alone:
// with CoreOffset at its first CPU, iflib places queue pair 0 on pair[0]
// and queue pair 1 on pair[1], whichever CPUs they are. The topology is
// read from a sysfs tree naming only those two CPUs (each its own core;
// placement needs nothing more).
func pairAllocator(pair []int) (*cpumap.Allocator, error) {
	fsys := fstest.MapFS{"online": {Data: []byte(fmt.Sprintf("%d,%d\n", pair[0], pair[1]))}}
	for _, c := range pair {
		fsys[fmt.Sprintf("cpu%d/topology/core_id", c)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d\n", c))}
		fsys[fmt.Sprintf("cpu%d/topology/physical_package_id", c)] = &fstest.MapFile{Data: []byte("0\n")}
	}
	t, err := cpumap.ParseSysfs(fsys)
	if err != nil {
		return nil, err
	}
	return cpumap.NewAllocator(t, cpumap.AllocatorOptions{}), nil
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
