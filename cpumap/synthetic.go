package cpumap

import "fmt"

// SiblingNumbering says how CPU numbers map onto SMT threads.
type SiblingNumbering int

const (
	// Adjacent numbers a core's threads consecutively, as FreeBSD does on
	// x86: core k is CPUs {kT, kT+1, …} for T threads per core (0,1 / 2,3).
	Adjacent SiblingNumbering = iota
	// Interleaved numbers the first thread of every core first, then the
	// second thread of every core, as Linux commonly does on x86: with N
	// cores, core k is CPUs {k, k+N, …} (0,4 / 1,5 on 4 cores).
	Interleaved
)

func (n SiblingNumbering) String() string {
	switch n {
	case Adjacent:
		return "adjacent"
	case Interleaved:
		return "interleaved"
	}
	return fmt.Sprintf("SiblingNumbering(%d)", int(n))
}

// SyntheticConfig describes a machine for Synthetic. Counts must be at
// least 1 and the machine at most MaxCPUs.
type SyntheticConfig struct {
	Packages        int // sockets
	CoresPerPackage int // physical cores in each package
	ThreadsPerCore  int // SMT threads per core (1 = no SMT)
	// L2CoresPerGroup is how many cores of a package share one L2; 0 or 1
	// means a private L2 per core. It must divide CoresPerPackage.
	L2CoresPerGroup  int
	SiblingNumbering SiblingNumbering
	// CacheLineSize in bytes: 0 means 64, else a power of two from
	// MinCacheLineSize to MaxCacheLineSize.
	CacheLineSize int
}

// Cache line sizes a Topology accepts. Real CPUs have 32 (older ARM), 64
// (x86, most ARM cores), 128 (Apple, POWER, FreeBSD's arm64
// CACHE_LINE_SIZE) or 256 (IBM z) byte lines; the range leaves room on both
// sides and refuses nonsense such as 3 or 2^40.
const (
	MinCacheLineSize = 16
	MaxCacheLineSize = 4096
)

func validLineSize(n int) bool {
	return n >= MinCacheLineSize && n <= MaxCacheLineSize && n&(n-1) == 0
}

// Synthetic builds a topology from counts: Packages × CoresPerPackage ×
// ThreadsPerCore CPUs, all online, cores of a package numbered before the
// next package's, an L3 per package, and L2 per core or per cluster of
// L2CoresPerGroup cores. Errors match ErrBadSynthetic.
func Synthetic(cfg SyntheticConfig) (*Topology, error) {
	p, c, th, l2 := cfg.Packages, cfg.CoresPerPackage, cfg.ThreadsPerCore, cfg.L2CoresPerGroup
	if l2 == 0 {
		l2 = 1
	}
	switch {
	case p < 1 || c < 1 || th < 1 || l2 < 1:
		return nil, fmt.Errorf("%w: counts must be >= 1 (%+v)", ErrBadSynthetic, cfg)
	case p*c*th > MaxCPUs || p > MaxCPUs || c > MaxCPUs || th > MaxCPUs:
		return nil, fmt.Errorf("%w: more than %d CPUs", ErrBadSynthetic, MaxCPUs)
	case c%l2 != 0:
		return nil, fmt.Errorf("%w: L2CoresPerGroup %d does not divide CoresPerPackage %d", ErrBadSynthetic, l2, c)
	case cfg.SiblingNumbering != Adjacent && cfg.SiblingNumbering != Interleaved:
		return nil, fmt.Errorf("%w: %v", ErrBadSynthetic, cfg.SiblingNumbering)
	case cfg.CacheLineSize != 0 && !validLineSize(cfg.CacheLineSize):
		return nil, fmt.Errorf("%w: %w: %d", ErrBadSynthetic, ErrCacheLineSize, cfg.CacheLineSize)
	}
	ncores := p * c
	cpuOf := func(core, thread int) int {
		if cfg.SiblingNumbering == Interleaved {
			return thread*ncores + core
		}
		return core*th + thread
	}
	coreSet := func(core int) CPUSet {
		var s CPUSet
		for t := 0; t < th; t++ {
			s.Set(cpuOf(core, t))
		}
		return s
	}
	raws := make([]rawCPU, 0, ncores*th)
	for core := 0; core < ncores; core++ {
		pkg := core / c
		var l2set, l3set CPUSet
		first := core - core%l2
		for k := first; k < first+l2; k++ {
			l2set = l2set.Or(coreSet(k))
		}
		for k := pkg * c; k < (pkg+1)*c; k++ {
			l3set = l3set.Or(coreSet(k))
		}
		for t := 0; t < th; t++ {
			raws = append(raws, rawCPU{id: cpuOf(core, t), pkg: pkg, coreID: core % c,
				siblings: coreSet(core), l2: l2set, l3: l3set})
		}
	}
	line := cfg.CacheLineSize
	if line == 0 {
		line = 64
	}
	return newTopology(raws, line, "synthetic")
}

// Flat builds a topology of n CPUs numbered 0..n-1 with no SMT or cache
// information: what Discover returns where it cannot read the layout. Its
// IntrCPUs are all CPUs and not physical, as in iflib when
// bus_get_cpus(INTR_CPUS) fails.
func Flat(n int) (*Topology, error) {
	if n < 1 || n > MaxCPUs {
		return nil, fmt.Errorf("%w: %d CPUs", ErrBadSynthetic, n)
	}
	raws := make([]rawCPU, n)
	for i := range raws {
		raws[i] = rawCPU{id: i, coreID: i}
	}
	return newTopology(raws, defaultLineSize, "flat")
}
