package busdma

import (
	"math"
	"sort"
	"sync"
)

// arena is the allocator behind Space.Alloc, Space.AllocChunks and
// Space.Free, and behind bus_dmamem_alloc's physically contiguous runs: it
// stands in for malloc(9), the mbuf cluster zones of uma(9) and
// kmem_alloc_contig. It manages the bytes [lo, hi) of a physMem with a first
// fit over a sorted list of free extents, and remembers every live
// allocation so that Free can refuse memory it did not hand out (a double
// free, a sub-slice, a buffer of another space).
//
// Invariants, all guarded by mu: free is sorted by off, its extents are
// non-empty, disjoint and never adjacent (free coalesces); live maps the start
// of every allocation to its length; free and live together tile [lo, hi)
// exactly, so after every allocation is freed free is the single extent
// [lo, hi) again and a repeated sequence of allocations gets the same
// addresses (an attach/detach loop never grows).
type arena struct {
	pm     *physMem
	lo, hi int // byte offsets into pm.mem, page aligned at lo

	mu    sync.Mutex
	free  []extent          // guarded by mu
	live  map[int]liveAlloc // guarded by mu
	inUse int               // guarded by mu: bytes of live allocations that Free may return
}

type extent struct{ off, end int }

type liveAlloc struct {
	n   int
	mem bool // bus_dmamem_alloc memory: returned by DMAMem.Free, not Space.Free
}

func newArena(pm *physMem, firstPage, npages int) *arena {
	lo := firstPage * PageSize
	hi := min((firstPage+npages)*PageSize, len(pm.mem))
	a := &arena{pm: pm, lo: lo, hi: hi, live: map[int]liveAlloc{}}
	if hi > lo {
		a.free = []extent{{lo, hi}}
	}
	return a
}

// alignUp rounds x up to a multiple of align (a power of two); ok is false
// when the result would overflow.
func alignUp(x, align int) (int, bool) {
	r := x & (align - 1)
	if r == 0 {
		return x, true
	}
	if x > math.MaxInt-(align-r) {
		return 0, false
	}
	return x + align - r, true
}

// validAlign reports whether align is 0 or a power of two; 0 reads as 1.
func validAlign(align int) (int, bool) {
	if align == 0 {
		return 1, true
	}
	return align, align > 0 && align&(align-1) == 0
}

// alloc returns size zeroed bytes whose offset in the space is a multiple of
// align (a power of two, 0 meaning 1).
func (a *arena) alloc(size, align int) ([]byte, error) {
	align, ok := validAlign(align)
	if size <= 0 || !ok {
		return nil, ErrInvalid
	}
	if size > a.hi-a.lo {
		return nil, ErrNoMem
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.free {
		s, ok := alignUp(e.off, align)
		if !ok || s > e.end-size {
			continue
		}
		a.take(i, s, s+size, false)
		b := a.pm.mem[s : s+size : s+size]
		clear(b)
		return b, nil
	}
	return nil, ErrNoMem
}

// take removes [s, end) from free extent i and records the allocation.
// Preconditions: a.mu held; free[i] covers [s, end).
func (a *arena) take(i, s, end int, mem bool) {
	e := a.free[i]
	var repl [2]extent
	n := 0
	if e.off < s {
		repl[n] = extent{e.off, s}
		n++
	}
	if end < e.end {
		repl[n] = extent{end, e.end}
		n++
	}
	a.free = append(a.free[:i], append(repl[:n:n], a.free[i+1:]...)...)
	a.live[s] = liveAlloc{n: end - s, mem: mem}
	if !mem {
		a.inUse += end - s
	}
}

// chunkStart returns the first offset in [from, limit) where a chunk of size
// bytes may start and end by limit (see Space.AllocChunks): inside one page
// when size <= PageSize, else on a page boundary; at a multiple of align,
// which for align beyond a page means the bus address when busAligned (a
// physical space), the offset otherwise; and, when contig, over pages whose
// bus addresses follow each other. ok is false when there is none.
func (a *arena) chunkStart(from, limit, size, align int, contig bool) (int, bool) {
	offAlign := align
	if contig && align > PageSize {
		offAlign = PageSize // the bus address is checked below
	}
	for {
		s, ok := alignUp(from, offAlign)
		if !ok || s > limit-size {
			return 0, false
		}
		first, last := s>>pageShift, (s+size-1)>>pageShift
		if size <= PageSize && first != last {
			from = (first + 1) << pageShift
			continue
		}
		if contig && align > PageSize && uint64(a.pm.phys[first])&uint64(align-1) != 0 {
			from = (first + 1) << pageShift
			continue
		}
		if !contig || first == last {
			return s, true
		}
		brk := -1
		for p := first + 1; p <= last; p++ {
			if a.pm.phys[p] != a.pm.phys[p-1]+PageSize {
				brk = p
				break
			}
		}
		if brk < 0 {
			return s, true
		}
		from = brk << pageShift
	}
}

// allocChunks returns count zeroed chunks of size bytes (see
// Space.AllocChunks). contig asks for physically contiguous pages under
// chunks larger than a page; an IOMMU space does not need them.
func (a *arena) allocChunks(size, count, align int, contig bool) ([][]byte, error) {
	align, ok := validAlign(align)
	if size <= 0 || count <= 0 || !ok {
		return nil, ErrInvalid
	}
	if size > PageSize {
		align = max(align, PageSize)
	}
	if size > a.hi-a.lo || count > (a.hi-a.lo)/size {
		return nil, ErrNoMem
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	starts := make([]int, 0, count)
	for _, e := range a.free {
		from := e.off
		for len(starts) < count {
			s, ok := a.chunkStart(from, e.end, size, align, contig)
			if !ok {
				break
			}
			starts = append(starts, s)
			from = s + size
		}
		if len(starts) == count {
			break
		}
	}
	if len(starts) < count {
		return nil, ErrNoMem
	}
	// Rebuild the free list around the chunks (both sorted) in one pass.
	nf := make([]extent, 0, len(a.free)+len(starts))
	k := 0
	for _, e := range a.free {
		off := e.off
		for k < len(starts) && starts[k] < e.end {
			if starts[k] > off {
				nf = append(nf, extent{off, starts[k]})
			}
			off = starts[k] + size
			k++
		}
		if off < e.end {
			nf = append(nf, extent{off, e.end})
		}
	}
	a.free = nf
	out := make([][]byte, count)
	for i, s := range starts {
		a.live[s] = liveAlloc{n: size}
		out[i] = a.pm.mem[s : s+size : s+size]
		clear(out[i])
	}
	a.inUse += size * count
	return out, nil
}

// allocContig is bus_dmamem_alloc's kmem_alloc_contig(size, low 0, high
// lowaddr, alignment, boundary): size zeroed bytes at the start of whole
// pages whose bus addresses are contiguous, the first aligned to align, the
// run not crossing a multiple of boundary (0: none) and lying at or below
// lowaddr or above highaddr. The token covers the whole run, for
// freeContig.
func (a *arena) allocContig(size int, align, boundary uint64, lowaddr, highaddr BusAddr) ([]byte, memToken, error) {
	if size <= 0 || size > a.hi-a.lo { // also keeps the page count from overflowing
		return nil, memToken{}, ErrNoMem
	}
	npages := (size + PageSize - 1) / PageSize
	pm := a.pm
	ok := func(p0 int) bool {
		if (p0+npages)*PageSize > a.hi {
			return false
		}
		s := pm.phys[p0]
		end := s + BusAddr(npages*PageSize) - 1
		if uint64(s)&(align-1) != 0 {
			return false
		}
		if boundary != 0 && uint64(s)/boundary != uint64(end)/boundary {
			return false
		}
		if end > lowaddr && s <= highaddr {
			return false
		}
		for k := 1; k < npages; k++ {
			if pm.phys[p0+k] != s+BusAddr(k*PageSize) {
				return false
			}
		}
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.free {
		p, _ := alignUp(e.off, PageSize)
		for ; p <= e.end-npages*PageSize; p += PageSize {
			if ok(p >> pageShift) {
				n := npages * PageSize
				a.take(i, p, p+n, true)
				clear(pm.mem[p : p+n])
				return pm.mem[p : p+size : p+size], memToken{off: p, n: n}, nil
			}
		}
	}
	return nil, memToken{}, ErrNoMem
}

// freeContig returns a run from allocContig.
func (a *arena) freeContig(tok memToken) { _ = a.freeAt(tok.off, tok.n, true) }

// freeAt returns the allocation starting at off, which must be n bytes long
// (a whole allocation). mem says which kind the caller frees. It returns
// ErrNotAllocated when off is not the start of such a live allocation.
func (a *arena) freeAt(off, n int, mem bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	la, ok := a.live[off]
	if !ok || la.n != n || la.mem != mem {
		return ErrNotAllocated
	}
	delete(a.live, off)
	if !mem {
		a.inUse -= n
	}
	end := off + n
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].off > off })
	left := i > 0 && a.free[i-1].end == off
	right := i < len(a.free) && a.free[i].off == end
	switch {
	case left && right:
		a.free[i-1].end = a.free[i].end
		a.free = append(a.free[:i], a.free[i+1:]...)
	case left:
		a.free[i-1].end = end
	case right:
		a.free[i].off = off
	default:
		a.free = append(a.free, extent{})
		copy(a.free[i+1:], a.free[i:])
		a.free[i] = extent{off, end}
	}
	return nil
}

// freeBytes returns memory from alloc or allocChunks: b must be exactly what was
// handed out (same first byte, same length).
func (a *arena) freeBytes(b []byte) error {
	if len(b) == 0 {
		return ErrNotAllocated
	}
	off, ok := offsetIn(a.pm.mem, a.pm.base, b)
	if !ok {
		return ErrNotInSpace
	}
	if off < a.lo || off >= a.hi {
		return ErrNotAllocated
	}
	return a.freeAt(off, len(b), false)
}

// allocated returns the bytes held by live alloc/allocChunks allocations.
func (a *arena) allocated() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inUse
}

// extents returns the number of free extents (tests: fragmentation).
func (a *arena) extents() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.free)
}
