package cpumap

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Worked example A (get_cpuid_for_queue and get_ctx_core_offset as committed
// with D24094): one NIC, 4 RX + 4 TX queues, no core_offset, on 4
// cores × 2 threads numbered adjacently (FreeBSD x86). "ok" means INTR_CPUS
// = {0,2,4,6}; "fail" means all_cpus {0..7}, not physical.
func TestWorkedExampleA(t *testing.T) {
	all := CPUSetOf(0, 1, 2, 3, 4, 5, 6, 7)
	cases := []struct {
		sep, logical, fail bool
		rx, tx             []int
		next               int
	}{
		{false, false, false, []int{0, 2, 4, 6}, []int{0, 2, 4, 6}, 0},
		{true, false, false, []int{0, 2, 4, 6}, []int{0, 2, 4, 6}, 0},
		{true, true, false, []int{0, 2, 4, 6}, []int{1, 3, 5, 7}, 0},
		{false, false, true, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, 4},
		{true, false, true, []int{0, 1, 2, 3}, []int{4, 5, 6, 7}, 0},
		{false, true, true, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, 4},
		{true, true, true, []int{0, 1, 2, 3}, []int{4, 5, 6, 7}, 0},
	}
	for _, b := range behaviors {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/sep%v/logical%v/fail%v", b, c.sep, c.logical, c.fail), func(t *testing.T) {
				a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
				req := Request{Device: "nic0", RxQueues: 4, TxQueues: 4, Policy: Policy{SeparateTxRx: c.sep, UseLogicalCores: c.logical}}
				set := CPUSetOf(0, 2, 4, 6)
				if c.fail {
					req.CPUs, set = &all, all
				}
				pl := mustPlace(t, a, req)
				checkCPUs(t, "rx", pl.RxCPU, c.rx)
				checkCPUs(t, "tx", pl.TxCPU, c.tx)
				checkNext(t, a, set, c.next)
				assert.False(t, pl.Physical == c.fail || pl.CPUs != set || !pl.Registered || pl.Base != 0, "placement = %+v", pl)
			})
		}
	}
}

// Quirk 1: use_logical_cores without separate_txrx. FreeBSD ignores it;
// intended widens the physical set to all threads ("consecutive cores of
// any type, pairs share").
func TestQuirkLogicalWithoutSeparate(t *testing.T) {
	for _, n := range []SiblingNumbering{Adjacent, Interleaved} {
		tp := fourByTwo(t, n)
		intr, _ := tp.IntrCPUs()
		req := Request{Device: "nic0", RxQueues: 4, TxQueues: 4, Policy: Policy{UseLogicalCores: true}}

		fb := mustPlace(t, NewAllocator(tp, AllocatorOptions{Behavior: FreeBSD}), req)
		checkCPUs(t, n.String()+" freebsd rx", fb.RxCPU, intr.List())
		checkCPUs(t, n.String()+" freebsd tx", fb.TxCPU, intr.List())

		a := NewAllocator(tp, AllocatorOptions{})
		in := mustPlace(t, a, req)
		checkCPUs(t, n.String()+" intended rx", in.RxCPU, []int{0, 1, 2, 3})
		checkCPUs(t, n.String()+" intended tx", in.TxCPU, []int{0, 1, 2, 3})
		assert.False(t, !in.Widened || in.CPUs != tp.Online() || in.Physical, "%v: intended placement set %s widened %v physical %v", n, in.CPUs, in.Widened, in.Physical)
		checkNext(t, a, tp.Online(), 4)
		in2 := mustPlace(t, a, req)
		checkCPUs(t, n.String()+" second NIC rx", in2.RxCPU, []int{4, 5, 6, 7})
	}
}

// The same table with Linux's interleaved numbering: core k = {k, k+4}, so
// INTR_CPUS = {0,1,2,3} and the L2 neighbours are 4..7.
func TestWorkedExampleAInterleaved(t *testing.T) {
	for _, b := range behaviors {
		a := NewAllocator(fourByTwo(t, Interleaved), AllocatorOptions{Behavior: b})
		pl := mustPlace(t, a, Request{Device: "nic0", RxQueues: 4, TxQueues: 4, Policy: Policy{SeparateTxRx: true, UseLogicalCores: true}})
		checkCPUs(t, "rx", pl.RxCPU, []int{0, 1, 2, 3})
		checkCPUs(t, "tx", pl.TxCPU, []int{4, 5, 6, 7})
		pl2 := mustPlace(t, NewAllocator(fourByTwo(t, Interleaved), AllocatorOptions{Behavior: b}),
			Request{Device: "nic0", RxQueues: 4, TxQueues: 4})
		checkCPUs(t, "paired rx", pl2.RxCPU, []int{0, 1, 2, 3})
		checkCPUs(t, "paired tx", pl2.TxCPU, []int{0, 1, 2, 3})
	}
}

// Worked example B: 2 RX + 2 TX per NIC, several NICs, no core_offset.
func TestWorkedExampleB(t *testing.T) {
	all := CPUSetOf(0, 1, 2, 3, 4, 5, 6, 7)
	cases := []struct {
		name         string
		sep, logical bool
		cpus         *CPUSet
		nics         [][2][]int
	}{
		{"sep0 phys", false, false, nil, [][2][]int{{{0, 2}, {0, 2}}, {{4, 6}, {4, 6}}, {{0, 2}, {0, 2}}}},
		{"sep1 logical1 phys", true, true, nil, [][2][]int{{{0, 2}, {1, 3}}, {{4, 6}, {5, 7}}, {{0, 2}, {1, 3}}}},
		{"sep1 logical0 phys", true, false, nil, [][2][]int{{{0, 2}, {4, 6}}, {{0, 2}, {4, 6}}}},
		{"sep1 logical1 fail", true, true, &all, [][2][]int{{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{0, 1}, {2, 3}}}},
	}
	for _, b := range behaviors {
		for _, c := range cases {
			a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
			for i, want := range c.nics {
				pl := mustPlace(t, a, Request{Device: fmt.Sprint("nic", i), RxQueues: 2, TxQueues: 2, CPUs: c.cpus,
					Policy: Policy{SeparateTxRx: c.sep, UseLogicalCores: c.logical}})
				checkCPUs(t, fmt.Sprintf("%v %s nic%d rx", b, c.name, i), pl.RxCPU, want[0])
				checkCPUs(t, fmt.Sprintf("%v %s nic%d tx", b, c.name, i), pl.TxCPU, want[1])
			}
		}
	}
}

// Worked example C: uneven and oversubscribed, plus quirk 3's gap.
func TestWorkedExampleC(t *testing.T) {
	cases := []struct {
		name                    string
		nrx, ntx                int
		sep, logical            bool
		rx, txFreeBSD, txIntend []int
	}{
		{"8+8 sep0", 8, 8, false, false, []int{0, 2, 4, 6, 0, 2, 4, 6}, []int{0, 2, 4, 6, 0, 2, 4, 6}, []int{0, 2, 4, 6, 0, 2, 4, 6}},
		{"4+6 sep1 logical1", 4, 6, true, true, []int{0, 2, 4, 6}, []int{1, 3, 5, 7, 0, 2}, []int{1, 3, 5, 7, 0, 2}},
		{"2+4 sep0", 2, 4, false, false, []int{0, 2}, []int{0, 2, 4, 6}, []int{0, 2, 4, 6}},
		// Quirk 3: FreeBSD gives TX2, TX3 indices nrx+q = 4, 5 (CPUs 0, 2,
		// on top of RX); intended continues right after RX: indices 2, 3.
		{"2+4 sep1 logical1", 2, 4, true, true, []int{0, 2}, []int{1, 3, 0, 2}, []int{1, 3, 4, 6}},
		{"3+5 sep1 logical0", 3, 5, true, false, []int{0, 2, 4}, []int{6, 0, 2, 4, 6}, []int{6, 0, 2, 4, 6}},
	}
	for _, c := range cases {
		for _, b := range behaviors {
			a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
			pl := mustPlace(t, a, Request{Device: "nic0", RxQueues: c.nrx, TxQueues: c.ntx, Policy: Policy{SeparateTxRx: c.sep, UseLogicalCores: c.logical}})
			want := c.txIntend
			if b == FreeBSD {
				want = c.txFreeBSD
			}
			checkCPUs(t, fmt.Sprintf("%s %v rx", c.name, b), pl.RxCPU, c.rx)
			checkCPUs(t, fmt.Sprintf("%s %v tx", c.name, b), pl.TxCPU, want)
		}
	}
}

// Worked example D: explicit core_offset on {0,2,4,6}, 4+4, sep 0. The set
// starts at CPU 0, so both behaviours agree.
func TestWorkedExampleD(t *testing.T) {
	cases := []struct {
		off, base int
		cpus      []int
	}{
		{0, 0, []int{0, 2, 4, 6}},
		{2, 2, []int{2, 4, 6, 0}},
		{3, 4, []int{4, 6, 0, 2}},
		{5, 6, []int{6, 0, 2, 4}},
		{7, 0, []int{0, 2, 4, 6}}, // 7 % span 7 = 0
		{8, 2, []int{2, 4, 6, 0}}, // 8 % 7 = 1, advanced to 2 (FreeBSD only: 8 is past the last CPU)
	}
	for _, b := range behaviors {
		for _, c := range cases {
			if b == Intended && c.off > 7 {
				continue
			}
			a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
			pl := mustPlace(t, a, Request{Device: "nic0", RxQueues: 4, TxQueues: 4, Policy: Policy{CoreOffset: Offset(c.off)}})
			assert.False(t, pl.Base != c.base || pl.Registered, "%v offset %d: base %d registered %v, want base %d unregistered", b, c.off, pl.Base, pl.Registered, c.base)
			checkCPUs(t, fmt.Sprintf("%v offset %d rx", b, c.off), pl.RxCPU, c.cpus)
			checkCPUs(t, fmt.Sprintf("%v offset %d tx", b, c.off), pl.TxCPU, c.cpus)
			checkNext(t, a, CPUSetOf(0, 2, 4, 6), -1)
		}
	}
	// Offset 9 on the 8-CPU machine: FreeBSD wraps it by the
	// span (9 % 7 = 2); intended rejects it, as no CPU 9 exists.
	fb := mustPlace(t, NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: FreeBSD}),
		Request{Device: "nic0", RxQueues: 4, TxQueues: 4, Policy: Policy{CoreOffset: Offset(9)}})
	checkCPUs(t, "freebsd offset 9", fb.RxCPU, []int{2, 4, 6, 0})
}

// Quirk 2: an offset outside [first, last] of a set that does not start at
// CPU 0. For example, with ifc_cpus = {4..7} FreeBSD sends offsets 1 and 9
// to CPU 4, intended to CPU 5.
func TestQuirkOffsetOutsideSet(t *testing.T) {
	tp := synth(t, SyntheticConfig{Packages: 2, CoresPerPackage: 4, ThreadsPerCore: 1})
	domain := setPtr(4, 5, 6, 7)
	cases := []struct {
		off              int
		freebsd, intend  int
		intendedRejected bool
	}{
		{1, 4, 5, false},
		{9, 4, 5, true}, // CPU 9 does not exist: intended rejects
		{3, 4, 7, false},
		{0, 4, 4, false},
		{5, 5, 5, false}, // inside the range: taken as a CPU number by both
		{6, 6, 6, false},
	}
	for _, c := range cases {
		fb := mustPlace(t, NewAllocator(tp, AllocatorOptions{Behavior: FreeBSD}),
			Request{Device: "nic", RxQueues: 1, TxQueues: 1, CPUs: domain, CPUsArePhysical: true, Policy: Policy{CoreOffset: Offset(c.off)}})
		assert.Equal(t, c.freebsd, fb.Base, "freebsd offset %d: base %d, want %d", c.off, fb.Base, c.freebsd)
		in, err := NewAllocator(tp, AllocatorOptions{}).Place(
			Request{Device: "nic", RxQueues: 1, TxQueues: 1, CPUs: domain, CPUsArePhysical: true, Policy: Policy{CoreOffset: Offset(c.off)}})
		if c.intendedRejected {
			assert.ErrorIs(t, err, ErrCoreOffset, "intended offset %d: err %v, want ErrCoreOffset", c.off, err)
			continue
		}
		assert.False(t, err != nil || in.Base != c.intend, "intended offset %d: base %v err %v, want %d", c.off, in, err, c.intend)
	}
}

// A device with an explicit offset does not move the shared next_cpuid:
// NIC A with core_offset 2 gets RX 2,4; NIC B without one still starts at 0.
func TestOffsetDeviceLeavesRegistryAlone(t *testing.T) {
	for _, b := range behaviors {
		a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
		pa := mustPlace(t, a, Request{Device: "A", RxQueues: 2, TxQueues: 2, Policy: Policy{CoreOffset: Offset(2)}})
		checkCPUs(t, "A rx", pa.RxCPU, []int{2, 4})
		pb := mustPlace(t, a, Request{Device: "B", RxQueues: 2, TxQueues: 2})
		checkCPUs(t, "B rx", pb.RxCPU, []int{0, 2})
		pc := mustPlace(t, a, Request{Device: "C", RxQueues: 2, TxQueues: 2})
		checkCPUs(t, "C rx", pc.RxCPU, []int{4, 6})
	}
}

// Release drops the reference but never rewinds next_cpuid; when the last
// reference goes, the entry goes and the next device starts at the first
// CPU again. Releasing twice changes nothing.
func TestReleaseAndReattach(t *testing.T) {
	for _, b := range behaviors {
		a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
		set := CPUSetOf(0, 2, 4, 6)
		p0 := mustPlace(t, a, Request{Device: "nic0", RxQueues: 1, TxQueues: 1})
		p1 := mustPlace(t, a, Request{Device: "nic1", RxQueues: 1, TxQueues: 1})
		checkCPUs(t, "nic1", p1.RxCPU, []int{2})
		p0.Release()
		p0.Release()
		_, refs, _ := a.Next(set)
		assert.Equal(t, 1, refs, "%v: refcount after release %d, want 1", b, refs)
		p2 := mustPlace(t, a, Request{Device: "nic2", RxQueues: 1, TxQueues: 1})
		checkCPUs(t, "nic2 (not rewound)", p2.RxCPU, []int{4})
		p1.Release()
		p2.Release()
		checkNext(t, a, set, -1)
		p3 := mustPlace(t, a, Request{Device: "nic3", RxQueues: 1, TxQueues: 1})
		checkCPUs(t, "nic3 (fresh entry)", p3.RxCPU, []int{0})
		checkNext(t, a, set, 2)
	}
}

// Quirk 4: FreeBSD's detach unrefs the registry even for a device with an
// explicit core_offset, stealing another device's reference.
func TestQuirkOffsetDeviceRelease(t *testing.T) {
	set := CPUSetOf(0, 2, 4, 6)
	want := map[Behavior]int{Intended: 4, FreeBSD: 0}
	for _, b := range behaviors {
		a := NewAllocator(fourByTwo(t, Adjacent), AllocatorOptions{Behavior: b})
		mustPlace(t, a, Request{Device: "auto", RxQueues: 2, TxQueues: 2})
		fixed := mustPlace(t, a, Request{Device: "fixed", RxQueues: 2, TxQueues: 2, Policy: Policy{CoreOffset: Offset(6)}})
		fixed.Release()
		next := mustPlace(t, a, Request{Device: "later", RxQueues: 2, TxQueues: 2})
		assert.Equal(t, want[b], next.RxCPU[0], "%v: device after the offset device's release starts at %d, want %d", b, next.RxCPU[0], want[b])
		if b == Intended {
			checkNext(t, a, set, 0)
		}
	}
}

// The machine of D24094's measurement: Atom C2758, 8 cores, no SMT, pairs of cores sharing
// L2. The L2 neighbour of a core is the other core of its module, inside
// INTR_CPUS, so TX lands on a core that also has an RX queue.
func TestAtomL2Modules(t *testing.T) {
	tp := synth(t, SyntheticConfig{Packages: 1, CoresPerPackage: 8, ThreadsPerCore: 1, L2CoresPerGroup: 2})
	for _, b := range behaviors {
		a := NewAllocator(tp, AllocatorOptions{Behavior: b})
		pl := mustPlace(t, a, Request{Device: "ix0", RxQueues: 4, TxQueues: 4, Policy: Policy{SeparateTxRx: true, UseLogicalCores: true}})
		checkCPUs(t, "rx", pl.RxCPU, []int{0, 1, 2, 3})
		checkCPUs(t, "tx", pl.TxCPU, []int{1, 0, 3, 2})
		assert.Equal(t, 4, pl.CoresConsumed, "cores consumed %d, want 4", pl.CoresConsumed)
		pl2 := mustPlace(t, a, Request{Device: "ix1", RxQueues: 4, TxQueues: 4, Policy: Policy{SeparateTxRx: true, UseLogicalCores: true}})
		checkCPUs(t, "ix1 rx", pl2.RxCPU, []int{4, 5, 6, 7})
		checkCPUs(t, "ix1 tx", pl2.TxCPU, []int{5, 4, 7, 6})
	}
	// 4-core clusters (Tremont-like): every core's neighbour is the lowest
	// other core of its cluster.
	tr := synth(t, SyntheticConfig{Packages: 1, CoresPerPackage: 8, ThreadsPerCore: 1, L2CoresPerGroup: 4})
	var got []int
	for c := range 8 {
		got = append(got, tr.L2Neighbor(c))
	}
	checkCPUs(t, "4-core cluster neighbours", got, []int{1, 0, 0, 0, 5, 4, 4, 4})
}

// Quirk 3, mixed case: some RX CPUs have an L2 neighbour and some do not.
// cpu0/cpu1 are SMT siblings; cpu2 and cpu3 are single-thread cores with
// private L2. INTR_CPUS = {0,2,3}.
func TestQuirkMixedNeighbours(t *testing.T) {
	tp, err := ParseSysfs(mixedFS())
	require.NoError(t, err)
	intr, phys := tp.IntrCPUs()
	require.Equal(t, CPUSetOf(0, 2, 3), intr, "IntrCPUs = %s %v", intr, phys)
	require.True(t, phys, "IntrCPUs = %s %v", intr, phys)
	want := map[Behavior][]int{FreeBSD: {1, 2, 3}, Intended: {1, 0, 2}}
	for _, b := range behaviors {
		pl := mustPlace(t, NewAllocator(tp, AllocatorOptions{Behavior: b}),
			Request{Device: "nic0", RxQueues: 3, TxQueues: 3, Policy: Policy{SeparateTxRx: true, UseLogicalCores: true}})
		checkCPUs(t, b.String()+" rx", pl.RxCPU, []int{0, 2, 3})
		checkCPUs(t, b.String()+" tx", pl.TxCPU, want[b])
	}
}
