//go:build linux

package busdma

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// hugePageSize is the default x86/arm64 (4 KiB granule) hugetlb size.
const hugePageSize = 2 << 20

// NewPagemapSpaceConfig maps, locks and translates memory (see
// [PagemapSpace]).
func NewPagemapSpaceConfig(cfg PagemapConfig) (*PagemapSpace, error) {
	if cfg.Size < 0 || uint64(cfg.Size) > 1<<40 {
		return nil, badArg("PagemapConfig.Size", cfg.Size, "must be 0 (the default) to 1 TiB")
	}
	if cfg.Size == 0 {
		cfg.Size = 4 << 20
	}
	unit, flags := hugePageSize, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE|unix.MAP_HUGETLB
	if cfg.SmallPages {
		unit, flags = PageSize, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE
	}
	size := (cfg.Size + unit - 1) / unit * unit
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap of %d bytes (hugepages: %v): %v (reserve hugepages with vm.nr_hugepages)",
			ErrUnavailable, size, !cfg.SmallPages, err)
	}
	fail := func(e error) (*PagemapSpace, error) {
		_ = unix.Munmap(mem)
		return nil, e
	}
	if err := unix.Mlock(mem); err != nil {
		return fail(fmt.Errorf("%w: mlock: %v (RLIMIT_MEMLOCK or CAP_IPC_LOCK)", ErrUnavailable, err))
	}
	for i := 0; i < len(mem); i += PageSize {
		mem[i] = 0 // fault every page in before asking for its frame
	}
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	defer f.Close()
	np := len(mem) / PageSize
	raw := make([]byte, 8*np)
	if _, err := f.ReadAt(raw, int64(addrOf(mem)/PageSize*8)); err != nil {
		return fail(fmt.Errorf("%w: reading pagemap: %v", ErrUnavailable, err))
	}
	pm := &physMem{mem: mem, base: addrOf(mem), phys: make([]BusAddr, np)}
	for i := range np {
		e := binary.LittleEndian.Uint64(raw[8*i:])
		pfn := e & (1<<55 - 1)
		if e&(1<<63) == 0 {
			return fail(fmt.Errorf("%w: page %d not present after mlock", ErrUnavailable, i))
		}
		if pfn == 0 {
			return fail(fmt.Errorf("%w: /proc/self/pagemap hides PFNs (needs CAP_SYS_ADMIN)", ErrUnavailable))
		}
		pm.phys[i] = BusAddr(pfn << pageShift)
	}
	if !pm.buildBanks(64) {
		return fail(fmt.Errorf("%w: pagemap reported one frame twice", ErrUnavailable))
	}
	s := &PagemapSpace{name: "pagemap", unmap: func() error { return unix.Munmap(mem) }}
	s.pm = pm
	s.allocZ = newArena(pm, 0, np)
	s.contigZ = s.allocZ
	return s, nil
}
