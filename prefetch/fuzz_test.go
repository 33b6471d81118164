package prefetch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// FuzzPrefetch checks the one property a prefetch has: any address and any
// line count, however wild, neither faults nor changes memory.
func FuzzPrefetch(f *testing.F) {
	f.Add(uint64(0), int16(1))
	f.Add(^uint64(0), int16(4))
	f.Add(uint64(0xffff800000000000), int16(-3))
	f.Add(uint64(0x7fff_ffff_f000), int16(512))
	guard := make([]byte, 256)
	for i := range guard {
		guard[i] = byte(i)
	}
	f.Fuzz(func(t *testing.T, addr uint64, n int16) {
		a := uintptr(addr)
		Addr(a)
		prefetchLines(a, int(n))
		// The same count from inside a live object, running past its end.
		Lines(unsafe.Pointer(&guard[int(addr%uint64(len(guard)))]), int(n))
		for i, v := range guard {
			require.Equal(t, byte(i), v, "guard[%d] = %d after prefetch, want %d", i, v, byte(i))
		}
	})
}
