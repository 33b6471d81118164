package cpumap

// placeBeforeD24094 is iflib's placement before D24094 (sys/net/iflib.c
// after D20029, FreeBSD 12 and 13.0): get_ctx_core_offset kept a queue
// offset per CPU set, and iflib_irq_set_affinity bound queue q of type t to
//
//	find_close_core(find_nth(ctx, q + co), get_core_offset(ctx, t, q))
//
// with co the device's offset (plus isc_nrxqsets for TX under
// separate_txrx). find_nth is the (n mod CPU_COUNT)-th member of ifc_cpus;
// get_core_offset is q / CPU_COUNT for RX and q / CPU_COUNT + 1 for TX;
// find_close_core moves that many steps within the smallest cpu_top group
// holding the CPU that shares at least an L2 cache (and has more than one
// CPU), or returns the CPU itself if there is none.
//
// Consequences D24094 removed: TX queue q lands on the L2 partner of RX
// queue q's CPU even without separate_txrx (the SMT sibling, which is not
// in INTR_CPUS; or, on a CPU whose cores share L2 in pairs, the core that
// runs RX queue q^1); with all CPUs in the set, TX queue 1 lands next to RX
// queue 0. The TX softirqs of Intel drivers, attached with the RX IRQ as
// reference, also rebound that RX interrupt to the TX CPU (the D24094
// summary's closing remark); this model places tasks, not interrupts.
func (a *Allocator) placeBeforeD24094(req Request, set CPUSet, physical bool) (*Placement, error) {
	pol := req.Policy
	nrx, ntx := req.RxQueues, req.TxQueues
	qc := max(nrx, ntx)
	if pol.SeparateTxRx {
		qc = nrx + ntx
	}
	pl := &Placement{Device: req.Device, Policy: pol, Behavior: BeforeD24094,
		CPUs: set, Physical: physical, CoresConsumed: qc, topo: a.topo, alloc: a}
	co := 0
	if pol.CoreOffset != nil {
		co = *pol.CoreOffset
		if co < 0 || co > maxFreeBSDOffset {
			return nil, badOffset(co, maxFreeBSDOffset)
		}
	} else {
		a.mu.Lock()
		if op := a.offsets[set]; op != nil {
			co = op.next
			op.next += qc
			op.refcount++
		} else {
			a.offsets[set] = &cpuOffset{next: qc, refcount: 1}
		}
		a.mu.Unlock()
		pl.Registered = true
	}
	count := set.Count()
	nth := func(n int) int { // find_nth
		c := set.First()
		for range n % count {
			c = set.Next(c)
		}
		return c
	}
	pl.RxCPU = make([]int, nrx)
	for q := range pl.RxCPU {
		pl.RxCPU[q] = a.topo.closeCore(nth(q+co), q/count)
	}
	txco := co
	if pol.SeparateTxRx {
		txco += nrx
	}
	pl.TxCPU = make([]int, ntx)
	for q := range pl.TxCPU {
		pl.TxCPU[q] = a.topo.closeCore(nth(q+txco), q/count+1)
	}
	pl.Base = nth(co)
	return pl, nil
}

// closeCore is find_close_core (sys/net/iflib.c before D24094, SCHED_ULE):
// descend cpu_top to the smallest group holding cpu that has more than one
// CPU; if its members share no cache at L2 or closer, return cpu; else
// return the member off steps after cpu, counting in cg_mask order and
// wrapping.
func (t *Topology) closeCore(cpu, off int) int {
	g, _ := t.smallestGroup(cpu)
	if g == nil || !g.sharesL2() {
		return cpu
	}
	rank := 0
	for c := g.Mask.First(); c != cpu; c = g.Mask.Next(c) {
		rank++
	}
	c := g.Mask.First()
	for range (off + rank) % g.Count {
		c = g.Mask.Next(c)
	}
	return c
}
