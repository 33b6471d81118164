package cpumap

import (
	"fmt"
	"strings"
)

// CPU describes one online logical CPU.
type CPU struct {
	ID      int // the CPU number (Linux cpuN, FreeBSD cpuid)
	Package int // physical_package_id (socket)
	CoreID  int // core_id as the kernel reports it; unique only within a package
	Core    int // index of its physical core, 0..NumCores-1, numbered by lowest CPU
	Thread  int // position among its core's online threads; 0 is the lowest-numbered
	L2      int // index of its L2 cache group, numbered by lowest CPU
}

// Topology is the CPU layout of one machine: online CPUs grouped into
// packages, physical cores (SMT siblings) and L2 cache groups, with the
// group tree FreeBSD's scheduler keeps in cpu_top (see Group). A Topology
// is immutable and safe for concurrent use.
type Topology struct {
	cpus     []CPU    // ascending by ID
	pos      []int    // CPU number -> index into cpus, or -1
	online   CPUSet   // all CPUs in cpus
	cores    []CPUSet // by CPU.Core: the core's online threads
	l2       []CPUSet // by CPU.L2: the CPUs sharing that L2
	l3       []CPUSet // L3 groups (unused for placement; kept for Root levels)
	smtKnown bool     // the source said which CPUs are SMT siblings
	l2Known  bool     // the source said which CPUs share L2 (else L2 is per core)
	lineSize int      // cache line size in bytes
	source   string   // "sysfs", "synthetic" or "flat"
	root     *Group
}

// NumCPUs returns the number of online CPUs.
func (t *Topology) NumCPUs() int { return len(t.cpus) }

// NumCores returns the number of physical cores.
func (t *Topology) NumCores() int { return len(t.cores) }

// NumPackages returns the number of packages (sockets).
func (t *Topology) NumPackages() int {
	seen := map[int]bool{}
	for _, c := range t.cpus {
		seen[c.Package] = true
	}
	return len(seen)
}

// CPUs returns every online CPU, ascending by ID. The slice is a copy.
func (t *Topology) CPUs() []CPU { return append([]CPU(nil), t.cpus...) }

// CPU returns the CPU with the given number, if it is online.
func (t *Topology) CPU(id int) (CPU, bool) {
	if id < 0 || id >= len(t.pos) || t.pos[id] < 0 {
		return CPU{}, false
	}
	return t.cpus[t.pos[id]], true
}

// Online returns the set of online CPUs (FreeBSD's all_cpus).
func (t *Topology) Online() CPUSet { return t.online }

// SMTKnown reports whether the source described SMT siblings. Without it a
// Topology treats every CPU as its own core.
func (t *Topology) SMTKnown() bool { return t.smtKnown }

// CacheKnown reports whether the source described L2 sharing. Without it
// every core is taken to have a private L2.
func (t *Topology) CacheKnown() bool { return t.l2Known }

// CacheLineSize returns the cache line size in bytes (coherency_line_size
// from sysfs, else the size golang.org/x/sys/cpu pads to).
func (t *Topology) CacheLineSize() int { return t.lineSize }

// Source returns where the topology came from: "sysfs", "synthetic" or
// "flat".
func (t *Topology) Source() string { return t.source }

// Siblings returns the online SMT threads of cpu's core, cpu included; the
// empty set if cpu is not online.
func (t *Topology) Siblings(cpu int) CPUSet {
	c, ok := t.CPU(cpu)
	if !ok {
		return CPUSet{}
	}
	return t.cores[c.Core]
}

// L2Group returns the CPUs sharing cpu's L2 cache, cpu included; the empty
// set if cpu is not online.
func (t *Topology) L2Group(cpu int) CPUSet {
	c, ok := t.CPU(cpu)
	if !ok {
		return CPUSet{}
	}
	return t.l2[c.L2]
}

// Threads returns every online thread of every core that has a member in
// set: the set widened from physical cores to logical CPUs.
func (t *Topology) Threads(set CPUSet) CPUSet {
	var out CPUSet
	for c := set.First(); c >= 0; c = set.Next(c) {
		out = out.Or(t.Siblings(c))
	}
	return out
}

// IntrCPUs returns the CPU set iflib takes interrupts on, FreeBSD's
// bus_get_cpus(dev, INTR_CPUS, …), and whether it holds physical cores only
// (ifc_cpus_are_physical_cores).
//
// On x86 FreeBSD builds that set in set_interrupt_apic_ids()
// (sys/x86/x86/mp_x86.c), skipping hyperthreads unless
// machdep.hyperthreading_intr_allowed=1 (default 0). The model here: with
// SMT information, the lowest-numbered thread of every core, physical=true;
// without it, every online CPU, physical=false (iflib's fallback to all_cpus
// when bus_get_cpus fails, "Unable to fetch CPU list").
func (t *Topology) IntrCPUs() (set CPUSet, physical bool) {
	if !t.smtKnown {
		return t.online, false
	}
	for _, core := range t.cores {
		set.Set(core.First())
	}
	return set, true
}

// String renders the topology as a table, one line per CPU.
func (t *Topology) String() string {
	var b strings.Builder
	intr, phys := t.IntrCPUs()
	fmt.Fprintf(&b, "topology (%s): %d CPUs, %d cores, %d packages, cache line %d bytes\n",
		t.source, t.NumCPUs(), t.NumCores(), t.NumPackages(), t.lineSize)
	smt, l2 := "known", "known"
	if !t.smtKnown {
		smt = "unknown (each CPU its own core)"
	}
	if !t.l2Known {
		l2 = "unknown (private per core)"
	}
	fmt.Fprintf(&b, "SMT siblings: %s; L2 sharing: %s\n", smt, l2)
	fmt.Fprintf(&b, "INTR_CPUS: %s (physical cores only: %v)\n", intr, phys)
	fmt.Fprintf(&b, "%4s %4s %5s %4s %4s  %-10s %-10s %s\n", "CPU", "PKG", "CORE", "THR", "L2", "SIBLINGS", "L2-GROUP", "L2-NEIGHBOR")
	for _, c := range t.cpus {
		n := t.L2Neighbor(c.ID)
		ns := "-"
		if n >= 0 {
			ns = fmt.Sprint(n)
		}
		fmt.Fprintf(&b, "%4d %4d %5d %4d %4d  %-10s %-10s %s\n", c.ID, c.Package, c.Core, c.Thread, c.L2,
			t.cores[c.Core], t.l2[c.L2], ns)
	}
	return b.String()
}
