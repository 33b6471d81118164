package busdma

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// StrictUnmapTime is a suggested IOMMUConfig.UnmapTime: a round figure for
// the IOTLB invalidation that a strict-mode unmap waits for on Intel VT-d,
// about 2,130 cycles, some 700 ns at 3 GHz. Nothing in this repository
// measures it. The cycle count is attributed to Table 1 of Malka, Amit,
// Ben-Yehuda and Tsafrir, "rIOMMU: Efficient IOMMU for I/O Devices that
// Employ Ring Buffers" (ASPLOS 2015), but it was copied from a secondary
// table and has not been checked against the paper; the paper's abstract
// says only that invalidations are costly enough for systems to defer them.
// Treat it as an order of magnitude, and set UnmapTime from a measurement
// of the machine being modelled where one exists.
//
// FreeBSD's VT-d unload (dmar_domain_unload) waits for the invalidation only
// without queued invalidation (domain_flush_iotlb_sync); with it, the
// invalidation is queued and the IOVAs are freed when it completes. The
// model clears its page-table entries and frees the IOVAs itself, so only
// the invalidation is added. There is no suggested MapTime: a map's IOVA
// allocation and page-table writes are work the model really does.
const StrictUnmapTime = 700 * time.Nanosecond

// spinCal is the busy-wait calibration, spin steps per nanosecond,
// measured once per process.
var spinCal struct {
	once   sync.Once
	perNs  float64 // steps per nanosecond
	result uint64  // keeps the loop from being optimised away
}

// spinSteps runs n xorshift steps and returns the state, so the compiler
// cannot drop the loop.
func spinSteps(n int, x uint64) uint64 {
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// calibrateSpin measures the loop's speed: the fastest of several runs, the
// one least disturbed by other work on the machine, so that a spin costs the
// asked-for CPU time rather than the asked-for wall time of a busy machine.
func calibrateSpin() {
	const n = 1 << 16
	best := time.Duration(math.MaxInt64)
	x := uint64(1)
	for range 7 {
		t0 := time.Now()
		x = spinSteps(n, x|1)
		if el := time.Since(t0); el > 0 && el < best {
			best = el
		}
	}
	spinCal.result = x
	spinCal.perNs = float64(n) / float64(best.Nanoseconds())
}

// spinStepsFor returns the steps that burn about d of CPU time.
func spinStepsFor(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	spinCal.once.Do(calibrateSpin)
	return int(math.Ceil(float64(d.Nanoseconds()) * spinCal.perNs))
}

// iommuCost is the CPU time an IOMMUSpace spends per iommu_map and per
// iommu_unmap on top of the model's own work, as spin steps.
type iommuCost struct {
	mapSteps, unmapSteps int
}

func newIOMMUCost(cfg IOMMUConfig) iommuCost {
	return iommuCost{mapSteps: spinStepsFor(cfg.MapTime), unmapSteps: spinStepsFor(cfg.UnmapTime)}
}

// spinSink keeps the spin's result alive; the store practically never
// happens (the xorshift state is never 0 from a non-zero seed).
var spinSink atomic.Uint64

// spin burns steps spin steps of CPU time.
func spin(steps int) {
	if steps > 0 {
		if x := spinSteps(steps, uint64(steps)|1); x == 0 {
			spinSink.Store(x)
		}
	}
}
