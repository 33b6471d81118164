package busdma

import "math/rand/v2"

// Layout says how a [SimSpace] assigns physical addresses to its pages.
type Layout uint8

const (
	// LayoutContiguous: page i is at Base + i*PageSize.
	LayoutContiguous Layout = iota
	// LayoutScattered: runs of 1..4 physically contiguous pages placed in
	// random order over a window twice the arena's size from Base, so buffers
	// spanning pages split into several segments.
	LayoutScattered
	// LayoutHigh: contiguous from HighBase (above 4 GiB): every page of the
	// arena must bounce for a 32-bit device.
	LayoutHigh
	// LayoutMixed: scattered runs, each randomly below 4 GiB (from Base) or
	// above (from HighBase), so some pages of a buffer bounce and some do not.
	LayoutMixed
)

// SimConfig configures a [SimSpace]. The zero value works.
type SimConfig struct {
	Name   string // default "sim"
	Size   int    // bytes of the Alloc arena; default 32 MiB (rounded up to pages)
	Layout Layout
	// Base is the first physical address of the low arena window; default
	// 0x4000_0000 (1 GiB).
	Base BusAddr
	// HighBase is the first physical address used above 4 GiB (LayoutHigh,
	// LayoutMixed); default 0x1_0000_0000.
	HighBase BusAddr
	// Seed makes scattered layouts reproducible; default 1.
	Seed uint64
	// ContigSize is the bytes of the bus_dmamem_alloc zone: physically
	// contiguous pages from ContigBase (default 0x0100_0000, 16 MiB), like
	// kmem_alloc_contig below 4 GiB; default 2 MiB.
	ContigSize int
	ContigBase BusAddr
	// BouncePages is the size of the bounce zone (pages below 4 GiB at
	// BounceBase, default 0x0080_0000); default 256; negative means none.
	// FreeBSD caps a zone at MAX_BPAGES = 8192 on amd64.
	BouncePages int
	BounceBase  BusAddr
}

// SimSpace is simulated physical memory: an arena of CPU memory whose pages
// have simulated physical addresses, a contiguous zone for bus_dmamem_alloc,
// and a bounce zone below 4 GiB. Device accesses translate a physical address
// to its page with a dense table lookup.
type SimSpace struct {
	name string
	physBackend
}

// Simulated physical address defaults (see SimConfig).
const (
	defaultSimSize     = 32 << 20
	defaultSimBase     = BusAddr(0x4000_0000)
	defaultHighBase    = BusAddr(0x1_0000_0000)
	defaultContigSize  = 2 << 20
	defaultContigBase  = BusAddr(0x0100_0000)
	defaultBouncePages = 256
	defaultBounceBase  = BusAddr(0x0080_0000)
)

// NewSimSpace builds a simulated physical memory. A bad field (negative or
// too large a size, a window that is not page aligned, runs past the top of
// the bus address space or overlaps another) is a *ConfigError (ErrInvalid).
func NewSimSpace(cfg SimConfig) (*SimSpace, error) {
	if cfg.Name == "" {
		cfg.Name = "sim"
	}
	if cfg.Size == 0 {
		cfg.Size = defaultSimSize
	}
	if cfg.Base == 0 {
		cfg.Base = defaultSimBase
	}
	if cfg.HighBase == 0 {
		cfg.HighBase = defaultHighBase
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.ContigSize == 0 {
		cfg.ContigSize = defaultContigSize
	}
	if cfg.ContigBase == 0 {
		cfg.ContigBase = defaultContigBase
	}
	if cfg.BouncePages == 0 {
		cfg.BouncePages = defaultBouncePages
	}
	if cfg.BounceBase == 0 {
		cfg.BounceBase = defaultBounceBase
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	na := (cfg.Size + PageSize - 1) / PageSize
	nc := (cfg.ContigSize + PageSize - 1) / PageSize
	nb := max(cfg.BouncePages, 0)
	total := na + nc + nb
	pm := &physMem{mem: make([]byte, total*PageSize), phys: make([]BusAddr, total)}
	pm.base = addrOf(pm.mem)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6275736d61))
	switch cfg.Layout {
	case LayoutContiguous:
		for i := range na {
			pm.phys[i] = cfg.Base + BusAddr(i*PageSize)
		}
	case LayoutHigh:
		for i := range na {
			pm.phys[i] = cfg.HighBase + BusAddr(i*PageSize)
		}
	case LayoutScattered, LayoutMixed:
		scatter(pm.phys[:na], cfg, rng)
	}
	for i := range nc {
		pm.phys[na+i] = cfg.ContigBase + BusAddr(i*PageSize)
	}
	for i := range nb {
		pm.phys[na+nc+i] = cfg.BounceBase + BusAddr(i*PageSize)
	}
	if !pm.buildBanks(64) {
		return nil, badArg("SimConfig", nil, "address windows overlap")
	}
	s := &SimSpace{name: cfg.Name}
	s.pm = pm
	s.allocZ = newArena(pm, 0, na)
	s.contigZ = newArena(pm, na, nc)
	if nb > 0 {
		s.bp = newBouncePool(pm, na+nc, nb)
	}
	return s, nil
}

// maxSimBytes bounds each SimConfig size: 16 GiB (1 GiB where int has 32
// bits), far beyond any test, and small enough that sizes never overflow
// when rounded or added.
const maxSimBytes = 1 << (30 + 4*(^uint(0)>>63))

// check validates the defaulted configuration.
func (cfg *SimConfig) check() error {
	bad := func(field string, v uint64, msg string) error {
		return badArg("SimConfig."+field, v, msg)
	}
	switch {
	case cfg.Size < 0 || cfg.Size > maxSimBytes:
		return bad("Size", uint64(cfg.Size), "must be 0 (the default) to 16 GiB")
	case cfg.ContigSize < 0 || cfg.ContigSize > maxSimBytes:
		return bad("ContigSize", uint64(cfg.ContigSize), "must be 0 (the default) to 16 GiB")
	case cfg.BouncePages > maxSimBytes/PageSize:
		return bad("BouncePages", uint64(cfg.BouncePages), "more pages than 16 GiB")
	case cfg.Layout > LayoutMixed:
		return bad("Layout", uint64(cfg.Layout), "unknown layout")
	}
	na := uint64(cfg.Size+PageSize-1) / PageSize
	window := na * PageSize
	if cfg.Layout == LayoutScattered || cfg.Layout == LayoutMixed {
		window *= 2 // runs are scattered over twice the arena
	}
	for _, w := range []struct {
		name string
		base BusAddr
		size uint64
	}{
		{"Base", cfg.Base, window},
		{"HighBase", cfg.HighBase, window},
		{"ContigBase", cfg.ContigBase, uint64(cfg.ContigSize+PageSize-1) &^ pageMask},
		{"BounceBase", cfg.BounceBase, uint64(max(cfg.BouncePages, 0)) * PageSize},
	} {
		if w.base&pageMask != 0 {
			return bad(w.name, uint64(w.base), "not page aligned")
		}
		if w.size != 0 && uint64(w.base) > uint64(MaxAddr)-(w.size-1) {
			return bad(w.name, uint64(w.base), "window runs past the top of the bus address space")
		}
	}
	return nil
}

// scatter assigns the frames of runs of 1..4 pages, shuffled, over a window
// of twice as many frames (per window for LayoutMixed).
func scatter(phys []BusAddr, cfg SimConfig, rng *rand.Rand) {
	type run struct {
		base BusAddr
		n    int
	}
	var runs []run
	cut := func(base BusAddr, frames int) {
		for f := 0; f < frames; {
			n := min(1+rng.IntN(4), frames-f)
			runs = append(runs, run{base + BusAddr(f*PageSize), n})
			f += n
		}
	}
	cut(cfg.Base, 2*len(phys))
	if cfg.Layout == LayoutMixed {
		cut(cfg.HighBase, 2*len(phys))
	}
	rng.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	i := 0
	for _, r := range runs {
		for k := 0; k < r.n && i < len(phys); k++ {
			phys[i] = r.base + BusAddr(k*PageSize)
			i++
		}
		if i == len(phys) {
			return
		}
	}
}

// Name returns the configured name.
func (s *SimSpace) Name() string { return s.name }

// Alloc carves zeroed memory from the arena (see [Space]).
func (s *SimSpace) Alloc(size, align int) ([]byte, error) {
	return allocIn(s.name, s.allocZ, size, align)
}

// AllocChunks carves chunks contiguous in simulated physical memory (see
// [Space]).
func (s *SimSpace) AllocChunks(size, count, align int) ([][]byte, error) {
	return allocChunksIn(s.name, s.allocZ, size, count, align, true)
}

// Free returns memory from Alloc or AllocChunks (see [Space]).
func (s *SimSpace) Free(mem []byte) error { return freeIn(s.name, s.allocZ, mem) }

// Allocated returns the bytes held by Alloc and AllocChunks (see [Space]).
func (s *SimSpace) Allocated() int { return s.allocZ.allocated() }

func (s *SimSpace) backend() backend { return &s.physBackend }

// PhysAddr is pmap_kextract for memory of this space: the simulated physical
// address of b[0]. ok is false when b is not memory of the space.
func (s *SimSpace) PhysAddr(b []byte) (a BusAddr, ok bool) { return s.pm.physAddr(b) }

// BounceStats returns the bounce zone's counters.
func (s *SimSpace) BounceStats() BounceStats { return s.bp.stats() }

func (pm *physMem) physAddr(b []byte) (BusAddr, bool) {
	if len(b) == 0 {
		return 0, false
	}
	off, ok := offsetIn(pm.mem, pm.base, b)
	if !ok {
		return 0, false
	}
	return pm.phys[off>>pageShift] + BusAddr(off&pageMask), true
}
