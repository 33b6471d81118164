package ifliblink

import (
	"context"
	"encoding/binary"
	"errors"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/iflib"
)

// WritePackets implements stack.LinkWriter: each packet is copied into a
// packet from the TX zone (chained when it does not fit one cluster), its
// offloads are set, and the batch goes to iflib with one
// Context.TransmitBatch (Options.PerPacket: Transmit each). It returns how
// many iflib accepted. The gVisor packets stay the caller's: nothing is
// kept after the call. Every packet not accepted is counted once: in
// TxLinkDown (not handed to iflib: unbound, closed, stopped, detached or
// link down), TxNoZone (no packet in the zone for TxWait), or TxRefused
// (iflib refused it, freed it and counted it in oqdrops or oerrors).
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	list := pkts.AsSlice()
	ic := e.ic.Load()
	if ic == nil || e.closed.Load() || !ic.Running() || ic.LinkState() != iflib.LinkStateUp {
		e.st.add(txLinkDown, uint64(len(list)))
		return 0, &tcpip.ErrClosedForSend{}
	}
	bp := e.batches.Get().(*[]*iflib.Packet)
	batch := (*bp)[:0]
	sent := 0
	var terr tcpip.Error
	for _, pkt := range list {
		m, err := e.frame(pkt)
		if err != nil {
			terr = err
			continue
		}
		if e.opts.PerPacket {
			n := m.Hdr.Len
			if err := ic.Transmit(m); err != nil {
				e.st.add(txRefused, 1)
				terr = transmitError(err)
				continue
			}
			e.st.add(txPackets, 1)
			e.st.add(txBytes, uint64(n))
			sent++
			continue
		}
		batch = append(batch, m)
		if len(batch) == batchMax {
			n, err := e.transmit(ic, batch)
			sent += n
			if err != nil {
				terr = err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		n, err := e.transmit(ic, batch)
		sent += n
		if err != nil {
			terr = err
		}
	}
	*bp = batch[:0]
	e.batches.Put(bp)
	return sent, terr
}

// transmit hands a batch to iflib. TxBytes counts the bytes handed over:
// TransmitBatch says how many packets it accepted, not which, so the
// bytes of a refused packet cannot be taken back out.
func (e *Endpoint) transmit(ic *iflib.Context, batch []*iflib.Packet) (int, tcpip.Error) {
	var bytes uint64
	for _, m := range batch {
		bytes += uint64(m.Hdr.Len)
	}
	e.st.add(txBytes, bytes)
	n, err := ic.TransmitBatch(batch)
	e.st.add(txPackets, uint64(n))
	if err != nil {
		e.st.add(txRefused, uint64(len(batch)-n))
		return n, transmitError(err)
	}
	return n, nil
}

// transmitError maps iflib's Transmit errors to the stack's: ENETDOWN to a
// closed link, ENOBUFS to no buffer space, a packet too large to EMSGSIZE.
func transmitError(err error) tcpip.Error {
	switch {
	case errors.Is(err, iflib.ErrNotRunning):
		return &tcpip.ErrClosedForSend{}
	case errors.Is(err, iflib.ErrTooBig):
		return &tcpip.ErrMessageTooLong{}
	default:
		return &tcpip.ErrNoBufferSpace{}
	}
}

// frame copies pkt into a zone packet (chained as needed) and sets its
// header and offloads. This is the one TX copy: iflib sends only packets
// of a zone on the device's address space, and gVisor keeps its own
// buffers (TCP retransmits from them), so neither side can take the
// other's memory.
func (e *Endpoint) frame(pkt *stack.PacketBuffer) (*iflib.Packet, tcpip.Error) {
	m, err := e.get()
	if err != nil {
		e.st.add(txNoZone, 1)
		return nil, &tcpip.ErrNoBufferSpace{}
	}
	vl, off := pkt.AsViewList()
	tail := m
	for v := vl.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b, off = b[off:], 0
		for {
			b = b[tail.Append(b):]
			if len(b) == 0 {
				break
			}
			next, err := e.get()
			if err != nil {
				m.Free()
				e.st.add(txNoZone, 1)
				return nil, &tcpip.ErrNoBufferSpace{}
			}
			tail.Next, tail = next, next
		}
	}
	m.Hdr.Len = pkt.Size()
	if pkt.Hash != 0 {
		// The flow's transmit hash: iflib spreads flows over the TX queues
		// by it and keeps each flow's order.
		m.Hdr.FlowID, m.Hdr.HashType = pkt.Hash, iflib.HashOpaque
	}
	e.offload(pkt, m)
	return m, nil
}

// get is m_getcl for one TX buffer: at once, or waiting up to TxWait for
// the zone to refill (iflib frees sent packets on reclaim, which lags).
func (e *Endpoint) get() (*iflib.Packet, error) {
	m, err := e.zone.Get()
	if err == nil || e.txWait < 0 {
		return m, err
	}
	e.st.add(txZoneWaits, 1)
	c, cancel := context.WithTimeout(context.Background(), e.txWait)
	defer cancel()
	return e.zone.GetWait(c)
}

// offload finishes the TCP or UDP checksum gVisor left to the link (it
// leaves it when the endpoint claims TX checksum offload, and for host GSO
// it stores the pseudo-header sum, Linux's CHECKSUM_PARTIAL):
//
//   - a TCP packet longer than one segment under host GSO becomes a TSO
//     packet (CSUM_IP_TSO, tso_segsz = the MSS; iflib_parse_header seeds
//     th_sum without the length);
//   - if the device inserts this protocol's checksum: the pseudo-header sum
//     (with the length) goes into the field and CSUM_IP_TCP/UDP (or the
//     IPv6 flags) is asked, as the offload contract wants;
//   - else the endpoint computes the checksum over the copy.
//
// IPv4 fragments are left alone: gVisor never fragments TCP, and a UDP
// datagram it fragments with offload claimed carries a zero checksum,
// which IPv4 allows ("no checksum").
func (e *Endpoint) offload(pkt *stack.PacketBuffer, m *iflib.Packet) {
	gso := pkt.GSOOptions
	hostGSO := gso.Type == stack.GSOTCPv4 || gso.Type == stack.GSOTCPv6
	if !hostGSO && e.caps&stack.CapabilityTXChecksumOffload == 0 {
		return // gVisor computed every checksum
	}
	var csumOff int
	switch pkt.TransportProtocolNumber {
	case header.TCPProtocolNumber:
		csumOff = header.TCPChecksumOffset
	case header.UDPProtocolNumber:
		csumOff = udpChecksumOffset
	default:
		return
	}
	net := pkt.NetworkHeader().Slice()
	l2, l3 := len(pkt.LinkHeader().Slice()), len(net)
	l4len := pkt.Size() - l2 - l3
	var src, dst tcpip.Address
	var flag iflib.CsumFlags
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(net)
		if ip.FragmentOffset() != 0 || ip.Flags()&header.IPv4FlagMoreFragments != 0 {
			return
		}
		src, dst = ip.SourceAddress(), ip.DestinationAddress()
		flag = iflib.CsumIPTCP
		if pkt.TransportProtocolNumber == header.UDPProtocolNumber {
			flag = iflib.CsumIPUDP
		}
	case header.IPv6ProtocolNumber:
		ip := header.IPv6(net)
		src, dst = ip.SourceAddress(), ip.DestinationAddress()
		flag = iflib.CsumIP6TCP
		if pkt.TransportProtocolNumber == header.UDPProtocolNumber {
			flag = iflib.CsumIP6UDP
		}
	default:
		return
	}
	if e.tso && hostGSO && gso.Type == stack.GSOTCPv4 {
		if th := pkt.TransportHeader().Slice(); l4len-len(th) > int(gso.MSS) {
			m.Hdr.CsumFlags, m.Hdr.TSOSegSize = iflib.CsumIPTSO, gso.MSS
			e.st.add(txTSO, 1)
			return
		}
	}
	pos := l2 + l3 + csumOff
	head := m.Bytes()
	if pos+2 > len(head) {
		return // headers beyond the first buffer: cannot happen with ≥256-byte clusters and IPv4
	}
	if e.txCsum&flag != 0 {
		seed := header.PseudoHeaderChecksum(pkt.TransportProtocolNumber, src, dst, uint16(l4len))
		binary.BigEndian.PutUint16(head[pos:], seed)
		m.Hdr.CsumFlags |= flag
		e.st.add(txCsumOffload, 1)
		return
	}
	// The device cannot: the checksum over the copy, as gVisor would have.
	head[pos], head[pos+1] = 0, 0
	var c checksum.Checksumer
	skip := l2 + l3
	for p := m; p != nil; p = p.Next {
		b := p.Bytes()
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		c.Add(b[skip:])
		skip = 0
	}
	sum := ^checksum.Combine(c.Checksum(), header.PseudoHeaderChecksum(pkt.TransportProtocolNumber, src, dst, uint16(l4len)))
	if sum == 0 && pkt.TransportProtocolNumber == header.UDPProtocolNumber {
		sum = 0xffff // RFC 768: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(head[pos:], sum)
	e.st.add(txCsumSoftware, 1)
}
