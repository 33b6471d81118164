package busdma

// BusAddr is bus_addr_t: an address as the device sees it. What it means
// depends on the [Space]: a (simulated or real) physical address, an IOVA
// behind an IOMMU, or an offset in a registered region.
type BusAddr uint64

// Segment is bus_dma_segment_t: one scatter/gather element.
type Segment struct {
	Addr BusAddr // ds_addr
	Len  int     // ds_len
}

// SyncOp is bus_dmasync_op_t. The names are from the CPU's point of view
// about the device's access (bus_dma(9)); ops may be or'ed together.
type SyncOp uint8

const (
	// PreRead is BUS_DMASYNC_PREREAD: the device is about to write the
	// buffer (an RX buffer being posted).
	PreRead SyncOp = 1 << iota
	// PreWrite is BUS_DMASYNC_PREWRITE: the CPU has written the buffer and
	// the device is about to read it (copy-in to bounce pages).
	PreWrite
	// PostRead is BUS_DMASYNC_POSTREAD: the device has written and the CPU is
	// about to read (copy-out from bounce pages).
	PostRead
	// PostWrite is BUS_DMASYNC_POSTWRITE: the device has finished reading.
	PostWrite
)

// Specification constants.
const (
	// MaxAddr is BUS_SPACE_MAXADDR (sys/x86/include/bus.h, amd64).
	MaxAddr BusAddr = ^BusAddr(0)
	// MaxAddr32 is BUS_SPACE_MAXADDR_32BIT.
	MaxAddr32 BusAddr = 0xFFFFFFFF
	// PageSize is PAGE_SIZE on amd64 and the default arm64 kernel: the unit
	// in which bus_dma walks a buffer, bounces and maps IOVAs.
	PageSize = 4096

	pageShift = 12
	pageMask  = PageSize - 1
)

// LowAddrForWidth is DMA_WIDTH_TO_BUS_LOWADDR (sys/net/iflib.c): the lowaddr
// of a device that can address bits bits. 0 and 64 (flsll(BUS_SPACE_MAXADDR))
// mean [MaxAddr]; widths outside 1..64 are treated as 64.
func LowAddrForWidth(bits int) BusAddr {
	if bits <= 0 || bits >= 64 {
		return MaxAddr
	}
	return BusAddr(1)<<uint(bits) - 1
}

// String names the ops, e.g. "PREREAD|PREWRITE".
func (op SyncOp) String() string {
	if op == 0 {
		return "0"
	}
	names := [...]string{"PREREAD", "PREWRITE", "POSTREAD", "POSTWRITE"}
	s := ""
	for i, n := range names {
		if op&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if op&^0xF != 0 {
		if s != "" {
			s += "|"
		}
		s += "?"
	}
	return s
}
