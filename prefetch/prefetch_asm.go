//go:build (amd64 || arm64) && !purego

package prefetch

// Enabled reports whether Addr, Pointer, Ptr, Bytes and Lines issue prefetch
// instructions (amd64 and arm64 without the purego tag) rather than doing
// nothing.
const Enabled = true

// prefetchAddr issues one read prefetch of the line holding addr
// (prefetch_amd64.s, prefetch_arm64.s).
//
//go:noescape
func prefetchAddr(addr uintptr)

// prefetchLines issues n read prefetches at addr, addr+64, addr+128, …;
// n <= 0 issues none.
//
//go:noescape
func prefetchLines(addr uintptr, n int)
