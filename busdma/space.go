package busdma

// Space is what a bus address means: simulated physical memory
// ([SimSpace]), I/O virtual addresses behind an IOMMU ([IOMMUSpace]), real
// physical addresses of hugepage memory ([PagemapSpace]) or offsets in one
// registered region ([IdentitySpace]). The interface is sealed.
type Space interface {
	// Alloc returns size zeroed bytes of DMA-capable memory of this space,
	// aligned to align (a power of two, 0 meaning 1) in the space's own
	// addressing; sub-page alignment also holds for bus addresses. The
	// memory stays valid for the life of the space and is never freed.
	Alloc(size, align int) ([]byte, error)
	// Name names the space in reports.
	Name() string
	backend() backend
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
}

type memToken struct {
	first, npages int
}
