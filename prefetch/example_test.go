package prefetch_test

import (
	"fmt"
	"unsafe"

	"github.com/goiflib/goiflib/prefetch"
)

type mbuf struct {
	len int
	_   [56]byte // the rest of the header's cache line
}

// A receive loop that prefetches the packet header a few slots ahead of the
// one it processes, as iflib's prefetch_pkts() does for the next four free
// list slots when IFC_PREFETCH is set. The flag is off by default: turn it on
// only where BenchmarkScattered shows a gain.
func Example() {
	const distance = 4
	usePrefetch := true // IFC_PREFETCH

	ring := make([]*mbuf, 16)
	for i := range ring {
		ring[i] = &mbuf{len: 60 + i}
	}
	bytes := 0
	for i, m := range ring {
		if usePrefetch && i+distance < len(ring) {
			prefetch.Ptr(ring[i+distance])
		}
		bytes += m.len
	}
	fmt.Println(bytes)
	// Output: 1080
}

// Lines covers a structure that spans several cache lines in one call.
func ExampleLines() {
	var descs [8]struct{ addr, cmd uint64 } // 128 bytes of descriptors
	prefetch.Lines(unsafe.Pointer(&descs), int(unsafe.Sizeof(descs)/prefetch.CacheLineSize))
	fmt.Println(len(descs), prefetch.CacheLineSize >= 64)
	// Output: 8 true
}

// Bytes prefetches the start of a buffer, such as the header of a packet in
// its cluster, without unsafe at the call site.
func ExampleBytes() {
	clusters := [][]byte{make([]byte, 2048), make([]byte, 2048)}
	for i, cl := range clusters {
		if i+1 < len(clusters) {
			prefetch.Bytes(clusters[i+1]) // the next packet's header
		}
		cl[0] = 0x45
	}
	fmt.Println(clusters[0][0], clusters[1][0])
	// Output: 69 69
}
