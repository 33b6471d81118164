// Command cpumap prints this machine's CPU topology as goiflib's cpumap
// package sees it (Linux sysfs, else a flat layout), then the CPUs FreeBSD's
// iflib would give a device's queues under the given policy (review D24094),
// for one or several devices attached in order.
//
// Usage:
//
//	go run ./examples/cpumap -rx 4 -tx 4 -separate -logical -devices 2
//	go run ./examples/cpumap -sysfs cpumap/testdata/sysfs/atom-c2758 -separate -logical
//	go run ./examples/cpumap -synthetic 1x4x2 -freebsd -logical
//	go run ./examples/cpumap -synthetic 1x8x1/2 -rx 8 -tx 8 -devices 2 -compare
//
// -before places as iflib did before D24094; -compare prints, instead of the
// per-device maps, one table of every queue under the placement before
// D24094, FreeBSD's since, and the intended one. The last example is the
// machine of D24094's measurement (an 8-core Atom C2758, cores sharing L2 in
// pairs) with its dual-port 82599.
//
// With -pin it also pins a goroutine to every CPU the first device uses and
// prints the affinity read back with sched_getaffinity.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/goiflib/goiflib/cpumap"
)

func main() {
	rx := flag.Int("rx", 4, "RX queues per device (isc_nrxqsets)")
	tx := flag.Int("tx", 4, "TX queues per device (isc_ntxqsets)")
	offset := flag.Int("offset", -1, "core_offset (-1 = unset, CORE_OFFSET_UNSPECIFIED)")
	separate := flag.Bool("separate", false, "separate_txrx")
	logical := flag.Bool("logical", false, "use_logical_cores")
	freebsd := flag.Bool("freebsd", false, "reproduce FreeBSD's code exactly, quirks included (default: intended behaviour)")
	before := flag.Bool("before", false, "place as iflib did before D24094 (find_nth/find_close_core)")
	compare := flag.Bool("compare", false, "print one table comparing before-D24094, freebsd and intended")
	devices := flag.Int("devices", 1, "number of devices attached in order")
	sysfs := flag.String("sysfs", "", "read the topology from this sysfs-like directory instead of the machine")
	synthetic := flag.String("synthetic", "", "use a synthetic topology PxCxT[/L2][i], e.g. 2x8x2 or 1x8x1/2 or 1x4x2i (interleaved siblings)")
	pin := flag.Bool("pin", false, "pin a goroutine to each CPU of the first device and read the affinity back")
	flag.Parse()

	topo, err := loadTopology(*sysfs, *synthetic)
	if err != nil {
		fail(err)
	}
	fmt.Print(topo)
	fmt.Println()

	opts := cpumap.AllocatorOptions{}
	switch {
	case *freebsd && *before:
		fail(fmt.Errorf("-freebsd and -before exclude each other"))
	case *freebsd:
		opts.Behavior = cpumap.FreeBSD
	case *before:
		opts.Behavior = cpumap.BeforeD24094
	}
	alloc := cpumap.NewAllocator(topo, opts)
	pol := cpumap.Policy{SeparateTxRx: *separate, UseLogicalCores: *logical}
	if *offset >= 0 {
		pol.CoreOffset = cpumap.Offset(*offset)
	}
	if *compare {
		var reqs []cpumap.Request
		for i := range *devices {
			reqs = append(reqs, cpumap.Request{Device: fmt.Sprintf("simnic%d", i), RxQueues: *rx, TxQueues: *tx, Policy: pol})
		}
		table, err := cpumap.PlacementTable(topo, reqs, cpumap.BeforeD24094, cpumap.FreeBSD, cpumap.Intended)
		if err != nil {
			fail(err)
		}
		fmt.Print(table)
		return
	}
	var first *cpumap.Placement
	for i := range *devices {
		pl, err := alloc.Place(cpumap.Request{Device: fmt.Sprintf("simnic%d", i), RxQueues: *rx, TxQueues: *tx, Policy: pol})
		if err != nil {
			fail(err)
		}
		if first == nil {
			first = pl
		}
		fmt.Print(pl.Map())
		if next, refs, ok := alloc.Next(pl.CPUs); ok {
			fmt.Printf("cpu_offsets[%s]: next_cpuid %d, refcount %d\n", pl.CPUs, next, refs)
		}
		fmt.Println()
	}
	if *pin {
		pinAll(first)
	}
}

func loadTopology(dir, syn string) (*cpumap.Topology, error) {
	switch {
	case dir != "":
		return cpumap.ParseSysfs(os.DirFS(dir))
	case syn != "":
		var cfg cpumap.SyntheticConfig
		var rest string
		n, _ := fmt.Sscanf(syn, "%dx%dx%d%s", &cfg.Packages, &cfg.CoresPerPackage, &cfg.ThreadsPerCore, &rest)
		if n < 3 {
			return nil, fmt.Errorf("bad -synthetic %q, want PxCxT[/L2][i]", syn)
		}
		if len(rest) > 0 && rest[len(rest)-1] == 'i' {
			cfg.SiblingNumbering = cpumap.Interleaved
			rest = rest[:len(rest)-1]
		}
		if rest != "" {
			if _, err := fmt.Sscanf(rest, "/%d", &cfg.L2CoresPerGroup); err != nil {
				return nil, fmt.Errorf("bad -synthetic %q: %v", syn, err)
			}
		}
		return cpumap.Synthetic(cfg)
	}
	return cpumap.Discover()
}

// pinAll pins a fresh goroutine to each CPU the placement uses and prints
// the affinity the kernel reports while pinned.
func pinAll(pl *cpumap.Placement) {
	seen := map[int]bool{}
	for _, c := range append(append([]int{}, pl.RxCPU...), pl.TxCPU...) {
		if seen[c] {
			continue
		}
		seen[c] = true
		done := make(chan string)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			unpin, err := cpumap.PinCurrentThread(c)
			if err != nil {
				done <- fmt.Sprintf("pin cpu %d: %v", c, err)
				return
			}
			got, err := cpumap.CurrentAffinity()
			if uerr := unpin(); err == nil {
				err = uerr
			}
			done <- fmt.Sprintf("pinned to cpu %d: sched_getaffinity says %s (err %v)", c, got, err)
		}()
		fmt.Println(<-done)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
