package busdma_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// Issue 20's closed-objects class (docs/edges.md): once a Device is closed,
// everything that would map memory or move data through it refuses with
// ErrClosed — CreateMap, Load on a map created before, AllocMem, and the
// device's own Read and Write — and a second Close is ErrClosed; a
// destroyed map refuses Load, Unload and Destroy with ErrInvalid.
func TestClosedDeviceRefusesUse(t *testing.T) {
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "audit"})
	require.NoError(t, err)
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 256, 1)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	require.NoError(t, d.Read(segs[0].Addr, make([]byte, 16)))
	require.NoError(t, m.Unload())

	require.NoError(t, d.Close())
	require.ErrorIs(t, d.Close(), busdma.ErrClosed)
	_, err = tag.CreateMap()
	require.ErrorIs(t, err, busdma.ErrClosed)
	_, err = m.Load(buf, nil)
	require.ErrorIs(t, err, busdma.ErrClosed)
	require.False(t, m.Loaded())
	_, err = tag.AllocMem()
	require.ErrorIs(t, err, busdma.ErrClosed)
	require.ErrorIs(t, d.Read(segs[0].Addr, make([]byte, 16)), busdma.ErrClosed)
	require.ErrorIs(t, d.Write(segs[0].Addr, make([]byte, 16)), busdma.ErrClosed)

	require.NoError(t, m.Destroy())
	_, err = m.Load(buf, nil)
	require.ErrorIs(t, err, busdma.ErrInvalid)
	require.ErrorIs(t, m.Unload(), busdma.ErrInvalid)
	require.ErrorIs(t, m.Destroy(), busdma.ErrInvalid)
	require.NoError(t, s.Free(buf))
	require.Zero(t, s.Allocated())
}

// A closed PagemapSpace (where the machine allows one) refuses a second
// Close with ErrClosed.
func TestPagemapSpaceCloseTwice(t *testing.T) {
	pm, err := busdma.NewPagemapSpaceConfig(busdma.PagemapConfig{Size: 1 << 20, SmallPages: true})
	if err != nil {
		t.Skipf("no pagemap space here: %v", err)
	}
	require.NoError(t, pm.Close())
	require.ErrorIs(t, pm.Close(), busdma.ErrClosed)
}
