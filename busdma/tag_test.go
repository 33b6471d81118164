package busdma_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// lowSpace is 8 contiguous pages at 0x10000 with the default bounce zone at
// 0x800000, so tags can put lowaddr and highaddr inside the arena.
func lowSpace(t *testing.T) (*busdma.SimSpace, *busdma.Device, []byte) {
	t.Helper()
	s, d := simDev(t, busdma.SimConfig{Size: 8 * busdma.PageSize, Base: 0x10000, BouncePages: 8})
	buf := mustAlloc(t, s, 8*busdma.PageSize, busdma.PageSize)
	pa, _ := s.PhysAddr(buf)
	require.Equal(t, busdma.BusAddr(0x10000), pa)
	return s, d, buf
}

// common_bus_dma_tag_create rounds lowaddr and highaddr to the last byte of
// their page, so a tag with lowaddr 0x12345 reaches all of page 0x12000 and
// maps it directly, as FreeBSD does.
func TestTagLowAddrRoundedToPageEnd(t *testing.T) {
	s, d, buf := lowSpace(t)
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: 0x12345, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	assert.Equal(t, busdma.BusAddr(0x12FFF), tag.Config().LowAddr)

	m := mustMap(t, tag)
	page2 := buf[2*busdma.PageSize : 3*busdma.PageSize] // bus 0x12000
	segs, err := m.Load(page2, nil)
	require.NoError(t, err, "page 0x12000 is below the rounded lowaddr: no bounce")
	wantSegs(t, segs, seg(0x12000, busdma.PageSize))
	assert.Zero(t, s.BounceStats().ActivePages)
	roundTrip(t, d, m, page2, segs)
	require.NoError(t, m.Unload())

	// Page 0x13000 is above it and must bounce; this zone (at 0x800000) is
	// out of reach, so the load is refused rather than mapped directly.
	_, err = m.Load(buf[3*busdma.PageSize:3*busdma.PageSize+100], nil)
	require.ErrorIs(t, err, busdma.ErrNoMem)
	assert.False(t, m.Loaded())
}

// The maxsegsz clamp uses the boundary argument of the tag being created,
// before the parent's boundary is merged in (common_bus_dma_tag_create); the
// inherited boundary still splits segments at load time.
func TestTagMaxSegSizeClampedByOwnBoundaryOnly(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	parent := mustTag(t, d.Tag(), busdma.TagConfig{Boundary: busdma.PageSize, MaxSize: 1 << 20, NSegments: 64, MaxSegSize: 1 << 20})
	assert.Equal(t, busdma.PageSize, parent.Config().MaxSegSize, "own boundary clamps")

	child := mustTag(t, parent, busdma.TagConfig{MaxSize: 65536, NSegments: 16, MaxSegSize: 65536})
	cfg := child.Config()
	assert.Equal(t, 65536, cfg.MaxSegSize, "an inherited boundary does not clamp maxsegsz")
	assert.Equal(t, busdma.PageSize, cfg.Boundary)

	own := mustTag(t, parent, busdma.TagConfig{Boundary: 2 * busdma.PageSize, MaxSize: 65536, NSegments: 16, MaxSegSize: 65536})
	cfg = own.Config()
	assert.Equal(t, 2*busdma.PageSize, cfg.MaxSegSize, "clamped by its own boundary")
	assert.Equal(t, busdma.PageSize, cfg.Boundary, "then the smaller inherited boundary wins")

	m := mustMap(t, child)
	buf := mustAlloc(t, s, 3*busdma.PageSize, busdma.PageSize)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base, busdma.PageSize), seg(base+busdma.PageSize, busdma.PageSize), seg(base+2*busdma.PageSize, busdma.PageSize))
	require.NoError(t, m.Unload())
}

// A tag aligned beyond a page gets bounce pages at multiples of its
// alignment. FreeBSD takes bounce pages page-aligned only
// (alloc_bounce_pages), which handed out 0x801000 for alignment 8192.
func TestBounceAlignmentBeyondPage(t *testing.T) {
	const align = 2 * busdma.PageSize
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutHigh, BouncePages: 8})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: align, LowAddr: busdma.MaxAddr32, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})

	check := func(segs []busdma.Segment) {
		t.Helper()
		for _, sg := range segs {
			assert.Zero(t, uint64(sg.Addr)%align, "segment %v not aligned to %d", sg, align)
		}
	}
	// Two pages: both bounce, into the 8 KiB-aligned pages 0x800000 and
	// 0x802000 (0x801000 would be misaligned).
	two := mustAlloc(t, s, 2*busdma.PageSize, align)
	m := mustMap(t, tag)
	segs, err := m.Load(two, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(bounceBase, busdma.PageSize), seg(bounceBase+align, busdma.PageSize))
	roundTrip(t, d, m, two, segs)

	// The remaining aligned pages serve one-page loads until none is left;
	// the misaligned ones are never handed to this tag.
	var maps []*busdma.Map
	one := mustAlloc(t, s, busdma.PageSize, align)
	for range 2 {
		mm := mustMap(t, tag)
		segs, err := mm.Load(one, nil)
		require.NoError(t, err)
		check(segs)
		maps = append(maps, mm)
	}
	last := mustMap(t, tag)
	_, err = last.Load(one, nil)
	require.ErrorIs(t, err, busdma.ErrNoMem, "4 of the 8 pages are 8 KiB aligned and all are in use")
	assert.Equal(t, 4, s.BounceStats().FreePages, "the misaligned pages stay free")

	require.NoError(t, m.Unload())
	for _, mm := range maps {
		require.NoError(t, mm.Unload())
	}
	segs, err = last.Load(one, nil)
	require.NoError(t, err)
	check(segs)
	require.NoError(t, last.Unload())

	// An 8-page-aligned tag (32 KiB) finds one page in this zone (0x800000).
	wide := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 8 * busdma.PageSize, LowAddr: busdma.MaxAddr32, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	mw := mustMap(t, wide)
	segs, err = mw.Load(one[:100], nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(bounceBase, 100))
	require.NoError(t, mw.Unload())
}

// SyncNeeded is false exactly when every sync would be empty: no bounce
// possible for the tag and no checker on the device.
func TestTagSyncNeeded(t *testing.T) {
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	plain, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "plain"})
	require.NoError(t, err)
	any := mustTag(t, plain.Tag(), busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	assert.False(t, any.SyncNeeded(), "no bounce, no checker: syncs are empty")
	low := mustTag(t, plain.Tag(), busdma.TagConfig{LowAddr: 0xFFFF, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	assert.True(t, low.SyncNeeded(), "a tag that may bounce needs its syncs")
	checked, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "checked", Checker: busdma.NewChecker()})
	require.NoError(t, err)
	assert.True(t, mustTag(t, checked.Tag(), busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096}).SyncNeeded(),
		"the checker's non-coherent model needs every sync")
	require.NoError(t, plain.Close())
	require.NoError(t, checked.Close())
}
