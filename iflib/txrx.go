package iflib

import "github.com/goiflib/goiflib/busdma"

// TxRx is struct if_txrx (sys/net/iflib.h): the driver's fast-path method
// table. iflib calls every method from one goroutine per queue at a time
// (the queue's consumer: the mp_ring drain, the txq lock holder, or the RX
// task); methods never need their own locking for one queue, and must not
// block or call back into iflib's transmit or receive paths. TxdEncap and
// TxdFlush may run on a sender's goroutine (inside Transmit), which iflib
// does not tell apart from any other: a Stop from there waits
// Config.StopTimeout for the caller itself before it finishes, a Detach is
// then handed to the admin task (ErrDeferred), and a control call that
// reinitialises leaves the init to the admin task, which runs it once the
// transmit has returned.
type TxRx interface {
	// TxdEncap is ift_txd_encap (isc_txd_encap). Write the descriptors of one
	// packet into TX queue pi.QSIdx starting at pi.PIdx, from
	// pi.Segs[:pi.NSegs], and set pi.NewPIdx to the first free index after
	// it (and optionally pi.NDescs). Request a completion report when
	// pi.Flags has IPITxIntr. Use at most NSegs + TxPad descriptors. Do not
	// ring the doorbell. Return nil, ErrEncapTooBig (EFBIG: iflib defrags
	// and retries once) or another error (the packet is dropped and counted).
	TxdEncap(pi *PktInfo) error
	// TxdFlush is ift_txd_flush (isc_txd_flush): ring the doorbell of TX
	// queue qid. pidx is ift_npending when the driver reports NDescs, else
	// the new producer index. Called after the ring was synced PREWRITE.
	TxdFlush(qid int, pidx int)
	// TxdCreditsUpdate is ift_txd_credits_update. clear=true consumes
	// completions and returns the number of descriptors completed since
	// the last call; the queue's consumer calls it after syncing the ring
	// POSTREAD. clear=false is a cheap probe (non-zero if a completion may
	// be pending, no state change, "may be unreliable"): iflib_txq_can_drain
	// calls it from whichever goroutine checks a stalled ring, possibly
	// while another is the consumer, so it must read only state that is
	// safe to read concurrently (device registers, atomics).
	TxdCreditsUpdate(qid int, clear bool) int
	// RxdAvailable is ift_rxd_available: how many complete packets are ready
	// in RX queue qid starting at descriptor cidx, counting to about budget.
	RxdAvailable(qid int, cidx int, budget int) int
	// RxdPktGet is ift_rxd_pkt_get: describe the packet at ri.CIdx in
	// ri.Frags (free-list id, slot, length per fragment), ri.NFrags, ri.Len
	// and the metadata, and consume its descriptors. iflib validates the
	// description (each fragment a distinct posted slot that holds it,
	// ri.Len = ri.Pad + the lengths) before it touches a slot. An error, or
	// a description that fails validation, makes iflib count it (ierrors)
	// and reset the interface (IFC_DO_RESET); set ri.Discard instead to
	// drop a bad frame without a reset. On an error, leave the packet's
	// descriptors unconsumed (em's EBADMSG does): the frames from there on
	// are then counted as rx_stop_discards when the reset stops the queue.
	RxdPktGet(ri *RxdInfo) error
	// RxdRefill is ift_rxd_refill: write iru.Count buffer addresses into
	// free list iru.FLIdx of RX queue iru.QSIdx at descriptors starting at
	// iru.PIdx. Never more than MaxRxRefresh at once.
	RxdRefill(iru *RxdUpdate)
	// RxdFlush is ift_rxd_flush: publish the free list's producer index
	// (Intel: write RDT). Called after the ring was synced PREREAD|PREWRITE.
	RxdFlush(qid int, flid int, pidx int)
}

// IPIFlags are if_pkt_info ipi_flags.
type IPIFlags uint8

const (
	// IPITxIntr is IPI_TX_INTR: ask the device to report this packet's
	// completion (set RS): iflib batches these (txq_max_rs_deferred).
	IPITxIntr IPIFlags = 0x1
	IPITxIPv4 IPIFlags = 0x2 // IPI_TX_IPV4: the packet is IPv4 (from the header parser)
	IPITxIPv6 IPIFlags = 0x4 // IPI_TX_IPV6: the packet is IPv6
)

// PktInfo is struct if_pkt_info: one TX packet handed to TxdEncap. iflib
// fills every field except those marked (driver).
type PktInfo struct {
	Len int // ipi_len: the packet's bytes (m_pkthdr.len)
	// Segs is ipi_segs: the DMA segments to write into descriptors, one
	// descriptor each (valid during TxdEncap only).
	Segs   []busdma.Segment
	NSegs  int // ipi_nsegs: len(Segs)
	NDescs int // ipi_ndescs (driver): descriptors used, for drivers whose doorbell takes a count
	QSIdx  int // ipi_qsidx: the TX queue (set)
	PIdx   int // ipi_pidx: the first descriptor to write
	// NewPIdx is ipi_new_pidx (driver): the first descriptor after the
	// packet; at most NSegs + TxPad descriptors past PIdx.
	NewPIdx int
	Flags   IPIFlags // ipi_flags: IPITxIntr (request a completion report), IPITxIPv4/6
	// The header fields below are filled only when an offload is asked
	// (CsumFlags or a VLAN tag), by iflib_parse_header.
	EHdrLen   uint8     // ipi_ehdrlen: the Ethernet header's length, 14 or 18 with a VLAN tag
	IPHLen    uint8     // ipi_ip_hlen: the IP header's length
	TCPHLen   uint8     // ipi_tcp_hlen: the TCP header's length
	IPProto   uint8     // ipi_ipproto: the L4 protocol (6 TCP, 17 UDP)
	IPTos     uint8     // ipi_ip_tos: the IP TOS / traffic class byte
	EType     uint16    // ipi_etype: the EtherType after any VLAN header
	CsumFlags CsumFlags // ipi_csum_flags: the offloads asked (CSUM_*), TSO included
	// TSOSegSize is ipi_tso_segsz: with TSO, the TCP payload bytes per
	// segment the device cuts (the MSS).
	TSOSegSize uint16
	VTag       uint16 // ipi_vtag: the VLAN tag to insert (M_VLANTAG)
	TCPHFlags  uint8  // ipi_tcp_hflags: the TCP flags of the header
	TCPSeq     uint32 // ipi_tcp_seq: the TCP sequence number of the header
	MFlags     MFlags // ipi_mflags: the packet's broadcast, multicast and VLAN flags
}

// RxdFrag is struct if_rxd_frag: one buffer of a received packet.
type RxdFrag struct {
	FLID uint8  // irf_flid: free-list id
	Idx  uint16 // irf_idx: software-descriptor slot in that free list
	Len  uint16 // irf_len: bytes in this buffer
	// Off (goiflib) is the offset of this fragment's data in its buffer:
	// 0 for every FreeBSD driver (the data starts at the cluster, after
	// RxdInfo.Pad in the first one); an AF_XDP multi-buffer frame starts
	// each fragment at its own offset in its UMEM chunk. Off + Len (plus
	// the pad in the first fragment) must fit the buffer.
	Off uint32
}

// RxdInfo is struct if_rxd_info: one received packet as the driver
// describes it to RxdPktGet.
//
// Lengths follow FreeBSD: each fragment's Len (irf_len) counts the frame
// bytes in that buffer, without the pad; Pad (iri_pad) bytes come before
// the frame in the first buffer; Len (iri_len) = Pad + the fragments'
// lengths. A driver that does not pad (most) leaves Pad 0 and Len the sum.
type RxdInfo struct {
	QSIdx int // iri_qsidx (iflib): the RX queue
	// VTag is iri_vtag (driver): the VLAN tag the device stripped; set
	// MVLANTag in Flags with it.
	VTag uint16
	Len  int // iri_len (driver): Pad + the fragments' lengths
	// CIdx is iri_cidx (iflib): the descriptor to read. Drivers with a
	// completion queue advance it; here it is the free list's consumer index.
	CIdx int
	// Frags is iri_frags: iflib provides MaxRxSegs entries; the driver
	// fills the first NFrags, each naming a posted buffer by free list and
	// slot (the Idxs iflib gave RxdRefill) and its length.
	Frags []RxdFrag
	// NFrags is iri_nfrags (driver): buffers used; 0 means a completion
	// without a packet (nothing is consumed).
	NFrags    int
	FlowID    uint32    // iri_flowid (driver): the RSS hash, for queue selection and sorting
	CsumFlags CsumFlags // iri_csum_flags (driver): CsumL3Calc|CsumL3Valid|CsumL4Calc|CsumL4Valid results
	CsumData  uint32    // iri_csum_data (driver): 0xffff with a valid L4 checksum
	Flags     MFlags    // iri_flags (driver): MVLANTag, MBcast, MMcast
	RSSType   HashType  // iri_rsstype (driver): how FlowID was computed
	Pad       int       // iri_pad (driver): bytes before the frame in the first buffer
	// Discard (goiflib; driver) says the device flagged the frame as bad
	// (CRC, length or symbol error in the descriptor's error field): iflib
	// consumes its buffers, reposts them without a reload, and counts the
	// frame in ierrors and rx_discards instead of delivering it. This is how
	// Linux drivers treat frame errors. FreeBSD's em and igb instead return
	// EBADMSG from RxdPktGet, which makes iflib reset the interface; a
	// driver may do either.
	Discard bool
}

// RxdUpdate is struct if_rxd_update: a batch of buffers for RxdRefill.
type RxdUpdate struct {
	PAddrs  []busdma.BusAddr // iru_paddrs: fl->ifl_bus_addrs
	Idxs    []uint16         // iru_idxs: fl->ifl_rxd_idxs (software slots)
	PIdx    int              // iru_pidx: first ring position
	QSIdx   int              // iru_qsidx
	Count   int              // iru_count (≤ MaxRxRefresh)
	BufSize int              // iru_buf_size
	FLIdx   int              // iru_flidx
}
