// Package busdma models FreeBSD's bus_dma(9) as iflib uses it
// (sys/x86/x86/busdma_bounce.c, sys/kern/subr_busdma_bounce.c,
// sys/dev/iommu/busdma_iommu.c): tags with their inheritance, maps, segment
// lists, syncs, bounce pages, DMA memory for descriptor rings, an IOMMU, and
// a checker for DMA misuse.
//
// # Address spaces
//
// A [Space] decides what a bus address is:
//
//	SimSpace       simulated physical memory; layouts scatter pages or put
//	               them above 4 GiB, so splitting and bouncing really happen
//	IOMMUSpace     a DMAR model over a SimSpace: per-device IOVAs, page
//	               tables torn down at unload, faults on stale addresses
//	PagemapSpace   hugepage memory with real physical addresses (Linux, root)
//	IdentitySpace  bus address = offset in one region (an AF_XDP UMEM)
//
// Buffers handed to a map must come from the device's space: that is how the
// loader knows their pages. Space.Alloc returns general buffers,
// Space.AllocChunks returns packet clusters that each load as one segment
// (the contiguous mbuf cluster zones), Tag.AllocMem returns descriptor ring
// memory (bus_dmamem_alloc), and Space.Free and DMAMem.Free give them back,
// so a driver can attach and detach on one space forever.
//
// # Data flow
//
//	CPU writes buf ─ Load(buf) ─ Sync(PreWrite) ─▶ Device.Read(seg.Addr) ─ Sync(PostWrite) ─ Unload
//	Load(cluster) ─ Sync(PreRead) ─▶ Device.Write(seg.Addr) ─ Sync(PostRead) ─ CPU reads
//
// # Hazards
//
// The main hazard is using an address the device may no longer use: a
// segment address kept after Unload (a DMAR fault under an IOMMU, silent
// corruption without one), or a buffer touched by one side without the sync
// that hands it over. On x86 without bounce pages both bugs are invisible,
// which is how review D17901 found several in iflib. The [Checker] makes
// them visible: it tracks every mapping of a device, refuses device
// accesses outside them, and models a non-coherent machine so that a missing
// PREWRITE or POSTREAD changes the data and is reported with the map's name
// and the call site.
//
// # Concurrency
//
// A [Map] is used by one goroutine at a time; different maps, tags, spaces
// and devices are safe for concurrent use, and [Device.Read]/[Device.Write]
// may run on a device goroutine concurrently with loads and unloads of other
// maps. Load, Sync and Unload allocate nothing in the steady state when the
// caller reuses its segment slice, and execute no locked instruction on a
// space without bounce pages or IOMMU: a map's state belongs to its owner.
// The price is that the teardown checks ([Device.CheckLeaks],
// [Device.LoadedMaps], [Device.Close]) must run after the map owners have
// stopped.
//
// # Cost
//
// On a physically addressed space (no IOMMU), through a tag that can never
// bounce ([Tag.CouldBounce] false) and without a checker, [Map.Load] and a
// one-buffer [Map.LoadMulti] of a buffer that lies in one page (an iflib
// cluster) take the direct load: the page's bus address plus the offset
// (FreeBSD's pmap_kextract), one segment, nothing recorded, so the Unload
// that follows releases nothing. Everything else takes the page walk of
// bounce_bus_dmamap_load_buffer, which gives the same segments for such a
// buffer. The direct load and unload of 1024 cold maps in turn, as a TX
// ring's: go test -run '^$' -bench MapRing ./busdma/.
package busdma
