package busdma

// Map is bus_dmamap_t: the state of one mapping. Maps live as long as the
// queue slot that owns them (iflib never creates or destroys maps on the data
// path); only Load, Sync and Unload happen per packet.
//
// A Map is used by one goroutine at a time (its owner: the TX or RX path of
// one queue). Different maps may be used concurrently, and the device may
// access memory concurrently with loads and unloads of other maps.
type Map struct {
	// The fields a load and an unload touch come first, in one cache line:
	// a TX queue cycles through one map per descriptor, so each is cold
	// when its slot comes round again.
	state    mapState // owner only; read at teardown (Device.CheckLeaks)
	nobounce bool     // bus_dmamem_alloc's map: never bounces (FreeBSD's nobounce_dmamap)
	nsegs    int32    // segments of the current load
	size     int      // bytes loaded
	tag      *Tag
	dev      *Device
	chk      *mapCheck // nil unless the device has a checker

	// The current load (owner only; capacities reused so the steady state
	// allocates nothing). A direct load (loadDirect) records none of them.
	bufs    [][]byte  // the client buffers, in load order
	bpages  []int32   // bounce pages held (struct bus_dmamap: bpages)
	bounced []bpiece  // what each bounce page stages
	iova    []iovaRun // IOMMU allocations held
	pieces  []piece   // bus address → buffer offset, kept only with a checker

	id  uint64
	idx int // index in dev.maps; guarded by dev.mu
}

type mapState uint8

const (
	mapIdle mapState = iota
	mapLoaded
	mapDestroyed
)

// piece records that [addr, addr+n) of this load is buffer bi at offset off.
type piece struct {
	addr   BusAddr
	n      int
	bi     int32
	bounce int32 // index into Map.bounced, or -1
	off    int
}

// CreateMap is bus_dmamap_create.
func (t *Tag) CreateMap() (*Map, error) {
	d := t.dev
	if d.closed.Load() {
		return nil, ErrClosed
	}
	m := &Map{tag: t, dev: d, id: d.nmaps.Add(1)}
	if d.chk != nil {
		m.chk = newMapCheck()
	}
	d.register(m)
	return m, nil
}

// Name is "<tag>#<id>", as checker reports print it.
func (m *Map) Name() string { return m.tag.name + "#" + itoa(m.id) }

// Tag returns the map's tag.
func (m *Map) Tag() *Tag { return m.tag }

// Loaded reports whether the map holds a mapping.
func (m *Map) Loaded() bool { return m.state == mapLoaded }

// Load is bus_dmamap_load with BUS_DMA_NOWAIT: it maps buf and appends its
// segments to segs (pass segs[:0] of a reused array to allocate nothing),
// returning the extended slice. On error segs is returned unchanged in
// length and the map stays unloaded. buf must be memory of the device's
// space (Space.Alloc or AllocMem); errors: ErrInvalid (nil, empty, larger
// than maxsize, destroyed map), ErrBusy (already loaded), ErrNotInSpace,
// ErrTooBig (EFBIG), ErrNoMem (no bounce pages or IOVA space).
func (m *Map) Load(buf []byte, segs []Segment) ([]Segment, error) {
	if err := m.preLoad(); err != nil {
		return segs, err
	}
	if len(buf) == 0 || len(buf) > m.tag.maxsize {
		return segs, errLoadLen
	}
	if out, ok := m.loadDirect(buf, segs); ok {
		return out, nil
	}
	start := len(segs)
	m.bufs = append(m.bufs[:0], buf)
	segs, err := m.dev.be.loadBuf(m, 0, buf, segs, start)
	return m.postLoad(segs, start, len(buf), err)
}

// LoadMulti is bus_dmamap_load_mbuf_sg: it maps a packet's buffers (an mbuf
// chain) as one mapping, coalescing across buffers where the addresses are
// contiguous. Empty buffers are skipped, like mbufs with m_len == 0. The
// total must be 1..maxsize bytes (else ErrInvalid); other errors as Load.
func (m *Map) LoadMulti(bufs [][]byte, segs []Segment) ([]Segment, error) {
	if err := m.preLoad(); err != nil {
		return segs, err
	}
	if len(bufs) == 1 && len(bufs[0]) != 0 && len(bufs[0]) <= m.tag.maxsize {
		// One buffer (an mbuf chain of one): the direct load, if it applies.
		if out, ok := m.loadDirect(bufs[0], segs); ok {
			return out, nil
		}
	}
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	if total == 0 || total > m.tag.maxsize {
		return segs, errLoadLen
	}
	start := len(segs)
	m.bufs = m.bufs[:0]
	var err error
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		m.bufs = append(m.bufs, b)
		if segs, err = m.dev.be.loadBuf(m, len(m.bufs)-1, b, segs, start); err != nil {
			break
		}
	}
	return m.postLoad(segs, start, total, err)
}

// loadDirect is the O(1) load of a buffer that lies in one page through a
// tag that can never bounce, on a physically addressed space (no IOMMU)
// and without a checker: bounce_bus_dmamap_load_buffer's walk reduced to
// its one step, the page's bus address (FreeBSD's pmap_kextract) plus the
// offset, as one segment. Nothing is recorded but the map's state and
// size: there are no bounce pages to stage and no checker pieces to keep,
// so Unload has nothing to release. It reports false, leaving the map
// untouched, for anything else (a buffer outside the space, one that
// crosses a page, exceeds maxsegsz or crosses a boundary multiple): the
// general load then gives the segments or the error.
// Preconditions: preLoad passed, 0 < len(buf) <= maxsize.
func (m *Map) loadDirect(buf []byte, segs []Segment) ([]Segment, bool) {
	t := m.tag
	pb := t.direct
	if pb == nil || m.chk != nil {
		return segs, false
	}
	off, ok := offsetIn(pb.pm.mem, pb.pm.base, buf)
	n := len(buf)
	if !ok || off&pageMask+n > PageSize || n > t.maxsegsz {
		return segs, false
	}
	pa := pb.pm.phys[off>>pageShift] + BusAddr(off&pageMask)
	if !t.boundOK(pa, n) {
		return segs, false
	}
	m.state, m.size, m.nsegs = mapLoaded, n, 1
	return append(segs, Segment{Addr: pa, Len: n}), true
}

func (m *Map) preLoad() error {
	switch m.state {
	case mapDestroyed:
		return errMapDestroyed
	case mapLoaded:
		if m.chk != nil {
			m.dev.report(KindLoadLoaded, m, "load of a map that is still loaded")
		}
		return ErrBusy
	}
	if m.dev.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (m *Map) postLoad(segs []Segment, start, size int, err error) ([]Segment, error) {
	if err != nil {
		m.dev.be.release(m)
		clear(m.bufs) // may hold a buffer of another space (ErrNotInSpace)
		m.reset()
		return segs[:start], err
	}
	m.state = mapLoaded
	m.size = size
	m.nsegs = int32(len(segs) - start)
	if m.chk != nil {
		m.dev.checkLoad(m)
	}
	return segs, nil
}

// reset forgets the current load. The buffers are not cleared out of bufs:
// they are memory of the space, which outlives the map, so keeping the
// references pins nothing, and clearing them cost a memclrHasPointers call
// per unload.
func (m *Map) reset() {
	m.bufs = m.bufs[:0]
	m.pieces = m.pieces[:0]
	m.size, m.nsegs = 0, 0
}

// addPiece records a bus range for the checker.
func (m *Map) addPiece(a BusAddr, n, bi, off int, bounce int) {
	if m.chk == nil {
		return
	}
	if k := len(m.pieces) - 1; k >= 0 && bounce < 0 {
		p := &m.pieces[k]
		if p.bounce < 0 && p.bi == int32(bi) && p.addr+BusAddr(p.n) == a && p.off+p.n == off {
			p.n += n
			return
		}
	}
	m.pieces = append(m.pieces, piece{addr: a, n: n, bi: int32(bi), bounce: int32(bounce), off: off})
}

// Unload is bus_dmamap_unload: it releases bounce pages or IOMMU entries.
// Like FreeBSD it performs no implicit sync; sync first. Unloading an
// unloaded map returns ErrNotLoaded (and is reported by a checker).
func (m *Map) Unload() error {
	if m.state != mapLoaded {
		if m.chk != nil && m.state == mapIdle {
			m.dev.report(KindUnloadUnloaded, m, "unload of a map that is not loaded")
		}
		if m.state == mapDestroyed {
			return errMapDestroyed
		}
		return ErrNotLoaded
	}
	if m.chk != nil {
		m.dev.checkUnload(m)
	} else if m.tag.direct != nil && len(m.bufs) == 0 {
		// A direct load (loadDirect): nothing to release.
		m.state, m.size, m.nsegs = mapIdle, 0, 0
		return nil
	}
	m.dev.be.release(m)
	m.reset()
	m.state = mapIdle
	return nil
}

// Sync is bus_dmamap_sync. It is a no-op on an unloaded map, and on a
// loaded one without bounce pages (x86 ends every sync with a release fence,
// which Go's memory model does not need here: the doorbell or queue that
// hands the buffer to the device orders it).
func (m *Map) Sync(op SyncOp) {
	if m.state != mapLoaded {
		return
	}
	if m.chk != nil {
		m.dev.checkSync(m, op)
		return
	}
	m.dev.be.sync(m, op)
}

// Destroy is bus_dmamap_destroy: ErrBusy while loaded (reported by a
// checker), ErrInvalid when already destroyed.
func (m *Map) Destroy() error {
	switch m.state {
	case mapLoaded:
		if m.chk != nil {
			m.dev.report(KindDestroyLoaded, m, "destroy of a loaded map")
		}
		return ErrBusy
	case mapDestroyed:
		return errMapDestroyed
	}
	m.state = mapDestroyed
	m.dev.unregisterMap(m)
	return nil
}
