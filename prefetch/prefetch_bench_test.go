package prefetch_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/goiflib/goiflib/prefetch"
)

// The benchmarks measure when a software prefetch pays, to set iflib's
// IFC_PREFETCH default (review D53674). One op is one element visited, so
// ns/op and the ns/element metric are the same figure; ns/element is
// reported by name so the tables read the same in every package.
//
//   - Scattered: a pointer array walked in order, each pointer to a 64-byte
//     object at a random place in a 64 MiB slab (well beyond L2 and L3), like
//     iflib's ifsd_m[] array of mbuf pointers. The object d elements ahead is
//     prefetched (d = 0 is no prefetch); "call-only/dist=8" makes the same
//     call without the prefetch instruction, to separate the two costs.
//     "read" only loads a field; "work" also does about 20 ns of dependent
//     arithmetic per element, like a stack touching the packet, which limits
//     how many misses the CPU's own out-of-order window overlaps.
//   - Paired: each walk with all distances (and the call-only control)
//     interleaved in one timed loop, reporting per-distance medians and
//     speedups; the figures to quote on a shared, noisy machine. Built with
//     -tags purego it measures the loop's own cost of the d > 0 branch and
//     index, since the prefetch then compiles to nothing.
//   - Resident: the same walk over 256 objects (16 KiB, L1-resident): every
//     prefetch is pure overhead.
//   - Sequential: the 64 MiB slab walked in address order, which the hardware
//     prefetcher already streams: the software prefetch duplicates it.
//   - Call: the cost of one Addr, Pointer or Lines call against the same loop
//     without it.
//
// Setup (allocation, shuffling) runs once, outside the timed region; the timed
// loops allocate nothing.

// object is one cache line (on amd64) of payload, the stand-in for an mbuf
// header.
type object struct {
	val uint64
	_   [56]byte
}

const (
	bigBytes     = 64 << 20
	bigObjects   = bigBytes / int(unsafe.Sizeof(object{})) // 1 Mi, a power of two
	smallObjects = 256                                     // 16 KiB
	workRounds   = 8
)

var distances = []int{0, 2, 4, 8, 16}

type dataset struct {
	slab       []object
	scattered  []*object // slab elements in a random order
	sequential []*object // slab elements in address order
}

func newDataset(n int) *dataset {
	d := &dataset{
		slab:       make([]object, n),
		scattered:  make([]*object, n),
		sequential: make([]*object, n),
	}
	r := rand.New(rand.NewPCG(2, 2))
	for i, j := range r.Perm(n) {
		d.slab[i].val = uint64(i)
		d.scattered[i] = &d.slab[j]
		d.sequential[i] = &d.slab[i]
	}
	return d
}

var (
	bigOnce sync.Once
	bigSet  *dataset
)

func big() *dataset {
	bigOnce.Do(func() { bigSet = newDataset(bigObjects) })
	return bigSet
}

var sink uint64

// mix is dependent arithmetic on the loaded value (splitmix64's finaliser,
// repeated), standing in for per-packet work.
func mix(v uint64) uint64 {
	for range workRounds {
		v ^= v >> 31
		v *= 0xbf58476d1ce4e5b9
	}
	return v
}

// callOnly has the shape of the prefetch stub's call but issues no prefetch:
// the control that separates the cost of calling from the effect of
// prefetching. Go's calling convention has no callee-saved registers, so
// either call makes the loop spill and reload its live values.
//
//go:noinline
func callOnly(p unsafe.Pointer) {}

// walk visits n elements of ptrs in index order (wrapping; len(ptrs) is a
// power of two), prefetching the object dist elements ahead when dist > 0
// (or, with control, only calling callOnly with it).
func walk(ptrs []*object, n, dist int, work, control bool) uint64 {
	mask := len(ptrs) - 1
	var sum uint64
	j := 0
	for range n {
		if dist > 0 {
			ahead := unsafe.Pointer(ptrs[(j+dist)&mask])
			if control {
				callOnly(ahead)
			} else {
				prefetch.Pointer(ahead)
			}
		}
		v := ptrs[j].val
		if work {
			v = mix(v)
		}
		sum += v
		j = (j + 1) & mask
	}
	return sum
}

func benchWalk(b *testing.B, ptrs []*object, dist int, work, control bool) {
	b.ReportAllocs()
	walk(ptrs, len(ptrs), 0, false, false) // touch every page once before timing
	b.ResetTimer()
	sink += walk(ptrs, b.N, dist, work, control)
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/element")
}

func BenchmarkScattered(b *testing.B) {
	for _, mode := range []string{"read", "work"} {
		for _, d := range distances {
			b.Run(fmt.Sprintf("%s/dist=%d", mode, d), func(b *testing.B) {
				benchWalk(b, big().scattered, d, mode == "work", false)
			})
		}
		b.Run(mode+"/call-only/dist=8", func(b *testing.B) {
			benchWalk(b, big().scattered, 8, mode == "work", true)
		})
	}
}

func BenchmarkResident(b *testing.B) {
	small := newDataset(smallObjects)
	for _, d := range []int{0, 8} {
		b.Run(fmt.Sprintf("dist=%d", d), func(b *testing.B) {
			benchWalk(b, small.scattered, d, false, false)
		})
	}
}

func BenchmarkSequential(b *testing.B) {
	for _, d := range []int{0, 8, 16} {
		b.Run(fmt.Sprintf("dist=%d", d), func(b *testing.B) {
			benchWalk(b, big().sequential, d, false, false)
		})
	}
}

var sinkAddr uintptr

// BenchmarkCall measures one call. Every loop computes the same rotating
// address in a hot 4 KiB buffer; "empty" only sums it, so the difference to
// "empty" is the call. Each loop is written out: a closure per iteration would
// cost more than the prefetch.
func BenchmarkCall(b *testing.B) {
	buf := make([]byte, 64*64)
	base := uintptr(unsafe.Pointer(&buf[0]))
	p := unsafe.Pointer(&buf[0])
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
	}
	b.Run("empty", func(b *testing.B) {
		b.ReportAllocs()
		var s uintptr
		for i := 0; i < b.N; i++ {
			s += base + uintptr(i&63)<<6
		}
		sinkAddr = s
		report(b)
	})
	b.Run("Addr", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			prefetch.Addr(base + uintptr(i&63)<<6)
		}
		report(b)
	})
	b.Run("Pointer", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			prefetch.Pointer(unsafe.Add(p, (i&63)<<6))
		}
		report(b)
	})
	b.Run("Lines1", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			prefetch.Lines(unsafe.Add(p, (i&63)<<6), 1)
		}
		report(b)
	})
	b.Run("Lines4", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			prefetch.Lines(unsafe.Add(p, (i&15)<<8), 4)
		}
		report(b)
	})
	runtime.KeepAlive(buf)
}

// BenchmarkPaired runs a walk for every case in interleaved blocks of
// pairedBlock elements within one timed loop, rotating which case goes first,
// and reports each case's median ns/element over its blocks and the ratio of
// no prefetch to it ("speedup", above 1 means prefetch helped). On a machine
// shared with other work, load changes between separate sub-benchmarks and a
// block that was descheduled is an outlier; here every case sees the same load
// and the median drops the outliers, so the ratios are the figures to trust.
// The walks are Scattered ("read" and "work"), Sequential and Resident.
func BenchmarkPaired(b *testing.B) {
	small := newDataset(smallObjects)
	walks := []struct {
		name string
		ptrs func() []*object
		work bool
	}{
		{"scattered-read", func() []*object { return big().scattered }, false},
		{"scattered-work", func() []*object { return big().scattered }, true},
		{"sequential-read", func() []*object { return big().sequential }, false},
		{"resident-read", func() []*object { return small.scattered }, false},
	}
	for _, w := range walks {
		b.Run(w.name, func(b *testing.B) {
			ptrs := w.ptrs()
			work := w.work
			b.ReportAllocs()
			walk(ptrs, len(ptrs), 0, false, false)
			var samples [len(pairedCases)][]float64
			for k := range samples {
				samples[k] = make([]float64, 0, b.N/pairedBlock/len(pairedCases)+2)
			}
			pos := 0 // every block starts where the last ended: no block finds another's lines cached
			b.ResetTimer()
			for left, round := b.N, 0; left > 0; round++ {
				for k := range pairedCases {
					idx := (k + round) % len(pairedCases)
					n := min(left, pairedBlock)
					if n == 0 {
						break
					}
					t0 := time.Now()
					sink += walkFrom(ptrs, pos, n, pairedCases[idx].dist, work, pairedCases[idx].control)
					ns := float64(time.Since(t0).Nanoseconds()) / float64(n)
					if n == pairedBlock && len(samples[idx]) < cap(samples[idx]) {
						samples[idx] = append(samples[idx], ns)
					}
					pos = (pos + n) & (len(ptrs) - 1)
					left -= n
				}
			}
			b.StopTimer()
			if len(samples[0]) == 0 {
				return // b.N too small for one full block per case
			}
			base := median(samples[0])
			for k, c := range pairedCases {
				if len(samples[k]) == 0 {
					continue
				}
				ns := median(samples[k])
				b.ReportMetric(ns, "ns/elem-"+c.name)
				if k > 0 {
					b.ReportMetric(base/ns, "speedup-"+c.name)
				}
			}
		})
	}
}

func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}

// pairedCases are the interleaved cases: the distances, plus the call-only
// control at distance 8 (reported as "c8").
var pairedCases = [...]struct {
	name    string
	dist    int
	control bool
}{{"d0", 0, false}, {"d2", 2, false}, {"d4", 4, false}, {"d8", 8, false}, {"d16", 16, false}, {"c8", 8, true}}

// pairedBlock elements per distance per round: 8 Ki, 64 to 500 µs, short
// enough that most blocks run without being descheduled.
const pairedBlock = 1 << 13

// walkFrom is walk starting at element start, so successive blocks visit
// different objects.
func walkFrom(ptrs []*object, start, n, dist int, work, control bool) uint64 {
	mask := len(ptrs) - 1
	var sum uint64
	j := start & mask
	for range n {
		if dist > 0 {
			ahead := unsafe.Pointer(ptrs[(j+dist)&mask])
			if control {
				callOnly(ahead)
			} else {
				prefetch.Pointer(ahead)
			}
		}
		v := ptrs[j].val
		if work {
			v = mix(v)
		}
		sum += v
		j = (j + 1) & mask
	}
	return sum
}
