package cpumap

import (
	"errors"
	"fmt"
	"slices"
)

// rawCPU is one CPU as a source describes it, before validation.
type rawCPU struct {
	id       int
	pkg      int
	coreID   int
	siblings CPUSet // thread_siblings_list; empty if unknown
	l2       CPUSet // shared_cpu_list of its L2; empty if unknown
	l3       CPUSet // shared_cpu_list of its L3; empty if unknown
	sibFile  string // the file siblings came from, for errors
}

// layoutError says which CPU's description contradicts the others, and in
// which file (relative to cpuN/) it came from.
type layoutError struct {
	cpu  int
	file string
	msg  string
}

func (e *layoutError) Error() string { return fmt.Sprintf("cpu%d %s: %s", e.cpu, e.file, e.msg) }

var errDuplicateCPU = errors.New("duplicate CPU")

// Files the layout checks name in their errors; sysfs.go reads them.
const (
	fileSiblings = "topology/thread_siblings_list"
	fileL2       = "cache (level 2) shared_cpu_list"
	fileL3       = "cache (level 3) shared_cpu_list"
	filePackage  = "topology/physical_package_id"
)

// newTopology validates raw descriptions and builds the Topology and its
// group tree. Sibling and cache sets are clipped to the online CPUs (sysfs
// lists offline siblings too); every CPU in a group must describe the same
// group, each group must contain its CPU, an L2 group must contain whole
// cores, and SMT siblings must share a package.
func newTopology(raws []rawCPU, lineSize int, source string) (*Topology, error) {
	if len(raws) == 0 {
		return nil, ErrEmptyCPUSet
	}
	raws = slices.Clone(raws)
	slices.SortFunc(raws, func(a, b rawCPU) int { return a.id - b.id })
	t := &Topology{lineSize: lineSize, source: source}
	for i, r := range raws {
		if r.id < 0 || r.id >= MaxCPUs {
			return nil, &layoutError{r.id, "online", ErrCPURange.Error()}
		}
		if i > 0 && raws[i-1].id == r.id {
			return nil, &layoutError{r.id, "online", errDuplicateCPU.Error()}
		}
		t.online.Set(r.id)
	}
	t.pos = make([]int, raws[len(raws)-1].id+1)
	for i := range t.pos {
		t.pos[i] = -1
	}
	for i, r := range raws {
		t.pos[r.id] = i
	}
	var err error
	if t.smtKnown, err = checkGroups(raws, t.online, "", func(r *rawCPU) *CPUSet { return &r.siblings }); err != nil {
		return nil, err
	}
	if t.l2Known, err = checkGroups(raws, t.online, fileL2, func(r *rawCPU) *CPUSet { return &r.l2 }); err != nil {
		return nil, err
	}
	var l3Known bool
	if l3Known, err = checkGroups(raws, t.online, fileL3, func(r *rawCPU) *CPUSet { return &r.l3 }); err != nil {
		return nil, err
	}
	for i := range raws {
		r := &raws[i]
		if !t.smtKnown {
			r.siblings = CPUSetOf(r.id)
		}
		if !t.l2Known {
			r.l2 = r.siblings
		}
		if !l3Known {
			r.l3 = r.l2
		}
		if !r.siblings.SubsetOf(r.l2) {
			return nil, &layoutError{r.id, fileL2, fmt.Sprintf("L2 group %s splits core %s", r.l2, r.siblings)}
		}
		if !r.l2.SubsetOf(r.l3) {
			return nil, &layoutError{r.id, fileL3, fmt.Sprintf("L3 group %s splits L2 group %s", r.l3, r.l2)}
		}
		for s := r.siblings.First(); s >= 0; s = r.siblings.Next(s) {
			if raws[t.pos[s]].pkg != r.pkg {
				return nil, &layoutError{r.id, filePackage, fmt.Sprintf("SMT sibling cpu%d is in package %d, not %d", s, raws[t.pos[s]].pkg, r.pkg)}
			}
		}
	}
	coreIdx := map[CPUSet]int{}
	l2Idx := map[CPUSet]int{}
	l3Idx := map[CPUSet]int{}
	for _, r := range raws {
		if _, ok := coreIdx[r.siblings]; !ok {
			coreIdx[r.siblings] = len(t.cores)
			t.cores = append(t.cores, r.siblings)
		}
		if _, ok := l2Idx[r.l2]; !ok {
			l2Idx[r.l2] = len(t.l2)
			t.l2 = append(t.l2, r.l2)
		}
		if _, ok := l3Idx[r.l3]; !ok {
			l3Idx[r.l3] = len(t.l3)
			t.l3 = append(t.l3, r.l3)
		}
		thread := 0
		for s := r.siblings.First(); s != r.id; s = r.siblings.Next(s) {
			thread++
		}
		t.cpus = append(t.cpus, CPU{ID: r.id, Package: r.pkg, CoreID: r.coreID,
			Core: coreIdx[r.siblings], Thread: thread, L2: l2Idx[r.l2]})
	}
	t.root = t.buildGroups(raws, l3Idx)
	return t, nil
}

// checkGroups clips each CPU's group (selected by field) to the online CPUs
// and checks that the groups partition them. It reports whether the source
// described the groups at all: all CPUs or none must.
func checkGroups(raws []rawCPU, online CPUSet, file string, field func(*rawCPU) *CPUSet) (bool, error) {
	name := func(r *rawCPU) string {
		if file == "" { // siblings: core_cpus_list or thread_siblings_list
			if r.sibFile != "" {
				return r.sibFile
			}
			return fileSiblings
		}
		return file
	}
	known := 0
	for i := range raws {
		if !field(&raws[i]).Empty() {
			known++
		}
	}
	if known == 0 {
		return false, nil
	}
	for i := range raws {
		r := &raws[i]
		g := field(r)
		if g.Empty() {
			return false, &layoutError{r.id, name(r), "missing while other CPUs have it"}
		}
		*g = g.And(online)
		if !g.Has(r.id) {
			return false, &layoutError{r.id, name(r), fmt.Sprintf("group %s does not contain the CPU itself", *g)}
		}
	}
	byID := map[int]CPUSet{}
	for i := range raws {
		byID[raws[i].id] = *field(&raws[i])
	}
	for i := range raws {
		g := *field(&raws[i])
		for m := g.First(); m >= 0; m = g.Next(m) {
			if byID[m] != g {
				return false, &layoutError{raws[i].id, name(&raws[i]), fmt.Sprintf("group %s disagrees with cpu%d's group %s", g, m, byID[m])}
			}
		}
	}
	return true, nil
}
