//go:build !((amd64 || arm64) && !purego)

package prefetch

// Enabled reports whether Addr, Pointer, Ptr, Bytes and Lines issue prefetch
// instructions (amd64 and arm64 without the purego tag) rather than doing
// nothing.
const Enabled = false

// prefetchAddr does nothing: this architecture or build has no prefetch stub,
// as FreeBSD's prefetch() is empty outside i386/amd64.
func prefetchAddr(addr uintptr) {}

// prefetchLines does nothing; see prefetchAddr.
func prefetchLines(addr uintptr, n int) {}
