package busdma

// physBackend loads buffers of a physically addressed space the way
// bounce_bus_dmamap_load_buffer (sys/x86/x86/busdma_bounce.c) does: walk the
// buffer page by page, bounce pages that must_bounce, and hand each chunk to
// addseg, which clips it at boundary multiples and coalesces it with the
// previous segment when the addresses are contiguous.
//
// Two deliberate differences from FreeBSD: the bounce pages a load needs are
// counted by the same walk that later uses them (FreeBSD's
// _bus_dmamap_count_pages counts by page while the load also splits at
// maxsegsz, so the two can disagree), and a bounced chunk is clipped to the
// boundary before its bounce page is taken (FreeBSD lets addseg clip it
// afterwards, leaving a bounce page whose datacount exceeds its segment).
type physBackend struct {
	pm      *physMem
	allocZ  *arena // Alloc, AllocChunks, Free
	contigZ *arena // AllocMem (the same arena as allocZ in identity and pagemap spaces)
	bp      *bouncePool
}

func (b *physBackend) attach(*Device) error { return nil }
func (b *physBackend) detach(*Device)       {}

func (b *physBackend) couldBounce(t *Tag) bool {
	return t.alignment > 1 || (t.lowaddr < b.pm.max && t.highaddr > t.lowaddr)
}

func (b *physBackend) allocNow(t *Tag) error {
	if b.bp == nil {
		return nil
	}
	if need := (t.maxsize + PageSize - 1) / PageSize; b.bp.total < need {
		return ErrNoMem
	}
	return nil
}

// bpiece is one bounced chunk: n bytes at offset off of buffer bi, staged at
// the start of bounce page page (struct bounce_page: datavaddr, datacount).
type bpiece struct {
	page int32
	bi   int32
	off  int
	n    int
}

func (b *physBackend) loadBuf(m *Map, bi int, buf []byte, segs []Segment, start int) ([]Segment, error) {
	off, ok := offsetIn(b.pm.mem, b.pm.base, buf)
	if !ok {
		return segs, ErrNotInSpace
	}
	t := m.tag
	if t.couldBounce && !m.nobounce {
		need := b.countBounce(m, off, len(buf))
		if need > 0 {
			// The zone's pages must themselves be reachable (FreeBSD sizes a
			// zone per lowaddr; this pool is one fixed zone).
			if b.bp == nil || (b.bp.top > t.lowaddr && b.bp.bottom <= t.highaddr) {
				b.bp.noteFailure()
				return segs, ErrNoMem
			}
			var err error
			if m.bpages, err = b.bp.take(m.bpages, need, t.alignment, b.pm); err != nil {
				return segs, err
			}
		}
	}
	var n int
	segs, n = b.walkSegs(m, bi, off, len(buf), segs, start)
	if n != len(buf) {
		return segs, ErrTooBig
	}
	return segs, nil
}

// countBounce counts the bounce pages a load of [off, off+n) needs
// (_bus_dmamap_count_pages), taking the same steps as walkSegs.
func (b *physBackend) countBounce(m *Map, off, n int) int {
	t := m.tag
	count := 0
	for n > 0 {
		pa := b.pm.phys[off>>pageShift] + BusAddr(off&pageMask)
		maxsg := min(n, t.maxsegsz)
		sg := PageSize - int(pa&pageMask)
		if t.mustBounce(pa) {
			sg = b.bounceLen(t, sg, maxsg)
			count++
		} else {
			sg = min(sg, maxsg)
			if !t.boundOK(pa, sg) {
				sg = int(t.boundary - uint64(pa)&(t.boundary-1))
			}
		}
		off += sg
		n -= sg
	}
	return count
}

// bounceLen is the length of a bounced chunk: the rest of the page rounded up
// to the alignment (roundup2(sgsize, alignment)), at most maxsg, and clipped
// to the boundary (the bounce page starts page aligned).
func (b *physBackend) bounceLen(t *Tag, sg, maxsg int) int {
	sg = (sg + int(t.alignment) - 1) &^ (int(t.alignment) - 1)
	sg = min(sg, maxsg, PageSize)
	if t.boundary != 0 && uint64(sg) > t.boundary {
		sg = int(t.boundary)
	}
	return sg
}

// walkSegs is the loading loop; it returns the bytes mapped (less than n
// when nsegments ran out).
func (b *physBackend) walkSegs(m *Map, bi, off, n int, segs []Segment, start int) ([]Segment, int) {
	t := m.tag
	done := 0
	for done < n {
		pa := b.pm.phys[off>>pageShift] + BusAddr(off&pageMask)
		maxsg := min(n-done, t.maxsegsz)
		sg := PageSize - int(pa&pageMask)
		bounce := -1
		if t.couldBounce && !m.nobounce && t.mustBounce(pa) {
			sg = b.bounceLen(t, sg, maxsg)
			bounce = len(m.bounced)
			pg := m.bpages[bounce] // add_bounce_page
			m.bounced = append(m.bounced, bpiece{page: pg, bi: int32(bi), off: done, n: sg})
			pa = b.pm.phys[pg]
		} else {
			sg = min(sg, maxsg)
		}
		var step int
		segs, step = addSeg(t, segs, start, pa, sg)
		if step == 0 {
			break
		}
		m.addPiece(pa, step, bi, done, bounce)
		off += step
		done += step
	}
	return segs, done
}

// addSeg is _bus_dmamap_addseg: clip [a, a+sg) at the next boundary multiple,
// then grow the last segment of this load or append a new one. It returns 0
// when nsegments segments are already in use.
func addSeg(t *Tag, segs []Segment, start int, a BusAddr, sg int) ([]Segment, int) {
	if !t.boundOK(a, sg) {
		sg = int(t.boundary - uint64(a)&(t.boundary-1))
	}
	if k := len(segs) - 1; k >= start {
		last := &segs[k]
		if a == last.Addr+BusAddr(last.Len) && last.Len+sg <= t.maxsegsz && t.boundOK(last.Addr, last.Len+sg) {
			last.Len += sg
			return segs, sg
		}
	}
	if len(segs)-start >= t.nsegments {
		return segs, 0
	}
	return append(segs, Segment{Addr: a, Len: sg}), sg
}

func (b *physBackend) release(m *Map) {
	if len(m.bpages) > 0 {
		b.bp.give(m.bpages)
	}
	m.bpages = m.bpages[:0]
	m.bounced = m.bounced[:0]
}

// sync is bounce_bus_dmamap_sync: PREWRITE copies the client data into the
// bounce pages, POSTREAD copies it back out. PREREAD and POSTWRITE do
// nothing on a coherent machine.
func (b *physBackend) sync(m *Map, op SyncOp) {
	if len(m.bounced) == 0 {
		return
	}
	if op&PreWrite != 0 {
		for _, p := range m.bounced {
			copy(b.pm.pageBytes(p.page, 0, p.n), m.bufs[p.bi][p.off:p.off+p.n])
		}
		b.bp.countBounce()
	}
	if op&PostRead != 0 {
		for _, p := range m.bounced {
			copy(m.bufs[p.bi][p.off:p.off+p.n], b.pm.pageBytes(p.page, 0, p.n))
		}
		b.bp.countBounce()
	}
}

func (b *physBackend) noteBounce() { b.bp.countBounce() }

func (b *physBackend) bounceBytes(p bpiece) []byte { return b.pm.pageBytes(p.page, 0, p.n) }

func (b *physBackend) access(_ *Device, a BusAddr, p []byte, write bool) error {
	return b.pm.access(a, p, write)
}

func (b *physBackend) allocMem(t *Tag) ([]byte, memToken, error) {
	return b.contigZ.allocContig(t.maxsize, max(t.alignment, PageSize), t.boundary, t.lowaddr, t.highaddr)
}

func (b *physBackend) freeMem(tok memToken) { b.contigZ.freeContig(tok) }
