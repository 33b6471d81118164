package vsched

// ThisMachine is the cost model of the 2-CPU machine this project runs on
// (a virtual machine reporting "AMD EPYC"), from this package's benchmarks:
//
//	go test -run '^$' -bench 'Machine' -count 5 ./internal/vsched/
//
// medians of 5 [min..max] on 2026-12-02, the machine shared with other work
// (load average about 12 on 2 CPUs), so the core-local figures are upper
// bounds. Each field names its benchmark.
var ThisMachine = Costs{
	Name: "this machine (2 vCPUs, measured)",
	// BenchmarkMachineLoadHit: 5.97 ns [5.45..10.4] per iteration of a
	// loop whose body is the load, an add and the loop's own compare and
	// branch.
	L1: 5.97,
	// BenchmarkMachineLockedAdd (LOCK XADD): 8.97 ns [8.70..17.3];
	// LockedCAS (a load and a LOCK CMPXCHG) 16.8 ns [10.9..21.2].
	Locked: 8.97,
	// BenchmarkMachineLinePingPong, best-ns/transfer: 206 ns
	// [32.0..222], bimodal (two runs near 35 ns, three near 210 ns: the
	// hypervisor places the two virtual CPUs on nearer or farther cores
	// from run to run). With two CPUs there is no second distance to
	// measure, so both are the median.
	XferCore: 206,
	XferCCX:  206,
	// No benchmark isolates a first touch; a transfer is the closest
	// measured figure.
	Fill:    206,
	CCXSize: 0,
	// BenchmarkMachineGosched: 214 ns [122..353].
	Yield: 214,
	// BenchmarkMachineSwitch: 458 ns [382..514] per Gosched with two
	// goroutines on one P, one switch each.
	ContextSwitch: 458,
	// BenchmarkMachineWake, ns/wake: 211 ns [188..255].
	Wake: 211,
	// The Go scheduler preempts a goroutine that has run 10 ms
	// (forcePreemptNS in runtime/proc.go).
	Quantum: 10e6,
}

// Turin is the cost model of the drbr review's machine ("simple_tx with
// drbr deferral": a 96-core AMD EPYC Zen 5, Turin) from published
// figures. No core-to-core measurement of Turin itself was found (the
// sources searched: Chips and Cheese, AnandTech, press coverage); the
// transfer costs are the nearest published ones, for desktop Zen 4 and Zen
// 5 parts whose CCDs have the same 8 cores and shared L3, each named
// below, and likely optimistic for Turin's larger server I/O die. The
// core-local costs (L1, Locked, Yield, ContextSwitch, Wake) have no
// published Turin figure either and are ThisMachine's, an AMD EPYC virtual
// machine. docs/seeds.md, "Virtual CPUs", lists the sources.
var Turin = Costs{
	Name: "AMD EPYC Turin, 96 cores (published figures; see docs/seeds.md)",
	// One CCX is one CCD of 8 Zen 5 cores sharing 32 MB of L3 (Chips and
	// Cheese, "AMD's Ryzen 9950X: Zen 5 on Desktop", 2024; TechPowerUp on
	// Turin's CCDs: "8 CPU cores sharing 32 MB L3 cache").
	CCXSize: 8,
	// Within one L3: 15–19 ns core to core on Zen 4's 8-core CCX
	// (AnandTech, "AMD Zen 4 Ryzen 9 7950X and Ryzen 5 7600X Review",
	// core-to-core latency page, 2022); the midpoint, 17 ns.
	XferCore: 17,
	// Across CCDs: 75 ns on the Zen 5 Ryzen 9 9950X with AGESA 1.2.0.2
	// (180 ns before it), as reported by iponshop.de from an overclock.net
	// measurement, 2024.
	XferCCX: 75,
	// A first touch is served from L3 or memory; no Turin figure: the
	// cross-CCD transfer stands in.
	Fill:          75,
	L1:            ThisMachine.L1,
	Locked:        ThisMachine.Locked,
	Yield:         ThisMachine.Yield,
	ContextSwitch: ThisMachine.ContextSwitch,
	Wake:          ThisMachine.Wake,
	Quantum:       ThisMachine.Quantum,
}
