package cpumap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkInvariants asserts what must hold for any placement: every RX CPU
// is in the set; every TX CPU is in the set or the L2 neighbour of its RX
// queue's CPU; without separate_txrx RX q and TX q share a CPU; the base is
// in the set.
func checkInvariants(t testing.TB, tp *Topology, pl *Placement) {
	t.Helper()
	require.True(t, pl.CPUs.Has(pl.Base), "base %d not in %s", pl.Base, pl.CPUs)
	for q, c := range pl.RxCPU {
		require.True(t, pl.CPUs.Has(c), "rxq%d on %d, not in %s", q, c, pl.CPUs)
	}
	for q, c := range pl.TxCPU {
		if pl.CPUs.Has(c) {
			continue
		}
		require.Less(t, q, len(pl.RxCPU), "txq%d on %d: not in %s and not the L2 neighbour of rxq%d", q, c, pl.CPUs, q)
		require.Equal(t, c, tp.L2Neighbor(pl.RxCPU[q]), "txq%d on %d: not in %s and not the L2 neighbour of rxq%d", q, c, pl.CPUs, q)
	}
	if !pl.Policy.SeparateTxRx {
		for q := 0; q < min(len(pl.RxCPU), len(pl.TxCPU)); q++ {
			require.Equal(t, pl.TxCPU[q], pl.RxCPU[q], "pair %d split: rx %d tx %d", q, pl.RxCPU[q], pl.TxCPU[q])
		}
	}
	require.GreaterOrEqual(t, pl.CoresConsumed, 1, "cores consumed %d of %d", pl.CoresConsumed, pl.CPUs.Count())
	require.LessOrEqual(t, pl.CoresConsumed, pl.CPUs.Count(), "cores consumed %d of %d", pl.CoresConsumed, pl.CPUs.Count())
}

func randomTopology(r *rand.Rand) (*Topology, error) {
	cores := 1 + r.IntN(8)
	l2 := 1
	for _, d := range []int{4, 2} {
		if cores%d == 0 && r.IntN(2) == 0 {
			l2 = d
			break
		}
	}
	return Synthetic(SyntheticConfig{Packages: 1 + r.IntN(2), CoresPerPackage: cores, ThreadsPerCore: 1 + r.IntN(2),
		L2CoresPerGroup: l2, SiblingNumbering: SiblingNumbering(r.IntN(2))})
}

// Random machines and devices: invariants hold, both behaviours agree when
// no quirk applies (no offset, and use_logical_cores off), and the registry
// moves by cores consumed.
func TestPlacementProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() {
		n = 100
	}
	for i := range n {
		tp, err := randomTopology(r)
		require.NoError(t, err)
		in, fb := NewAllocator(tp, AllocatorOptions{}), NewAllocator(tp, AllocatorOptions{Behavior: FreeBSD})
		// Quirk 1 moves intended's logical-core devices to another registry
		// entry, so they get allocators of their own.
		inL, fbL := NewAllocator(tp, AllocatorOptions{}), NewAllocator(tp, AllocatorOptions{Behavior: FreeBSD})
		for d := range 3 {
			req := Request{Device: fmt.Sprint("nic", d), RxQueues: 1 + r.IntN(10), TxQueues: 1 + r.IntN(10),
				Policy: Policy{SeparateTxRx: r.IntN(2) == 0}}
			before, _, had := in.Next(func() CPUSet { s, _ := tp.IntrCPUs(); return s }())
			p1, err1 := in.Place(req)
			p2, err2 := fb.Place(req)
			require.NoError(t, err1, "case %d: %v %v", i, err1, err2)
			require.NoError(t, err2, "case %d: %v", i, err1)
			checkInvariants(t, tp, p1)
			checkInvariants(t, tp, p2)
			checkCPUs(t, "rx agree", p1.RxCPU, p2.RxCPU)
			checkCPUs(t, "tx agree", p1.TxCPU, p2.TxCPU)
			if !had {
				before = p1.CPUs.First()
			}
			require.Equal(t, before, p1.Base, "case %d: base %d, registry said %d", i, p1.Base, before)
			// With logical cores on, invariants still hold in both modes.
			req.Policy.UseLogicalCores = true
			for _, a := range []*Allocator{inL, fbL} {
				pl, err := a.Place(req)
				require.NoError(t, err)
				checkInvariants(t, tp, pl)
			}
		}
	}
}

// Concurrent attach and detach: the registry is shared under its mutex.
// 64 devices of one queue pair each on 4 physical cores: without releases
// every CPU gets exactly 16 devices.
func TestConcurrentPlace(t *testing.T) {
	tp := fourByTwo(t, Adjacent)
	a := NewAllocator(tp, AllocatorOptions{})
	const workers, each = 8, 8
	var mu sync.Mutex
	count := map[int]int{}
	var wg sync.WaitGroup
	var placed []*Placement
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				pl, err := a.Place(Request{Device: fmt.Sprintf("nic%d.%d", w, i), RxQueues: 1, TxQueues: 1})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				count[pl.RxCPU[0]]++
				placed = append(placed, pl)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, c := range []int{0, 2, 4, 6} {
		assert.Equal(t, workers*each/4, count[c], "cpu %d got %d devices, want %d (%v)", c, count[c], workers*each/4, count)
	}
	_, refs, _ := a.Next(CPUSetOf(0, 2, 4, 6))
	assert.Equal(t, workers*each, refs, "refcount %d, want %d", refs, workers*each)
	for _, pl := range placed {
		wg.Go(pl.Release)
		wg.Go(pl.Release) // double release from another goroutine
	}
	wg.Wait()
	checkNext(t, a, CPUSetOf(0, 2, 4, 6), -1)
}

func TestPlaceErrors(t *testing.T) {
	tp := fourByTwo(t, Adjacent)
	a := NewAllocator(tp, AllocatorOptions{})
	mustPlace(t, a, Request{Device: "ok", RxQueues: 1, TxQueues: 1})
	cases := []struct {
		req  Request
		want error
	}{
		{Request{RxQueues: 0, TxQueues: 0}, ErrQueueCount},
		{Request{RxQueues: -1, TxQueues: 4}, ErrQueueCount},
		{Request{RxQueues: 4, TxQueues: -1}, ErrQueueCount},
		{Request{RxQueues: 1, TxQueues: MaxQueues + 1}, ErrQueueCount},
		{Request{RxQueues: MaxQueues + 1, TxQueues: 1}, ErrQueueCount},
		{Request{RxQueues: 1, TxQueues: 1, CPUs: setPtr()}, ErrEmptyCPUSet},
		{Request{RxQueues: 1, TxQueues: 1, CPUs: setPtr(0, 8)}, ErrCPUNotInTopology},
		{Request{RxQueues: 1, TxQueues: 1, Policy: Policy{CoreOffset: Offset(-1)}}, ErrCoreOffset},
		{Request{RxQueues: 1, TxQueues: 1, Policy: Policy{CoreOffset: Offset(8)}}, ErrCoreOffset},
	}
	for _, c := range cases {
		pl, err := a.Place(c.req)
		assert.False(t, !errors.Is(err, c.want) || pl != nil, "Place(%+v) = %v, %v; want %v", c.req, pl, err, c.want)
	}
	var ce *ConfigError
	_, err := a.Place(Request{RxQueues: 1, TxQueues: 1, Policy: Policy{CoreOffset: Offset(99)}})
	if assert.ErrorAs(t, err, &ce) {
		assert.Equal(t, "Policy.CoreOffset", ce.Field)
		assert.Equal(t, 99, ce.Value)
	}
	assert.EqualError(t, err, "cpumap: invalid Policy.CoreOffset = 99: out of range [0, 7]: core offset out of range")
	fb := NewAllocator(tp, AllocatorOptions{Behavior: FreeBSD})
	for _, off := range []int{-1, 0xffff, 1 << 20} {
		assert.ErrorIs(t, errOf(fb.Place(Request{RxQueues: 1, TxQueues: 1, Policy: Policy{CoreOffset: Offset(off)}})), ErrCoreOffset, "freebsd offset %#x", off)
	}
	pl, err := fb.Place(Request{RxQueues: 1, TxQueues: 1, Policy: Policy{CoreOffset: Offset(0xfffe)}})
	assert.False(t, err != nil || pl.Base != 0xfffe%7, "freebsd offset 0xfffe: %v %v", pl, err)
	// Errors left the registry as it was: one device, next at 2.
	checkNext(t, a, CPUSetOf(0, 2, 4, 6), 2)
	assert.ErrorIs(t, errOf(NewAllocator(nil, AllocatorOptions{}).Place(Request{RxQueues: 1, TxQueues: 1})), ErrEmptyCPUSet, "nil topology")
}

func TestSyntheticErrors(t *testing.T) {
	for _, cfg := range []SyntheticConfig{
		{},
		{Packages: 1, CoresPerPackage: 0, ThreadsPerCore: 1},
		{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: -1},
		{Packages: 1, CoresPerPackage: 6, ThreadsPerCore: 1, L2CoresPerGroup: 4},
		{Packages: 64, CoresPerPackage: 16, ThreadsPerCore: 2},
		{Packages: 1, CoresPerPackage: 1, ThreadsPerCore: 1, SiblingNumbering: 7},
		{Packages: 1, CoresPerPackage: 1, ThreadsPerCore: 1, CacheLineSize: -64},
	} {
		assert.ErrorIs(t, errOf(Synthetic(cfg)), ErrBadSynthetic, "Synthetic(%+v) =", cfg)
	}
	for _, n := range []int{0, -1, MaxCPUs + 1} {
		assert.ErrorIs(t, errOf(Flat(n)), ErrBadSynthetic, "Flat(%d) =", n)
	}
	f, err := Flat(3)
	assert.False(t, err != nil || f.SMTKnown() || f.NumCores() != 3 || f.L2Neighbor(1) != -1, "Flat(3) = %v, %v", f, err)
	intr, phys := f.IntrCPUs()
	assert.False(t, phys || intr != CPUSetOf(0, 1, 2), "Flat IntrCPUs %s %v", intr, phys)
}

// FuzzPlace places random devices on random synthetic machines and checks
// the invariants; it must never panic.
func FuzzPlace(f *testing.F) {
	f.Add(uint8(1), uint8(4), uint8(2), uint8(0), uint8(0), uint16(4), uint16(4), uint8(3), int32(-1))
	f.Add(uint8(2), uint8(8), uint8(1), uint8(2), uint8(1), uint16(3), uint16(7), uint8(7), int32(9))
	f.Add(uint8(1), uint8(4), uint8(2), uint8(0), uint8(0), uint16(4), uint16(4), uint8(3|16), int32(-1))    // intended, released
	f.Add(uint8(1), uint8(8), uint8(1), uint8(2), uint8(0), uint16(8), uint16(8), uint8(2<<2|16), int32(-1)) // before D24094, released
	f.Fuzz(func(t *testing.T, pkgs, cores, threads, l2, numbering uint8, nrx, ntx uint16, flags uint8, off int32) {
		tp, err := Synthetic(SyntheticConfig{Packages: int(pkgs % 4), CoresPerPackage: int(cores % 17), ThreadsPerCore: int(threads % 5),
			L2CoresPerGroup: int(l2 % 5), SiblingNumbering: SiblingNumbering(numbering % 3)})
		if err != nil {
			require.ErrorIs(t, err, ErrBadSynthetic)
			return
		}
		pol := Policy{SeparateTxRx: flags&1 != 0, UseLogicalCores: flags&2 != 0}
		if off >= 0 {
			pol.CoreOffset = Offset(int(off))
		}
		// flags: bit 0 separate_txrx, bit 1 use_logical_cores, bits 2-3 the
		// behaviour (3 is none: ErrBehavior), bit 4 release each placement.
		b := Behavior(flags >> 2 % 4)
		a := NewAllocator(tp, AllocatorOptions{Behavior: b})
		for range 2 {
			pl, err := a.Place(Request{Device: "f", RxQueues: int(nrx % 300), TxQueues: int(ntx % 300), Policy: pol})
			if err != nil {
				require.False(t, !errors.Is(err, ErrQueueCount) && !errors.Is(err, ErrCoreOffset) && !errors.Is(err, ErrBehavior), err)
				return
			}
			if b == BeforeD24094 {
				checkInvariantsBefore(t, tp, pl)
			} else {
				checkInvariants(t, tp, pl)
			}
			if flags&16 != 0 {
				pl.Release()
			}
		}
	})
}
