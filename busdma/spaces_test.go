package busdma_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
)

func TestIdentitySpace(t *testing.T) {
	region := make([]byte, 64*1024+100) // a UMEM need not end on a page
	s, err := busdma.NewIdentitySpace(region)
	require.NoError(t, err)
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "xdp0", Checker: busdmatest.NewChecker(t)})
	require.NoError(t, err)
	defer d.Close()
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 4096, NSegments: 2, MaxSegSize: 4096})
	m := mustMap(t, tag)
	_ = mustAlloc(t, s, 2048, 2048)
	frame := mustAlloc(t, s, 2048, 2048) // the second frame: offset 2048
	segs, err := m.Load(frame, nil)
	require.NoError(t, err)
	wantSegs(t, segs, seg(2048, 2048))
	off, ok := s.Offset(frame)
	require.False(t, !ok || off != 2048, "Offset %d %v", off, ok)
	roundTrip(t, d, m, frame, segs)
	_ = m.Unload()
	// A buffer straddling two pages of the region is contiguous.
	span := region[4000:5000]
	segs, err = m.Load(span, segs[:0])
	require.NoError(t, err)
	wantSegs(t, segs, seg(4000, 1000))
	_ = m.Unload()
	dm, err := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 4096, MaxSize: 8192, NSegments: 1, MaxSegSize: 8192}).AllocMem()
	require.NoError(t, err)
	require.Zero(t, dm.Paddr%4096, "ring at %#x", uint64(dm.Paddr))
	_ = dm.Free()
	// Nothing bounces: a window below the region cannot be met.
	low := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: 0xFFF, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	require.ErrorIs(t, errOf(mustMap(t, low).Load(region[8192:8292], nil)), busdma.ErrNoMem)
	raw, _ := busdma.NewDevice(s, busdma.DeviceConfig{}) // unchecked: physical addressing
	require.ErrorIs(t, raw.Read(busdma.BusAddr(len(region)), make([]byte, 1)), busdma.ErrFault, "read past region")
	require.ErrorIs(t, errOf(busdma.NewIdentitySpace(nil)), busdma.ErrInvalid)
}

func pagemapSpace(t testing.TB, cfg busdma.PagemapConfig) *busdma.PagemapSpace {
	s, err := busdma.NewPagemapSpaceConfig(cfg)
	if errors.Is(err, busdma.ErrUnavailable) {
		t.Skipf("pagemap space unavailable: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestPagemapSpace(t *testing.T) {
	for _, small := range []bool{false, true} {
		t.Run(map[bool]string{false: "hugepages", true: "smallpages"}[small], func(t *testing.T) {
			s := pagemapSpace(t, busdma.PagemapConfig{Size: 1 << 20, SmallPages: small})
			d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "uio0", Checker: busdmatest.NewChecker(t)})
			require.NoError(t, err)
			defer d.Close()
			tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 16, MaxSegSize: 65536})
			m := mustMap(t, tag)
			buf := mustAlloc(t, s, 3*4096, 4096)[100:]
			segs, err := m.Load(buf, nil)
			require.NoError(t, err)
			pa, _ := s.PhysAddr(buf)
			require.NotZero(t, pa, "physical address of the buffer")
			require.Equal(t, pa, segs[0].Addr, "first segment %v, physical %#x", segs[0], uint64(pa))
			require.False(t, !small && len(segs) != 1, "one hugepage is physically contiguous: %v", segs)
			roundTrip(t, d, m, buf, segs)
			_ = m.Unload()
		})
	}
}

func TestPagemapUnavailableSaysWhy(t *testing.T) {
	s, err := busdma.NewPagemapSpace(1 << 20)
	if err == nil {
		_ = s.Close()
		t.Skip("hugepages available here")
	}
	require.ErrorIs(t, err, busdma.ErrUnavailable, "error %q should wrap ErrUnavailable with a reason", err)
	require.GreaterOrEqual(t, len(err.Error()), len(busdma.ErrUnavailable.Error())+10, "error %q should wrap ErrUnavailable with a reason", err)
}
