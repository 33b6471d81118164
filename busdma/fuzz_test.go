package busdma_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

type fuzzSpace struct {
	s      busdma.Space
	buf    []byte // 128 KiB of the space to cut buffers from
	bounce *busdma.SimSpace
}

var (
	fuzzOnce   sync.Once
	fuzzSpaces []fuzzSpace
)

func fuzzSetup(t testing.TB) []fuzzSpace {
	fuzzOnce.Do(func() {
		add := func(s busdma.Space, err error, sim *busdma.SimSpace) {
			require.NoError(t, err)
			b, err := s.Alloc(128<<10+busdma.PageSize, busdma.PageSize)
			require.NoError(t, err)
			fuzzSpaces = append(fuzzSpaces, fuzzSpace{s, b, sim})
		}
		for _, l := range []busdma.Layout{busdma.LayoutContiguous, busdma.LayoutScattered, busdma.LayoutHigh, busdma.LayoutMixed} {
			s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20, Layout: l, BouncePages: 40, ContigSize: 1 << 16})
			add(s, err, s)
		}
		io, err := busdma.NewIOMMUSpace(busdma.IOMMUConfig{IOVASize: 16 << 20, Sim: busdma.SimConfig{Size: 1 << 20, Layout: busdma.LayoutScattered, ContigSize: 1 << 16}})
		add(io, err, nil)
		id, err := busdma.NewIdentitySpace(make([]byte, 1<<20))
		add(id, err, nil)
	})
	return fuzzSpaces
}

// FuzzLoad loads random buffers through random tags in every space and
// checks the invariants of bounce_bus_dmamap_load_buffer/_addseg: segments
// cover the buffer exactly and in order, none crosses a boundary or exceeds
// maxsegsz, at most nsegments or EFBIG, nothing in the exclusion window
// except via bounce pages (which lie outside it), aligned starts, and the
// data crosses in both directions through the syncs. A checker watches
// every step and must stay silent.
func FuzzLoad(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint16(65535), uint8(8), uint16(0), uint16(1500), uint8(0))
	f.Add(uint8(1), uint8(0), uint8(0), uint8(0), uint16(65535), uint8(32), uint16(50), uint16(30000), uint8(0))
	f.Add(uint8(2), uint8(6), uint8(0), uint8(32), uint16(65535), uint8(8), uint16(16), uint16(9000), uint8(0))
	f.Add(uint8(3), uint8(0), uint8(13), uint8(32), uint16(4096), uint8(40), uint16(3000), uint16(65535), uint8(2))
	f.Add(uint8(4), uint8(0), uint8(13), uint8(32), uint16(1024), uint8(64), uint16(100), uint16(20000), uint8(0))
	f.Add(uint8(5), uint8(2), uint8(11), uint8(0), uint16(777), uint8(3), uint16(7), uint16(2000), uint8(0))
	f.Add(uint8(1), uint8(0), uint8(0), uint8(0), uint16(65535), uint8(2), uint16(0), uint16(40000), uint8(3))
	f.Fuzz(func(t *testing.T, space, alignLog, boundLog, lowBits uint8, maxseg uint16, nseg uint8, off, length uint16, chunks uint8) {
		spaces := fuzzSetup(t)
		sp := spaces[int(space)%len(spaces)]
		align := 1 << (alignLog % 14) // up to two pages
		boundary := 0
		if b := boundLog % 18; b >= 10 {
			boundary = 1 << b
		}
		if boundary != 0 && boundary < align {
			boundary = align
		}
		cfg := busdma.TagConfig{Alignment: align, Boundary: boundary, LowAddr: busdma.LowAddrForWidth(int(lowBits % 65)),
			MaxSize: 65536, NSegments: int(nseg%64) + 1, MaxSegSize: int(maxseg) + 1}
		n := int(length)%65536 + 1
		o := int(off) % (len(sp.buf) - n)
		buf := sp.buf[o : o+n]
		// Split into up to 4 buffers for LoadMulti.
		var bufs [][]byte
		k := int(chunks%4) + 1
		for i := range k {
			bufs = append(bufs, buf[i*n/k:(i+1)*n/k])
		}

		c := busdma.NewChecker()
		d, err := busdma.NewDevice(sp.s, busdma.DeviceConfig{Name: "fuzz", Checker: c})
		require.NoError(t, err)
		tag, err := busdma.NewTag(d.Tag(), cfg)
		require.NoError(t, err)
		cfg = tag.Config()
		m := mustMap(t, tag)
		segs, err := m.LoadMulti(bufs, nil)
		if err != nil {
			require.False(t, m.Loaded(), "failed load left state: %v", err)
			require.Empty(t, segs, "failed load left state: %v", err)
			switch {
			case errors.Is(err, busdma.ErrTooBig):
				// Must really need more segments: retry with no limit.
				big := cfg
				big.NSegments = 1 << 20
				mb := mustMap(t, mustTag(t, d.Tag(), big))
				all, err2 := mb.LoadMulti(bufs, nil)
				if err2 == nil {
					// Bounce pages (FIFO) and IOVAs (next-fit) differ on a
					// retry, which may be luckier: only exact without them.
					_, iommu := sp.s.(*busdma.IOMMUSpace)
					require.False(t, len(all) <= cfg.NSegments && !(tag.CouldBounce() && sp.bounce != nil) && !iommu, "EFBIG but %d segments suffice (nsegments %d)", len(all), cfg.NSegments)
					_ = mb.Unload()
				} else {
					require.ErrorIs(t, err2, busdma.ErrNoMem)
				}
			case errors.Is(err, busdma.ErrNoMem):
				// Bounce pages or IOVAs unreachable below a tiny lowaddr, or
				// a space that cannot bounce.
				require.False(t, cfg.LowAddr > 0xFFFF_FFFF && sp.bounce != nil && align == 1, "ENOMEM with a reachable zone: %v", err)
			default:
				require.NoError(t, err, "neither EFBIG nor ENOMEM")
			}
			closeClean(t, d, c)
			return
		}
		require.LessOrEqual(t, len(segs), cfg.NSegments, "%d segments > nsegments %d", len(segs), cfg.NSegments)
		total := 0
		for _, s := range segs {
			end := s.Addr + busdma.BusAddr(s.Len) - 1
			require.Greater(t, s.Len, 0, "segment %v vs maxsegsz %d", s, cfg.MaxSegSize)
			require.LessOrEqual(t, s.Len, cfg.MaxSegSize, "segment %v vs maxsegsz %d", s, cfg.MaxSegSize)
			require.False(t, cfg.Boundary != 0 && uint64(s.Addr)/uint64(cfg.Boundary) != uint64(end)/uint64(cfg.Boundary), "segment %v crosses boundary %#x", s, cfg.Boundary)
			require.LessOrEqual(t, end, cfg.LowAddr, "segment %v in the exclusion window above %#x", s, uint64(cfg.LowAddr))
			require.False(t, sp.bounce != nil && uint64(s.Addr)%uint64(cfg.Alignment) != 0, "segment %v not aligned to %d", s, cfg.Alignment)
			total += s.Len
		}
		require.Equal(t, n, total, "segments cover %d of %d bytes", total, n)
		// Order: with a physical space, each unbounced segment is the
		// physical address of the next bytes.
		if sim := sp.bounce; sim != nil && !tag.CouldBounce() {
			o := 0
			for _, s := range segs {
				pa, _ := sim.PhysAddr(buf[o:])
				require.Equal(t, s.Addr, pa, "segment %v is not at buffer offset %d (%#x)", s, o, uint64(pa))
				o += s.Len
			}
		}
		// Data, both directions.
		for i := range buf {
			buf[i] = byte(i*13) ^ byte(n)
		}
		m.Sync(busdma.PreWrite)
		got := readSegs(t, d, segs)
		require.Equal(t, buf, got, "device read differs from CPU data")
		m.Sync(busdma.PostWrite)
		m.Sync(busdma.PreRead)
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*7) + 1
		}
		writeSegs(t, d, segs, want)
		m.Sync(busdma.PostRead)
		require.Equal(t, want, buf, "CPU data differs from device write after POSTREAD")
		require.NoError(t, m.Unload())
		require.ErrorIs(t, d.Read(segs[0].Addr, got[:1]), busdma.ErrFault, "device read after unload")
		c.Reset() // that access was the one report expected
		closeClean(t, d, c)
		if sp.bounce != nil {
			st := sp.bounce.BounceStats()
			require.Zero(t, st.ActivePages, "bounce pages leaked: %+v", st)
		}
	})
}

func closeClean(t *testing.T, d *busdma.Device, c *busdma.Checker) {
	t.Helper()
	require.NoError(t, d.Close())
	assert.Empty(t, c.Reports(), "busdma checker reports")
}
