package busdma

// DMAMem is struct iflib_dma_info: memory from bus_dmamem_alloc, loaded,
// with its single bus address. Used for descriptor rings.
type DMAMem struct {
	Vaddr []byte  // idi_vaddr: CPU view, len = the tag's maxsize
	Paddr BusAddr // idi_paddr: the bus address of Vaddr[0]
	Map   *Map    // idi_map
	Tag   *Tag    // idi_tag
	tok   memToken
	freed bool
}

// AllocMem is bus_dmamem_alloc(BUS_DMA_NOWAIT|BUS_DMA_COHERENT|BUS_DMA_ZERO)
// followed by bus_dmamap_load, as iflib_dma_alloc_align does: MaxSize zeroed
// bytes, aligned to the tag's alignment (at least a page), in one segment
// that crosses no boundary and lies outside the exclusion window (so it never
// bounces). ErrNoMem when the space has no such memory left; a *ConfigError
// (ErrInvalid) naming maxsegsz or boundary when the tag cannot hold MaxSize
// in one segment at all.
func (t *Tag) AllocMem() (*DMAMem, error) {
	if t.dev.closed.Load() {
		return nil, ErrClosed
	}
	switch {
	case t.maxsize <= 0:
		return nil, badArg("TagConfig.MaxSize", t.maxsize, "must be positive")
	case t.maxsegsz < t.maxsize:
		return nil, badArg("TagConfig.MaxSegSize", t.maxsegsz, "AllocMem needs maxsize "+itoa(uint64(t.maxsize))+" in one segment")
	case t.boundary != 0 && t.boundary < uint64(t.maxsize):
		return nil, badArg("TagConfig.Boundary", t.boundary, "AllocMem needs maxsize "+itoa(uint64(t.maxsize))+" in one segment")
	}
	mem, tok, err := t.dev.be.allocMem(t)
	if err != nil {
		return nil, err
	}
	m, err := t.CreateMap()
	if err != nil {
		t.dev.be.freeMem(tok)
		return nil, err
	}
	m.nobounce = true // the memory already satisfies the tag
	var seg [1]Segment
	segs, err := m.Load(mem, seg[:0])
	if err == nil && len(segs) != 1 {
		_ = m.Unload()
		err = ErrTooBig
	}
	if err != nil {
		_ = m.Destroy()
		t.dev.be.freeMem(tok)
		return nil, err
	}
	return &DMAMem{Vaddr: mem, Paddr: segs[0].Addr, Map: m, Tag: t, tok: tok}, nil
}

// Sync is bus_dmamap_sync on the memory's map.
func (dm *DMAMem) Sync(op SyncOp) { dm.Map.Sync(op) }

// Free is iflib_dma_free without the sync: unload, bus_dmamem_free. Sync
// POSTREAD|POSTWRITE first when the device wrote into it. A second Free is
// ErrInvalid.
func (dm *DMAMem) Free() error {
	if dm.freed {
		return errDMAMemFreed
	}
	dm.freed = true
	if dm.Map.Loaded() {
		if err := dm.Map.Unload(); err != nil {
			return err
		}
	}
	_ = dm.Map.Destroy()
	dm.Tag.dev.be.freeMem(dm.tok)
	dm.Vaddr = nil
	return nil
}
