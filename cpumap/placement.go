package cpumap

import (
	"fmt"
	"strings"
	"sync"
)

// Placement is the CPU assignment of one device's queues, as
// iflib_irq_set_affinity binds them (taskqgroup_attach_cpu for each queue's
// grouptask and interrupt).
type Placement struct {
	Device string
	RxCPU  []int // CPU of RX queue q (get_cpuid_for_queue(…, q, false))
	TxCPU  []int // CPU of TX queue q (get_cpuid_for_queue(…, q, true))

	Policy   Policy
	Behavior Behavior
	CPUs     CPUSet // ifc_cpus: the set queues were assigned from
	Physical bool   // ifc_cpus_are_physical_cores
	// Widened is set when use_logical_cores without separate_txrx widened
	// CPUs to all SMT threads (Behavior Intended only, quirk 1).
	Widened bool
	// Base is the CPU assignment started at: the resolved core_offset
	// that get_ctx_core_offset stores back into ifc_sysctl_core_offset.
	Base int
	// CoresConsumed is cores_consumed: how many members of CPUs the queues
	// use, by which a registered device advances next_cpuid.
	CoresConsumed int
	// Registered is set when the device took a reference on the cpu_offsets
	// entry of CPUs (it had no core_offset).
	Registered bool

	topo    *Topology
	alloc   *Allocator
	release sync.Once
}

// Release is unref_ctx_core_offset, called at detach: it drops the
// device's reference on its registry entry, freeing the entry at zero. It
// does not rewind where the next device starts. Calling it again does
// nothing. See Behavior (quirk 4) for devices with a core_offset.
func (pl *Placement) Release() {
	pl.release.Do(func() { pl.alloc.release(pl) })
}

// String returns a one-line summary.
func (pl *Placement) String() string {
	return fmt.Sprintf("%s: rx %s tx %s (ifc_cpus %s, base %d)", pl.Device, joinInts(pl.RxCPU), joinInts(pl.TxCPU), pl.CPUs, pl.Base)
}

// Map renders the placement for humans: a header with the policy and the
// CPU set, then one line per CPU of the topology with its package, core,
// thread and L2 group, whether it is in the device's set (*), and the
// queues placed on it.
func (pl *Placement) Map() string {
	var b strings.Builder
	off := "unset"
	if pl.Policy.CoreOffset != nil {
		off = fmt.Sprint(*pl.Policy.CoreOffset)
	}
	fmt.Fprintf(&b, "%s: %d RX + %d TX queues; core_offset=%s separate_txrx=%d use_logical_cores=%d; behavior %s\n",
		pl.Device, len(pl.RxCPU), len(pl.TxCPU), off, b2i(pl.Policy.SeparateTxRx), b2i(pl.Policy.UseLogicalCores), pl.Behavior)
	kind := "any CPUs"
	if pl.Physical {
		kind = "physical cores"
	}
	if pl.Widened {
		kind = "widened to all SMT threads"
	}
	reg := "not in cpu_offsets (core_offset set)"
	if pl.Registered {
		reg = "registered in cpu_offsets"
	}
	fmt.Fprintf(&b, "ifc_cpus %s (%s); base CPU %d; cores consumed %d; %s\n", pl.CPUs, kind, pl.Base, pl.CoresConsumed, reg)
	queues := map[int][]string{}
	for q, c := range pl.RxCPU {
		queues[c] = append(queues[c], fmt.Sprintf("rxq%d", q))
	}
	for q, c := range pl.TxCPU {
		queues[c] = append(queues[c], fmt.Sprintf("txq%d", q))
	}
	fmt.Fprintf(&b, "%4s %3s %4s %5s %4s %4s  %s\n", "CPU", "SET", "PKG", "CORE", "THR", "L2", "QUEUES")
	for _, c := range pl.topo.cpus {
		in := ""
		if pl.CPUs.Has(c.ID) {
			in = "*"
		}
		q := strings.Join(queues[c.ID], " ")
		if q == "" {
			q = "-"
		}
		fmt.Fprintf(&b, "%4d %3s %4d %5d %4d %4d  %s\n", c.ID, in, c.Package, c.Core, c.Thread, c.L2, q)
	}
	return b.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
