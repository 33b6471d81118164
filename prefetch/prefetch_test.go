package prefetch

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oddAddrs are addresses no Go program may dereference: nil, an unaligned
// address in the zero page, the last line of the address space, the last byte,
// a non-canonical amd64 address and a kernel-half address. A prefetch of any
// of them must be dropped by the CPU, not fault.
var oddAddrs = func() []uintptr {
	kernel := ^uintptr(0)
	kernel <<= unsafe.Sizeof(kernel)*8 - 17 // 0xffff8000_00000000 on 64-bit
	return []uintptr{
		0,
		1,
		63,
		4095,
		^uintptr(0) &^ 63,
		^uintptr(0),
		uintptr(1) << (unsafe.Sizeof(uintptr(0))*8 - 1),
		kernel,
	}
}()

func TestEnabledMatchesBuild(t *testing.T) {
	want := (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && !puregoTag
	require.Equal(t, Enabled, want, "Enabled = %v on %s (purego=%v), want %v", Enabled, runtime.GOARCH, puregoTag, want)
}

func TestCacheLineSize(t *testing.T) {
	switch runtime.GOARCH {
	case "amd64":
		require.Equal(t, uintptr(64), CacheLineSize, "CacheLineSize = %d on amd64, want 64 (CACHE_LINE_SIZE)", CacheLineSize)
	case "arm64":
		require.Equal(t, uintptr(128), CacheLineSize, "CacheLineSize = %d on arm64, want 128 (CACHE_LINE_SIZE)", CacheLineSize)
	}
	require.Equal(t, uintptr(0), CacheLineSize&(CacheLineSize-1), "CacheLineSize = %d is not a power of two", CacheLineSize)
	require.False(t, Enabled && (CacheLineSize < stride || CacheLineSize%stride != 0), "CacheLineSize = %d is not a multiple of the %d-byte prefetch stride", CacheLineSize, stride)
}

func TestOddAddressesDoNotFault(t *testing.T) {
	for _, a := range oddAddrs {
		Addr(a)
		prefetchLines(a, 4) // runs off the top of the address space for the high ones
	}
	Pointer(nil)
	Lines(nil, 1)
	Lines(nil, 1024) // the whole unmapped low 64 KiB or more
	Lines(nil, 0)
	Lines(nil, -1)
	Lines(nil, math.MinInt)
}

// Issue 20 §2 item 4: a count of lines from the whole range returns at
// once: above MaxLines, Lines prefetches MaxLines (it used to issue 2^40 or
// 2^63 prefetches, a hang). The bound is a hang guard, not a timing claim.
func TestLinesHugeCountIsClamped(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, n := range []int{MaxLines + 1, 1 << 40, math.MaxInt, math.MaxInt / int(CacheLineSize/stride)} {
			Lines(nil, n)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Lines with a huge count did not return")
	}
}

// TestFreedMemoryDoesNotFault prefetches a large object after the collector
// has freed it and returned its pages to the OS, so the addresses are either
// unmapped or mapped without backing.
func TestFreedMemoryDoesNotFault(t *testing.T) {
	const size = 4 << 20
	addr := func() uintptr {
		b := make([]byte, size)
		b[0], b[size-1] = 1, 1
		return uintptr(unsafe.Pointer(&b[0]))
	}()
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	Addr(addr)
	Addr(addr + size - 1)
	prefetchLines(addr, size/stride)
}

// TestEndOfObject prefetches lines that start inside a live object and run
// past its end, as iflib does when it prefetches "the next cache line" of a
// descriptor or pointer array near its last slot.
func TestEndOfObject(t *testing.T) {
	b := make([]byte, 100)
	Pointer(unsafe.Pointer(&b[len(b)-1]))
	Lines(unsafe.Pointer(&b[len(b)-1]), 64)
	runtime.KeepAlive(b)
}

// TestMemoryUnchanged checks that the stubs neither write memory nor move it:
// a prefetch is a hint with no architectural effect.
func TestMemoryUnchanged(t *testing.T) {
	buf := make([]byte, 64*int(CacheLineSize))
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	p := unsafe.Pointer(&buf[0])
	for i := 0; i < len(buf); i += 17 {
		Addr(uintptr(p) + uintptr(i))
		Pointer(unsafe.Add(p, i))
	}
	Lines(p, 64)
	Lines(unsafe.Add(p, 5), 63)
	for i := 0; i < len(buf); i += 13 {
		Bytes(buf[i:])
		Ptr(&buf[i])
	}
	for i := range buf {
		require.Equal(t, byte(i*7+3), buf[i], "buf[%d] = %d after prefetch, want %d", i, buf[i], byte(i*7+3))
	}
}

func TestNoAllocations(t *testing.T) {
	var x [256]byte
	p := unsafe.Pointer(&x)
	for name, f := range map[string]func(){
		"Addr":    func() { Addr(uintptr(p)) },
		"Pointer": func() { Pointer(p) },
		"Lines":   func() { Lines(p, 4) },
		"Bytes":   func() { Bytes(x[8:]) },
		"Ptr":     func() { Ptr(&x[3]) },
	} {
		n := testing.AllocsPerRun(100, f)
		assert.False(t, n != 0, "%s allocates %v times per call, want 0", name, n)
	}
}

type pkt struct {
	data [128]byte
}

// The typed helpers need no unsafe at the call site, accept nil and empty
// values, and do not make their argument escape: a pointer to a local
// prefetched in a loop leaves it on the stack (0 allocations).
func TestTypedHelpers(t *testing.T) {
	Ptr[pkt](nil)
	Bytes(nil)
	Bytes([]byte{})
	f := func() {
		var local pkt
		Ptr(&local)
		Ptr(&local.data[64])
		Bytes(local.data[:])
	}
	n := testing.AllocsPerRun(100, f)
	assert.False(t, n != 0, "Ptr/Bytes of a local: %v allocations per run, want 0 (the argument escaped)", n)
}
