package cpumap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkPlace measures one device attach and detach (get_ctx_core_offset,
// all get_cpuid_for_queue calls, unref) on the 2-socket fixture. It is an
// attach-time path, not a hot path: it allocates the two result slices.
func BenchmarkPlace(b *testing.B) {
	tp := fixture(b, "server-2s")
	a := NewAllocator(tp, AllocatorOptions{})
	req := Request{Device: "ixl0", RxQueues: 8, TxQueues: 8, Policy: Policy{SeparateTxRx: true, UseLogicalCores: true}}
	b.ReportAllocs()
	for b.Loop() {
		pl, err := a.Place(req)
		if err != nil { // no testify call per iteration: the timed loop stays bare
			require.NoError(b, err)
		}
		pl.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/queue")
}

// BenchmarkL2Neighbor measures find_l2_neighbor's descent of the group tree.
func BenchmarkL2Neighbor(b *testing.B) {
	tp := fixture(b, "server-2s")
	b.ReportAllocs()
	cpu := 0
	for b.Loop() {
		if n := tp.L2Neighbor(cpu); n < 0 { // no testify call per iteration
			require.GreaterOrEqual(b, n, 0, "no neighbour")
		}
		cpu = (cpu + 1) & 31
	}
}

// BenchmarkParseSysfs measures reading the 32-CPU fixture from disk.
func BenchmarkParseSysfs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		fixture(b, "server-2s")
	}
}
