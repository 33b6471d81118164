package ifliblink

import (
	"github.com/goiflib/goiflib/internal/cksum"

	"encoding/binary"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/goiflib/goiflib/iflib"
)

// lroMaxIP is the largest merged IPv4 packet (IP_MAXPACKET).
const lroMaxIP = 65535

// TCP header flags (th_flags).
const (
	thFIN = 0x01
	thSYN = 0x02
	thRST = 0x04
	thPSH = 0x08
	thACK = 0x10
	thURG = 0x20
	thECE = 0x40
	thCWR = 0x80
)

// lro is one RX queue's large receive offload, as FreeBSD's iflib_rxeof
// drives tcp_lro: each packet of a batch is offered (tcp_lro_rx), and what
// was merged is flushed to the stack at the end of the batch
// (tcp_lro_flush_all). In-order TCP segments of one flow — IPv4 without
// options, unfragmented, ACK with at most PSH, the same ACK, window and
// options — become one segment of up to 64 KiB, copied straight into the
// buffer the stack gets (the RX copy the endpoint makes anyway), so gVisor
// runs its per-segment work once per merge.
//
// Checksums: the merged segment's TCP checksum is derived from the
// segments' own checksum fields (each field gives its payload's sum), not
// computed over the data, and gVisor verifies the merged segment as it
// would any other. A segment whose checksum was wrong makes the merged
// checksum wrong, so the merge is dropped and counted as one checksum
// error (TCP retransmits what it carried): nothing corrupt is accepted,
// and no pass over the data is added.
//
// Owned by the queue's RX task (Input for one qid runs on one goroutine).
// Off unless Options.LRO: see there for the gVisor receive-window stall it
// makes likely.
type lro struct {
	v       *buffer.View // the merged frame: the first frame whole, then each next payload
	hlen    int          // IP + TCP header bytes of the first segment
	seg     int          // the first segment's payload bytes: a larger one is not merged
	payload int          // merged payload bytes
	nextSeq uint32
	sum     uint64 // ones' complement sum of the merged payload, as its bytes lie
	count   int    // segments in the merge
	psh     bool
	closed  bool // a short or PSH segment ended the run
}

// lroHdr is what decides whether two segments merge: the IP header's
// type of service, TTL and DF; the addresses and ports; the ACK number;
// the data offset, flags and window; the options.
type lroHdr struct {
	b      []byte // IP header, then TCP header (in the frame's first buffer)
	tl     int    // IP total length
	doff   int    // TCP header length
	seq    uint32
	flags  byte
	paylen int
}

// parseLRO says whether a frame of n bytes whose first buffer is b is a
// segment LRO may merge, and returns its headers.
func parseLRO(b []byte, n int) (h lroHdr, ok bool) {
	if len(b) < etherHdrLen+header.IPv4MinimumSize+header.TCPMinimumSize ||
		binary.BigEndian.Uint16(b[12:14]) != uint16(header.IPv4ProtocolNumber) {
		return h, false
	}
	ip := b[etherHdrLen:]
	if ip[0] != 0x45 || ip[9] != uint8(header.TCPProtocolNumber) || binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0 {
		return h, false // options, not TCP, or a fragment
	}
	tl := int(binary.BigEndian.Uint16(ip[2:4]))
	if tl != n-etherHdrLen {
		return h, false // Ethernet padding or a length lie: let the stack judge it
	}
	th := ip[header.IPv4MinimumSize:]
	doff := int(th[12]>>4) * 4
	if doff < header.TCPMinimumSize || header.IPv4MinimumSize+doff > len(ip) || header.IPv4MinimumSize+doff >= tl {
		return h, false // no payload, or headers past the first buffer
	}
	if f := th[13]; f&^thPSH != thACK {
		return h, false // SYN, FIN, RST, URG, ECE, CWR: the stack sees it alone
	}
	return lroHdr{
		b: ip[:header.IPv4MinimumSize+doff], tl: tl, doff: doff,
		seq: binary.BigEndian.Uint32(th[4:8]), flags: th[13], paylen: tl - header.IPv4MinimumSize - doff,
	}, true
}

// matches says whether h continues the merge in l.
func (l *lro) matches(h lroHdr) bool {
	if l.v == nil || l.closed || h.seq != l.nextSeq || h.paylen > l.seg ||
		header.IPv4MinimumSize+h.doff != l.hlen ||
		l.hlen+l.payload+h.paylen > lroMaxIP || l.v.AvailableSize() < h.paylen {
		return false
	}
	first := l.v.AsSlice()[etherHdrLen:]
	a, b := first[:l.hlen], h.b
	// IP: TOS (1), flags and DF (6), TTL (8), addresses (12..20).
	if a[1] != b[1] || a[6] != b[6] || a[8] != b[8] || [8]byte(a[12:20]) != [8]byte(b[12:20]) {
		return false
	}
	at, bt := a[header.IPv4MinimumSize:], b[header.IPv4MinimumSize:]
	// TCP: ports (0..4), ACK (8..12), data offset (12), flags but PSH (13),
	// window (14..16), options (20..).
	if [4]byte(at[0:4]) != [4]byte(bt[0:4]) || [4]byte(at[8:12]) != [4]byte(bt[8:12]) || at[12] != bt[12] ||
		at[13]&^thPSH != bt[13]&^thPSH || at[14] != bt[14] || at[15] != bt[15] {
		return false
	}
	return string(at[header.TCPMinimumSize:]) == string(bt[header.TCPMinimumSize:])
}

// payloadSum is the ones' complement sum of a valid segment's payload,
// derived from its checksum field: pseudo-header + header (field
// included) + payload ≡ 0, so payload ≡ −(pseudo-header + header).
func payloadSum(h lroHdr) uint16 {
	ip := h.b
	acc := cksum.Sum(ip[12:20], 0) + uint64(header.TCPProtocolNumber) + uint64(h.doff+h.paylen)
	acc = cksum.Sum(ip[header.IPv4MinimumSize:], acc)
	return ^cksum.Fold(acc)
}

// start begins a merge with frame m (n bytes, headers h) in a view that
// can hold capacity bytes; m is copied and freed.
func (l *lro) start(m *iflib.Packet, n int, h lroHdr, capacity int) {
	l.v = buffer.NewView(capacity)
	for p := m; p != nil; p = p.Next {
		l.v.Write(p.Bytes()) // within capacity: no growth
	}
	m.Free()
	l.hlen, l.seg, l.payload = len(h.b), h.paylen, h.paylen
	l.nextSeq = h.seq + uint32(h.paylen)
	l.sum = uint64(payloadSum(h))
	l.count, l.psh = 1, h.flags&thPSH != 0
	l.closed = l.psh
}

// add appends m's payload (headers h, already matched) and frees m.
func (l *lro) add(m *iflib.Packet, h lroHdr) {
	s := payloadSum(h)
	if l.payload&1 == 1 {
		s = s<<8 | s>>8 // the payload starts at an odd offset of the merged one
	}
	l.sum += uint64(s)
	skip := etherHdrLen + len(h.b)
	for p := m; p != nil; p = p.Next {
		b := p.Bytes()
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		l.v.Write(b[skip:])
		skip = 0
	}
	m.Free()
	l.payload += h.paylen
	l.nextSeq += uint32(h.paylen)
	l.count++
	if h.flags&thPSH != 0 {
		l.psh, l.closed = true, true
	}
	if h.paylen < l.seg {
		l.closed = true // a short segment ends a burst
	}
}

// take ends the merge and returns its frame, with the IP length and
// checksum, the TCP flags and the TCP checksum of the merged segment when
// more than one segment went in.
func (l *lro) take() (v *buffer.View, segments int) {
	v, segments = l.v, l.count
	if segments > 1 {
		f := v.AsSlice()
		ip := f[etherHdrLen:]
		tl := l.hlen + l.payload
		binary.BigEndian.PutUint16(ip[2:4], uint16(tl))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:12], ^cksum.Fold(cksum.Sum(ip[:header.IPv4MinimumSize], 0)))
		th := ip[header.IPv4MinimumSize:l.hlen]
		if l.psh {
			th[13] |= thPSH
		}
		th[16], th[17] = 0, 0
		acc := cksum.Sum(ip[12:20], 0) + uint64(header.TCPProtocolNumber) + uint64(tl-header.IPv4MinimumSize)
		acc = cksum.Sum(th, acc) + l.sum
		binary.BigEndian.PutUint16(th[16:18], ^cksum.Fold(acc))
	}
	*l = lro{}
	return v, segments
}
