package busdma

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// pageOfAddr against a brute-force search, with enough far-apart frames to
// take the binary-search path.
func TestPageOfAddrManyBanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pm := &physMem{phys: make([]BusAddr, 300)}
	used := map[BusAddr]bool{}
	for i := range pm.phys {
		for {
			a := BusAddr(rng.Uint64N(1<<36)) &^ pageMask
			if !used[a] {
				used[a] = true
				pm.phys[i] = a
				break
			}
		}
	}
	require.True(t, pm.buildBanks(64), "buildBanks")
	require.Greater(t, len(pm.banks), 4, "only %d banks", len(pm.banks))
	for i, a := range pm.phys {
		got := pm.pageOfAddr(a + 123)
		require.Equal(t, int32(i), got, "page of %#x = %d, want %d", uint64(a), got, i)
		if !used[a+PageSize] {
			got := pm.pageOfAddr(a + PageSize)
			require.Equal(t, int32(-1), got, "absent frame %#x gave page %d", uint64(a+PageSize), got)
		}
	}
	require.False(t, pm.pageOfAddr(0) != -1 && !used[0], "frame 0")
	pm.phys[1] = pm.phys[0]
	pm.banks = nil
	require.False(t, pm.buildBanks(64), "duplicate frame accepted")
}

func TestStrings(t *testing.T) {
	s := (PreRead | PreWrite).String()
	require.Equal(t, "PREREAD|PREWRITE", s, s)
	s = (PostRead | PostWrite | 0x40).String()
	require.Equal(t, "POSTREAD|POSTWRITE|?", s, s)
	s = badArg("TagConfig.Alignment", 3, "not a power of two").Error()
	require.Equal(t, "busdma: invalid TagConfig.Alignment = 3: not a power of two", s, s)
	require.Equal(t, "unknown", ReportKind(0).String(), "ReportKind.String")
	require.Equal(t, "map-leaked-at-teardown", KindLeak.String(), "ReportKind.String")
}

// Freeing everything coalesces the free list back into one extent, in any
// order of frees.
func TestArenaCoalesces(t *testing.T) {
	s, err := NewSimSpace(SimConfig{Size: 1 << 20, Layout: LayoutScattered})
	require.NoError(t, err)
	a := s.allocZ
	chunks, err := s.AllocChunks(9216, 20, 1024)
	require.NoError(t, err)
	small, err := s.Alloc(100, 8)
	require.NoError(t, err)
	require.GreaterOrEqual(t, a.extents(), 2, "%d free extents after carving chunks", a.extents())
	for i := len(chunks) - 1; i >= 0; i -= 2 {
		require.NoError(t, s.Free(chunks[i]))
	}
	require.NoError(t, s.Free(small))
	for i := len(chunks) - 2; i >= 0; i -= 2 {
		require.NoError(t, s.Free(chunks[i]))
	}
	n := a.extents()
	require.False(t, n != 1 || a.allocated() != 0, "after freeing all: %d extents, %d bytes allocated", n, a.allocated())
}
