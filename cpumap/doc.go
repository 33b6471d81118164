// Package cpumap places a network device's queues on CPUs the way FreeBSD's
// iflib does since review D24094 ("Fix allocation of queues to CPUs in
// iflib", sys/net/iflib.c: get_cpuid_for_queue, cpuid_advance,
// find_l2_neighbor, get_ctx_core_offset and the cpu_offsets registry), and
// pins goroutines' OS threads to the chosen CPUs.
//
// It has three parts:
//
//   - Topology: which CPUs exist, how they group into packages, cores (SMT
//     siblings) and L2 cache clusters. Discover reads Linux sysfs,
//     ParseSysfs reads a captured tree, Synthetic builds one from counts.
//     The groups form a tree like FreeBSD's cpu_top (struct cpu_group), and
//     Topology.L2Neighbor is find_l2_neighbor over it.
//   - Placement: an Allocator holds the registry of per-CPU-set offsets
//     (cpu_offsets), so that devices attached later continue where earlier
//     ones stopped. Allocator.Place computes the CPU of every RX and TX queue
//     of one device from its Policy (the core_offset, separate_txrx and
//     use_logical_cores tunables).
//   - Pinning: PinCurrentThread locks the calling goroutine to its OS thread
//     and sets that thread's affinity (sched_setaffinity).
//
// FreeBSD's code has quirks where it does not do what its own comments say.
// By default this package does what the comments intend; Behavior FreeBSD
// reproduces the committed code exactly. Both are documented on Behavior and
// tested. Behavior BeforeD24094 reproduces the placement D24094 replaced,
// and PlacementTable prints the two side by side for any machine.
//
// DefaultAllocator is the process-wide registry over this machine, shared by
// every device and worker pool of the process. A worker pool that is not a
// NIC asks for one kind of queue only (Request.RxQueues: n, TxQueues: 0) and
// pins each worker to its CPU.
//
// The main hazard is believing a placement is a binding. Place only computes
// CPU numbers; nothing runs there until the caller pins a thread with
// PinCurrentThread, and a Go goroutine that is not locked to its thread
// (runtime.LockOSThread) migrates freely whatever the affinity of the thread
// it happened to start on. Unpin on the same goroutine that pinned; pins
// nest, and may be released in any order (the innermost one still held
// decides the affinity).
package cpumap
