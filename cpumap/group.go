package cpumap

// ShareLevel is the deepest cache level all CPUs of a Group share, FreeBSD's
// cg_level values CG_SHARE_NONE, CG_SHARE_L1, CG_SHARE_L2, CG_SHARE_L3
// (sys/sys/smp.h).
type ShareLevel int

// Share levels, in FreeBSD's numbering.
const (
	ShareNone ShareLevel = 0 // CG_SHARE_NONE: nothing shared (e.g. separate packages)
	ShareL1   ShareLevel = 1 // CG_SHARE_L1: SMT threads of one core
	ShareL2   ShareLevel = 2 // CG_SHARE_L2
	ShareL3   ShareLevel = 3 // CG_SHARE_L3
)

// Group is one node of the CPU topology tree, FreeBSD's struct cpu_group
// (sys/sys/smp.h) as reached through cpu_top.
type Group struct {
	Mask     CPUSet     // cg_mask: the CPUs in this group
	Count    int        // cg_count: Mask.Count()
	Level    ShareLevel // cg_level: the deepest cache the members share
	Children []*Group   // cg_child[0..cg_children-1]; nil for a leaf
}

// Root returns the top of the group tree, FreeBSD's cpu_top.
func (t *Topology) Root() *Group { return t.root }

// buildGroups builds the tree the way FreeBSD's x86 topology code shapes
// cpu_top (x86topo_add_sched_group, sys/x86/x86/mp_x86.c): levels are
// package, L3, L2 and core (SMT); a level that does not split its parent is
// skipped, and a group whose split would give single-CPU children only
// becomes a leaf.
func (t *Topology) buildGroups(raws []rawCPU, l3Idx map[CPUSet]int) *Group {
	keys := []func(c CPU) int{
		func(c CPU) int { return c.Package },
		func(c CPU) int { return l3Idx[raws[t.pos[c.ID]].l3] },
		func(c CPU) int { return c.L2 },
		func(c CPU) int { return c.Core },
	}
	return t.group(t.online, keys)
}

func (t *Topology) group(mask CPUSet, keys []func(CPU) int) *Group {
	g := &Group{Mask: mask, Count: mask.Count(), Level: t.shareLevel(mask)}
	for k, key := range keys {
		var parts []CPUSet
		index := map[int]int{}
		for c := mask.First(); c >= 0; c = mask.Next(c) {
			v := key(t.cpus[t.pos[c]])
			i, ok := index[v]
			if !ok {
				i = len(parts)
				index[v] = i
				parts = append(parts, CPUSet{})
			}
			parts[i].Set(c)
		}
		if len(parts) == 1 {
			continue
		}
		if len(parts) == g.Count {
			break
		}
		for _, p := range parts {
			g.Children = append(g.Children, t.group(p, keys[k+1:]))
		}
		break
	}
	return g
}

// shareLevel returns the deepest cache level every CPU of mask shares.
func (t *Topology) shareLevel(mask CPUSet) ShareLevel {
	first, _ := t.CPU(mask.First())
	switch {
	case mask.SubsetOf(t.cores[first.Core]):
		return ShareL1
	case mask.SubsetOf(t.l2[first.L2]):
		return ShareL2
	}
	for _, g := range t.l3 {
		if g.Has(first.ID) && mask.SubsetOf(g) {
			return ShareL3
		}
	}
	return ShareNone
}

// L2Neighbor returns a CPU that shares an L2 cache with cpu, or -1 if there
// is none: FreeBSD's find_l2_neighbor (sys/net/iflib.c; in newer trees
// sched_find_l2_neighbor). It descends cpu_top to the smallest group holding
// cpu, giving up if that group is cpu alone; the group must share L2 or
// closer (not L3, not nothing); the answer is its lowest-numbered member
// other than cpu. With SMT that is the sibling thread; where cores share L2
// in clusters it is another core of the cluster. Like FreeBSD it always
// returns the same neighbour for a CPU with several.
func (t *Topology) L2Neighbor(cpu int) int {
	g, alone := t.smallestGroup(cpu)
	if g == nil || alone || !g.sharesL2() {
		return -1
	}
	for c := g.Mask.First(); c >= 0; c = g.Mask.Next(c) {
		if c != cpu {
			return c
		}
	}
	return -1
}

// smallestGroup descends cpu_top towards cpu as find_l2_neighbor and
// find_close_core do (find_child_with_core): from the root into the child
// holding cpu while that child has more than one CPU. It returns the group
// where the descent stopped, nil if cpu is not in the tree, and alone true
// if it stopped because the next child was cpu alone (find_l2_neighbor's
// "no L2 neighbour"; find_close_core keeps the group instead).
func (t *Topology) smallestGroup(cpu int) (g *Group, alone bool) {
	g = t.root
	if g == nil || !g.Mask.Has(cpu) {
		return nil, false
	}
	for {
		var next *Group
		for _, ch := range g.Children {
			if ch.Mask.Has(cpu) {
				next = ch
				break
			}
		}
		if next == nil {
			return g, false
		}
		if next.Count <= 1 {
			return g, true
		}
		g = next
	}
}

// sharesL2 reports whether g's members share an L2 cache or closer
// (cg_level CG_SHARE_L1 or CG_SHARE_L2).
func (g *Group) sharesL2() bool { return g.Level != ShareNone && g.Level <= ShareL2 }
