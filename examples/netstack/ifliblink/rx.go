package ifliblink

import (
	"encoding/binary"
	"math/bits"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/iflib"
)

// udpChecksumOffset is uh_sum's offset in the UDP header.
const udpChecksumOffset = 6

// etherTypeVLAN is ETHERTYPE_VLAN (802.1Q).
const etherTypeVLAN = 0x8100

// Input is iflib's if_input for this endpoint: pass it as
// Attachment.Input. Each packet of the batch is checked, copied into a
// gVisor buffer, freed back to iflib at once, and delivered to the
// stack's NIC (DeliverNetworkPacket) on iflib's RX task, in arrival
// order. With Options.LRO, in-order TCP segments of one flow within the
// batch are merged into one first (large receive offload, see lro). The copy is the one the two ownership models force: gVisor's
// packets live in its own pooled chunks and it cannot wrap iflib's
// clusters, and iflib needs its clusters back to refill the ring.
//
// Dropped here and counted (the rest is gVisor's to judge and count in
// its own stats: malformed or bad-checksum IP, TCP and UDP, and unknown
// EtherTypes, which it counts per protocol): frames with no NIC attached
// (RxNoDispatcher), shorter than an Ethernet header (RxRunt), longer than
// the MTU (RxOverMTU), addressed to another station's unicast address
// (RxOtherHost: what a NIC's address filter drops), carrying a VLAN tag
// the device stripped (RxVLAN: the endpoint has no VLANs), or whose
// checksum the device found bad (RxBadCsum).
func (e *Endpoint) Input(_ *iflib.Context, qid int, pkts []*iflib.Packet) {
	dp := e.disp.Load()
	var l *lro
	if ls := e.lros.Load(); ls != nil && qid >= 0 && qid < len(*ls) && dp != nil {
		l = &(*ls)[qid]
	}
	rest := 0 // bytes of the batch after the current frame: what a merge could take
	if l != nil {
		for _, m := range pkts {
			rest += m.Hdr.Len
		}
	}
	for _, m := range pkts {
		n := m.ChainLen()
		rest -= m.Hdr.Len
		if c := e.drop(dp, m, n); c != counterNone {
			m.Free()
			e.st.add(c, 1)
			continue
		}
		if l != nil {
			h, ok := parseLRO(m.Bytes(), n)
			switch {
			case ok && l.matches(h):
				l.add(m, h)
				e.st.add(rxPackets, 1)
				e.st.add(rxBytes, uint64(n))
				e.st.add(rxCoalesced, 1)
				continue
			case l.v != nil:
				e.flushLRO(dp, l) // in arrival order: the merge before this frame
			}
			if ok && rest > 0 {
				l.start(m, n, h, min(n+rest, etherHdrLen+lroMaxIP, buffer.MaxChunkSize))
				e.st.add(rxPackets, 1)
				e.st.add(rxBytes, uint64(n))
				continue
			}
		}
		e.deliver(dp, m, n)
	}
	if l != nil && l.v != nil {
		e.flushLRO(dp, l)
	}
}

// flushLRO delivers the merge in l.
func (e *Endpoint) flushLRO(dp *dispatcher, l *lro) {
	v, _ := l.take()
	e.dispatch(dp, v)
}

// deliver copies frame m (n bytes) into a gVisor buffer, frees it, and
// hands it to the stack.
//
// gVisor's buffers come from pools of power-of-two chunks that it clears
// whole when it hands one out, so a 9014-byte jumbo frame in one view
// would clear 16 KiB to fill 9. A frame above splitAbove goes into two
// views instead: the largest power of two it fills, and the rest (9014:
// 8 KiB + 1 KiB cleared). The headers stay in the first view.
func (e *Endpoint) deliver(dp *dispatcher, m *iflib.Packet, n int) {
	first := n
	if n > splitAbove {
		first = 1 << (bits.Len(uint(n)) - 1)
	}
	// m_copydata; n is the chain's length, so both ranges are in bounds.
	v := buffer.NewViewSize(first)
	_ = m.CopyData(0, v.AsSlice())
	buf := buffer.MakeWithView(v)
	if first < n {
		w := buffer.NewViewSize(n - first)
		_ = m.CopyData(first, w.AsSlice())
		_ = buf.Append(w) // a fresh view: never fails
	}
	m.Free()
	e.st.add(rxPackets, 1)
	e.st.add(rxBytes, uint64(n))
	e.dispatchBuffer(dp, buf)
}

// splitAbove is the frame size above which deliver uses two views.
const splitAbove = 4096

// dispatch hands a frame in v (which it takes) to the stack's NIC.
func (e *Endpoint) dispatch(dp *dispatcher, v *buffer.View) {
	e.dispatchBuffer(dp, buffer.MakeWithView(v))
}

// dispatchBuffer hands a frame in buf (which it takes) to the stack's NIC.
func (e *Endpoint) dispatchBuffer(dp *dispatcher, buf buffer.Buffer) {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buf})
	hdr, _ := pkt.LinkHeader().Consume(etherHdrLen)
	eth := header.Ethernet(hdr)
	switch dst := eth.DestinationAddress(); {
	case dst == header.EthernetBroadcastAddress:
		pkt.PktType = tcpip.PacketBroadcast
	case header.IsMulticastEthernetAddress(dst):
		pkt.PktType = tcpip.PacketMulticast
	default:
		pkt.PktType = tcpip.PacketHost
	}
	dp.d.DeliverNetworkPacket(eth.Type(), pkt)
	pkt.DecRef()
}

// drop says which counter a frame is dropped under, or counterNone.
func (e *Endpoint) drop(dp *dispatcher, m *iflib.Packet, n int) counter {
	if dp == nil {
		return rxNoDispatcher
	}
	b := m.Bytes() // iflib's first buffer holds at least the Ethernet header of a whole frame
	if n < etherHdrLen || len(b) < etherHdrLen {
		return rxRunt
	}
	limit := int(e.MTU()) + etherHdrLen
	if binary.BigEndian.Uint16(b[12:14]) == etherTypeVLAN {
		limit += 4
	}
	if n > limit {
		return rxOverMTU
	}
	if b[0]&1 == 0 && !e.isOurs(b[:header.EthernetAddressSize]) {
		return rxOtherHost
	}
	if m.Hdr.Flags&iflib.MVLANTag != 0 {
		return rxVLAN
	}
	const l3 = iflib.CsumL3Calc | iflib.CsumL3Valid
	const l4 = iflib.CsumL4Calc | iflib.CsumL4Valid
	if f := m.Hdr.CsumFlags; f&l3 == iflib.CsumL3Calc || f&l4 == iflib.CsumL4Calc {
		return rxBadCsum
	}
	return counterNone
}
