package busdma

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// IOMMUConfig configures an [IOMMUSpace]. The zero value works.
type IOMMUConfig struct {
	Name string    // default "iommu"
	Sim  SimConfig // the physical memory behind the IOMMU
	// IOVABase is the lowest IOVA handed out; default 0x10_0000 (1 MiB),
	// keeping IOVA 0 unmapped so a zeroed descriptor faults.
	IOVABase BusAddr
	// IOVASize is the IOVA space of each domain in bytes; default 256 MiB.
	IOVASize int
	// MapTime and UnmapTime are CPU time spent, busy-waiting, per iommu_map
	// (one per loaded buffer) and per iommu_unmap (one per buffer at
	// unload), on top of the model's own IOVA allocation and page-table
	// writes: the hardware work a real IOMMU makes the CPU wait for, chiefly
	// the IOTLB invalidation of a strict-mode unmap. StrictUnmapTime (700 ns)
	// is a suggested UnmapTime, an order of magnitude from the literature
	// (see its doc for how firm); 0, the default, adds nothing. The spin loop is calibrated once per process,
	// so the cost is CPU time, not wall time: a preempted spin takes longer
	// but burns no more.
	MapTime, UnmapTime time.Duration
	// MaxFaults bounds the fault log kept by Faults (the counter keeps
	// counting); default 1024.
	MaxFaults int
}

// IOMMUSpace models DMA remapping (Intel VT-d "DMAR",
// sys/dev/iommu/busdma_iommu.c): every device gets its own domain with an
// IOVA allocator (iommu_gas) and a page table. A load allocates page-rounded
// IOVA space per buffer and writes page-table entries; an unload clears them
// at once (amd64's synchronous iommu_domain_unload), so any later device
// access to those IOVAs is a recorded fault. Sync is empty: nothing bounces.
type IOMMUSpace struct {
	name string
	sim  *SimSpace
	cfg  IOMMUConfig
	cost iommuCost

	nfaults atomic.Uint64 // written by device goroutines

	mu      sync.Mutex
	faults  []Fault                   // guarded by mu
	doms    map[*iommuDomain]struct{} // guarded by mu: the attached devices' domains
	retired domainStats               // guarded by mu: counters of detached domains
}

// Fault is one recorded DMAR fault.
type Fault struct {
	Device string
	Addr   BusAddr
	Write  bool
	Reason string
}

func (f Fault) String() string {
	dir := "read"
	if f.Write {
		dir = "write"
	}
	return fmt.Sprintf("DMAR fault: %s %s at IOVA %#x: %s", f.Device, dir, uint64(f.Addr), f.Reason)
}

// IOMMUStats counts the IOMMU's work.
type IOMMUStats struct {
	Maps          uint64 // iommu_map calls (one per loaded buffer)
	Unmaps        uint64 // iommu_unmap calls
	PagesMapped   uint64 // page-table entries written
	PagesUnmapped uint64 // page-table entries cleared
	Faults        uint64 // device accesses faulted
}

// NewIOMMUSpace builds an IOMMU over a new SimSpace.
func NewIOMMUSpace(cfg IOMMUConfig) (*IOMMUSpace, error) {
	if cfg.Name == "" {
		cfg.Name = "iommu"
	}
	if cfg.IOVABase == 0 {
		cfg.IOVABase = 0x10_0000
	}
	if cfg.IOVASize == 0 {
		cfg.IOVASize = 256 << 20
	}
	if cfg.MaxFaults == 0 {
		cfg.MaxFaults = 1024
	}
	bad := func(field string, v uint64, msg string) error {
		return badArg("IOMMUConfig."+field, v, msg)
	}
	switch {
	case cfg.IOVABase&pageMask != 0:
		return nil, bad("IOVABase", uint64(cfg.IOVABase), "not page aligned")
	case cfg.IOVASize < PageSize || uint64(cfg.IOVASize) > 1<<40:
		return nil, bad("IOVASize", uint64(cfg.IOVASize), "must be a page to 1 TiB")
	case uint64(cfg.IOVABase) > uint64(MaxAddr)-uint64(cfg.IOVASize-1):
		return nil, bad("IOVABase", uint64(cfg.IOVABase), "the IOVA space runs past the top of the bus address space")
	case cfg.MapTime < 0 || cfg.MapTime > time.Second:
		return nil, bad("MapTime", uint64(cfg.MapTime), "must be 0 to a second per operation")
	case cfg.UnmapTime < 0 || cfg.UnmapTime > time.Second:
		return nil, bad("UnmapTime", uint64(cfg.UnmapTime), "must be 0 to a second per operation")
	case cfg.MaxFaults < 0:
		return nil, bad("MaxFaults", uint64(cfg.MaxFaults), "negative")
	}
	if cfg.Sim.Name == "" {
		cfg.Sim.Name = cfg.Name + ".phys"
	}
	sim, err := NewSimSpace(cfg.Sim)
	if err != nil {
		return nil, err
	}
	return &IOMMUSpace{name: cfg.Name, sim: sim, cfg: cfg, cost: newIOMMUCost(cfg), doms: map[*iommuDomain]struct{}{}}, nil
}

// Name returns the configured name.
func (s *IOMMUSpace) Name() string { return s.name }

// Alloc carves memory from the physical arena behind the IOMMU (see
// [Space]).
func (s *IOMMUSpace) Alloc(size, align int) ([]byte, error) {
	return allocIn(s.name, s.sim.allocZ, size, align)
}

// AllocChunks carves chunks from the physical arena behind the IOMMU (see
// [Space]). Chunks larger than a page need not be physically contiguous: a
// load maps the whole chunk into one IOVA run.
func (s *IOMMUSpace) AllocChunks(size, count, align int) ([][]byte, error) {
	return allocChunksIn(s.name, s.sim.allocZ, size, count, align, false)
}

// Free returns memory from Alloc or AllocChunks (see [Space]).
func (s *IOMMUSpace) Free(mem []byte) error { return freeIn(s.name, s.sim.allocZ, mem) }

// Allocated returns the bytes held by Alloc and AllocChunks (see [Space]).
func (s *IOMMUSpace) Allocated() int { return s.sim.allocZ.allocated() }

// Phys returns the physical memory behind the IOMMU.
func (s *IOMMUSpace) Phys() *SimSpace { return s.sim }

func (s *IOMMUSpace) backend() backend { return &iommuBackend{s} }

// Stats returns the counters, summed over every device's domain. It takes
// each domain's lock, so it is exact but not meant for a hot loop.
func (s *IOMMUSpace) Stats() IOMMUStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.retired
	for dom := range s.doms {
		dom.mu.Lock()
		sum.add(dom.stats)
		dom.mu.Unlock()
	}
	return IOMMUStats{Maps: sum.maps, Unmaps: sum.unmaps, PagesMapped: sum.pagesMapped,
		PagesUnmapped: sum.pagesUnmapped, Faults: s.nfaults.Load()}
}

// Faults returns a copy of the fault log.
func (s *IOMMUSpace) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fault(nil), s.faults...)
}

func (s *IOMMUSpace) fault(d *Device, a BusAddr, write bool, reason string) {
	s.nfaults.Add(1)
	f := Fault{Device: d.name, Addr: a, Write: write, Reason: reason}
	s.mu.Lock()
	if len(s.faults) < s.cfg.MaxFaults {
		s.faults = append(s.faults, f)
	}
	s.mu.Unlock()
	d.report(KindIOMMUFault, nil, "%s", f)
}
