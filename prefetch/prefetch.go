// Package prefetch issues software cache-line prefetches: FreeBSD's prefetch()
// (sys/net/iflib.c, PREFETCHT0 on i386/amd64, a no-op elsewhere) as small
// assembly stubs, PREFETCHT0 on amd64 and PRFM PLDL1KEEP on arm64. On every other
// architecture, and on amd64/arm64 built with the purego tag, the functions
// compile to nothing.
//
// The main hazard is using it at all. FreeBSD removed iflib's transmit
// prefetching (review D53674) after measurements on 100G and 400G NICs
// found it cost 2-4% of peak bandwidth and raised L3 misses and memory traffic;
// only receive-side prefetching, gated by IFC_PREFETCH, was left because nobody
// had measured it. A prefetch that arrives too early is evicted before use, one
// that arrives too late only adds an instruction, and one for data the hardware
// prefetcher already streams costs issue bandwidth and cache space. Callers
// should keep every prefetch point behind a flag that is off by default and
// turned on only where a benchmark (see prefetch_bench_test.go) shows a gain.
//
// Go has no prefetch intrinsic outside the runtime, so each call here is a real
// call into an assembly stub that the compiler cannot inline, and Go's calling
// convention has no callee-saved registers: the caller spills and reloads its
// live values around it. In a tight loop that overhead, not the prefetch, is
// often the larger cost (BenchmarkCall, and the call-only control of
// BenchmarkPaired). Lines pays that overhead once for a run of lines.
//
// A prefetch is a hint: it never faults, never blocks and never changes memory,
// so any address — nil, unmapped, freed, misaligned — is safe to pass.
package prefetch

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// CacheLineSize is the cache line size the module pads to, taken from
// golang.org/x/sys/cpu (the size of cpu.CacheLinePad): 64 on amd64, 128 on
// arm64. It is CACHE_LINE_SIZE of FreeBSD's sys/<arch>/include/param.h, which
// is also 64 on amd64 and 128 on arm64. On arm64 128 is an upper bound: many
// cores (Neoverse, Cortex-A) have 64-byte lines, see Lines.
const CacheLineSize = unsafe.Sizeof(cpu.CacheLinePad{})

// stride is the step between the prefetches Lines issues: 64 bytes, the
// smallest line size of the amd64 and arm64 cores the stubs target.
const stride = 64

// Addr prefetches the cache line holding addr into every cache level for a
// read (temporal, "T0"): prefetch() in sys/net/iflib.c. It is PREFETCHT0 on
// amd64 and PRFM PLDL1KEEP on arm64, and does nothing when Enabled is false.
// addr need not be a live pointer; a prefetch of an unmapped address is
// dropped by the CPU without a fault.
func Addr(addr uintptr) {
	prefetchAddr(addr)
}

// Pointer is Addr for an unsafe.Pointer. It never reads or writes *p, so p
// may be nil or point past the end of an object.
func Pointer(p unsafe.Pointer) {
	prefetchAddr(uintptr(p))
}

// Ptr prefetches the cache line holding *p, for a read: Pointer for a typed
// pointer, so callers need not import unsafe. It never reads or writes *p;
// p may be nil. It compiles to the same single call as Pointer.
func Ptr[T any](p *T) {
	prefetchAddr(uintptr(unsafe.Pointer(p)))
}

// Bytes prefetches the cache line holding b's first byte, for a read (a
// packet's header in its cluster, as iflib's prefetch of the next free list
// slots' clusters). An empty or nil b is a hint about nothing and costs one
// call; nothing is read.
func Bytes(b []byte) {
	prefetchAddr(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// Lines prefetches n consecutive cache lines, the n*CacheLineSize bytes
// starting at p, in one call; iflib's prefetch2cachelines() is Lines(p, 2) on a
// 64-byte-line machine. n <= 0 prefetches nothing; n above MaxLines
// prefetches MaxLines lines (a hint over more would only evict what it
// brought in: that is more than an L1 data cache holds). Because arm64's
// CacheLineSize (128) is larger than the line of most arm64 cores (64), Lines
// steps 64 bytes on every architecture, so it issues n prefetches on amd64 and
// 2n on arm64.
func Lines(p unsafe.Pointer, n int) {
	if n <= 0 {
		return
	}
	prefetchLines(uintptr(p), min(n, MaxLines)*int(CacheLineSize/stride))
}

// MaxLines is the most lines one Lines call prefetches: 64 KiB on amd64,
// 128 KiB on arm64.
const MaxLines = 1024
