package simnic

import (
	"encoding/binary"

	"github.com/goiflib/goiflib/internal/cksum"
)

// The offload engine (Config.Offload): TX checksum insertion and TCP
// segmentation driven by a TCP/IP context descriptor, VLAN tag insertion,
// and on RX checksum verification and VLAN stripping, after the PCI/PCI-X
// Family of Gigabit Ethernet Controllers SDM (§3.3.6–3.3.7 the context and
// data descriptors, §3.5 TCP segmentation, §3.2.3.1–3.2.3.2 the RX status
// and error bits).
//
// Checksum insertion: the device sums the bytes from CSS to CSE (or the
// end of the packet) as they are and stores the complement at CSO. So the
// stack zeroes the IPv4 header checksum and seeds the TCP/UDP checksum
// field with the pseudo-header sum (FreeBSD's in_pseudo), as the device
// does not add the pseudo-header itself. With TSO the seed must leave the
// length out: the device adds each segment's TCP length (iflib_parse_header
// writes th_sum = in_pseudo(src, dst, IPPROTO_TCP)).
//
// TCP segmentation: the header (HDRLEN bytes) is replicated in front of
// each MSS-sized piece of the PAYLEN payload bytes; the IPv4 total length
// and header checksum are recomputed and the identification incremented
// per segment, the TCP sequence number advanced by the payload before it;
// FIN and PSH are cleared but on the last segment and CWR but on the first
// (the 82599's default DTXTCPFLGL/H masks do the same for FIN and PSH). A
// context the device cannot carry out (PAYLEN not matching the data, an
// MSS that does not fit MaxFrame, offsets outside the packet) drops the
// packet whole, counted in TxBadContext (the TSCTFC register).

// TCP flags the segmentation adjusts.
const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpCWR = 0x80
)

// TSOMaxSize is the largest TSO packet the device takes: IP_MAXPACKET plus
// an Ethernet header with a VLAN tag (em's EM_TSO_SIZE).
const TSOMaxSize = 65535 + 18

// txChecksums inserts the checksums popts asks for into frame f under
// context c. With tso, the TCP length is added to the seeded pseudo-header
// sum and the IP header checksum field is zeroed first. It reports false
// when the context does not fit the frame.
func txChecksums(f []byte, c *txCtx, popts uint8, tso bool) bool {
	if popts&TxPoptsIXSM != 0 {
		s, o, e := int(c.ipcss), int(c.ipcso), int(c.ipcse)
		if e < s+19 || e >= len(f) || o < s || o+1 > e {
			return false
		}
		if tso {
			f[o], f[o+1] = 0, 0
		}
		binary.BigEndian.PutUint16(f[o:], ^cksum.Fold(cksum.Sum(f[s:e+1], 0)))
	}
	if popts&TxPoptsTXSM != 0 {
		s, o, e := int(c.tucss), int(c.tucso), len(f)
		if c.tucse != 0 {
			e = int(c.tucse) + 1
		}
		if s >= e || e > len(f) || o < s || o+2 > e {
			return false
		}
		sum := cksum.Sum(f[s:e], 0)
		if tso {
			sum += uint64(e - s)
		}
		ck := ^cksum.Fold(sum)
		if c.tucmd&TxTucmdTCP == 0 && ck == 0 {
			ck = 0xffff // UDP: 0 means "no checksum"
		}
		binary.BigEndian.PutUint16(f[o:], ck)
	}
	return true
}

// insertVLAN inserts an 802.1Q tag after the MAC addresses of f[:n] in
// buf (which has 4 bytes of room) and returns the tagged frame.
func insertVLAN(buf []byte, n int, vlan uint16) []byte {
	out := buf[:n+4]
	copy(out[16:], out[12:n])
	binary.BigEndian.PutUint16(out[12:14], etherTypeVLAN)
	binary.BigEndian.PutUint16(out[14:16], vlan)
	return out
}

// sendTSO cuts the TSO packet gathered on q into segments and sends them.
// It reports false (nothing sent) when the context cannot be carried out.
func (n *NIC) sendTSO(q *devTxq, peer *endpointBox, pace *pacer) bool {
	f, c := &q.tx, &q.tx.ctx
	hdr, mss, total := int(c.hdrlen), int(c.mss), f.n
	ipv4 := c.tucmd&TxTucmdIP != 0
	switch {
	case q.seg == nil || !f.haveCtx || c.tucmd&TxCmdTSE == 0 || c.tucmd&TxTucmdTCP == 0,
		mss == 0 || hdr == 0 || hdr+mss+4 > int(n.filt.maxFrame.Load()) || hdr >= total,
		f.vle && !n.filt.vme.Load(),
		int(c.paylen) != total-hdr,
		int(c.tucss)+20 > hdr || int(c.tucso) < int(c.tucss) || int(c.tucso)+2 > hdr,
		f.popts&TxPoptsTXSM == 0,
		ipv4 && (f.popts&TxPoptsIXSM == 0 || int(c.ipcss)+20 > int(c.tucss) ||
			int(c.ipcse) < int(c.ipcss)+19 || int(c.ipcse) >= hdr || int(c.ipcso) < int(c.ipcss) || int(c.ipcso)+1 > int(c.ipcse)):
		// Every segment has the same offsets: a context that passes here
		// fits each of them.
		return false
	}
	ipOff, tcpOff := int(c.ipcss), int(c.tucss)
	ipID := binary.BigEndian.Uint16(f.buf[ipOff+4:])
	seq := binary.BigEndian.Uint32(f.buf[tcpOff+4:])
	flags := f.buf[tcpOff+13]
	nseg := (total - hdr + mss - 1) / mss
	segCtx := *c
	segCtx.tucse = 0
	for i, off := 0, hdr; off < total; i, off = i+1, off+mss {
		l := min(mss, total-off)
		out := q.seg[:hdr+l]
		copy(out, f.buf[:hdr])
		copy(out[hdr:], f.buf[off:off+l])
		if ipv4 {
			binary.BigEndian.PutUint16(out[ipOff+2:], uint16(hdr-ipOff+l))
			binary.BigEndian.PutUint16(out[ipOff+4:], ipID+uint16(i))
		}
		binary.BigEndian.PutUint32(out[tcpOff+4:], seq+uint32(off-hdr))
		fl := flags
		if i < nseg-1 {
			fl &^= tcpFIN | tcpPSH
		}
		if i > 0 {
			fl &^= tcpCWR
		}
		out[tcpOff+13] = fl
		txChecksums(out, &segCtx, f.popts, true) // fits: checked above
		if f.vle {
			out = insertVLAN(q.seg, len(out), f.vlan)
		}
		n.wire(out, peer, pace)
	}
	n.st.txTSO.Add(1)
	return true
}

// rxOffload is the RX side: with strip (CTRL.VME), strip an 802.1Q tag
// into the descriptor (the frame is copied into scratch); with csum
// (Offload: RXCSUM.IPOFL/TUOFL), check the IPv4 header and TCP/UDP
// checksums, else report IXSM (ignore the checksum indications). It
// returns the frame to write and the EOP descriptor's status and error
// bits and VLAN tag.
func (n *NIC) rxOffload(f, scratch []byte, strip, csum bool) ([]byte, rxMeta) {
	var m rxMeta
	out := f
	if strip && len(f) >= 18 && binary.BigEndian.Uint16(f[12:14]) == etherTypeVLAN {
		m.vlan = binary.BigEndian.Uint16(f[14:16])
		out = scratch[:len(f)-4]
		copy(out, f[:12])
		copy(out[12:], f[16:])
		m.status |= RxStatVP
	}
	if !csum {
		m.status |= RxStatIXSM
		return out, m
	}
	m.status, m.errs = rxChecksums(out, m.status)
	return out, m
}

// rxChecksums checks the IPv4 header and TCP/UDP checksums of an untagged
// frame and adds IPCS/L4CS and IPE/TCPE to status and the errors.
func rxChecksums(out []byte, status uint8) (uint8, uint8) {
	var errs uint8
	if len(out) < 14+20 || binary.BigEndian.Uint16(out[12:14]) != etherTypeIPv4 {
		return status, 0
	}
	ip := out[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || len(ip) < ihl {
		return status, 0
	}
	status |= RxStatIPCS
	if cksum.Fold(cksum.Sum(ip[:ihl], 0)) != 0xffff {
		errs |= RxErrIPE
	}
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	frag := binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0
	proto := ip[9]
	if frag || total < ihl || total > len(ip) || (proto != 6 && proto != 17) {
		return status, errs
	}
	l4 := ip[ihl:total]
	if proto == 17 && (len(l4) < 8 || binary.BigEndian.Uint16(l4[6:8]) == 0) {
		return status, errs // a UDP datagram without a checksum
	}
	if proto == 6 && len(l4) < 20 {
		return status, errs
	}
	status |= RxStatL4CS
	sum := cksum.Sum(ip[12:20], uint64(proto)+uint64(len(l4)))
	if cksum.Fold(cksum.Sum(l4, sum)) != 0xffff {
		errs |= RxErrTCPE
	}
	return status, errs
}
