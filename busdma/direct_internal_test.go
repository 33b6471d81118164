package busdma

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The direct load (loadDirect) gives exactly the segments and errors of the
// general load, for Load and LoadMulti, on tags with and without boundary
// and maxsegsz limits, for buffers inside a page (where it applies),
// across pages, and outside the space; and Unload, Sync and a second load
// behave the same after it.
func TestDirectLoadMatchesGeneral(t *testing.T) {
	s, err := NewSimSpace(SimConfig{Size: 1 << 20, Layout: LayoutScattered})
	require.NoError(t, err)
	d, err := NewDevice(s, DeviceConfig{Name: "direct"})
	require.NoError(t, err)
	defer d.Close()
	mem, err := s.Alloc(16*PageSize, PageSize)
	require.NoError(t, err)
	foreign := make([]byte, 256)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cfg := range []TagConfig{
		{MaxSize: 65536, NSegments: 32, MaxSegSize: 65536},
		{MaxSize: 65536, NSegments: 32, MaxSegSize: 65536, Boundary: 512},
		{MaxSize: 65536, NSegments: 32, MaxSegSize: 300},
		{MaxSize: 1000, NSegments: 1, MaxSegSize: 4096},
	} {
		tag, err := NewTag(d.Tag(), cfg)
		require.NoError(t, err)
		require.NotNil(t, tag.direct, "a tag that cannot bounce on a physical space loads directly: %+v", cfg)
		general := *tag
		general.direct = nil
		fast, err := tag.CreateMap()
		require.NoError(t, err)
		slow, err := general.CreateMap()
		require.NoError(t, err)
		direct := 0
		for i := 0; i < 2000; i++ {
			var buf []byte
			switch i % 10 {
			case 0:
				buf = foreign[:1+rng.IntN(len(foreign))]
			default:
				off := rng.IntN(len(mem) - 1)
				n := 1 + rng.IntN(min(len(mem)-off, 3*PageSize))
				if i%2 == 0 {
					n = 1 + rng.IntN(min(len(mem)-off, 200)) // mostly inside a page
				}
				buf = mem[off : off+n]
			}
			prefix := []Segment{{Addr: 1, Len: 1}} // segments of an earlier load stay untouched
			var fs, ss []Segment
			var ferr, serr error
			if i%3 == 0 {
				fs, ferr = fast.Load(buf, prefix)
				ss, serr = slow.Load(buf, prefix)
			} else {
				fs, ferr = fast.LoadMulti([][]byte{buf}, prefix)
				ss, serr = slow.LoadMulti([][]byte{buf}, prefix)
			}
			require.Equal(t, serr, ferr, "load %d of %d bytes, tag %+v", i, len(buf), cfg)
			require.Equal(t, ss, fs, "load %d of %d bytes, tag %+v", i, len(buf), cfg)
			require.Equal(t, slow.Loaded(), fast.Loaded())
			if ferr != nil {
				continue
			}
			require.Equal(t, slow.size, fast.size)
			require.Equal(t, slow.nsegs, fast.nsegs)
			if len(fast.bufs) == 0 {
				direct++
			}
			fast.Sync(PreWrite)
			fast.Sync(PostWrite)
			_, err := fast.Load(buf, nil)
			require.ErrorIs(t, err, ErrBusy, "a loaded map refuses a second load")
			_, err = fast.LoadMulti([][]byte{buf}, nil)
			require.ErrorIs(t, err, ErrBusy, "a loaded map refuses a second load")
			require.NoError(t, fast.Unload())
			require.NoError(t, slow.Unload())
			require.False(t, fast.Loaded())
			require.ErrorIs(t, fast.Unload(), ErrNotLoaded)
		}
		require.Greater(t, direct, 500, "the direct load was taken (tag %+v)", cfg)
		require.NoError(t, fast.Destroy())
		require.NoError(t, slow.Destroy())
	}
	require.NoError(t, d.CheckLeaks())
}

// Where a load could bounce, goes through an IOMMU, or the device has a
// checker, the general load runs: the tag has no direct backend, or the map
// a checker, and the checker still reports misuse.
func TestDirectLoadOnlyWhereItApplies(t *testing.T) {
	s, err := NewSimSpace(SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	d, err := NewDevice(s, DeviceConfig{Name: "plain"})
	require.NoError(t, err)
	defer d.Close()
	bounce, err := NewTag(d.Tag(), TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096, Alignment: 8192})
	require.NoError(t, err)
	require.True(t, bounce.CouldBounce())
	require.Nil(t, bounce.direct, "a tag that could bounce")

	io, err := NewIOMMUSpace(IOMMUConfig{})
	require.NoError(t, err)
	di, err := NewDevice(io, DeviceConfig{Name: "dmar"})
	require.NoError(t, err)
	defer di.Close()
	it, err := NewTag(di.Tag(), TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	require.NoError(t, err)
	require.Nil(t, it.direct, "an IOMMU space")

	c := NewChecker()
	dc, err := NewDevice(s, DeviceConfig{Name: "checked", Checker: c})
	require.NoError(t, err)
	ct, err := NewTag(dc.Tag(), TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	require.NoError(t, err)
	m, err := ct.CreateMap()
	require.NoError(t, err)
	buf, err := s.Alloc(2048, 2048)
	require.NoError(t, err)
	_, err = m.LoadMulti([][]byte{buf[:64]}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, m.pieces, "with a checker the load records its pieces")
	_, err = m.LoadMulti([][]byte{buf[:64]}, nil)
	require.ErrorIs(t, err, ErrBusy)
	require.Equal(t, 1, c.Count(KindLoadLoaded), "the checker reports a load of a loaded map")
	require.NoError(t, m.Unload())
	require.ErrorIs(t, m.Unload(), ErrNotLoaded)
	require.Equal(t, 1, c.Count(KindUnloadUnloaded), "the checker reports an unload of an unloaded map")
	require.NoError(t, m.Destroy())
	require.NoError(t, dc.Close())
}

// The direct load and its unload allocate nothing.
func TestDirectLoadAllocatesNothing(t *testing.T) {
	s, err := NewSimSpace(SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	d, err := NewDevice(s, DeviceConfig{Name: "direct"})
	require.NoError(t, err)
	defer d.Close()
	tag, err := NewTag(d.Tag(), TagConfig{MaxSize: 65536, NSegments: 32, MaxSegSize: 65536})
	require.NoError(t, err)
	m, err := tag.CreateMap()
	require.NoError(t, err)
	buf, err := s.Alloc(2048, 2048)
	require.NoError(t, err)
	bufs := [][]byte{buf[:64]}
	segs := make([]Segment, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if segs, err = m.LoadMulti(bufs, segs[:0]); err != nil || len(m.bufs) != 0 {
			panic("not a direct load")
		}
		if err = m.Unload(); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}
