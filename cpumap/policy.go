package cpumap

import "fmt"

// Policy is a device's CPU assignment tunables, the loader-time sysctls
// dev.X.Y.iflib.{core_offset,separate_txrx,use_logical_cores} (all
// CTLFLAG_RDTUN in sys/net/iflib.c). The zero value is FreeBSD's default:
// no core_offset, RX/TX pairs sharing a CPU, physical cores only.
type Policy struct {
	// CoreOffset is ifc_sysctl_core_offset: the CPU to start assigning at.
	// nil is CORE_OFFSET_UNSPECIFIED (0xffff), the default: start where the
	// previous device with the same CPU set stopped (the cpu_offsets
	// registry). A device with an offset is not entered in the registry.
	// Use Offset(n) to set it.
	CoreOffset *int
	// SeparateTxRx is ifc_sysctl_separate_txrx (default 0): RX queues on
	// consecutive CPUs, then TX queues after them, instead of RX queue q and
	// TX queue q sharing a CPU.
	SeparateTxRx bool
	// UseLogicalCores is ifc_sysctl_use_logical_cores (default 0): allow
	// SMT siblings (more exactly, L2 neighbours) of the interrupt CPUs. See
	// Behavior for what it does without SeparateTxRx.
	UseLogicalCores bool
}

// Offset returns a pointer to n, for Policy.CoreOffset.
func Offset(n int) *int { return &n }

// Behavior selects between what iflib's comments say and what its code
// does, where the two differ. The differences (sys/net/iflib.c after
// D24094, unchanged through FreeBSD 15):
//
//  1. use_logical_cores without separate_txrx. The comment above
//     get_cpuid_for_queue promises "RX and TX queues mapped to consecutive
//     cores of any type with RX/TX pairs on same core". The code consults
//     use_logical_cores only when separate_txrx is set, and ifc_cpus still
//     holds only the physical INTR_CPUS, so the flag has no effect.
//     Intended: the CPU set is widened to every SMT thread of its cores
//     (Topology.Threads), so pairs go to consecutive logical CPUs.
//     FreeBSD: identical to use_logical_cores=0.
//  2. An explicit core_offset outside [first, last] of the CPU set. The
//     comment says the user is "thinking in terms of a zero-based reference
//     frame, and so we shift the given value into the valid range (and wrap
//     accordingly)". The code adds first_valid and subtracts it again
//     before the modulo, so the result is a zero-based residue that is then
//     pushed up to the next member: with the set {4..7}, core_offset 1 and 9
//     both give CPU 4. Intended: first + offset mod (last−first+1), then
//     the next member at or above it (offset 1 and 9 give CPU 5).
//     Both wrap by the span last−first+1, not by the member count; with a
//     set starting at CPU 0 they agree. Intended also rejects an offset
//     beyond every CPU of the topology (ErrCoreOffset); FreeBSD accepts any
//     u16 value but 0xffff.
//  3. TX queues that get no L2 neighbour (separate_txrx and
//     use_logical_cores on physical cores). The code sends TX queue q to
//     consecutive index nrxqsets+q, which leaves a gap of as many CPUs as
//     there were TX queues placed on neighbours, and it assumes "all RX
//     queue CPUs have an L2 neighbor, or all do not" (its own comment says a
//     mixed case would need counting). Intended: TX queues without a
//     neighbour take consecutive indices nrxqsets, nrxqsets+1, … in order,
//     which is the same as the code when no TX queue got a neighbour.
//  4. Detach. unref_ctx_core_offset is called for every device, so a device
//     with an explicit core_offset, which never took a reference, drops one
//     from the registry entry of its CPU set, which may free the entry and
//     make the next device start again at the first CPU. Intended: releasing
//     such a device changes nothing. FreeBSD: Release of such a placement
//     decrements the entry if there is one.
//
// Everything else — cpuid_advance, find_l2_neighbor, the count of cores
// consumed, continuing where the previous device stopped, never rewinding
// next_cpuid on detach — is the same in both.
//
// BeforeD24094 is a third behaviour, for comparison: iflib's placement
// before D24094 landed (March 2021; FreeBSD 12 and 13.0), which that review
// replaced. See placeBeforeD24094.
type Behavior int

const (
	// Intended (the default) follows iflib's comments where the code
	// departs from them.
	Intended Behavior = iota
	// FreeBSD reproduces sys/net/iflib.c exactly, quirks included.
	FreeBSD
	// BeforeD24094 reproduces sys/net/iflib.c before D24094 (after D20029):
	// find_nth, get_core_offset and find_close_core. RX queue q runs on the
	// q-th CPU of the set from the device's offset; TX queue q on a CPU that
	// shares an L2 cache with that one (the SMT sibling, or the other core
	// of an L2 module), because find_close_core moves every TX queue one
	// step within its L2 group, whatever separate_txrx says; the registry
	// advances by queues (max(ntx, nrx), or ntx + nrx with separate_txrx),
	// not by cores consumed. use_logical_cores did not exist and is ignored.
	// These are the "CPU mapping oddities" D24094 set out to fix.
	BeforeD24094
)

func (b Behavior) String() string {
	switch b {
	case Intended:
		return "intended"
	case FreeBSD:
		return "freebsd"
	case BeforeD24094:
		return "before-D24094"
	}
	return fmt.Sprintf("Behavior(%d)", int(b))
}

func (b Behavior) valid() bool { return b >= Intended && b <= BeforeD24094 }

// MaxQueues = 65535 is the largest queue count a Request may ask for; iflib
// queue ids are 16-bit (ifr_id, ift_id are uint16_t).
const MaxQueues = 65535

// maxFreeBSDOffset = 0xfffe is the largest core_offset FreeBSD can hold:
// the tunable is a u16 and 0xffff is CORE_OFFSET_UNSPECIFIED.
const maxFreeBSDOffset = 0xfffe

// Request asks for the placement of one device's queues.
//
// A worker pool that is not a NIC (a dataplane's consumers, one pinned
// goroutine per CPU) asks for one kind of queue only, say RxQueues: n and
// TxQueues: 0, and pins worker i to Placement.RxCPU[i]; it is entered in the
// registry like a NIC, so pools and NICs on the same CPU set take turns.
type Request struct {
	Device   string // a name for the placement map, e.g. "simnic0"
	RxQueues int    // isc_nrxqsets, 0..MaxQueues
	TxQueues int    // isc_ntxqsets, 0..MaxQueues; RxQueues+TxQueues >= 1
	Policy   Policy
	// CPUs, if non-nil, is the device's interrupt CPU set (ifc_cpus) in
	// place of the topology's IntrCPUs — e.g. the CPUs of the device's NUMA
	// domain, as bus_get_cpus narrows it. Every member must be online.
	CPUs *CPUSet
	// CPUsArePhysical is ifc_cpus_are_physical_cores for CPUs; ignored when
	// CPUs is nil (then IntrCPUs says).
	CPUsArePhysical bool
}
