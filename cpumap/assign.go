package cpumap

// assigner computes queue CPUs for one device: iflib's cpuid_advance and
// get_cpuid_for_queue over one CPU set (ctx->ifc_cpus).
type assigner struct {
	topo        *Topology
	set         CPUSet // ifc_cpus; never empty
	first, last int    // CPU_FFS − 1, CPU_FLS − 1
	count       int    // CPU_COUNT
	physical    bool   // ifc_cpus_are_physical_cores
	nrx, ntx    int    // isc_nrxqsets, isc_ntxqsets
	policy      Policy
	behavior    Behavior
}

func newAssigner(t *Topology, set CPUSet, physical bool, nrx, ntx int, p Policy, b Behavior) *assigner {
	return &assigner{topo: t, set: set, first: set.First(), last: set.Last(), count: set.Count(),
		physical: physical, nrx: nrx, ntx: ntx, policy: p, behavior: b}
}

// advance is cpuid_advance: from cpu (a member of the set) step to the next
// member n mod CPU_COUNT times, wrapping from the highest member to the
// lowest.
func (a *assigner) advance(cpu, n int) int {
	n %= a.count
	for ; n > 0; n-- {
		cpu = a.set.Next(cpu)
		if cpu < 0 {
			cpu = a.first
		}
	}
	return cpu
}

// neighborTX reports whether TX queue qid goes to the L2 neighbour of its RX
// queue's CPU, and which: the first branch of get_cpuid_for_queue, taken
// when separate_txrx, use_logical_cores, ifc_cpus_are_physical_cores, and
// qid < isc_nrxqsets.
func (a *assigner) neighborTX(base, qid int) (int, bool) {
	if !a.policy.SeparateTxRx || !a.policy.UseLogicalCores || !a.physical || qid >= a.nrx {
		return -1, false
	}
	n := a.topo.L2Neighbor(a.advance(base, qid))
	return n, n >= 0
}

// cpuForQueue is get_cpuid_for_queue exactly as FreeBSD has it.
func (a *assigner) cpuForQueue(base, qid int, isTX bool) int {
	index := qid
	if a.policy.SeparateTxRx {
		if isTX {
			if n, ok := a.neighborTX(base, qid); ok {
				return n
			}
			index = a.nrx + qid
		}
	}
	return a.advance(base, index)
}

// assign returns the CPU of every RX and TX queue for a device starting at
// base. Behavior FreeBSD calls cpuForQueue per queue; Intended differs only
// in quirk 3 (see Behavior): TX queues that get no neighbour take the next
// consecutive index after the RX queues, counting only such queues.
func (a *assigner) assign(base int) (rx, tx []int) {
	rx = make([]int, a.nrx)
	tx = make([]int, a.ntx)
	for q := range rx {
		rx[q] = a.cpuForQueue(base, q, false)
	}
	if a.behavior == FreeBSD || !a.policy.SeparateTxRx {
		for q := range tx {
			tx[q] = a.cpuForQueue(base, q, true)
		}
		return rx, tx
	}
	next := a.nrx
	for q := range tx {
		if n, ok := a.neighborTX(base, q); ok {
			tx[q] = n
			continue
		}
		tx[q] = a.advance(base, next)
		next++
	}
	return rx, tx
}

// consumed is the cores_consumed count of get_ctx_core_offset: assign
// every queue from the first CPU of the set and count the distinct CPUs
// that are members of the set (L2 neighbours outside it are not counted).
func (a *assigner) consumed() int {
	rx, tx := a.assign(a.first)
	var used CPUSet
	for _, c := range rx {
		used.Set(c)
	}
	for _, c := range tx {
		used.Set(c)
	}
	return used.And(a.set).Count()
}

// explicitBase resolves a user-given core_offset (the first half of
// get_ctx_core_offset) to the CPU assignment starts at. off has been
// range-checked by the caller.
func (a *assigner) explicitBase(off int) int {
	base := off
	if off < a.first || off > a.last {
		span := a.last - a.first + 1
		if a.behavior == FreeBSD {
			// base += first_valid; base = (base − first_valid) % span
			base = off % span
		} else {
			base = a.first + off%span
		}
	}
	for !a.set.Has(base) {
		base++
	}
	return base
}
