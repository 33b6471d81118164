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
// Context.TransmitBatch (Options.PerPacket: Transmit each). A host-GSO
// packet the device cannot cut (TCP over IPv6 without CSUM_IP6_TSO) is cut
// into segments here (TxSoftGSO). It returns how many frames iflib
// accepted. The gVisor packets stay the caller's: nothing is kept after
// the call. Every frame not accepted is counted once: in TxLinkDown (not
// handed to iflib: unbound, closed, stopped, detached or link down),
// TxNoZone (no packet in the zone for TxWait), or TxRefused (iflib refused
// it, freed it and counted it in oqdrops or oerrors).
//
// A link that is down or an interface that is not running (stopped, or
// in the middle of a reset) is a state that passes: the frames are
// dropped as a NIC without carrier drops them, counted in TxLinkDown, and
// reported to the stack as written, so that gVisor retries as it does
// for any frame lost on the wire (ARP's probes, TCP's retransmissions).
// An error here would make gVisor's neighbour entry fail at once with
// "no route to host" (its first probe's write failed), which a link flap
// or a watchdog reset must not do. A detached context is the same (Bind
// may give the endpoint the NIC's next context). Only an endpoint that is
// not bound or was closed by the stack returns ErrClosedForSend.
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	list := pkts.AsSlice()
	ic := e.ic.Load()
	if ic == nil || e.closed.Load() {
		e.st.add(txLinkDown, uint64(len(list)))
		return 0, &tcpip.ErrClosedForSend{}
	}
	if !ic.Running() || ic.LinkState() != iflib.LinkStateUp {
		e.st.add(txLinkDown, uint64(len(list)))
		return len(list), nil
	}
	bp := e.batches.Get().(*[]*iflib.Packet)
	w := txWork{e: e, ic: ic, batch: (*bp)[:0], on: e.enabled(ic)}
	for _, pkt := range list {
		if mss, ok := e.softGSO(pkt, w.on); ok {
			w.err(e.segment(pkt, mss, &w))
			continue
		}
		m, err := e.frame(pkt, w.on)
		if err != nil {
			w.err(err)
			continue
		}
		w.put(m)
	}
	w.flush()
	*bp = w.batch[:0]
	e.batches.Put(bp)
	return w.sent, w.terr
}

// txWork is one WritePackets call's batch and results.
type txWork struct {
	e     *Endpoint
	ic    *iflib.Context
	batch []*iflib.Packet
	sent  int
	terr  tcpip.Error
	on    offloads // the offloads the context has enabled now
}

// offloads is what the device does for this call's frames.
type offloads struct {
	csum iflib.CsumFlags // the checksums it inserts
	tso  bool            // it cuts IPv4 TCP (CSUM_IP_TSO)
}

// enabled narrows the offloads fixed at the first Bind (what gVisor was
// told) to those ic has enabled now: SIOCSIFCAP (Context.SetCapEnable)
// may turn one off at any time, and iflib then refuses a packet that asks
// for it (ErrOffloadDisabled). A checksum the device no longer inserts is
// computed here; a host-GSO packet it no longer cuts is cut here.
func (e *Endpoint) enabled(ic *iflib.Context) offloads {
	return offloads{csum: e.txCsum, tso: e.tso}.narrow(ic.CapEnabled())
}

// narrow keeps of o what the capabilities caps enable.
func (o offloads) narrow(caps iflib.Capabilities) offloads {
	if caps&iflib.CapTxCsum == 0 {
		o.csum &^= iflib.CsumIPTCP | iflib.CsumIPUDP
	}
	if caps&iflib.CapTxCsumIPv6 == 0 {
		o.csum &^= iflib.CsumIP6TCP | iflib.CsumIP6UDP
	}
	if caps&iflib.CapTSO4 == 0 || o.csum&iflib.CsumIPTCP == 0 {
		o.tso = false
	}
	return o
}

func (w *txWork) err(err tcpip.Error) {
	if err != nil {
		w.terr = err
	}
}

// put queues a frame for iflib (or, with Options.PerPacket, sends it).
func (w *txWork) put(m *iflib.Packet) {
	if w.e.opts.PerPacket {
		n := m.Hdr.Len
		if err := w.ic.Transmit(m); err != nil {
			w.e.st.add(txRefused, 1)
			if te := transmitError(err); te != nil {
				w.terr = te
			} else {
				w.sent++ // lost to a link that went down: as written
			}
			return
		}
		w.e.st.add(txPackets, 1)
		w.e.st.add(txBytes, uint64(n))
		w.sent++
		return
	}
	w.batch = append(w.batch, m)
	if len(w.batch) == batchMax {
		w.flush()
	}
}

func (w *txWork) flush() {
	if len(w.batch) == 0 {
		return
	}
	n, err := w.e.transmit(w.ic, w.batch)
	w.sent += n
	w.err(err)
	w.batch = w.batch[:0]
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
		if te := transmitError(err); te != nil {
			return n, te
		}
		return len(batch), nil // lost to a link that went down: as written
	}
	return n, nil
}

// transmitError maps iflib's Transmit errors to the stack's: ENOBUFS to no
// buffer space, a packet too large to EMSGSIZE, and ENETDOWN (the
// interface stopped or began a reset after WritePackets looked) to none:
// the frame is lost as on a link without carrier (see WritePackets).
func transmitError(err error) tcpip.Error {
	switch {
	case errors.Is(err, iflib.ErrNotRunning):
		return nil
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
func (e *Endpoint) frame(pkt *stack.PacketBuffer, on offloads) (*iflib.Packet, tcpip.Error) {
	m, err := e.get()
	if err != nil {
		e.st.add(txNoZone, 1)
		return nil, &tcpip.ErrNoBufferSpace{}
	}
	if _, err := e.appendRange(m, pkt, 0, pkt.Size()); err != nil {
		m.Free()
		e.st.add(txNoZone, 1)
		return nil, &tcpip.ErrNoBufferSpace{}
	}
	m.Hdr.Len = pkt.Size()
	e.hash(pkt, m)
	e.offload(pkt, m, on)
	return m, nil
}

// hash passes the flow's transmit hash: iflib spreads flows over the TX
// queues by it and keeps each flow's order.
func (e *Endpoint) hash(pkt *stack.PacketBuffer, m *iflib.Packet) {
	if pkt.Hash != 0 {
		m.Hdr.FlowID, m.Hdr.HashType = pkt.Hash, iflib.HashOpaque
	}
}

// appendRange copies n bytes of pkt, from byte off of the frame (the link
// header is byte 0), after the data of the chain ending at tail, taking
// more zone packets as clusters fill; it returns the new tail. On an empty
// zone the chain keeps what it got (the caller frees it).
func (e *Endpoint) appendRange(tail *iflib.Packet, pkt *stack.PacketBuffer, off, n int) (*iflib.Packet, error) {
	vl, skip := pkt.AsViewList()
	skip += off
	for v := vl.Front(); v != nil && n > 0; v = v.Next() {
		b := v.AsSlice()
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		b, skip = b[skip:], 0
		if len(b) > n {
			b = b[:n]
		}
		n -= len(b)
		for {
			b = b[tail.Append(b):]
			if len(b) == 0 {
				break
			}
			next, err := e.get()
			if err != nil {
				return tail, err
			}
			tail.Next, tail = next, next
		}
	}
	return tail, nil
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

// l4 is what offload needs of a TCP or UDP packet: where its checksum
// field lies, its pseudo-header, and the offload flag for it.
type l4 struct {
	l2, l3, hdr int // link, network and transport header lengths
	csumOff     int // the checksum field's offset in the transport header
	proto       tcpip.TransportProtocolNumber
	src, dst    tcpip.Address
	flag        iflib.CsumFlags // CSUM_IP_TCP, CSUM_IP_UDP, CSUM_IP6_TCP or CSUM_IP6_UDP
	v6          bool
}

// parseL4 reads pkt's headers; ok is false for anything but unfragmented
// TCP or UDP over IPv4 or IPv6.
func parseL4(pkt *stack.PacketBuffer) (h l4, ok bool) {
	switch pkt.TransportProtocolNumber {
	case header.TCPProtocolNumber:
		h.csumOff = header.TCPChecksumOffset
	case header.UDPProtocolNumber:
		h.csumOff = udpChecksumOffset
	default:
		return h, false
	}
	h.proto = pkt.TransportProtocolNumber
	net := pkt.NetworkHeader().Slice()
	h.l2, h.l3, h.hdr = len(pkt.LinkHeader().Slice()), len(net), len(pkt.TransportHeader().Slice())
	tcp := h.proto == header.TCPProtocolNumber
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(net)
		if ip.FragmentOffset() != 0 || ip.Flags()&header.IPv4FlagMoreFragments != 0 {
			return h, false
		}
		h.src, h.dst = ip.SourceAddress(), ip.DestinationAddress()
		h.flag = iflib.CsumIPUDP
		if tcp {
			h.flag = iflib.CsumIPTCP
		}
	case header.IPv6ProtocolNumber:
		ip := header.IPv6(net)
		h.src, h.dst, h.v6 = ip.SourceAddress(), ip.DestinationAddress(), true
		h.flag = iflib.CsumIP6UDP
		if tcp {
			h.flag = iflib.CsumIP6TCP
		}
	default:
		return h, false
	}
	return h, true
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
func (e *Endpoint) offload(pkt *stack.PacketBuffer, m *iflib.Packet, on offloads) {
	gso := pkt.GSOOptions
	hostGSO := gso.Type == stack.GSOTCPv4 || gso.Type == stack.GSOTCPv6
	if !hostGSO && e.caps&stack.CapabilityTXChecksumOffload == 0 {
		return // gVisor computed every checksum
	}
	h, ok := parseL4(pkt)
	if !ok {
		return
	}
	l4len := pkt.Size() - h.l2 - h.l3
	if on.tso && gso.Type == stack.GSOTCPv4 && l4len-h.hdr > int(gso.MSS) {
		m.Hdr.CsumFlags, m.Hdr.TSOSegSize = iflib.CsumIPTSO, gso.MSS
		e.st.add(txTSO, 1)
		return
	}
	e.checksum(m, h, l4len, on)
}

// checksum sets the L4 checksum of frame m (headers h, l4len bytes from
// the transport header on): the device's when it inserts it, else
// computed over the copy, as gVisor would have.
func (e *Endpoint) checksum(m *iflib.Packet, h l4, l4len int, on offloads) {
	pos := h.l2 + h.l3 + h.csumOff
	head := m.Bytes()
	if pos+2 > len(head) {
		return // headers beyond the first buffer: not with ≥256-byte clusters
	}
	pseudo := header.PseudoHeaderChecksum(h.proto, h.src, h.dst, uint16(l4len))
	if on.csum&h.flag != 0 {
		binary.BigEndian.PutUint16(head[pos:], pseudo)
		m.Hdr.CsumFlags |= h.flag
		e.st.add(txCsumOffload, 1)
		return
	}
	head[pos], head[pos+1] = 0, 0
	var c checksum.Checksumer
	skip := h.l2 + h.l3
	for p := m; p != nil; p = p.Next {
		b := p.Bytes()
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		c.Add(b[skip:])
		skip = 0
	}
	sum := ^checksum.Combine(c.Checksum(), pseudo)
	if sum == 0 && h.proto == header.UDPProtocolNumber {
		sum = 0xffff // RFC 768: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(head[pos:], sum)
	e.st.add(txCsumSoftware, 1)
}

// softGSO says whether pkt is a host-GSO packet longer than one segment
// that the device cannot cut (TCP over IPv6: the endpoint maps only IPv4
// GSO to TSO; TCP over IPv4 once TSO4 is disabled), and its segment size.
func (e *Endpoint) softGSO(pkt *stack.PacketBuffer, on offloads) (mss int, ok bool) {
	gso := pkt.GSOOptions
	if gso.MSS == 0 || (gso.Type != stack.GSOTCPv6 && (gso.Type != stack.GSOTCPv4 || on.tso)) {
		return 0, false
	}
	hlen := len(pkt.LinkHeader().Slice()) + len(pkt.NetworkHeader().Slice()) + len(pkt.TransportHeader().Slice())
	return int(gso.MSS), pkt.Size()-hlen > int(gso.MSS)
}

// segment cuts a host-GSO TCP packet into MSS-sized segments itself, as
// the device would have (em_tso_setup's rules): each gets a copy of the
// headers with its own length, sequence number and checksum; FIN and PSH
// only on the last, CWR only on the first.
func (e *Endpoint) segment(pkt *stack.PacketBuffer, mss int, w *txWork) tcpip.Error {
	h, ok := parseL4(pkt)
	if !ok || h.proto != header.TCPProtocolNumber {
		return &tcpip.ErrNotSupported{}
	}
	hlen := h.l2 + h.l3 + h.hdr
	payload := pkt.Size() - hlen
	th := header.TCP(pkt.TransportHeader().Slice())
	seq0, flags := th.SequenceNumber(), th.Flags()
	e.st.add(txSoftGSO, 1)
	for off := 0; off < payload; off += mss {
		n := min(mss, payload-off)
		m, err := e.get()
		if err != nil {
			e.st.add(txNoZone, 1)
			return &tcpip.ErrNoBufferSpace{}
		}
		tail, err := e.appendRange(m, pkt, 0, hlen)
		if err == nil {
			_, err = e.appendRange(tail, pkt, hlen+off, n)
		}
		if err != nil || len(m.Bytes()) < hlen {
			m.Free()
			e.st.add(txNoZone, 1)
			return &tcpip.ErrNoBufferSpace{}
		}
		f := m.Bytes()
		ip := f[h.l2:]
		if h.v6 {
			binary.BigEndian.PutUint16(ip[4:6], uint16(h.l3-header.IPv6MinimumSize+h.hdr+n))
		} else {
			v4 := header.IPv4(ip)
			v4.SetTotalLength(uint16(h.l3 + h.hdr + n))
			v4.SetID(v4.ID() + uint16(off/mss))
			v4.SetChecksum(0)
			v4.SetChecksum(^v4.CalculateChecksum())
		}
		t := header.TCP(f[h.l2+h.l3:])
		t.SetSequenceNumber(seq0 + uint32(off))
		fl := flags
		if off+n < payload {
			fl &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if off > 0 {
			fl &^= header.TCPFlagCwr
		}
		t.SetFlags(uint8(fl))
		m.Hdr.Len = hlen + n
		e.hash(pkt, m)
		e.checksum(m, h, h.hdr+n, w.on)
		w.put(m)
	}
	return nil
}
