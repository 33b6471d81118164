package busdma

import "sort"

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
