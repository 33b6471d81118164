package busdma_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// chunkSpaces is every space kind and layout AllocChunks must serve, the
// pagemap space included where the machine allows it.
func chunkSpaces(t testing.TB) map[string]busdma.Space {
	return testSpaces(t, busdma.SimConfig{Size: 4 << 20, Seed: 11}, true)
}

// Every chunk of every cluster size loads as one segment through a
// one-segment RX tag (isc_rx_nsegments = 1, as em and ixl use) on every
// space, as FreeBSD's contiguous cluster zones guarantee. Carving the same
// jumbo clusters from one Alloc (what a zone did before) fails on scattered
// memory.
func TestAllocChunksLoadAsOneSegment(t *testing.T) {
	sizes := []int{2048, 3000, 4096, 9216, 16384}
	for name, s := range chunkSpaces(t) {
		t.Run(name, func(t *testing.T) {
			d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: name, Checker: busdmaNewCheckerFor(t)})
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			for _, size := range sizes {
				align := size & -size
				tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: size, NSegments: 1, MaxSegSize: size})
				require.NoError(t, tag.OneSegment(size, align), "size %d", size)
				// Scattered layouts have few long physically contiguous
				// runs: fewer of the larger chunks.
				count := min(24, 96*1024/size)
				chunks, err := s.AllocChunks(size, count, align)
				if name == "pagemap-4k" && size > busdma.PageSize && err != nil {
					// Ordinary pages are as contiguous as the kernel made them.
					require.ErrorIs(t, err, busdma.ErrNoMem)
					t.Logf("%d-byte chunks: %v", size, err)
					continue
				}
				require.NoError(t, err, "AllocChunks(%d, %d, %d)", size, count, align)
				require.Len(t, chunks, count)
				m := mustMap(t, tag)
				for i, c := range chunks {
					require.Len(t, c, size)
					segs, err := m.Load(c, nil)
					require.NoError(t, err, "chunk %d of %d bytes", i, size)
					require.Len(t, segs, 1)
					require.Equal(t, size, segs[0].Len)
					if i%8 == 0 {
						roundTrip(t, d, m, c, segs)
					}
					require.NoError(t, m.Unload())
				}
				for _, c := range chunks {
					require.NoError(t, s.Free(c))
				}
			}
			assert.Zero(t, s.Allocated())
		})
	}

	// The failure the chunks avoid: 9216-byte clusters cut back to back from
	// one Alloc on scattered pages straddle physical discontinuities.
	s, d := simDev(t, busdma.SimConfig{Size: 4 << 20, Layout: busdma.LayoutScattered, Seed: 11})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 9216, NSegments: 1, MaxSegSize: 9216})
	m := mustMap(t, tag)
	mem := mustAlloc(t, s, 24*9216, 1024)
	efbig := 0
	for i := range 24 {
		if _, err := m.Load(mem[i*9216:(i+1)*9216], nil); err != nil {
			require.ErrorIs(t, err, busdma.ErrTooBig)
			efbig++
			continue
		}
		require.NoError(t, m.Unload())
	}
	assert.Positive(t, efbig, "carving from Alloc should have failed on scattered pages")
}

// Tag.OneSegment refuses, up front and with a reason, the configurations in
// which some chunk would take more than one segment.
func TestOneSegmentRefusals(t *testing.T) {
	spaces := chunkSpaces(t)
	dev := func(name string) *busdma.Device {
		d, err := busdma.NewDevice(spaces[name], busdma.DeviceConfig{Name: name})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
	type tc struct {
		space string
		cfg   busdma.TagConfig
		size  int
		ok    bool
	}
	full := busdma.TagConfig{MaxSize: 65536, NSegments: 1, MaxSegSize: 65536}
	with := func(f func(*busdma.TagConfig)) busdma.TagConfig { c := full; f(&c); return c }
	cases := []tc{
		{"scattered", full, 9216, true},
		{"scattered", with(func(c *busdma.TagConfig) { c.MaxSegSize = 4096 }), 9216, false},
		{"scattered", with(func(c *busdma.TagConfig) { c.MaxSize = 8192 }), 9216, false},
		{"scattered", with(func(c *busdma.TagConfig) { c.Boundary = 4096 }), 9216, false},
		{"scattered", with(func(c *busdma.TagConfig) { c.Boundary = 4096 }), 2048, true},
		{"scattered", with(func(c *busdma.TagConfig) { c.Boundary = 1024 }), 2048, false},
		{"scattered", with(func(c *busdma.TagConfig) { c.Boundary = 16384 }), 9216, false}, // page-aligned chunks can straddle 16 KiB
		// A 32-bit device: clusters above 4 GiB bounce, one bounce page each.
		{"high", with(func(c *busdma.TagConfig) { c.LowAddr = busdma.MaxAddr32 }), 2048, true},
		{"high", with(func(c *busdma.TagConfig) { c.LowAddr = busdma.MaxAddr32 }), 9216, false},
		{"mixed", with(func(c *busdma.TagConfig) { c.LowAddr = busdma.MaxAddr32 }), 9216, false},
		{"scattered", with(func(c *busdma.TagConfig) { c.LowAddr = busdma.MaxAddr32 }), 9216, true}, // all below 4 GiB
		{"scattered", with(func(c *busdma.TagConfig) { c.Alignment = 8192 }), 9216, false},
		{"identity", with(func(c *busdma.TagConfig) { c.LowAddr = 0xFFFF }), 2048, false}, // no bounce pages
		{"identity", with(func(c *busdma.TagConfig) { c.LowAddr = 0xFFFF }), 9216, false},
		{"iommu", with(func(c *busdma.TagConfig) { c.LowAddr = busdma.MaxAddr32 }), 16384, true},
		{"iommu", with(func(c *busdma.TagConfig) { c.Boundary = 8192 }), 9216, false},
		{"iommu", with(func(c *busdma.TagConfig) { c.Boundary = 16384 }), 9216, true},
	}
	for _, c := range cases {
		tag := mustTag(t, dev(c.space).Tag(), c.cfg)
		err := tag.OneSegment(c.size, c.size&-c.size)
		if c.ok {
			assert.NoError(t, err, "%s %+v size %d", c.space, c.cfg, c.size)
			continue
		}
		assert.ErrorIs(t, err, busdma.ErrTooBig, "%s %+v size %d", c.space, c.cfg, c.size)
		var se *busdma.SegmentError
		assert.ErrorAs(t, err, &se)
	}
	tag := mustTag(t, dev("identity").Tag(), full)
	// Arguments AllocChunks refuses: an *AllocError naming them.
	for _, a := range []struct{ size, align int }{{0, 0}, {100, 3}, {-1, 64}, {math.MinInt, 0}, {64, -64}} {
		err := tag.OneSegment(a.size, a.align)
		assert.ErrorIs(t, err, busdma.ErrInvalid)
		var ae *busdma.AllocError
		if assert.ErrorAs(t, err, &ae) {
			assert.Equal(t, "OneSegment", ae.Op)
			assert.Equal(t, a.size, ae.Size)
			assert.Equal(t, a.align, ae.Align)
		}
	}
}

// An attach/detach cycle that allocates ring memory, RX clusters and other
// buffers and frees them again can run forever on one space: nothing leaks,
// and the addresses repeat.
func TestAllocFreeLoopNeverGrows(t *testing.T) {
	for name, s := range allocSpaces(t) {
		t.Run(name, func(t *testing.T) {
			d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: name})
			require.NoError(t, err)
			defer func() { require.NoError(t, d.Close()) }()
			ringTag := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 128, MaxSize: 8192, NSegments: 1, MaxSegSize: 8192})
			var first []byte
			for cycle := range 200 { // 200 × ~600 KiB ≫ the 1 MiB arena
				ring, err := ringTag.AllocMem()
				require.NoError(t, err, "cycle %d", cycle)
				clusters, err := s.AllocChunks(2048, 256, 2048)
				require.NoError(t, err, "cycle %d", cycle)
				misc, err := s.Alloc(64<<10, 64)
				require.NoError(t, err, "cycle %d", cycle)
				if cycle == 0 {
					first = clusters[0]
				}
				require.Same(t, &first[0], &clusters[0][0], "cycle %d: the same sequence gets the same memory", cycle)
				assert.Equal(t, 256*2048+64<<10, s.Allocated())
				require.NoError(t, s.Free(misc))
				for _, c := range clusters {
					require.NoError(t, s.Free(c))
				}
				require.NoError(t, ring.Free())
				require.Zero(t, s.Allocated(), "cycle %d", cycle)
			}
		})
	}
}

func TestFreeRefusesWhatItDidNotHandOut(t *testing.T) {
	spaces := allocSpaces(t)
	s, other := spaces["contiguous"], spaces["identity"]
	b := mustAlloc(t, s, 4096, 64)
	require.ErrorIs(t, s.Free(b[64:]), busdma.ErrNotAllocated, "interior")
	require.ErrorIs(t, s.Free(b[:100]), busdma.ErrNotAllocated, "shorter")
	require.ErrorIs(t, s.Free(nil), busdma.ErrNotAllocated, "empty")
	require.ErrorIs(t, s.Free(make([]byte, 64)), busdma.ErrNotInSpace, "Go heap")
	ob := mustAlloc(t, other, 64, 0)
	require.ErrorIs(t, s.Free(ob), busdma.ErrNotInSpace, "another space's memory")
	require.NoError(t, s.Free(b))
	err := s.Free(b)
	require.ErrorIs(t, err, busdma.ErrNotAllocated, "double free")
	var ae *busdma.AllocError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "Free", ae.Op)

	// Ring memory is bus_dmamem_alloc's, returned by DMAMem.Free.
	for _, name := range []string{"contiguous", "identity"} {
		d, err := busdma.NewDevice(spaces[name], busdma.DeviceConfig{})
		require.NoError(t, err)
		dm, err := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096}).AllocMem()
		require.NoError(t, err)
		require.ErrorIs(t, spaces[name].Free(dm.Vaddr), busdma.ErrNotAllocated, name)
		require.NoError(t, dm.Free())
		require.NoError(t, d.Close())
	}
}
