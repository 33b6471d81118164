package busdma

// Space is what a bus address means: simulated physical memory
// ([SimSpace]), I/O virtual addresses behind an IOMMU ([IOMMUSpace]), real
// physical addresses of hugepage memory ([PagemapSpace]) or offsets in one
// registered region ([IdentitySpace]). The interface is sealed.
//
// Memory handed to a device's maps must come from the device's space. Alloc,
// AllocChunks and Free are safe for concurrent use; their errors are
// *AllocError, and a refused call leaves the space as it was.
type Space interface {
	// Alloc returns size zeroed bytes of DMA-capable memory of this space,
	// aligned to align (a power of two, 0 meaning 1) in the space's own
	// addressing; alignment up to a page also holds for bus addresses. The
	// bytes may span pages that are not contiguous in bus addresses (a load
	// then takes several segments); use AllocChunks for buffers that must
	// load as one segment. The memory stays valid until Free.
	Alloc(size, align int) ([]byte, error)
	// AllocChunks returns count zeroed chunks of size bytes, each contiguous
	// in bus addresses, as FreeBSD's mbuf cluster zones hand out clusters
	// (zone_clust, zone_jumbop, and zone_jumbo9 whose 9 KiB clusters come
	// from physically contiguous kmem_alloc_contig pages). The placement:
	//
	//   - a chunk of at most PageSize bytes lies inside one page, at an
	//     offset that is a multiple of align (2048-byte chunks at align
	//     2048 pack two to a page, as MCLBYTES clusters do);
	//   - a larger chunk starts on a page boundary (or a multiple of align
	//     when align is larger) and covers pages whose bus addresses follow
	//     each other. Under an IOMMU any pages will do, because a load maps
	//     the whole chunk into one IOVA run.
	//
	// So every chunk loads as one segment through a tag whose maxsegsz,
	// maxsize and boundary allow size bytes and which does not bounce it;
	// [Tag.OneSegment] answers that question up front. ErrNoMem when the
	// space has too few such runs (a scattered layout has few long
	// physically contiguous runs). Each chunk is freed on its own with Free.
	AllocChunks(size, count, align int) ([][]byte, error)
	// Free returns memory from Alloc or one chunk from AllocChunks to the
	// space. mem must be exactly the slice handed out (same first byte and
	// length; the capacity is ignored). ErrNotAllocated for memory the space
	// did not hand out or already took back (a double free), ErrNotInSpace
	// for memory outside the space. Nothing may use the memory afterwards;
	// in particular no map may still hold it loaded.
	Free(mem []byte) error
	// Allocated returns the bytes currently held by Alloc and AllocChunks
	// allocations (not by Tag.AllocMem): what a teardown must bring back to
	// where it started.
	Allocated() int
	// Name names the space in reports.
	Name() string
	backend() backend
}

// Implementations of the allocation methods shared by the spaces.

func allocIn(name string, a *arena, size, align int) ([]byte, error) {
	b, err := a.alloc(size, align)
	if err != nil {
		return nil, &AllocError{Op: "Alloc", Space: name, Size: size, Align: align, Err: err}
	}
	return b, nil
}

func allocChunksIn(name string, a *arena, size, count, align int, contig bool) ([][]byte, error) {
	c, err := a.allocChunks(size, count, align, contig)
	if err != nil {
		return nil, &AllocError{Op: "AllocChunks", Space: name, Size: size, Count: count, Align: align, Err: err}
	}
	return c, nil
}

func freeIn(name string, a *arena, mem []byte) error {
	if err := a.freeBytes(mem); err != nil {
		return &AllocError{Op: "Free", Space: name, Size: len(mem), Err: err}
	}
	return nil
}

// backend is what a Space does for the maps, tags and devices on it.
type backend interface {
	// attach and detach create and tear down per-device state (an IOMMU
	// domain).
	attach(d *Device) error
	detach(d *Device)
	couldBounce(t *Tag) bool
	allocNow(t *Tag) error
	// loadBuf maps buf (buffer bi of the current load of m), appending
	// segments to segs; segs[start:] belong to this load. On error the
	// caller calls release.
	loadBuf(m *Map, bi int, buf []byte, segs []Segment, start int) ([]Segment, error)
	// release drops everything the current load of m holds.
	release(m *Map)
	// sync copies bounce pages (PREWRITE in, POSTREAD out).
	sync(m *Map, op SyncOp)
	// bounceBytes is the bounce page memory staging p.
	bounceBytes(p bpiece) []byte
	// noteBounce counts a sync that copied bounce pages (total_bounced).
	noteBounce()
	// access is device-side DMA at a bus address.
	access(d *Device, a BusAddr, p []byte, write bool) error
	// allocMem returns a physically contiguous block for bus_dmamem_alloc
	// satisfying t, plus a token to free it.
	allocMem(t *Tag) (mem []byte, token memToken, err error)
	freeMem(tok memToken)
	// oneSegment says why a chunk of AllocChunks(size, _, align) might not
	// load through t as one segment ("" if it always does); size and
	// maxsize/maxsegsz are checked by the caller.
	oneSegment(t *Tag, size, align int) string
}

// memToken is what freeMem needs: the run allocMem took from its arena.
type memToken struct {
	off, n int
}
