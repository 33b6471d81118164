package busdma_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// allocSpaces returns one small space of each kind, with a name.
func allocSpaces(t testing.TB) map[string]busdma.Space {
	return testSpaces(t, busdma.SimConfig{Size: 1 << 20, Seed: 7, ContigSize: 1 << 16}, false)
}

// testSpaces returns one space of each kind, by name: a SimSpace per layout
// ("contiguous", "scattered", "high", "mixed"), an IOMMU space over
// scattered pages ("iommu") and an identity space of cfg.Size bytes
// ("identity"); with pagemap also a PagemapSpace where the machine allows
// one ("pagemap" on hugepages, else "pagemap-4k"). cfg gives the simulated
// spaces their sizes and seed.
func testSpaces(t testing.TB, cfg busdma.SimConfig, pagemap bool) map[string]busdma.Space {
	t.Helper()
	out := map[string]busdma.Space{}
	for name, l := range map[string]busdma.Layout{
		"contiguous": busdma.LayoutContiguous, "scattered": busdma.LayoutScattered,
		"high": busdma.LayoutHigh, "mixed": busdma.LayoutMixed,
	} {
		c := cfg
		c.Name, c.Layout = name, l
		s, err := busdma.NewSimSpace(c)
		require.NoError(t, err)
		out[name] = s
	}
	c := cfg
	c.Layout = busdma.LayoutScattered
	io, err := busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: c})
	require.NoError(t, err)
	out["iommu"] = io
	id, err := busdma.NewIdentitySpace(make([]byte, cfg.Size))
	require.NoError(t, err)
	out["identity"] = id
	if !pagemap {
		return out
	}
	if pm, err := busdma.NewPagemapSpaceConfig(busdma.PagemapConfig{Size: cfg.Size}); err == nil {
		t.Cleanup(func() { _ = pm.Close() })
		out["pagemap"] = pm
	} else if pm, err := busdma.NewPagemapSpaceConfig(busdma.PagemapConfig{Size: cfg.Size, SmallPages: true}); err == nil {
		t.Cleanup(func() { _ = pm.Close() })
		out["pagemap-4k"] = pm
	} else {
		t.Logf("pagemap space not tested: %v", err)
	}
	return out
}

// Sizes and alignments near MaxInt are typed errors, and the space stays
// usable afterwards (they used to overflow the page arithmetic and corrupt
// the allocator so that every later Alloc panicked).
func TestAllocHugeSizesAreTypedErrors(t *testing.T) {
	for name, s := range allocSpaces(t) {
		t.Run(name, func(t *testing.T) {
			bad := []struct {
				size, align int
				want        error
			}{
				{math.MaxInt, 0, busdma.ErrNoMem},
				{math.MaxInt - busdma.PageSize + 2, busdma.PageSize, busdma.ErrNoMem},
				{bigPow2, 1, busdma.ErrNoMem},
				{busdma.PageSize, math.MinInt, busdma.ErrInvalid},
				{0, 0, busdma.ErrInvalid},
				{-1, 0, busdma.ErrInvalid},
				{math.MinInt, 0, busdma.ErrInvalid},
				{10, 3, busdma.ErrInvalid},
			}
			for _, b := range bad {
				_, err := s.Alloc(b.size, b.align)
				require.ErrorIs(t, err, b.want, "Alloc(%d, %d)", b.size, b.align)
				var ae *busdma.AllocError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, "Alloc", ae.Op)

				// Still usable: a page, aligned and zeroed.
				m, err := s.Alloc(busdma.PageSize, busdma.PageSize)
				require.NoError(t, err, "Alloc after Alloc(%d, %d)", b.size, b.align)
				assert.Len(t, m, busdma.PageSize)
				require.NoError(t, s.Free(m))
			}
			// Offset 0 is a multiple of any alignment: one such block fits,
			// a second does not.
			first, err := s.Alloc(1, bigPow2)
			require.NoError(t, err)
			_, err = s.Alloc(1, bigPow2)
			require.ErrorIs(t, err, busdma.ErrNoMem)
			require.NoError(t, s.Free(first))
			for _, b := range []struct{ size, count, align int }{
				{math.MaxInt, 1, 0}, {busdma.PageSize, math.MaxInt, 0}, {busdma.PageSize, math.MaxInt/busdma.PageSize + 1, 0},
				{2048, 2, bigPow2}, {0, 1, 0}, {1, 0, 0}, {-5, 3, 0}, {8, 8, 6},
			} {
				_, err := s.AllocChunks(b.size, b.count, b.align)
				require.Error(t, err, "AllocChunks(%d, %d, %d)", b.size, b.count, b.align)
				assert.True(t, errors.Is(err, busdma.ErrNoMem) || errors.Is(err, busdma.ErrInvalid), "%v", err)
			}
			assert.Zero(t, s.Allocated())

			d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: name})
			require.NoError(t, err)
			big := mustTag(t, d.Tag(), busdma.TagConfig{MaxSize: math.MaxInt, NSegments: 1, MaxSegSize: math.MaxInt})
			_, err = big.AllocMem()
			require.ErrorIs(t, err, busdma.ErrNoMem)
			ring := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 128, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
			dm, err := ring.AllocMem()
			require.NoError(t, err, "AllocMem after a refused one")
			require.NoError(t, dm.Free())
			require.NoError(t, d.Close())
		})
	}
}

func TestNewSimSpaceBadConfig(t *testing.T) {
	bad := []busdma.SimConfig{
		{Size: math.MaxInt},
		{Size: -1},
		{ContigSize: math.MaxInt},
		{ContigSize: math.MinInt},
		{BouncePages: math.MaxInt},
		{Layout: 9},
		{Base: 0x1001},
		{Base: busdma.MaxAddr &^ (busdma.PageSize - 1)},
		{HighBase: busdma.MaxAddr - 1<<20 + 1, Layout: busdma.LayoutHigh},
		{BounceBase: busdma.MaxAddr &^ 0xFFF, BouncePages: 2},
		{Base: 0x100_0000}, // the arena would overlap the contiguous zone at 16 MiB
	}
	for _, cfg := range bad {
		_, err := busdma.NewSimSpace(cfg)
		require.ErrorIs(t, err, busdma.ErrInvalid, "%+v", cfg)
		var ce *busdma.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", cfg)
	}
	iommuBad := []busdma.IOMMUConfig{
		{IOVASize: -1}, {IOVABase: 0x123},
		{IOVABase: busdma.MaxAddr &^ 0xFFF}, {MaxFaults: -3},
		{Sim: busdma.SimConfig{Size: math.MaxInt}},
	}
	if math.MaxInt>>40 != 0 {
		iommuBad = append(iommuBad, busdma.IOMMUConfig{IOVASize: math.MaxInt}) // more than 1 TiB
	}
	for _, cfg := range iommuBad {
		_, err := busdma.NewIOMMUSpace(cfg)
		require.ErrorIs(t, err, busdma.ErrInvalid, "%+v", cfg)
	}
	_, err := busdma.NewPagemapSpaceConfig(busdma.PagemapConfig{Size: math.MaxInt})
	require.Error(t, err)
	assert.True(t, errors.Is(err, busdma.ErrInvalid) || errors.Is(err, busdma.ErrUnavailable), "%v", err)
}

// bigPow2 is the largest power of two an int holds (1<<62 on 64-bit).
const bigPow2 = math.MaxInt/2 + 1
