package busdma

// IdentitySpace is a space where a bus address is the offset in one
// registered region, the way an AF_XDP socket addresses its UMEM
// (struct xdp_desc.addr). Alloc and AllocMem carve the region; nothing
// bounces (a load that would need a bounce page fails with ErrNoMem).
type IdentitySpace struct {
	name string
	physBackend
}

// NewIdentitySpace registers region (e.g. a UMEM mmap). The caller keeps it
// alive and must not use the parts handed out by Alloc for anything else.
func NewIdentitySpace(region []byte) (*IdentitySpace, error) {
	if len(region) == 0 {
		return nil, badArg("NewIdentitySpace(region)", nil, "empty")
	}
	np := (len(region) + PageSize - 1) / PageSize
	pm := &physMem{mem: region, base: addrOf(region), phys: make([]BusAddr, np)}
	for i := range pm.phys {
		pm.phys[i] = BusAddr(i * PageSize)
	}
	pm.buildBanks(1)
	s := &IdentitySpace{name: "identity"}
	s.pm = pm
	s.allocZ = newArena(pm, 0, np)
	s.contigZ = s.allocZ
	return s, nil
}

// Name returns "identity".
func (s *IdentitySpace) Name() string { return s.name }

// Alloc carves zeroed memory from the region (see [Space]); alignment is
// relative to the region's start, which is also the bus address.
func (s *IdentitySpace) Alloc(size, align int) ([]byte, error) {
	return allocIn(s.name, s.allocZ, size, align)
}

// AllocChunks carves chunks from the region (see [Space]); every run of the
// region is contiguous.
func (s *IdentitySpace) AllocChunks(size, count, align int) ([][]byte, error) {
	return allocChunksIn(s.name, s.allocZ, size, count, align, true)
}

// Free returns memory from Alloc or AllocChunks (see [Space]).
func (s *IdentitySpace) Free(mem []byte) error { return freeIn(s.name, s.allocZ, mem) }

// Allocated returns the bytes held by Alloc and AllocChunks (see [Space]).
func (s *IdentitySpace) Allocated() int { return s.allocZ.allocated() }

func (s *IdentitySpace) backend() backend { return &s.physBackend }

// Offset returns b's bus address: its offset in the region.
func (s *IdentitySpace) Offset(b []byte) (BusAddr, bool) { return s.pm.physAddr(b) }
