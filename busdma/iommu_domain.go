package busdma

import (
	"sync"
	"sync/atomic"
)

// iommuDomain is a device's DMAR domain (struct iommu_domain): an IOVA
// allocator and a page table covering [base, base+len(pte)) pages.
//
// Invariants: pte[i] holds 1 + the physMem page mapped at IOVA page
// base+i, or 0. Loaders write entries (under mu, for the allocator) with
// atomic stores after the page is reserved; the device goroutine reads them
// with atomic loads and no lock. The store-release/load-acquire pair stands
// in for the page-table write + IOTLB invalidation ordering of
// iommu_map/iommu_domain_unload: a device access that starts after Unload
// returned sees the cleared entry.
type iommuDomain struct {
	base uint64 // first IOVA page number
	pte  []atomic.Int32

	mu    sync.Mutex
	used  []bool      // guarded by mu: IOVA page allocated (iommu_gas)
	hint  int         // guarded by mu: next-fit start
	stats domainStats // guarded by mu: counted where the lock is taken anyway
}

// domainStats are a domain's counters (IOMMUStats without the faults).
type domainStats struct {
	maps, unmaps, pagesMapped, pagesUnmapped uint64
}

func (a *domainStats) add(b domainStats) {
	a.maps += b.maps
	a.unmaps += b.unmaps
	a.pagesMapped += b.pagesMapped
	a.pagesUnmapped += b.pagesUnmapped
}

// iovaRun is one IOVA allocation held by a map (struct iommu_map_entry).
type iovaRun struct {
	page int // index into pte
	n    int
}

type iommuBackend struct{ s *IOMMUSpace }

func (b *iommuBackend) attach(d *Device) error {
	n := b.s.cfg.IOVASize / PageSize
	d.dom = &iommuDomain{base: uint64(b.s.cfg.IOVABase) >> pageShift,
		pte: make([]atomic.Int32, n), used: make([]bool, n)}
	b.s.mu.Lock()
	b.s.doms[d.dom] = struct{}{}
	b.s.mu.Unlock()
	return nil
}

// detach folds the domain's counters into the space's.
func (b *iommuBackend) detach(d *Device) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	d.dom.mu.Lock()
	b.s.retired.add(d.dom.stats)
	d.dom.mu.Unlock()
	delete(b.s.doms, d.dom)
}

func (b *iommuBackend) couldBounce(*Tag) bool     { return false }
func (b *iommuBackend) allocNow(*Tag) error       { return nil }
func (b *iommuBackend) sync(*Map, SyncOp)         {} // iommu_bus_dmamap_sync is empty
func (b *iommuBackend) bounceBytes(bpiece) []byte { return nil }
func (b *iommuBackend) noteBounce()               {}

// allocIOVA finds n free pages, the first aligned to align pages, not
// crossing a boundary multiple when the run fits in one, and below limit
// (an index into pte). Preconditions: dom.mu held.
func (dom *iommuDomain) allocIOVA(n, align int, boundary uint64, limit int) int {
	limit = min(limit, len(dom.used))
	try := func(from, to int) int {
		for i := from; i+n <= to; {
			if (int(dom.base)+i)%align != 0 {
				i += align - (int(dom.base)+i)%align
				continue
			}
			if boundary != 0 && uint64(n*PageSize) <= boundary {
				s := (dom.base + uint64(i)) << pageShift
				e := s + uint64(n*PageSize) - 1
				if s/boundary != e/boundary {
					i += int((e/boundary*boundary - s) >> pageShift)
					continue
				}
			}
			free := true
			for k := i + n - 1; k >= i; k-- {
				if dom.used[k] {
					free = false
					i = k + 1
					break
				}
			}
			if free {
				return i
			}
		}
		return -1
	}
	h := min(dom.hint, limit)
	i := try(h, limit)
	if i < 0 {
		i = try(0, min(h+n, limit))
	}
	if i >= 0 {
		for k := i; k < i+n; k++ {
			dom.used[k] = true
		}
		dom.hint = i + n
	}
	return i
}

// loadBuf is iommu_bus_dmamap_load_something: one IOVA allocation covering
// the buffer's pages (page-rounded), entries written, then segments cut at
// maxsegsz and boundary. The sub-page offset is kept, so alignment below a
// page is the buffer's own.
func (b *iommuBackend) loadBuf(m *Map, bi int, buf []byte, segs []Segment, start int) ([]Segment, error) {
	pm := b.s.sim.pm
	off, ok := offsetIn(pm.mem, pm.base, buf)
	if !ok {
		return segs, ErrNotInSpace
	}
	t := m.tag
	dom := m.dev.dom
	pgoff := off & pageMask
	n := (pgoff + len(buf) + PageSize - 1) / PageSize
	align := max(int(t.alignment/PageSize), 1)
	limit := len(dom.pte)
	if t.lowaddr != MaxAddr {
		top := (uint64(t.lowaddr) + 1) >> pageShift
		if top <= dom.base {
			return segs, ErrNoMem
		}
		limit = int(min(top-dom.base, uint64(limit)))
	}
	dom.mu.Lock()
	i := dom.allocIOVA(n, align, t.boundary, limit)
	if i >= 0 {
		dom.stats.maps++
		dom.stats.pagesMapped += uint64(n)
	}
	dom.mu.Unlock()
	if i < 0 {
		return segs, ErrNoMem
	}
	first := off >> pageShift
	for k := range n {
		dom.pte[i+k].Store(int32(first + k + 1))
	}
	m.iova = append(m.iova, iovaRun{page: i, n: n})
	spin(b.s.cost.mapSteps)
	a := BusAddr((dom.base+uint64(i))<<pageShift) + BusAddr(pgoff)
	for done := 0; done < len(buf); {
		var step int
		segs, step = addSeg(t, segs, start, a+BusAddr(done), min(len(buf)-done, t.maxsegsz))
		if step == 0 {
			return segs, ErrTooBig
		}
		m.addPiece(a+BusAddr(done), step, bi, done, -1)
		done += step
	}
	return segs, nil
}

// release is iommu_bus_dmamap_unload: clear the entries, free the IOVAs.
func (b *iommuBackend) release(m *Map) {
	dom := m.dev.dom
	for _, r := range m.iova {
		for k := r.page; k < r.page+r.n; k++ {
			dom.pte[k].Store(0)
		}
		spin(b.s.cost.unmapSteps) // the IOTLB invalidation the unmap waits for
	}
	if len(m.iova) > 0 {
		dom.mu.Lock()
		for _, r := range m.iova {
			for k := r.page; k < r.page+r.n; k++ {
				dom.used[k] = false
			}
			dom.stats.unmaps++
			dom.stats.pagesUnmapped += uint64(r.n)
		}
		dom.mu.Unlock()
	}
	m.iova = m.iova[:0]
}

// access translates each page through the domain's page table.
func (b *iommuBackend) access(d *Device, a BusAddr, p []byte, write bool) error {
	dom := d.dom
	pm := b.s.sim.pm
	for len(p) > 0 {
		idx := uint64(a)>>pageShift - dom.base
		if idx >= uint64(len(dom.pte)) {
			b.s.fault(d, a, write, "IOVA outside the domain")
			return ErrFault
		}
		e := dom.pte[idx].Load()
		if e == 0 {
			b.s.fault(d, a, write, "no page-table entry (unmapped or stale IOVA)")
			return ErrFault
		}
		n := min(len(p), PageSize-int(a&pageMask))
		mem := pm.pageBytes(e-1, int(a&pageMask), n)
		if write {
			copy(mem, p[:n])
		} else {
			copy(p[:n], mem)
		}
		p = p[n:]
		a += BusAddr(n)
	}
	return nil
}

// allocMem takes contiguous physical pages; DMAMem loads them like any
// buffer.
func (b *iommuBackend) allocMem(t *Tag) ([]byte, memToken, error) {
	return b.s.sim.contigZ.allocContig(t.maxsize, PageSize, 0, MaxAddr, MaxAddr)
}

func (b *iommuBackend) freeMem(tok memToken) { b.s.sim.contigZ.freeContig(tok) }
