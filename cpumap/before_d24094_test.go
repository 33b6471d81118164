package cpumap

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The placements iflib made before D24094 (find_nth, get_core_offset,
// find_close_core), on the machines whose "CPU mapping oddities" that review
// describes: 4 cores × 2 SMT threads numbered as FreeBSD does on x86.
func TestBeforeD24094FourByTwo(t *testing.T) {
	tp := fourByTwo(t, Adjacent)
	place := func(a *Allocator, req Request) *Placement {
		t.Helper()
		pl := mustPlace(t, a, req)
		checkInvariantsBefore(t, tp, pl)
		return pl
	}
	// INTR_CPUS {0,2,4,6}: TX queue q on the SMT sibling of RX queue q,
	// whatever separate_txrx says.
	for _, sep := range []bool{false, true} {
		a := NewAllocator(tp, AllocatorOptions{Behavior: BeforeD24094})
		pl := place(a, Request{Device: "nic0", RxQueues: 4, TxQueues: 4, Policy: Policy{SeparateTxRx: sep}})
		assert.Equal(t, []int{0, 2, 4, 6}, pl.RxCPU, "separate_txrx %v", sep)
		assert.Equal(t, []int{1, 3, 5, 7}, pl.TxCPU, "separate_txrx %v", sep)
	}
	// bus_get_cpus failed, all_cpus {0..7}: RX 0,1,2,3 and TX 1,0,3,2 — TX
	// queue 1 next to RX queue 0.
	a := NewAllocator(tp, AllocatorOptions{Behavior: BeforeD24094})
	pl := place(a, Request{Device: "nic0", RxQueues: 4, TxQueues: 4, CPUs: setPtr(0, 1, 2, 3, 4, 5, 6, 7)})
	assert.Equal(t, []int{0, 1, 2, 3}, pl.RxCPU)
	assert.Equal(t, []int{1, 0, 3, 2}, pl.TxCPU)

	// Two NICs of 2 queue pairs: the registry advances by queues.
	a = NewAllocator(tp, AllocatorOptions{Behavior: BeforeD24094})
	n0 := place(a, Request{Device: "nic0", RxQueues: 2, TxQueues: 2})
	n1 := place(a, Request{Device: "nic1", RxQueues: 2, TxQueues: 2})
	assert.Equal(t, []int{0, 2}, n0.RxCPU)
	assert.Equal(t, []int{1, 3}, n0.TxCPU)
	assert.Equal(t, []int{4, 6}, n1.RxCPU)
	assert.Equal(t, []int{5, 7}, n1.TxCPU)
	next, refs, ok := a.Next(CPUSetOf(0, 2, 4, 6))
	require.True(t, ok)
	assert.Equal(t, 4, next, "queue offset, not a CPU")
	assert.Equal(t, 2, refs)
	assert.Equal(t, 2, n1.CoresConsumed, "qc = max(ntx, nrx)")

	// More queues than CPUs: get_core_offset moves queue q+4 one further
	// step within its core (RX 4..7 on the siblings, TX back on the cores).
	a = NewAllocator(tp, AllocatorOptions{Behavior: BeforeD24094})
	pl = place(a, Request{Device: "nic0", RxQueues: 8, TxQueues: 8})
	assert.Equal(t, []int{0, 2, 4, 6, 1, 3, 5, 7}, pl.RxCPU)
	assert.Equal(t, []int{1, 3, 5, 7, 0, 2, 4, 6}, pl.TxCPU)

	// An explicit core_offset is an index into the set, outside the
	// registry.
	pl = place(a, Request{Device: "nic1", RxQueues: 2, TxQueues: 2, Policy: Policy{CoreOffset: Offset(5)}})
	assert.Equal(t, []int{2, 4}, pl.RxCPU, "find_nth(0+5) is the 5 mod 4 = 1st member")
	assert.False(t, pl.Registered)
	_, err := a.Place(Request{RxQueues: 1, TxQueues: 1, Policy: Policy{CoreOffset: Offset(0xffff)}})
	assert.ErrorIs(t, err, ErrCoreOffset)
}

// The machine of D24094's measurement: an 8-core Atom C2758 whose cores
// share L2 in pairs, with a dual-port 82599 (ix) of 8 queue pairs per port.
// Before the change TX queue q ran on the other core of RX queue q's L2
// module (the core of RX queue q^1); after it, RX and TX queue q share a
// core. Both ports land on the same 8 cores either way.
func TestAtomC2758BeforeAndAfterD24094(t *testing.T) {
	fix := fixture(t, "atom-c2758")
	syn := synth(t, SyntheticConfig{Packages: 1, CoresPerPackage: 8, ThreadsPerCore: 1, L2CoresPerGroup: 2})
	reqs := []Request{{Device: "ix0", RxQueues: 8, TxQueues: 8}, {Device: "ix1", RxQueues: 8, TxQueues: 8}}
	for name, tp := range map[string]*Topology{"sysfs fixture": fix, "synthetic": syn} {
		before := NewAllocator(tp, AllocatorOptions{Behavior: BeforeD24094})
		after := NewAllocator(tp, AllocatorOptions{Behavior: FreeBSD})
		for _, r := range reqs {
			b := mustPlace(t, before, r)
			checkInvariantsBefore(t, tp, b)
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, b.RxCPU, "%s %s before", name, r.Device)
			assert.Equal(t, []int{1, 0, 3, 2, 5, 4, 7, 6}, b.TxCPU, "%s %s before", name, r.Device)
			af := mustPlace(t, after, r)
			checkInvariants(t, tp, af)
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, af.RxCPU, "%s %s after", name, r.Device)
			assert.Equal(t, af.RxCPU, af.TxCPU, "%s %s after", name, r.Device)
		}
	}
	a, err := PlacementTable(fix, reqs)
	require.NoError(t, err)
	b, err := PlacementTable(syn, reqs)
	require.NoError(t, err)
	assert.Equal(t, a, b, "the synthetic machine stands for the fixture")
	assert.Contains(t, a, "ix1 q7")
	assert.Regexp(t, `tx on its rx cpu\s+0/16\s+16/16`, a)
	assert.Regexp(t, `tx on an L2 neighbour\s+16/16\s+0/16`, a)
}

// checkInvariantsBefore is checkInvariants for BeforeD24094: RX queues
// below the set's size are in the set, every queue's CPU is online, and a
// CPU outside the set shares an L2 group with a member.
func checkInvariantsBefore(t testing.TB, tp *Topology, pl *Placement) {
	t.Helper()
	n := pl.CPUs.Count()
	for q, c := range pl.RxCPU {
		require.True(t, tp.Online().Has(c), "rxq%d on offline CPU %d", q, c)
		if q < n {
			require.True(t, pl.CPUs.Has(c), "rxq%d on %d, not in %s", q, c, pl.CPUs)
		}
		if !pl.CPUs.Has(c) {
			require.False(t, tp.L2Group(c).And(pl.CPUs).Empty(), "rxq%d on %d, far from %s", q, c, pl.CPUs)
		}
	}
	for q, c := range pl.TxCPU {
		require.True(t, tp.Online().Has(c), "txq%d on offline CPU %d", q, c)
		if !pl.CPUs.Has(c) {
			require.False(t, tp.L2Group(c).And(pl.CPUs).Empty(), "txq%d on %d, far from %s", q, c, pl.CPUs)
		}
	}
	require.True(t, pl.CPUs.Has(pl.Base))
}

// A worker pool asks for one kind of queue only and is placed like a NIC.
func TestWorkerPool(t *testing.T) {
	tp := fourByTwo(t, Adjacent)
	for _, b := range []Behavior{Intended, FreeBSD, BeforeD24094} {
		a := NewAllocator(tp, AllocatorOptions{Behavior: b})
		pool := mustPlace(t, a, Request{Device: "workers", RxQueues: 3})
		assert.Equal(t, []int{0, 2, 4}, pool.RxCPU, "%v", b)
		assert.Empty(t, pool.TxCPU)
		txOnly := mustPlace(t, a, Request{Device: "senders", TxQueues: 2})
		assert.Empty(t, txOnly.RxCPU)
		assert.Len(t, txOnly.TxCPU, 2)
		_, err := a.Place(Request{Device: "nothing"})
		assert.ErrorIs(t, err, ErrQueueCount)
	}
	// Intended and FreeBSD: the pool consumed 3 cores, the next starts at 6.
	a := NewAllocator(tp, AllocatorOptions{})
	mustPlace(t, a, Request{Device: "workers", RxQueues: 3})
	nic := mustPlace(t, a, Request{Device: "nic0", RxQueues: 1, TxQueues: 1})
	assert.Equal(t, []int{6}, nic.RxCPU)
}

func TestUnknownBehavior(t *testing.T) {
	tp := fourByTwo(t, Adjacent)
	for _, b := range []Behavior{-1, 3, 99} {
		_, err := NewAllocator(tp, AllocatorOptions{Behavior: b}).Place(Request{RxQueues: 1, TxQueues: 1})
		assert.ErrorIs(t, err, ErrBehavior, "%d", int(b))
		assert.Equal(t, fmt.Sprintf("Behavior(%d)", int(b)), b.String())
	}
	assert.Equal(t, "before-D24094", BeforeD24094.String())
}

func TestCacheLineSize(t *testing.T) {
	base := SyntheticConfig{Packages: 1, CoresPerPackage: 2, ThreadsPerCore: 1}
	var huge int64 = 1 << 40
	sizes := []int{-64, 3, 8, 96, 8192, 1 << 30}
	if int64(int(huge)) == huge { // 64-bit int
		sizes = append(sizes, int(huge))
	}
	for _, n := range sizes {
		cfg := base
		cfg.CacheLineSize = n
		_, err := Synthetic(cfg)
		assert.ErrorIs(t, err, ErrBadSynthetic, "%d", n)
		assert.ErrorIs(t, err, ErrCacheLineSize, "%d", n)
	}
	for n, want := range map[int]int{0: 64, 32: 32, 128: 128, 256: 256} {
		cfg := base
		cfg.CacheLineSize = n
		tp, err := Synthetic(cfg)
		require.NoError(t, err)
		assert.Equal(t, want, tp.CacheLineSize())
	}
	const file = "cpu0/cache/index0/coherency_line_size"
	for _, bad := range []string{"3", "-64", "65536", "48"} {
		m := loadMapFS(t, "desktop-4c8t")
		m[file].Data = []byte(bad + "\n")
		_, err := ParseSysfs(m)
		assert.ErrorIs(t, err, ErrMalformedSysfs, bad)
		assert.ErrorIs(t, err, ErrCacheLineSize, bad)
		var se *SysfsError
		require.True(t, errors.As(err, &se), bad)
		assert.Equal(t, file, se.Path)
	}
	m := loadMapFS(t, "desktop-4c8t")
	m[file].Data = []byte("0\n") // unknown: the default applies
	tp, err := ParseSysfs(m)
	require.NoError(t, err)
	assert.Equal(t, defaultLineSize, tp.CacheLineSize())
}

func TestDefaultAllocator(t *testing.T) {
	a, err := DefaultAllocator()
	if err != nil {
		t.Skipf("no topology here: %v", err)
	}
	b, err := DefaultAllocator()
	require.NoError(t, err)
	require.Same(t, a, b, "one process-wide registry")
	disc, err := Discover()
	require.NoError(t, err)
	assert.Equal(t, disc.Online(), a.Topology().Online())
	assert.True(t, strings.Contains(a.Topology().String(), "topology"))
	// That holds for any topology; the whole description must be Discover's:
	// the same machine, source, groups and cache line.
	assert.Equal(t, disc.String(), a.Topology().String())
}
