package cpumap_test

import (
	"fmt"

	"github.com/goiflib/goiflib/cpumap"
)

// A machine of 4 cores × 2 threads numbered as FreeBSD does on
// x86, with separate_txrx and use_logical_cores: RX on the physical cores,
// each TX queue on the SMT sibling of its RX queue's core.
func Example() {
	topo, err := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 2})
	if err != nil {
		panic(err)
	}
	alloc := cpumap.NewAllocator(topo, cpumap.AllocatorOptions{})
	pl, err := alloc.Place(cpumap.Request{Device: "simnic0", RxQueues: 4, TxQueues: 4,
		Policy: cpumap.Policy{SeparateTxRx: true, UseLogicalCores: true}})
	if err != nil {
		panic(err)
	}
	defer pl.Release()
	fmt.Print(pl.Map())
	// Output:
	// simnic0: 4 RX + 4 TX queues; core_offset=unset separate_txrx=1 use_logical_cores=1; behavior intended
	// ifc_cpus 0,2,4,6 (physical cores); base CPU 0; cores consumed 4; registered in cpu_offsets
	//  CPU SET  PKG  CORE  THR   L2  QUEUES
	//    0   *    0     0    0    0  rxq0
	//    1        0     0    1    0  txq0
	//    2   *    0     1    0    1  rxq1
	//    3        0     1    1    1  txq1
	//    4   *    0     2    0    2  rxq2
	//    5        0     2    1    2  txq2
	//    6   *    0     3    0    3  rxq3
	//    7        0     3    1    3  txq3
}

// Devices without a core_offset continue where the previous device on the
// same CPU set stopped (the cpu_offsets registry); Release at detach does not
// rewind it.
func ExampleAllocator_Place() {
	topo, _ := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 2})
	alloc := cpumap.NewAllocator(topo, cpumap.AllocatorOptions{})
	var prev *cpumap.Placement
	for i := range 3 {
		pl, err := alloc.Place(cpumap.Request{Device: fmt.Sprint("nic", i), RxQueues: 1, TxQueues: 1})
		if err != nil {
			panic(err)
		}
		fmt.Println(pl)
		if i == 1 {
			prev.Release() // nic0 detaches; nic2 still starts after nic1
		}
		prev = pl
	}
	// Output:
	// nic0: rx 0 tx 0 (ifc_cpus 0,2,4,6, base 0)
	// nic1: rx 2 tx 2 (ifc_cpus 0,2,4,6, base 2)
	// nic2: rx 4 tx 4 (ifc_cpus 0,2,4,6, base 4)
}

// The two behaviours differ on use_logical_cores without separate_txrx.
func ExampleBehavior() {
	topo, _ := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 2})
	for _, b := range []cpumap.Behavior{cpumap.Intended, cpumap.FreeBSD} {
		pl, _ := cpumap.NewAllocator(topo, cpumap.AllocatorOptions{Behavior: b}).Place(cpumap.Request{
			Device: b.String(), RxQueues: 4, TxQueues: 4, Policy: cpumap.Policy{UseLogicalCores: true}})
		fmt.Println(pl)
	}
	// Output:
	// intended: rx 0,1,2,3 tx 0,1,2,3 (ifc_cpus 0-7, base 0)
	// freebsd: rx 0,2,4,6 tx 0,2,4,6 (ifc_cpus 0,2,4,6, base 0)
}

// Review D24094 changed where iflib puts a device's queues. On the machine
// of that review's measurement, an 8-core Atom C2758 whose cores share L2 in
// pairs, with a dual-port 82599 of 8 queue pairs per port: before the change
// TX queue q ran on the other core of RX queue q's L2 module; after it, on
// RX queue q's own core.
func ExamplePlacementTable() {
	atom, err := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 8, ThreadsPerCore: 1, L2CoresPerGroup: 2})
	if err != nil {
		panic(err)
	}
	table, err := cpumap.PlacementTable(atom, []cpumap.Request{
		{Device: "ix0", RxQueues: 8, TxQueues: 8},
		{Device: "ix1", RxQueues: 8, TxQueues: 8},
	}, cpumap.BeforeD24094, cpumap.FreeBSD)
	if err != nil {
		panic(err)
	}
	fmt.Print(table)
	// Output:
	// queue                  before-D24094  freebsd
	//                        rx  tx         rx  tx
	// ix0 q0                 0   1          0   0
	// ix0 q1                 1   0          1   1
	// ix0 q2                 2   3          2   2
	// ix0 q3                 3   2          3   3
	// ix0 q4                 4   5          4   4
	// ix0 q5                 5   4          5   5
	// ix0 q6                 6   7          6   6
	// ix0 q7                 7   6          7   7
	// ix1 q0                 0   1          0   0
	// ix1 q1                 1   0          1   1
	// ix1 q2                 2   3          2   2
	// ix1 q3                 3   2          3   3
	// ix1 q4                 4   5          4   4
	// ix1 q5                 5   4          5   5
	// ix1 q6                 6   7          6   6
	// ix1 q7                 7   6          7   7
	// tx on its rx cpu       0/16           16/16
	// tx on an L2 neighbour  16/16          0/16
	// distinct cpus          8              8
}

// A dataplane worker pool is placed like a NIC with one kind of queue, then
// each worker pins its goroutine to its CPU (PinCurrentThread; not run here,
// since the CPUs of this example's machine need not exist).
func ExampleAllocator_Place_workerPool() {
	topo, _ := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 2})
	alloc := cpumap.NewAllocator(topo, cpumap.AllocatorOptions{})
	pool, err := alloc.Place(cpumap.Request{Device: "workers", RxQueues: 4})
	if err != nil {
		panic(err)
	}
	defer pool.Release()
	for i, cpu := range pool.RxCPU {
		fmt.Printf("worker %d -> cpu %d\n", i, cpu)
		// go func() { unpin, err := cpumap.PinCurrentThread(cpu); …; defer unpin() }()
	}
	// Output:
	// worker 0 -> cpu 0
	// worker 1 -> cpu 2
	// worker 2 -> cpu 4
	// worker 3 -> cpu 6
}
