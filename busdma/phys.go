package busdma

import (
	"sort"
	"sync"
)

// physMem is the memory behind a physically addressed space: CPU bytes cut
// into pages, each page's bus address (what pmap_kextract returns), and the
// reverse table a device uses to find a page from a bus address.
//
// Invariants: mem, phys and banks are immutable after construction, so the
// device goroutine reads them without locks. Page p is
// mem[p*PageSize : min((p+1)*PageSize, len(mem))].
type physMem struct {
	mem   []byte
	base  uintptr   // address of mem[0]
	phys  []BusAddr // page index → bus address of its first byte (page aligned)
	banks []bank    // sorted by start frame, disjoint
	max   BusAddr   // highest bus address of any page (Maxmem analogue)
}

// bank maps a run of page frames to page indices: O(1) lookup per bank.
type bank struct {
	start uint64  // first frame (bus address >> pageShift)
	pages []int32 // frame-start → page index, -1 when the frame is absent
}

// buildBanks groups the frames of phys into dense tables. Frames closer than
// gap frames share a table so a scattered layout costs a handful of tables.
// It reports false when two pages claim the same frame.
func (pm *physMem) buildBanks(gap uint64) bool {
	type fp struct {
		f uint64
		p int32
	}
	fs := make([]fp, len(pm.phys))
	for i, a := range pm.phys {
		fs[i] = fp{uint64(a) >> pageShift, int32(i)}
		if a+PageSize-1 > pm.max {
			pm.max = a + PageSize - 1
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].f < fs[j].f })
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && fs[j].f-fs[j-1].f <= gap {
			if fs[j].f == fs[j-1].f {
				return false
			}
			j++
		}
		b := bank{start: fs[i].f, pages: make([]int32, fs[j-1].f-fs[i].f+1)}
		for k := range b.pages {
			b.pages[k] = -1
		}
		for _, x := range fs[i:j] {
			b.pages[x.f-b.start] = x.p
		}
		pm.banks = append(pm.banks, b)
		i = j
	}
	return true
}

// pageOfAddr returns the page index holding bus address a, or -1.
func (pm *physMem) pageOfAddr(a BusAddr) int32 {
	f := uint64(a) >> pageShift
	bs := pm.banks
	if len(bs) > 4 {
		i := sort.Search(len(bs), func(i int) bool { return bs[i].start+uint64(len(bs[i].pages)) > f })
		bs = bs[i:]
	}
	for i := range bs {
		if d := f - bs[i].start; d < uint64(len(bs[i].pages)) {
			return bs[i].pages[d]
		}
	}
	return -1
}

// access copies between p and the pages behind [a, a+len(p)): the
// device-side DMA of a physically addressed space.
func (pm *physMem) access(a BusAddr, p []byte, write bool) error {
	for len(p) > 0 {
		pg := pm.pageOfAddr(a)
		if pg < 0 {
			return ErrFault
		}
		off := int(pg)<<pageShift + int(a&pageMask)
		n := min(len(p), PageSize-int(a&pageMask))
		if off+n > len(pm.mem) {
			return ErrFault
		}
		if write {
			copy(pm.mem[off:off+n], p[:n])
		} else {
			copy(p[:n], pm.mem[off:off+n])
		}
		p = p[n:]
		a += BusAddr(n)
	}
	return nil
}

// pageBytes returns the bytes of page pg from offset off, at most n.
func (pm *physMem) pageBytes(pg int32, off, n int) []byte {
	s := int(pg)<<pageShift + off
	return pm.mem[s : s+n]
}

// zone is a page allocator over pages [first, first+n) of a physMem: Alloc
// packs small objects into page runs taken from it; allocContig takes
// physically contiguous runs (bus_dmamem_alloc's kmem_alloc_contig).
type zone struct {
	pm    *physMem
	first int
	n     int

	mu     sync.Mutex
	used   []bool // guarded by mu; page first+i is taken
	cur    int    // guarded by mu; bump cursor (byte offset into mem)
	curEnd int    // guarded by mu; end of the run the cursor is in
}

func newZone(pm *physMem, first, n int) *zone {
	return &zone{pm: pm, first: first, n: n, used: make([]bool, n)}
}

// alloc returns size zeroed bytes aligned to align (relative to the space's
// base) that stay valid for the life of the space. Memory from alloc is
// never freed.
func (z *zone) alloc(size, align int) ([]byte, error) {
	if size <= 0 || align < 0 || align&(align-1) != 0 {
		return nil, ErrInvalid
	}
	if align == 0 {
		align = 1
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	s := (z.cur + align - 1) &^ (align - 1)
	if z.curEnd == 0 || s+size > z.curEnd {
		np := (size + max(align, PageSize) - 1 + PageSize - 1) / PageSize
		if align <= PageSize {
			np = (size + PageSize - 1) / PageSize
		}
		i := z.findRun(np, func(int) bool { return true })
		if i < 0 {
			return nil, ErrNoMem
		}
		for k := i; k < i+np; k++ {
			z.used[k] = true
		}
		z.cur = (z.first + i) * PageSize
		z.curEnd = min((z.first+i+np)*PageSize, len(z.pm.mem))
		s = (z.cur + align - 1) &^ (align - 1)
		if s+size > z.curEnd {
			return nil, ErrNoMem
		}
	}
	z.cur = s + size
	b := z.pm.mem[s : s+size : s+size]
	clear(b)
	return b, nil
}

// findRun returns the first index i with n free pages i..i+n-1 for which ok(i)
// holds, or -1. Preconditions: z.mu held.
func (z *zone) findRun(n int, ok func(int) bool) int {
	run := 0
	for i := 0; i < z.n; i++ {
		if z.used[i] {
			run = 0
			continue
		}
		run++
		if run >= n && ok(i-n+1) {
			return i - n + 1
		}
	}
	return -1
}

// allocContig takes npages pages whose bus addresses are contiguous, start
// aligned to align, the run not crossing a multiple of boundary (0: none) and
// ending at or below lowaddr, or above highaddr. It returns the first page.
func (z *zone) allocContig(npages int, align, boundary uint64, lowaddr, highaddr BusAddr) (int, error) {
	pm := z.pm
	ok := func(i int) bool {
		p0 := z.first + i
		if p0+npages > len(pm.phys) || (p0+npages)*PageSize > len(pm.mem) {
			return false
		}
		a := pm.phys[p0]
		end := a + BusAddr(npages*PageSize) - 1
		if uint64(a)&(align-1) != 0 {
			return false
		}
		if boundary != 0 && uint64(a)/boundary != uint64(end)/boundary {
			return false
		}
		if end > lowaddr && a <= highaddr {
			return false
		}
		for k := 1; k < npages; k++ {
			if pm.phys[p0+k] != a+BusAddr(k*PageSize) {
				return false
			}
		}
		return true
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	i := z.findRun(npages, ok)
	if i < 0 {
		return 0, ErrNoMem
	}
	for k := i; k < i+npages; k++ {
		z.used[k] = true
	}
	return z.first + i, nil
}

func (z *zone) freeContig(first, npages int) {
	z.mu.Lock()
	for k := first - z.first; k < first-z.first+npages; k++ {
		z.used[k] = false
	}
	z.mu.Unlock()
}
