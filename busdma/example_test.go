package busdma_test

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/busdma"
)

// A 32-bit-DMA NIC on a machine whose memory sits above 4 GiB: every TX
// payload is bounced, and PREWRITE is what copies it to where the NIC reads.
func Example() {
	mem, _ := busdma.NewSimSpace(busdma.SimConfig{Layout: busdma.LayoutHigh})
	chk := busdma.NewChecker()
	nic, _ := busdma.NewDevice(mem, busdma.DeviceConfig{Name: "em0", Checker: chk})

	// iflib_txsd_alloc: the TX buffer tag, lowaddr from isc_dma_width = 32.
	tag, _ := busdma.NewTag(nic.Tag(), busdma.TagConfig{
		LowAddr: busdma.LowAddrForWidth(32), MaxSize: 9216, NSegments: 8, MaxSegSize: 4096})
	m, _ := tag.CreateMap()

	pkt, _ := mem.Alloc(1500, 64)
	copy(pkt, "hello, wire")
	pa, _ := mem.PhysAddr(pkt)
	segs := make([]busdma.Segment, 0, 8)
	segs, _ = m.Load(pkt, segs) // iflib_encap: bus_dmamap_load_mbuf_sg
	fmt.Printf("buffer at %#x, segment %#x+%d\n", uint64(pa), uint64(segs[0].Addr), segs[0].Len)

	m.Sync(busdma.PreWrite) // after isc_txd_encap
	wire := make([]byte, 11)
	_ = nic.Read(segs[0].Addr, wire) // the NIC fetches the payload
	fmt.Printf("NIC read %q\n", wire)

	m.Sync(busdma.PostWrite) // iflib_tx_desc_free
	_ = m.Unload()
	err := nic.Read(segs[0].Addr, wire) // a stale address after unload
	fmt.Println(errors.Is(err, busdma.ErrFault), chk.Reports()[0].Kind)
	_ = nic.Close()
	// Output:
	// buffer at 0x100000000, segment 0x800000+1500
	// NIC read "hello, wire"
	// true device-access-outside-mapping
}

// Descriptor ring memory (iflib_dma_alloc_align) under an IOMMU: the bus
// address is an IOVA, and the IOMMU counts its work.
func ExampleTag_AllocMem() {
	io, _ := busdma.NewIOMMUSpace(busdma.IOMMUConfig{})
	nic, _ := busdma.NewDevice(io, busdma.DeviceConfig{Name: "ixl0"})
	tag, _ := busdma.NewTag(nic.Tag(), busdma.TagConfig{
		Alignment: 128, MaxSize: 1024 * 16, NSegments: 1, MaxSegSize: 1024 * 16, Flags: busdma.AllocNow})
	ring, _ := tag.AllocMem()
	fmt.Printf("ring: %d bytes at IOVA %#x\n", len(ring.Vaddr), uint64(ring.Paddr))
	ring.Sync(busdma.PostRead | busdma.PostWrite)
	_ = ring.Free()
	fmt.Printf("%+v\n", io.Stats())
	_ = nic.Close()
	// Output:
	// ring: 16384 bytes at IOVA 0x100000
	// {Maps:1 Unmaps:1 PagesMapped:4 PagesUnmapped:4 Faults:0}
}
