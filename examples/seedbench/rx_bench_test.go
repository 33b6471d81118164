package seedbench

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// Benchmarks of forwarding and receiving, side by side in one run. Each
// sub-benchmark builds its rig outside the timed region, warms it up, then
// times the window in which b.N packets are forwarded (or received, for
// the RX-only ones): ns/op is wall time per packet and allocs/op the
// whole process's allocations per packet. Every one reports
//
//	Mpps        packets per second over the window, in millions
//	cpu-ns/pkt  the process's CPU time (getrusage, user+system) over the
//	            same window per packet: generator, both simulated devices
//	            and the forwarder together
//	lost-Mpps   frames offered but not forwarded (A's full receive FIFO,
//	            RX drops, TX refusals)
//
// Run them with rounds interleaved and a fixed packet count, at one and at
// two Ps, e.g.
//
//	go test -run '^$' -bench ForwardVsRaw -benchtime 2000000x -cpu 1,2 -count 5 ./examples/seedbench/

const benchWarmup = 100 * time.Millisecond

// benchForward times b.N packets through one forwarding (or RX-only, or
// raw) configuration and reports its metrics.
func benchForward(b *testing.B, o ForwardOpts) ForwardResult {
	b.Helper()
	r, err := NewForwardRig(o)
	require.NoError(b, err)
	time.Sleep(benchWarmup)
	b.ReportAllocs()
	b.ResetTimer()
	res := r.RunPackets(uint64(b.N), 30*time.Second+time.Duration(b.N)*10*time.Microsecond)
	b.StopTimer()
	require.NoError(b, r.Close())
	require.GreaterOrEqual(b, res.Packets(), uint64(b.N), "only %d of %d packets in the time limit: %v", res.Packets(), b.N, res)
	b.ReportMetric(res.Mpps(), "Mpps")
	b.ReportMetric(res.CPUNsPerPkt(), "cpu-ns/pkt")
	b.ReportMetric(res.LostMpps(), "lost-Mpps")
	return res
}

// BenchmarkForwardVsRaw: 64-byte forwarding at batch 32 through iflib
// (rx budget 32, B in each transmit mode) and through simnic's
// hand-written raw loop (32 descriptors per pass and per doorbell) over
// the same rings and the same generator. The framework's overhead is
// iflib's cpu-ns/pkt over raw's (at -cpu 1 that is also raw Mpps over
// iflib Mpps).
func BenchmarkForwardVsRaw(b *testing.B) {
	for _, mode := range TxModes {
		name := "iflib"
		if mode != iflib.TxModeMPRing {
			name = "iflib-" + mode.String()
		}
		b.Run(name, func(b *testing.B) {
			benchForward(b, ForwardOpts{Config: iflib.Config{RxBudget: 32, TxMode: mode}})
		})
	}
	b.Run("raw", func(b *testing.B) {
		benchForward(b, ForwardOpts{Raw: true, RawBatch: 32})
	})
}

// BenchmarkRxReuse: 64-byte RX and forwarding with D17901's ifsd_ba reuse
// on and off (Config.NoRxReuse), on the plain simulated space and under
// the IOMMU model with a strict-mode unmap (busdma.StrictUnmapTime of CPU
// per unmap, a published figure). FreeBSD: forwarding 13.9 → 16.4 Mpps.
func BenchmarkRxReuse(b *testing.B) {
	for _, space := range []string{"plain", "iommu"} {
		for _, mode := range []string{"rx", "forward"} {
			for _, reuse := range []bool{true, false} {
				name := space + "/" + mode + "/reuse=on"
				if !reuse {
					name = space + "/" + mode + "/reuse=off"
				}
				b.Run(name, func(b *testing.B) {
					o := ForwardOpts{RxOnly: mode == "rx", Config: iflib.Config{NoRxReuse: !reuse}}
					if space == "iommu" {
						o.IOMMU, o.UnmapTime = true, busdma.StrictUnmapTime
					}
					res := benchForward(b, o)
					b.ReportMetric(res.MapLoadsPerPacket(), "maploads/pkt")
				})
			}
		}
	}
}

// BenchmarkRxBatch: 64-byte forwarding with the whole RX batch handed to
// if_input at once against packet by packet (Config.RxPerPacket), at rx
// budgets 1 to 64 (D27755: batching cost about 1.5 % at batch 1).
func BenchmarkRxBatch(b *testing.B) {
	for _, budget := range []int{1, 4, 16, 32, 64} {
		for _, per := range []bool{false, true} {
			name := "budget=" + strconv.Itoa(budget) + "/batched"
			if per {
				name = "budget=" + strconv.Itoa(budget) + "/perpacket"
			}
			b.Run(name, func(b *testing.B) {
				benchForward(b, ForwardOpts{Config: iflib.Config{RxBudget: budget, RxPerPacket: per}})
			})
		}
	}
}

// BenchmarkRxPrefetch: 64-byte forwarding with iflib's prefetch points on
// and off (Config.Prefetch: the RX slots' clusters and the TX drain's
// next packet).
func BenchmarkRxPrefetch(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "prefetch=off"
		if on {
			name = "prefetch=on"
		}
		b.Run(name, func(b *testing.B) {
			benchForward(b, ForwardOpts{Config: iflib.Config{Prefetch: on}})
		})
	}
}
