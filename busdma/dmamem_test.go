package busdma_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

func TestAllocMem(t *testing.T) {
	for _, layout := range []busdma.Layout{busdma.LayoutContiguous, busdma.LayoutScattered, busdma.LayoutHigh, busdma.LayoutMixed} {
		_, d := simDev(t, busdma.SimConfig{Layout: layout})
		// iflib_dma_alloc_align: align = isc_q_align, one segment of size bytes.
		tag := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 8192, Boundary: 1 << 16, LowAddr: busdma.MaxAddr32,
			MaxSize: 3 * 4096, NSegments: 1, MaxSegSize: 3 * 4096, Flags: busdma.AllocNow})
		var mems []*busdma.DMAMem
		for range 3 {
			dm, err := tag.AllocMem()
			require.NoError(t, err)
			require.Len(t, dm.Vaddr, 3*4096, "layout %d: bad DMA memory paddr %#x len %d", layout, uint64(dm.Paddr), len(dm.Vaddr))
			require.Zero(t, dm.Paddr%8192, "layout %d: bad DMA memory paddr %#x len %d", layout, uint64(dm.Paddr), len(dm.Vaddr))
			require.LessOrEqual(t, dm.Paddr+3*4096-1, busdma.MaxAddr32, "layout %d: bad DMA memory paddr %#x len %d", layout, uint64(dm.Paddr), len(dm.Vaddr))
			require.Equal(t, (dm.Paddr+3*4096-1)>>16, dm.Paddr>>16, "layout %d: bad DMA memory paddr %#x len %d", layout, uint64(dm.Paddr), len(dm.Vaddr))
			require.True(t, dm.Map.Loaded(), "layout %d: bad DMA memory paddr %#x len %d", layout, uint64(dm.Paddr), len(dm.Vaddr))
			require.Equal(t, make([]byte, len(dm.Vaddr)), dm.Vaddr, "not zeroed")
			fill(dm.Vaddr, 9)
			dm.Sync(busdma.PreWrite)
			p := make([]byte, len(dm.Vaddr))
			err = d.Read(dm.Paddr, p)
			require.False(t, err != nil || string(p) != string(dm.Vaddr), "device read of ring: %v", err)
			mems = append(mems, dm)
		}
		for _, dm := range mems {
			require.NoError(t, dm.Free())
			require.ErrorIs(t, dm.Free(), busdma.ErrInvalid, "double free")
		}
		// Freed memory is reused and zeroed again.
		dm, err := tag.AllocMem()
		require.NoError(t, err)
		require.Equal(t, mems[0].Paddr, dm.Paddr, "freed memory not reused")
		require.Zero(t, dm.Vaddr[0], "freed memory not zeroed")
		_ = dm.Free()
	}
}

func TestAllocMemExhausted(t *testing.T) {
	_, d := simDev(t, busdma.SimConfig{ContigSize: 4 * 4096})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 3 * 4096, NSegments: 1, MaxSegSize: 3 * 4096})
	dm, err := tag.AllocMem()
	require.NoError(t, err)
	require.ErrorIs(t, errOf(tag.AllocMem()), busdma.ErrNoMem)
	_ = dm.Free()
}

// Issue 20 §2 item 4: a tag that can never hold MaxSize in one segment
// (maxsegsz or boundary below it) is refused by AllocMem with a *ConfigError
// naming the field, on every space, instead of EFBIG or ENOMEM from the
// attempt.
func TestAllocMemImpossibleTag(t *testing.T) {
	for _, c := range []struct {
		cfg   busdma.TagConfig
		field string
	}{
		{busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 1}, "TagConfig.MaxSegSize"},
		{busdma.TagConfig{MaxSize: 8192, NSegments: 4, MaxSegSize: 4096}, "TagConfig.MaxSegSize"},
		{busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096, Boundary: 1}, "TagConfig.MaxSegSize"}, // the boundary clamps maxsegsz
		{busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096, Boundary: 2048}, "TagConfig.MaxSegSize"},
	} {
		for name, d := range allDevs(t) {
			_, err := mustTag(t, d.Tag(), c.cfg).AllocMem()
			var te *busdma.ConfigError
			if assert.ErrorAs(t, err, &te, "%s %+v", name, c.cfg) {
				assert.Equal(t, c.field, te.Field, "%s %+v", name, c.cfg)
				assert.ErrorIs(t, err, busdma.ErrInvalid)
			}
		}
	}
	// A parent's boundary below the child's maxsize.
	for name, d := range allDevs(t) {
		parent := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 1 << 20, NSegments: 256, MaxSegSize: 1 << 20, Boundary: 4096})
		_, err := mustTag(t, parent, busdma.TagConfig{MaxSize: 8192, NSegments: 1, MaxSegSize: 8192}).AllocMem()
		var te *busdma.ConfigError
		if assert.ErrorAs(t, err, &te, name) {
			assert.Equal(t, "TagConfig.Boundary", te.Field, name)
		}
	}
}

func TestBadInput(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: 2048, NSegments: 2, MaxSegSize: 2048})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 4096, 1)
	pre := []busdma.Segment{seg(7, 7)}
	cases := []struct {
		name string
		buf  []byte
		want error
	}{
		{"nil", nil, busdma.ErrInvalid},
		{"zero-length", buf[:0], busdma.ErrInvalid},
		{"beyond maxsize", buf[:2049], busdma.ErrInvalid},
		{"heap memory", make([]byte, 64), busdma.ErrNotInSpace},
	}
	for _, c := range cases {
		got, err := m.Load(c.buf, pre)
		assert.False(t, !errors.Is(err, c.want) || len(got) != 1 || m.Loaded(), "%s: err %v segs %v loaded %v", c.name, err, got, m.Loaded())
	}
	_, err := m.LoadMulti([][]byte{buf[:10], make([]byte, 10)}, nil)
	assert.False(t, !errors.Is(err, busdma.ErrNotInSpace) || m.Loaded(), "LoadMulti with a foreign buffer: %v", err)
	// Memory of another space is foreign too.
	other, _ := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 16})
	ob, _ := other.Alloc(64, 1)
	assert.ErrorIs(t, errOf(m.Load(ob, nil)), busdma.ErrNotInSpace, "other space")
	require.NoError(t, m.Destroy())
	assert.ErrorIs(t, errOf(m.Load(buf[:64], nil)), busdma.ErrInvalid, "load of destroyed map")
	assert.ErrorIs(t, m.Destroy(), busdma.ErrInvalid, "double destroy")
	assert.ErrorIs(t, errOf(s.Alloc(0, 1)), busdma.ErrInvalid, "Alloc(0)")
	assert.ErrorIs(t, errOf(s.Alloc(16, 3)), busdma.ErrInvalid, "Alloc align 3")
	assert.ErrorIs(t, errOf(s.Alloc(1<<30, 1)), busdma.ErrNoMem, "Alloc too big")
	assert.ErrorIs(t, errOf(busdma.NewDevice(nil, busdma.DeviceConfig{})), busdma.ErrInvalid, "NewDevice(nil)")
}

func TestTagErrorsAndInheritance(t *testing.T) {
	_, d := simDev(t, busdma.SimConfig{})
	ok := busdma.TagConfig{MaxSize: 4096, NSegments: 1, MaxSegSize: 4096}
	bad := []struct {
		field string
		mod   func(*busdma.TagConfig)
	}{
		{"TagConfig.Alignment", func(c *busdma.TagConfig) { c.Alignment = 3 }},
		{"TagConfig.Alignment", func(c *busdma.TagConfig) { c.Alignment = -1 }},
		{"TagConfig.Boundary", func(c *busdma.TagConfig) { c.Boundary = 1000 }},
		{"TagConfig.MaxSize", func(c *busdma.TagConfig) { c.MaxSize = 0 }},
		{"TagConfig.NSegments", func(c *busdma.TagConfig) { c.NSegments = 0 }},
		{"TagConfig.MaxSegSize", func(c *busdma.TagConfig) { c.MaxSegSize = 0 }},
		{"TagConfig.Flags", func(c *busdma.TagConfig) { c.Flags = 1 << 7 }},
	}
	for _, b := range bad {
		cfg := ok
		b.mod(&cfg)
		_, err := busdma.NewTag(d.Tag(), cfg)
		var te *busdma.ConfigError
		assert.False(t, !errors.As(err, &te) || te.Field != b.field || !errors.Is(err, busdma.ErrInvalid), "%s: got %v", b.field, err)
	}
	assert.ErrorIs(t, errOf(busdma.NewTag(nil, ok)), busdma.ErrInvalid, "nil parent")

	parent := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 16, Boundary: 1 << 16, LowAddr: busdma.MaxAddr32,
		HighAddr: 0x2_0000_0000, MaxSize: 1 << 16, NSegments: 4, MaxSegSize: 1 << 16})
	child := mustTag(t, parent, busdma.TagConfig{Alignment: 4, Boundary: 1 << 20, LowAddr: busdma.LowAddrForWidth(40),
		MaxSize: 9000, NSegments: 8, MaxSegSize: 1 << 20})
	got := child.Config()
	// maxsegsz is clamped by the child's own boundary (1 MiB, no clamp), not
	// by the 64 KiB boundary it inherits (common_bus_dma_tag_create's order).
	require.Equal(t, busdma.TagConfig{Name: got.Name, Alignment: 16, Boundary: 1 << 16, LowAddr: busdma.MaxAddr32,
		HighAddr: busdma.MaxAddr, MaxSize: 9000, NSegments: 8, MaxSegSize: 1 << 20}, got, "inherited")
	require.True(t, child.CouldBounce(), "child of a bouncing tag can bounce")
	assert.Equal(t, busdma.MaxAddr, busdma.LowAddrForWidth(0))
	assert.Equal(t, busdma.MaxAddr, busdma.LowAddrForWidth(64))
	assert.Equal(t, busdma.MaxAddr32, busdma.LowAddrForWidth(32))
	assert.Equal(t, busdma.BusAddr(1<<39-1), busdma.LowAddrForWidth(39))
}

// allDevs is one device on each kind of space: simulated, behind the IOMMU
// model, and identity.
func allDevs(t *testing.T) map[string]*busdma.Device {
	t.Helper()
	_, sim := simDev(t, busdma.SimConfig{Size: 1 << 20, ContigSize: 1 << 20})
	io, err := busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: 1 << 20, ContigSize: 1 << 20}})
	require.NoError(t, err)
	id, err := busdma.NewIdentitySpace(make([]byte, 1<<20))
	require.NoError(t, err)
	out := map[string]*busdma.Device{"sim": sim}
	for name, s := range map[string]busdma.Space{"iommu": io, "identity": id} {
		d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: name})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		out[name] = d
	}
	return out
}
