package busdma_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// Worked cases derived from bounce_bus_dmamap_load_buffer and
// _bus_dmamap_addseg (sys/x86/x86/busdma_bounce.c): the buffer is walked a
// page at a time, each chunk is clipped at the next boundary multiple and
// coalesced with the previous segment when contiguous, within maxsegsz and
// the boundary.

const base = 0x4000_0000
const bounceBase = 0x0080_0000

func TestLoadContiguousOneSegment(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 4, MaxSegSize: 65536})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 3*busdma.PageSize, busdma.PageSize)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base, 3*busdma.PageSize))
	roundTrip(t, d, m, buf, segs)
	require.NoError(t, m.Unload())
}

func TestLoadMaxSegSizeBelowPage(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 8, MaxSegSize: 1024})
	m := mustMap(t, tag)
	big := mustAlloc(t, s, 2*busdma.PageSize, busdma.PageSize)
	buf := big[0x100 : 0x100+3000]
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base+0x100, 1024), seg(base+0x500, 1024), seg(base+0x900, 952))
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()
}

func TestLoadBoundaryClipping(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	big := mustAlloc(t, s, 4*busdma.PageSize, busdma.PageSize)

	tag := mustTag(t, d.Tag(), busdma.TagConfig{Boundary: 4096, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	got := tag.Config().MaxSegSize
	require.Equal(t, 4096, got, "boundary 4096 should clamp maxsegsz to 4096, got %d", got)
	m := mustMap(t, tag)
	buf := big[0x800 : 0x800+6000]
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base+0x800, 2048), seg(base+0x1000, 3952))
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()

	tag8 := mustTag(t, d.Tag(), busdma.TagConfig{Boundary: 8192, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	m8 := mustMap(t, tag8)
	buf = big[0x800 : 0x800+12288]
	segs, err = m8.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base+0x800, 6144), seg(base+0x2000, 6144))
	_ = m8.Unload()

	// A boundary below a page splits inside pages.
	tag1k := mustTag(t, d.Tag(), busdma.TagConfig{Boundary: 1024, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	m1k := mustMap(t, tag1k)
	segs, err = m1k.Load(big[0x300:0x300+1500], nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base+0x300, 0x100), seg(base+0x400, 1024), seg(base+0x800, 1500-0x100-1024))
	_ = m1k.Unload()
}

func TestLoadScatteredPages(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutScattered, Seed: 7})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1 << 20, NSegments: 64, MaxSegSize: 1 << 20})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 16*busdma.PageSize+100, 1)[50:]
	// Expected: one segment per physically contiguous run of pages.
	var want []busdma.Segment
	for off := 0; off < len(buf); {
		pa, ok := s.PhysAddr(buf[off:])
		require.True(t, ok, "PhysAddr")
		n := min(len(buf)-off, busdma.PageSize-int(pa%busdma.PageSize))
		if k := len(want) - 1; k >= 0 && want[k].Addr+busdma.BusAddr(want[k].Len) == pa {
			want[k].Len += n
		} else {
			want = append(want, busdma.Segment{Addr: pa, Len: n})
		}
		off += n
	}
	require.GreaterOrEqual(t, len(want), 4, "layout not scattered enough: %d runs", len(want))
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, want...)
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()

	// nsegments exhausted: EFBIG, segs untouched, map unloaded.
	tight := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1 << 20, NSegments: len(want) - 1, MaxSegSize: 1 << 20})
	mt := mustMap(t, tight)
	pre := []busdma.Segment{seg(1, 1)}
	got, err := mt.Load(buf, pre)
	require.ErrorIs(t, err, busdma.ErrTooBig, "more segments than NSegments")
	require.Len(t, got, 1, "failed load changed state: segs %v loaded %v", got, mt.Loaded())
	require.Equal(t, pre[0], got[0], "failed load changed state: segs %v loaded %v", got, mt.Loaded())
	require.False(t, mt.Loaded(), "failed load changed state: segs %v loaded %v", got, mt.Loaded())
	require.Zero(t, d.LoadedMaps(), "LoadedMaps = %d", d.LoadedMaps())
}

func TestLoadNSegmentsExhausted(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 2, MaxSegSize: 1024})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 3000, 1)
	require.ErrorIs(t, errOf(m.Load(buf, nil)), busdma.ErrTooBig)
	segs, err := m.Load(buf[:2048], nil)
	require.NoError(t, err)
	require.Len(t, segs, 2, "segs %v", segs)
	_ = m.Unload()
}

func TestBounceHighPages(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutHigh, BouncePages: 8})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	require.True(t, tag.CouldBounce(), "32-bit tag over memory above 4 GiB must be able to bounce")
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 1500, 1)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(bounceBase, 1500))
	st := s.BounceStats()
	require.Equal(t, 1, st.ActivePages, "active bounce pages %d", st.ActivePages)
	roundTrip(t, d, m, buf, segs)
	st = s.BounceStats()
	require.Equal(t, uint64(2), st.TotalBounced, "total_bounced %d, want 2 (one PREWRITE, one POSTREAD)", st.TotalBounced)
	_ = m.Unload()
	st = s.BounceStats()
	require.False(t, st.ActivePages != 0 || st.FreePages != 8, "after unload: %+v", st)
}

func TestBounceAdjacentPagesCoalesce(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutHigh, BouncePages: 8})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 3*busdma.PageSize, busdma.PageSize)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	// A fresh zone hands out consecutive pages, so addseg coalesces them.
	wantSegs(t, segs, seg(bounceBase, 3*busdma.PageSize))
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()

	small := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 65536, NSegments: 8, MaxSegSize: 4096})
	m2 := mustMap(t, small)
	segs, err = m2.Load(buf, nil)
	require.NoError(t, err)
	// The zone is FIFO: pages 3,4,5 come next.
	wantSegs(t, segs, seg(bounceBase+3*4096, 4096), seg(bounceBase+4*4096, 4096), seg(bounceBase+5*4096, 4096))
	_ = m2.Unload()
}

func TestBounceMisaligned(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{BouncePages: 8})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 64, MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	require.True(t, tag.CouldBounce(), "alignment > 1 makes a tag able to bounce")
	big := mustAlloc(t, s, 3*busdma.PageSize, busdma.PageSize)
	m := mustMap(t, tag)

	segs, err := m.Load(big[64:64+200], nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(base+64, 200)) // aligned: no bounce
	_ = m.Unload()

	buf := big[16 : 16+200]
	segs, err = m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(bounceBase, 200))
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()

	// 6000 bytes at offset 16: the first chunk is roundup2(4080, 64) = 4096
	// bytes, which leaves the next chunk misaligned too; both bounce into
	// consecutive pages and coalesce.
	buf = big[16 : 16+6000]
	segs, err = m.Load(buf, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(bounceBase+4096, 6000)) // FIFO: page 0 went to the tail
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()
}

func TestBounceMixedLayout(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutMixed, Seed: 3, BouncePages: 64})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 1 << 20, NSegments: 64, MaxSegSize: 1 << 20})
	buf := mustAlloc(t, s, 16*busdma.PageSize, busdma.PageSize)
	low, high := 0, 0
	for off := 0; off < len(buf); off += busdma.PageSize {
		pa, _ := s.PhysAddr(buf[off:])
		if pa > busdma.MaxAddr32 {
			high++
		} else {
			low++
		}
	}
	require.NotZero(t, low, "mixed layout gave %d low and %d high pages", low, high)
	require.NotZero(t, high, "mixed layout gave %d low and %d high pages", low, high)
	m := mustMap(t, tag)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	for _, sg := range segs {
		require.LessOrEqual(t, sg.Addr+busdma.BusAddr(sg.Len)-1, busdma.MaxAddr32, "segment %v above lowaddr", sg)
	}
	st := s.BounceStats()
	require.Equal(t, high, st.ActivePages, "bounced %d pages, want %d", st.ActivePages, high)
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()
}

func TestBouncePoolExhaustion(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutHigh, BouncePages: 4})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 65536, NSegments: 16, MaxSegSize: 65536})
	m1, m2 := mustMap(t, tag), mustMap(t, tag)
	b1 := mustAlloc(t, s, 3*busdma.PageSize, busdma.PageSize)
	b2 := mustAlloc(t, s, 2*busdma.PageSize, busdma.PageSize)
	require.NoError(t, errOf(m1.Load(b1, nil)))
	require.ErrorIs(t, errOf(m2.Load(b2, nil)), busdma.ErrNoMem)
	require.False(t, m2.Loaded(), "failed load left the map loaded")
	st := s.BounceStats()
	require.False(t, st.FreePages != 1 || st.Failed != 1, "stats %+v", st)
	_ = m1.Unload()
	segs, err := m2.Load(b2, nil)
	require.NoError(t, err, "after unload")
	roundTrip(t, d, m2, b2, segs)
	_ = m2.Unload()

	// AllocNow checks the zone can hold one maxsize load.
	require.ErrorIs(t, errOf(busdma.NewTag(d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 5 * busdma.PageSize, NSegments: 8, MaxSegSize: 65536, Flags: busdma.AllocNow})), busdma.ErrNoMem, "AllocNow with a 4-page zone and 5-page maxsize")
}

func TestLoadMultiCoalescesAcrossBuffers(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 8, MaxSegSize: 65536})
	m := mustMap(t, tag)
	big := mustAlloc(t, s, 2*busdma.PageSize, busdma.PageSize)
	other := mustAlloc(t, s, busdma.PageSize, busdma.PageSize)
	bufs := [][]byte{big[:100], big[100:1500], nil, other[:60]}
	segs, err := m.LoadMulti(bufs, nil)
	require.NoError(t, err)
	pa, _ := s.PhysAddr(other)
	wantSegs(t, segs, seg(base, 1500), busdma.Segment{Addr: pa, Len: 60})
	// Data through the device: the concatenation of the buffers.
	for i := range big[:1500] {
		big[i] = byte(i)
	}
	fill(other[:60], 5)
	m.Sync(busdma.PreWrite)
	got := readSegs(t, d, segs)
	want := append(append([]byte{}, big[:1500]...), other[:60]...)
	require.Equal(t, string(want), string(got), "LoadMulti data mismatch")
	_ = m.Unload()
	small := mustMap(t, mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1000, NSegments: 8, MaxSegSize: 1000}))
	require.ErrorIs(t, errOf(small.LoadMulti([][]byte{big[:600], other[:500]}, nil)), busdma.ErrInvalid, "LoadMulti beyond maxsize")
	require.ErrorIs(t, errOf(small.LoadMulti([][]byte{nil, big[:0]}, nil)), busdma.ErrInvalid, "LoadMulti of nothing")
}
