package busdma

import "math"

// TagFlags are bus_dma_tag_create flags.
type TagFlags uint32

// AllocNow is BUS_DMA_ALLOCNOW: make sure the bounce zone holds enough pages
// for one maxsize load at tag creation, so loads need not wait. In a space
// with a bounce pool that is too small it makes NewTag fail with ErrNoMem
// (as alloc_bounce_pages falling short does); spaces without bounce pools
// (identity, pagemap, IOMMU) ignore it.
const AllocNow TagFlags = 1 << 0

// TagConfig holds the bus_dma_tag_create parameters. Zero values: Alignment
// 0 means 1, LowAddr and HighAddr 0 mean MaxAddr. MaxSize, NSegments and
// MaxSegSize must be positive.
type TagConfig struct {
	Name       string   // for checker reports; default "<parent>.tagN"
	Alignment  int      // alignment: power of two; segment starts are multiples
	Boundary   int      // boundary: power of two or 0; no segment crosses a multiple
	LowAddr    BusAddr  // lowaddr: the exclusion window is (LowAddr, HighAddr]
	HighAddr   BusAddr  // highaddr
	MaxSize    int      // maxsize: bytes of one mapping
	NSegments  int      // nsegments
	MaxSegSize int      // maxsegsz
	Flags      TagFlags // flags (AllocNow)
}

// Tag is bus_dma_tag_t: the DMA constraints of a device, built as
// common_bus_dma_tag_create (sys/x86/x86/busdma_machdep.c) builds them:
//
//  1. a Boundary smaller than MaxSegSize clamps MaxSegSize (the tag's own
//     boundary argument only: a boundary inherited in step 3 does not clamp,
//     though the loader still splits segments at it);
//  2. LowAddr and HighAddr are rounded up to the last byte of their page
//     (trunc_page(x) + PAGE_SIZE - 1), so the exclusion window always covers
//     whole pages: a tag with LowAddr 0x12345 reaches all of page 0x12000;
//  3. the parent's restrictions are merged in: lowaddr the minimum, highaddr
//     the maximum, boundary the smaller non-zero one, and — beyond FreeBSD,
//     which leaves alignment to each implementation — alignment the larger
//     one.
//
// Config reports the result. Tags are immutable and safe for concurrent use.
type Tag struct {
	dev         *Device
	parent      *Tag
	name        string
	alignment   uint64
	boundary    uint64
	lowaddr     BusAddr
	highaddr    BusAddr
	maxsize     int
	nsegments   int
	maxsegsz    int
	flags       TagFlags
	couldBounce bool // BUS_DMA_COULD_BOUNCE

	// direct is the space's backend when loads through the tag are plain
	// page lookups: a physically addressed space (no IOMMU) and a tag
	// that can never bounce. Map.Load and LoadMulti then map a buffer that
	// lies in one page in O(1) (loadDirect). nil otherwise.
	direct *physBackend
}

func newRootTag(d *Device) *Tag {
	t := &Tag{dev: d, name: d.name, alignment: 1, lowaddr: MaxAddr, highaddr: MaxAddr,
		maxsize: math.MaxInt32, nsegments: math.MaxInt32, maxsegsz: math.MaxInt32}
	return t
}

// NewTag is bus_dma_tag_create. parent is a device's root tag
// ([Device.Tag], bus_get_dma_tag) or a tag derived from it.
func NewTag(parent *Tag, cfg TagConfig) (*Tag, error) {
	if parent == nil || parent.dev == nil {
		return nil, badArg("NewTag(parent)", nil, "nil parent tag")
	}
	if cfg.Alignment == 0 {
		cfg.Alignment = 1
	}
	if cfg.Alignment < 0 || cfg.Alignment&(cfg.Alignment-1) != 0 {
		return nil, badArg("TagConfig.Alignment", cfg.Alignment, "not a power of two")
	}
	if cfg.Boundary < 0 || cfg.Boundary&(cfg.Boundary-1) != 0 {
		return nil, badArg("TagConfig.Boundary", cfg.Boundary, "not a power of two")
	}
	if cfg.Boundary != 0 && cfg.Boundary < cfg.Alignment {
		return nil, badArg("TagConfig.Boundary", cfg.Boundary, "smaller than alignment")
	}
	if cfg.MaxSize <= 0 {
		return nil, badArg("TagConfig.MaxSize", cfg.MaxSize, "must be positive")
	}
	if cfg.NSegments <= 0 {
		return nil, badArg("TagConfig.NSegments", cfg.NSegments, "must be positive")
	}
	if cfg.MaxSegSize <= 0 {
		return nil, badArg("TagConfig.MaxSegSize", cfg.MaxSegSize, "must be positive")
	}
	if cfg.Flags&^AllocNow != 0 {
		return nil, badArg("TagConfig.Flags", cfg.Flags, "unknown flag")
	}
	if cfg.LowAddr == 0 {
		cfg.LowAddr = MaxAddr
	}
	if cfg.HighAddr == 0 {
		cfg.HighAddr = MaxAddr
	}
	// common_bus_dma_tag_create (sys/x86/x86/busdma_machdep.c), in its order:
	// the tag's own boundary clamps maxsegsz before anything is inherited;
	// lowaddr and highaddr are rounded to the last byte of their page; then
	// the parent's restrictions are merged in.
	if cfg.Boundary != 0 && cfg.Boundary < cfg.MaxSegSize {
		cfg.MaxSegSize = cfg.Boundary
	}
	d := parent.dev
	t := &Tag{dev: d, parent: parent, name: cfg.Name,
		alignment: max(uint64(cfg.Alignment), parent.alignment),
		boundary:  uint64(cfg.Boundary),
		lowaddr:   min(pageEnd(cfg.LowAddr), parent.lowaddr),
		highaddr:  max(pageEnd(cfg.HighAddr), parent.highaddr),
		maxsize:   cfg.MaxSize, nsegments: cfg.NSegments, maxsegsz: cfg.MaxSegSize,
		flags: cfg.Flags,
	}
	if t.name == "" {
		t.name = parent.name + ".tag" + itoa(d.ntags.Add(1))
	}
	if parent.boundary != 0 && (t.boundary == 0 || parent.boundary < t.boundary) {
		t.boundary = parent.boundary
	}
	be := d.space.backend()
	t.couldBounce = be.couldBounce(t) || parent.couldBounce
	if pb, ok := be.(*physBackend); ok && !t.couldBounce {
		t.direct = pb
	}
	if t.couldBounce && t.flags&AllocNow != 0 {
		if err := be.allocNow(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// pageEnd is trunc_page(a) + PAGE_SIZE - 1: the last byte of a's page.
func pageEnd(a BusAddr) BusAddr { return a | pageMask }

// mustBounce is bus_dma_run_filter: the chunk starting at bus address a lies
// in the exclusion window (lowaddr, highaddr] or starts misaligned. Like
// FreeBSD it tests the chunk's first byte only, which is exact because the
// loader never lets a chunk cross a page and lowaddr and highaddr end a page.
func (t *Tag) mustBounce(a BusAddr) bool {
	return (a > t.lowaddr && a <= t.highaddr) || uint64(a)&(t.alignment-1) != 0
}

// boundOK is vm_addr_bound_ok: [a, a+n) crosses no multiple of boundary.
func (t *Tag) boundOK(a BusAddr, n int) bool {
	return t.boundary == 0 || (uint64(a)^(uint64(a)+uint64(n)-1))&^(t.boundary-1) == 0
}

// Config returns the effective parameters after inheritance and clamping.
func (t *Tag) Config() TagConfig {
	return TagConfig{Name: t.name, Alignment: int(t.alignment), Boundary: int(t.boundary),
		LowAddr: t.lowaddr, HighAddr: t.highaddr, MaxSize: t.maxsize, NSegments: t.nsegments,
		MaxSegSize: t.maxsegsz, Flags: t.flags}
}

// Device returns the device the tag belongs to.
func (t *Tag) Device() *Device { return t.dev }

// CouldBounce reports BUS_DMA_COULD_BOUNCE: loads through t may need bounce
// pages in its space.
func (t *Tag) CouldBounce() bool { return t.couldBounce }

// SyncNeeded reports whether Map.Sync on maps of t can ever do anything:
// only when loads may bounce (a copy to or from the bounce pages) or the
// device has a checker (its non-coherent model). Otherwise the machine is
// coherent for t and every sync is empty (bus_dmamap_sync's fast return for
// a map without DMAMAP_COULD_BOUNCE), so a caller on a hot path may skip the
// call and the map it would touch.
func (t *Tag) SyncNeeded() bool { return t.couldBounce || t.dev.chk != nil }

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
