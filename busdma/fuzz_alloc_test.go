package busdma_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// FuzzAlloc drives Alloc, AllocChunks and Free of one space with sizes,
// counts and alignments from the whole int range (the decoder mixes small
// values with ones near MaxInt) and checks the allocator's invariants: every
// refusal is a typed error and changes nothing, live allocations are inside
// the space, aligned, zeroed and disjoint, every chunk is contiguous in bus
// addresses, Allocated counts exactly the live bytes, Free refuses what is
// not live, and once everything is freed the whole arena is one block again.
func FuzzAlloc(f *testing.F) {
	f.Add(uint8(0), []byte{0, 10, 0, 1, 3, 0, 0, 0, 2, 0, 0, 0})
	f.Add(uint8(1), []byte{1, 200, 35, 4, 0x80, 0, 0, 7, 3, 0, 0, 0, 1, 2, 3, 4})
	f.Add(uint8(3), []byte{1, 255, 255, 255, 255, 255, 255, 1, 0, 9, 9, 9})
	f.Add(uint8(4), []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 1, 1})
	f.Fuzz(func(t *testing.T, which uint8, prog []byte) {
		const arena = 256 << 10
		var s busdma.Space
		var sim *busdma.SimSpace
		var err error
		switch which % 6 {
		case 0, 1, 2, 3:
			sim, err = busdma.NewSimSpace(busdma.SimConfig{Size: arena, Layout: busdma.Layout(which % 4), Seed: uint64(which) + 1, ContigSize: busdma.PageSize, BouncePages: -1})
			s = sim
		case 4:
			s, err = busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: arena, Layout: busdma.LayoutScattered, ContigSize: busdma.PageSize, BouncePages: -1}})
		case 5:
			s, err = busdma.NewIdentitySpace(make([]byte, arena))
		}
		require.NoError(t, err)

		type block struct {
			b     []byte
			align int
		}
		var live []block
		used := 0
		// next decodes an int: a small value or, when the selector byte's
		// top bit is set, 8 raw bytes (near MaxInt, negative, anything).
		next := func() int {
			if len(prog) == 0 {
				return 0
			}
			sel := prog[0]
			prog = prog[1:]
			if sel&0x80 != 0 && len(prog) >= 8 {
				v := int(binary.LittleEndian.Uint64(prog))
				prog = prog[8:]
				return v
			}
			return int(sel) * 97
		}
		addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
		overlaps := func(b []byte) bool {
			for _, x := range live {
				if addr(b) < addr(x.b)+uintptr(len(x.b)) && addr(x.b) < addr(b)+uintptr(len(b)) {
					return true
				}
			}
			return false
		}
		checkBlock := func(b []byte, size, align int) {
			require.Len(t, b, size)
			require.False(t, overlaps(b), "allocation overlaps a live one")
			require.Equal(t, len(b), bytes.Count(b, []byte{0}), "allocation not zeroed")
			if sim != nil && align <= busdma.PageSize {
				pa, ok := sim.PhysAddr(b)
				require.True(t, ok)
				require.Zero(t, uint64(pa)%uint64(max(align, 1)), "bus address %#x not aligned to %d", uint64(pa), align)
			}
		}
		refused := func(err error) {
			var ae *busdma.AllocError
			require.ErrorAs(t, err, &ae)
			require.True(t, errors.Is(err, busdma.ErrNoMem) || errors.Is(err, busdma.ErrInvalid), "%v", err)
			require.Equal(t, used, s.Allocated(), "a refused call changed the books")
		}
		for steps := 0; len(prog) > 0 && steps < 64; steps++ {
			op := prog[0] % 3
			prog = prog[1:]
			switch op {
			case 0:
				size, align := next(), next()
				b, err := s.Alloc(size, align)
				if err != nil {
					refused(err)
					continue
				}
				checkBlock(b, size, align)
				for i := range b {
					b[i] = 0xA5 // dirty it: a later allocation must come back zeroed
				}
				live = append(live, block{b, align})
				used += size
			case 1:
				size, count, align := next()%(64<<10), next()%64, next()
				chunks, err := s.AllocChunks(size, count, align)
				if err != nil {
					refused(err)
					continue
				}
				require.Len(t, chunks, count)
				for _, c := range chunks {
					checkBlock(c, size, align)
					if size <= busdma.PageSize {
						require.Equal(t, addr(c)>>12, (addr(c)+uintptr(size)-1)>>12, "a small chunk crosses a page")
					}
					if sim != nil {
						p0, _ := sim.PhysAddr(c)
						for off := busdma.PageSize - int(p0%busdma.PageSize); off < size; off += busdma.PageSize {
							pa, _ := sim.PhysAddr(c[off:])
							require.Equal(t, p0+busdma.BusAddr(off), pa, "chunk not contiguous in bus addresses")
						}
					}
					for i := range c {
						c[i] = 0x5A
					}
					live = append(live, block{c, align})
				}
				used += size * count
			case 2:
				if len(live) == 0 {
					continue
				}
				i := next() % len(live)
				if i < 0 {
					i = -i
				}
				b := live[i].b
				if len(b) > 1 {
					require.ErrorIs(t, s.Free(b[1:]), busdma.ErrNotAllocated, "Free of a sub-slice")
					require.ErrorIs(t, s.Free(b[:len(b)-1]), busdma.ErrNotAllocated, "Free of a shorter slice")
				}
				require.NoError(t, s.Free(b))
				require.ErrorIs(t, s.Free(b), busdma.ErrNotAllocated, "double free")
				used -= len(b)
				live = append(live[:i], live[i+1:]...)
			}
			require.Equal(t, used, s.Allocated())
		}
		for _, x := range live {
			require.NoError(t, s.Free(x.b))
		}
		require.Zero(t, s.Allocated())
		all, err := s.Alloc(arena, 0)
		require.NoError(t, err, "after freeing everything the arena is one block again")
		require.NoError(t, s.Free(all))
		_, err = s.Alloc(math.MaxInt, 0)
		require.ErrorIs(t, err, busdma.ErrNoMem)
	})
}
