package busdma

// PagemapConfig configures a [PagemapSpace].
type PagemapConfig struct {
	// Size is the bytes to map, rounded up to the page size used; default
	// 4 MiB.
	Size int
	// SmallPages maps ordinary 4 KiB pages (mlocked) instead of hugepages,
	// for machines without reserved hugepages. Their physical addresses are
	// scattered, and the kernel may still migrate them (compaction), which
	// hugetlb pages are spared; use only for tests.
	SmallPages bool
}

// PagemapSpace is real memory with real physical addresses, for userspace
// drivers: hugepage-backed (mmap MAP_HUGETLB), locked (mlock), with each
// page's physical address read from /proc/self/pagemap. Reading PFNs needs
// CAP_SYS_ADMIN; without it, or without hugepages (vm.nr_hugepages), or off
// Linux, the constructor fails with an error wrapping [ErrUnavailable] that
// says why. A simulated device reaches the memory through the same physical
// addresses; a real device would need them programmed into it.
type PagemapSpace struct {
	name string
	physBackend
	unmap func() error
}

// NewPagemapSpace maps size bytes of hugepages (see [PagemapSpace]).
func NewPagemapSpace(size int) (*PagemapSpace, error) {
	return NewPagemapSpaceConfig(PagemapConfig{Size: size})
}

// Name returns "pagemap".
func (s *PagemapSpace) Name() string { return s.name }

// Alloc carves zeroed memory from the mapping (see [Space]).
func (s *PagemapSpace) Alloc(size, align int) ([]byte, error) {
	return allocIn(s.name, s.allocZ, size, align)
}

// AllocChunks carves chunks over physically contiguous pages (see [Space]);
// within one hugepage every run is contiguous.
func (s *PagemapSpace) AllocChunks(size, count, align int) ([][]byte, error) {
	return allocChunksIn(s.name, s.allocZ, size, count, align, true)
}

// Free returns memory from Alloc or AllocChunks (see [Space]).
func (s *PagemapSpace) Free(mem []byte) error { return freeIn(s.name, s.allocZ, mem) }

// Allocated returns the bytes held by Alloc and AllocChunks (see [Space]).
func (s *PagemapSpace) Allocated() int { return s.allocZ.allocated() }

func (s *PagemapSpace) backend() backend { return &s.physBackend }

// PhysAddr returns the physical address of b[0].
func (s *PagemapSpace) PhysAddr(b []byte) (BusAddr, bool) { return s.pm.physAddr(b) }

// Close unmaps the memory. Everything allocated from the space becomes
// invalid; close its devices first.
func (s *PagemapSpace) Close() error {
	if s.unmap == nil {
		return ErrClosed
	}
	f := s.unmap
	s.unmap = nil
	return f()
}
