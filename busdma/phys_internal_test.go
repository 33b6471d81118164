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
	if !pm.buildBanks(64) {
		t.Fatal("buildBanks")
	}
	if len(pm.banks) <= 4 {
		t.Fatalf("only %d banks", len(pm.banks))
	}
	for i, a := range pm.phys {
		if got := pm.pageOfAddr(a + 123); got != int32(i) {
			t.Fatalf("page of %#x = %d, want %d", uint64(a), got, i)
		}
		if !used[a+PageSize] {
			if got := pm.pageOfAddr(a + PageSize); got != -1 {
				t.Fatalf("absent frame %#x gave page %d", uint64(a+PageSize), got)
			}
		}
	}
	if pm.pageOfAddr(0) != -1 && !used[0] {
		t.Fatal("frame 0")
	}
	pm.phys[1] = pm.phys[0]
	pm.banks = nil
	if pm.buildBanks(64) {
		t.Fatal("duplicate frame accepted")
	}
}

func TestStrings(t *testing.T) {
	if s := (PreRead | PreWrite).String(); s != "PREREAD|PREWRITE" {
		t.Fatal(s)
	}
	if s := (PostRead | PostWrite | 0x40).String(); s != "POSTREAD|POSTWRITE|?" {
		t.Fatal(s)
	}
	if s := (&TagError{Field: "alignment", Value: 3, Msg: "not a power of two"}).Error(); s != "busdma: tag alignment=0x3: not a power of two" {
		t.Fatal(s)
	}
	if ReportKind(0).String() != "unknown" || KindLeak.String() != "map-leaked-at-teardown" {
		t.Fatal("ReportKind.String")
	}
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
	if a.extents() < 2 {
		t.Fatalf("%d free extents after carving chunks", a.extents())
	}
	for i := len(chunks) - 1; i >= 0; i -= 2 {
		require.NoError(t, s.Free(chunks[i]))
	}
	require.NoError(t, s.Free(small))
	for i := len(chunks) - 2; i >= 0; i -= 2 {
		require.NoError(t, s.Free(chunks[i]))
	}
	if n := a.extents(); n != 1 || a.allocated() != 0 {
		t.Fatalf("after freeing all: %d extents, %d bytes allocated", n, a.allocated())
	}
}
