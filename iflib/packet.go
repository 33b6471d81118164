package iflib

import "sync/atomic"

// MFlags are the mbuf flags iflib passes through (ipi_mflags keeps
// M_VLANTAG|M_BCAST|M_MCAST).
type MFlags uint16

const (
	MBcast   MFlags = 1 << iota // M_BCAST
	MMcast                      // M_MCAST
	MVLANTag                    // M_VLANTAG: VLANTag is valid
)

// HashType is M_HASHTYPE_*: how FlowID was computed. Zero means "no hash":
// such packets go to TX queue 0 (iflib_if_transmit) and are not spread.
type HashType uint8

const (
	HashNone       HashType = 0    // M_HASHTYPE_NONE
	HashOpaque     HashType = 1    // M_HASHTYPE_OPAQUE
	HashRSSIPv4    HashType = 0x81 // M_HASHTYPE_RSS_IPV4
	HashRSSTCPv4   HashType = 0x82 // M_HASHTYPE_RSS_TCP_IPV4
	HashRSSUDPv4   HashType = 0x87 // M_HASHTYPE_RSS_UDP_IPV4
	HashRSSIPv6    HashType = 0x83 // M_HASHTYPE_RSS_IPV6
	HashRSSTCPv6   HashType = 0x84 // M_HASHTYPE_RSS_TCP_IPV6
	HashRSSUDPv6   HashType = 0x89 // M_HASHTYPE_RSS_UDP_IPV6
	HashRSSIPv6Ex  HashType = 0x85 // M_HASHTYPE_RSS_IPV6_EX
	HashRSSTCPv6Ex HashType = 0x86 // M_HASHTYPE_RSS_TCP_IPV6_EX
	HashRSSUDPv6Ex HashType = 0x8a // M_HASHTYPE_RSS_UDP_IPV6_EX
	HashOpaqueRSS  HashType = 0x41 // M_HASHTYPE_OPAQUE_HASH
)

// CsumFlags are m_pkthdr.csum_flags: offload requests on TX, results on RX.
//
// The TX offload contract (what the stack above must do, as FreeBSD's
// stack does before if_transmit):
//   - CSUM_IP (IPv4 header checksum): the stack may leave ip_sum 0; the
//     device fills it in.
//   - CSUM_IP_TCP/UDP, CSUM_IP6_TCP/UDP: the stack seeds the L4 checksum
//     field with the pseudo-header sum (addresses, protocol and L4 length,
//     not complemented: in_pseudo / in6_cksum_pseudo); the device adds the
//     L4 header and payload. iflib does not read CsumData on TX.
//   - CSUM_IP_TSO, CSUM_IP6_TSO: PktHdr.TSOSegSize is the TCP payload per
//     segment (the MSS, > 0) and the packet must carry payload after its
//     TCP header (else ErrTSONoPayload); iflib_parse_header's work is done
//     here: it writes the pseudo-header sum without the length into th_sum
//     and implies the TCP (and IPv4 header) checksum offloads; with
//     IFLIB_TSO_INIT_IP it also sets the IPv4 length and zeroes ip_sum.
//     A TSO packet is counted as the segments the device sends.
//   - An offload the device does not offer (SoftcCtx.TxCsumFlags) or that
//     is not enabled (Context.CapEnabled) is refused with
//     ErrOffloadDisabled; headers iflib cannot parse are ErrBadHeader.
//
// On RX the driver reports CSUM_L3_CALC/VALID and CSUM_L4_CALC/VALID (and
// CsumData 0xffff for a verified L4 checksum), withheld by iflib for an IP
// version whose RX checksum capability is disabled.
type CsumFlags uint32

const (
	CsumIP        CsumFlags = 0x00000001 // CSUM_IP: IPv4 header checksum
	CsumIPUDP     CsumFlags = 0x00000002 // CSUM_IP_UDP
	CsumIPTCP     CsumFlags = 0x00000004 // CSUM_IP_TCP
	CsumIPTSO     CsumFlags = 0x00000010 // CSUM_IP_TSO
	CsumIP6UDP    CsumFlags = 0x00000200 // CSUM_IP6_UDP
	CsumIP6TCP    CsumFlags = 0x00000400 // CSUM_IP6_TCP
	CsumIP6TSO    CsumFlags = 0x00001000 // CSUM_IP6_TSO
	CsumL3Calc    CsumFlags = 0x01000000 // CSUM_L3_CALC (RX)
	CsumL3Valid   CsumFlags = 0x02000000 // CSUM_L3_VALID (RX)
	CsumL4Calc    CsumFlags = 0x04000000 // CSUM_L4_CALC (RX)
	CsumL4Valid   CsumFlags = 0x08000000 // CSUM_L4_VALID (RX)
	CsumTSO                 = CsumIPTSO | CsumIP6TSO
	csumOffloadTx           = CsumIP | CsumIPUDP | CsumIPTCP | CsumIP6UDP | CsumIP6TCP | CsumTSO
)

// PktHdr is the part of struct pkthdr iflib reads and writes. It is valid on
// the first buffer of a chain only.
type PktHdr struct {
	// Len is m_pkthdr.len: the bytes in the whole chain. On TX, 0 means
	// "fill it in": Transmit sets it to the sum of the buffers' lengths;
	// any other value must equal that sum (else ErrBadLength).
	Len        int
	Flags      MFlags    // m_flags & (M_BCAST|M_MCAST|M_VLANTAG)
	VLANTag    uint16    // ether_vtag
	FlowID     uint32    // flowid
	HashType   HashType  // M_HASHTYPE_GET
	CsumFlags  CsumFlags // csum_flags: offloads asked (TX) or results (RX); the contract is on CsumFlags
	CsumData   uint32    // csum_data
	TSOSegSize uint16    // tso_segsz: with CSUM_IP_TSO/CSUM_IP6_TSO, the TCP payload bytes per segment (> 0)
	RxQueue    uint16    // the RX queue the packet arrived on (rcvif's queue)
}

// Packet is a struct mbuf with an attached cluster, as FreeBSD's packet
// zone (zone_pack) hands them out: each Packet owns one cluster of its
// Zone's size for life. A multi-buffer packet is a chain linked by Next
// (m_next); the packet header lives on the head.
//
// Ownership: a Packet from [Zone.Get] belongs to the caller until it passes
// it to [Context.Transmit] (then iflib's) or frees it with [Packet.Free].
// A Packet is not safe for concurrent use.
type Packet struct {
	Next *Packet // m_next: the next buffer of the same packet
	Hdr  PktHdr  // m_pkthdr (head only)

	cl   []byte // the cluster: DMA-capable memory of the zone's space
	off  int    // m_data - cluster start
	n    int    // m_len
	zone *Zone
	free atomic.Bool // true while in the zone or a cache: double frees and uses after free are caught
	idx  int32       // the packet's index in its zone (its debug-mode free site)
}

// Bytes returns the buffer's data (m_data, m_len). It aliases the cluster.
func (p *Packet) Bytes() []byte { return p.cl[p.off : p.off+p.n] }

// Len is m_len: the bytes in this buffer only.
func (p *Packet) Len() int { return p.n }

// Cap is the bytes this buffer can still take after its data (M_TRAILINGSPACE).
func (p *Packet) Cap() int { return len(p.cl) - p.off - p.n }

// Headroom is M_LEADINGSPACE.
func (p *Packet) Headroom() int { return p.off }

// ClusterSize is the size of the buffer's cluster.
func (p *Packet) ClusterSize() int { return len(p.cl) }

// Reset empties the buffer and leaves headroom bytes in front of the data.
// A headroom outside the cluster is clamped.
func (p *Packet) Reset(headroom int) {
	if headroom < 0 {
		headroom = 0
	}
	if headroom > len(p.cl) {
		headroom = len(p.cl)
	}
	p.off, p.n = headroom, 0
}

// Append copies b after the data and returns how many bytes fit (m_append
// into one buffer; it never allocates a new buffer).
func (p *Packet) Append(b []byte) int {
	c := copy(p.cl[p.off+p.n:], b)
	p.n += c
	return c
}

// SetLen sets m_len, clamped to the cluster; the bytes are not cleared.
func (p *Packet) SetLen(n int) {
	if n < 0 {
		n = 0
	}
	if max := len(p.cl) - p.off; n > max {
		n = max
	}
	p.n = n
}

// ChainLen sums m_len over the chain (what m_pkthdr.len must equal). It
// stops after MaxChainBufs buffers (a cyclic chain would never end), so a
// chain longer than that, which Transmit refuses, gives a partial sum.
func (p *Packet) ChainLen() int {
	t, n := 0, 0
	for q := p; q != nil && n < MaxChainBufs; q = q.Next {
		t += q.n
		n++
	}
	return t
}

// NumBufs counts the buffers in the chain, at most MaxChainBufs + 1 (a
// cyclic chain gives that).
func (p *Packet) NumBufs() int {
	c := 0
	for q := p; q != nil && c <= MaxChainBufs; q = q.Next {
		c++
	}
	return c
}

// Free returns every buffer of the chain to its zone (m_freem). A packet
// that no zone handed out (a Packet literal) is left alone; freeing a free
// packet is ignored and counted in its zone's DoubleFrees.
func (p *Packet) Free() {
	for p != nil {
		next := p.Next
		if p.zone == nil {
			return
		}
		if p.free.Load() {
			// Do not follow Next: a free packet's chain pointer is stale.
			p.zone.release(p)
			return
		}
		p.zone.put(p)
		p = next
	}
}
