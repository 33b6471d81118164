package busdma_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
)

func iommuDev(t *testing.T, cfg busdma.IOMMUConfig, c *busdma.Checker) (*busdma.IOMMUSpace, *busdma.Device) {
	t.Helper()
	s, err := busdma.NewIOMMUSpace(cfg)
	require.NoError(t, err)
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "ixl0", Checker: c})
	require.NoError(t, err)
	return s, d
}

func TestIOMMUFaultAfterUnload(t *testing.T) {
	for _, checked := range []bool{false, true} {
		var c *busdma.Checker
		if checked {
			c = busdma.NewChecker()
		}
		s, d := iommuDev(t, busdma.IOMMUConfig{Sim: busdma.SimConfig{Layout: busdma.LayoutScattered}}, c)
		tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 4, MaxSegSize: 65536})
		m := mustMap(t, tag)
		buf := mustAlloc(t, s, 2048, 2048)
		segs, err := m.Load(buf, nil)
		require.NoError(t, err)
		// ds_addr is an IOVA, not the physical address.
		pa, _ := s.Phys().PhysAddr(buf)
		require.False(t, segs[0].Addr == pa || len(segs) != 1, "segs %v, physical %#x", segs, uint64(pa))
		roundTrip(t, d, m, buf, segs)
		require.NoError(t, m.Unload())
		// The NIC still holds the old address (D17901, "ixl(4) not
		// responding to ping" under DMAR).
		require.ErrorIs(t, d.Write(segs[0].Addr, []byte{1}), busdma.ErrFault, "checked=%v: write after unload", checked)
		f := s.Faults()
		require.Len(t, f, 1, "faults %v", f)
		require.Equal(t, segs[0].Addr, f[0].Addr, "faults %v", f)
		require.True(t, f[0].Write, "faults %v", f)
		require.Equal(t, "ixl0", f[0].Device, "faults %v", f)
		require.Equal(t, busdma.IOMMUStats{Maps: 1, Unmaps: 1, PagesMapped: 1, PagesUnmapped: 1, Faults: 1}, s.Stats())
		if checked {
			n := c.Count(busdma.KindIOMMUFault)
			require.False(t, n != 1 || len(c.Reports()) != 1, "reports %v", c.Reports())
		}
		require.NoError(t, d.Close())
	}
}

func TestIOMMUSegmentsAndCounters(t *testing.T) {
	s, d := iommuDev(t, busdma.IOMMUConfig{Sim: busdma.SimConfig{Layout: busdma.LayoutScattered}}, busdmatest.NewChecker(t))
	defer d.Close()
	// Scattered physical pages become one contiguous IOVA range.
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1 << 20, NSegments: 4, MaxSegSize: 1 << 20})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 5*4096, 4096)[100:]
	segs, err := m.Load(buf, nil)
	require.NoError(t, err, "segs %v err", segs)
	require.Len(t, segs, 1, "segs %v err %v", segs, err)
	require.Equal(t, len(buf), segs[0].Len, "segs %v err %v", segs, err)
	require.Equal(t, busdma.BusAddr(100), segs[0].Addr%4096, "segs %v err %v", segs, err)
	roundTrip(t, d, m, buf, segs)
	_ = m.Unload()
	st := s.Stats()
	require.Equal(t, uint64(1), st.Maps)
	require.Equal(t, uint64(5), st.PagesMapped)
	require.Equal(t, uint64(5), st.PagesUnmapped)
	// maxsegsz and boundary still cut segments; lowaddr bounds the IOVAs.
	tag2 := mustTag(t, d.Tag(), busdma.TagConfig{Boundary: 8192, LowAddr: busdma.MaxAddr32, MaxSize: 1 << 20, NSegments: 8, MaxSegSize: 4096})
	m2 := mustMap(t, tag2)
	segs, err = m2.Load(buf, nil)
	require.NoError(t, err)
	total := 0
	for _, sg := range segs {
		require.LessOrEqual(t, sg.Len, 4096, "bad segment %v", sg)
		require.Equal(t, (sg.Addr+busdma.BusAddr(sg.Len)-1)/8192, sg.Addr/8192, "bad segment %v", sg)
		require.LessOrEqual(t, sg.Addr, busdma.MaxAddr32, "bad segment %v", sg)
		total += sg.Len
	}
	require.Equal(t, len(buf), total, "segments cover %d of %d", total, len(buf))
	roundTrip(t, d, m2, buf, segs)
	_ = m2.Unload()

	// Ring memory: one IOVA segment.
	rt := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 128, MaxSize: 8192, NSegments: 1, MaxSegSize: 8192})
	dm, err := rt.AllocMem()
	require.NoError(t, err)
	dm.Sync(busdma.PreWrite)
	require.NoError(t, d.Read(dm.Paddr+8000, make([]byte, 192)))
	_ = dm.Free()
}

func TestIOMMUSpaceExhausted(t *testing.T) {
	s, d := iommuDev(t, busdma.IOMMUConfig{IOVASize: 4 * 4096}, busdmatest.NewChecker(t))
	defer d.Close()
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1 << 20, NSegments: 8, MaxSegSize: 1 << 20})
	m1, m2 := mustMap(t, tag), mustMap(t, tag)
	buf := mustAlloc(t, s, 3*4096, 4096)
	require.NoError(t, errOf(m1.Load(buf, nil)))
	_, err := m2.Load(buf[:2*4096], nil)
	require.False(t, !errors.Is(err, busdma.ErrNoMem) || m2.Loaded(), "want ErrNoMem: %v", err)
	_ = m1.Unload()
	require.NoError(t, errOf(m2.Load(buf[:2*4096], nil)))
	_ = m2.Unload()
	low := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: 0xFFFF, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	require.ErrorIs(t, errOf(mustMap(t, low).Load(buf[:64], nil)), busdma.ErrNoMem, "lowaddr below the IOVA base")
}

func TestIOMMUCostCountsWork(t *testing.T) {
	s, d := iommuDev(t, busdma.IOMMUConfig{MapTime: time.Microsecond, UnmapTime: busdma.StrictUnmapTime}, busdmatest.NewChecker(t))
	defer d.Close()
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1 << 16, NSegments: 4, MaxSegSize: 1 << 16})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 2048, 2048)
	var segs []busdma.Segment
	for range 10 {
		var err error
		segs, err = m.Load(buf, segs[:0])
		require.NoError(t, err)
		_ = m.Unload()
	}
	require.Equal(t, busdma.IOMMUStats{Maps: 10, Unmaps: 10, PagesMapped: 10, PagesUnmapped: 10}, s.Stats())
	for _, c := range []struct {
		cfg   busdma.IOMMUConfig
		field string
	}{
		{busdma.IOMMUConfig{MapTime: -1}, "IOMMUConfig.MapTime"},
		{busdma.IOMMUConfig{MapTime: 2 * time.Second}, "IOMMUConfig.MapTime"},
		{busdma.IOMMUConfig{UnmapTime: -time.Nanosecond}, "IOMMUConfig.UnmapTime"},
		{busdma.IOMMUConfig{UnmapTime: 2 * time.Second}, "IOMMUConfig.UnmapTime"},
	} {
		err := errOf(busdma.NewIOMMUSpace(c.cfg))
		require.ErrorIs(t, err, busdma.ErrInvalid, "%+v", c.cfg)
		var ce *busdma.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", c.cfg)
		require.Equal(t, c.field, ce.Field, "%+v", c.cfg)
	}
	require.ErrorIs(t, errOf(busdma.NewSimSpace(busdma.SimConfig{Base: 0x123})), busdma.ErrInvalid)
	require.ErrorIs(t, errOf(busdma.NewSimSpace(busdma.SimConfig{Base: 0x0100_0000})), busdma.ErrInvalid, "arena overlapping the contig zone")
}
