package simnictest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/iflib"
)

// Frames for tests: Ethernet + IPv4 + UDP or TCP, with valid checksums, a
// (flow, seq) stamp and a payload that is a function of them, so that a
// receiver can check every byte and the order per flow.

// Protocols of a test frame.
const (
	ProtoUDP = 17
	ProtoTCP = 6
)

// Header lengths of a test frame.
const (
	EtherLen = 14
	IPv4Len  = 20
	UDPLen   = 8
	TCPLen   = 20
	// StampLen is the (flow, seq) stamp at the start of the payload.
	StampLen = 8
)

// FrameSpec describes a test frame.
type FrameSpec struct {
	Flow, Seq uint32
	Proto     uint8 // ProtoUDP (default) or ProtoTCP
	// Len is the whole frame's length in bytes (a negative one is 0). A
	// frame too short for the headers is a pattern of (Flow, Seq) only;
	// one too short for the stamp has the headers but no stamp.
	Len int
	// VLAN, if not 0, inserts an 802.1Q tag with this VID (the frame grows
	// by 4), in frames long enough for the MAC addresses (12 bytes).
	VLAN uint16
	// TCPSeq is the TCP sequence number (TCP frames).
	TCPSeq uint32
	// TCPFlags are the TCP flags (TCP frames; default PSH|ACK).
	TCPFlags uint8
	// IPID is the IPv4 identification.
	IPID uint16
	// NoCsum leaves the IPv4 and L4 checksums 0.
	NoCsum bool
	// Seed prepares the frame for checksum offload as FreeBSD's stack
	// hands it to a driver with CSUM_IP|CSUM_TCP (or CSUM_UDP): the IPv4
	// header checksum 0 and the TCP/UDP checksum field holding the
	// pseudo-header sum with the L4 length (in_pseudo), not complemented.
	// The device finishes both.
	Seed bool
}

// MinStampedLen is the shortest frame that carries its stamp.
func MinStampedLen(proto uint8) int {
	if proto == ProtoTCP {
		return EtherLen + IPv4Len + TCPLen + StampLen
	}
	return EtherLen + IPv4Len + UDPLen + StampLen
}

// Build writes the frame into buf (grown as needed) and returns it. A
// VLAN frame is the untagged frame with the tag inserted after the MAC
// addresses.
func (s FrameSpec) Build(buf []byte) []byte {
	if s.Proto == 0 {
		s.Proto = ProtoUDP
	}
	s.Len = max(s.Len, 0)
	n := s.Len
	if s.VLAN != 0 && s.Len >= 12 {
		n += 4
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	b := buf[:s.Len]
	s.build(b)
	if s.VLAN == 0 || s.Len < 12 {
		return buf[:n]
	}
	t := buf[:n]
	copy(t[16:], t[12:s.Len])
	binary.BigEndian.PutUint16(t[12:14], 0x8100)
	binary.BigEndian.PutUint16(t[14:16], s.VLAN&0x0fff)
	return t
}

// build writes the untagged frame into b (len(b) == s.Len).
func (s FrameSpec) build(b []byte) {
	fillPattern(b, s.Flow, s.Seq)
	if s.Len < MinStampedLen(s.Proto)-StampLen {
		return // too short for the headers: a pattern only
	}
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	ip := b[EtherLen:]
	ipTotal := len(ip)
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:4], uint16(ipTotal))
	binary.BigEndian.PutUint16(ip[4:6], s.IPID)
	ip[6], ip[7], ip[8], ip[9] = 0x40, 0, 64, s.Proto
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint32(ip[12:16], 0x0a000001+s.Flow%251)
	binary.BigEndian.PutUint32(ip[16:20], 0x0a010001)
	l4 := ip[IPv4Len:]
	binary.BigEndian.PutUint16(l4[0:2], uint16(1000+s.Flow%50000))
	binary.BigEndian.PutUint16(l4[2:4], 9)
	var payload []byte
	if s.Proto == ProtoTCP {
		binary.BigEndian.PutUint32(l4[4:8], s.TCPSeq)
		binary.BigEndian.PutUint32(l4[8:12], 1)
		l4[12] = (TCPLen / 4) << 4
		l4[13] = s.TCPFlags
		if l4[13] == 0 {
			l4[13] = 0x18 // PSH|ACK
		}
		binary.BigEndian.PutUint16(l4[14:16], 65535)
		l4[16], l4[17], l4[18], l4[19] = 0, 0, 0, 0
		payload = l4[TCPLen:]
	} else {
		binary.BigEndian.PutUint16(l4[4:6], uint16(len(l4)))
		l4[6], l4[7] = 0, 0
		payload = l4[UDPLen:]
	}
	if len(payload) >= StampLen {
		binary.BigEndian.PutUint32(payload[0:4], s.Flow)
		binary.BigEndian.PutUint32(payload[4:8], s.Seq)
	}
	ck := l4CsumOffset(s.Proto)
	switch {
	case s.Seed:
		sum := PseudoHeaderSum(ip, len(l4))
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(l4[ck:ck+2], uint16(sum))
	case !s.NoCsum:
		binary.BigEndian.PutUint16(ip[10:12], Checksum(ip[:IPv4Len], 0))
		c := Checksum(l4, PseudoHeaderSum(ip, len(l4)))
		if s.Proto == ProtoUDP && c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[ck:ck+2], c)
	}
}

// Header returns the length of the Ethernet, IPv4 and L4 headers of the
// frame s describes.
func (s FrameSpec) Header() int {
	h := EtherLen + IPv4Len + UDPLen
	if s.Proto == ProtoTCP {
		h = EtherLen + IPv4Len + TCPLen
	}
	if s.VLAN != 0 {
		h += 4
	}
	return h
}

func l4CsumOffset(proto uint8) int {
	if proto == ProtoTCP {
		return 16
	}
	return 6
}

// fillPattern fills b with bytes that depend on (flow, seq) and position.
func fillPattern(b []byte, flow, seq uint32) {
	x := flow*2654435761 ^ seq*40503
	for i := range b {
		b[i] = byte(x>>(uint(i)%24)) + byte(i)
	}
}

// Checksum is the Internet checksum (RFC 1071) of b, starting from sum
// (a partial 32-bit sum, e.g. a pseudo-header's).
func Checksum(b []byte, sum uint32) uint16 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// PseudoHeaderSum is the partial sum of the IPv4 pseudo-header of ip's
// addresses and protocol for an L4 length of l4len.
func PseudoHeaderSum(ip []byte, l4len int) uint32 {
	var sum uint32
	for i := 12; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	return sum + uint32(ip[9]) + uint32(l4len)
}

// Parsed is what Parse found in a test frame.
type Parsed struct {
	Flow, Seq uint32
	Proto     uint8
	VLAN      uint16 // 0: untagged
	HasVLAN   bool
	IPID      uint16
	TCPSeq    uint32
	TCPFlags  uint8
	L3, L4    int // offsets of the IPv4 and L4 headers
	Payload   int // offset of the L4 payload
	Stamped   bool
}

// Errors of Parse and Verify.
var (
	ErrNotTestFrame = errors.New("simnictest: not a stamped IPv4 test frame")
	ErrBadCsum      = errors.New("simnictest: bad checksum")
	ErrBadLength    = errors.New("simnictest: lengths disagree")
)

// Parse reads a test frame's headers and stamp. A frame too short for the
// headers returns Stamped false and no error; one with the headers but
// too short for the stamp has its header fields and Stamped false.
func Parse(f []byte) (Parsed, error) {
	var p Parsed
	if len(f) < EtherLen {
		return p, nil
	}
	off := 12
	if binary.BigEndian.Uint16(f[12:14]) == 0x8100 {
		if len(f) < 18 {
			return p, ErrNotTestFrame
		}
		p.HasVLAN, p.VLAN = true, binary.BigEndian.Uint16(f[14:16])&0x0fff
		off = 16
	}
	if binary.BigEndian.Uint16(f[off:off+2]) != 0x0800 || len(f) < off+2+IPv4Len {
		return p, nil
	}
	p.L3 = off + 2
	ip := f[p.L3:]
	if ip[0] != 0x45 {
		return p, ErrNotTestFrame
	}
	p.Proto, p.IPID = ip[9], binary.BigEndian.Uint16(ip[4:6])
	p.L4 = p.L3 + IPv4Len
	hl := UDPLen
	if p.Proto == ProtoTCP {
		hl = TCPLen
	} else if p.Proto != ProtoUDP {
		return p, ErrNotTestFrame
	}
	if len(f) < p.L4+hl {
		return p, ErrNotTestFrame
	}
	if p.Proto == ProtoTCP {
		p.TCPSeq = binary.BigEndian.Uint32(f[p.L4+4:])
		p.TCPFlags = f[p.L4+13]
	}
	p.Payload = p.L4 + hl
	if len(f) >= p.Payload+StampLen {
		p.Flow = binary.BigEndian.Uint32(f[p.Payload:])
		p.Seq = binary.BigEndian.Uint32(f[p.Payload+4:])
		p.Stamped = true
	}
	return p, nil
}

// VerifyCsum checks a parsed frame's IPv4 total length and header
// checksum and its L4 length and checksum.
func VerifyCsum(f []byte, p Parsed) error {
	ip := f[p.L3:]
	if int(binary.BigEndian.Uint16(ip[2:4])) != len(ip) {
		return fmt.Errorf("%w: IPv4 total length %d, frame has %d", ErrBadLength, binary.BigEndian.Uint16(ip[2:4]), len(ip))
	}
	if Checksum(ip[:IPv4Len], 0) != 0 {
		return fmt.Errorf("%w: IPv4 header", ErrBadCsum)
	}
	l4 := ip[IPv4Len:]
	if p.Proto == ProtoUDP && int(binary.BigEndian.Uint16(l4[4:6])) != len(l4) {
		return fmt.Errorf("%w: UDP length %d, datagram has %d", ErrBadLength, binary.BigEndian.Uint16(l4[4:6]), len(l4))
	}
	if Checksum(l4, PseudoHeaderSum(ip, len(l4))) != 0 {
		return fmt.Errorf("%w: %s", ErrBadCsum, map[uint8]string{ProtoUDP: "UDP", ProtoTCP: "TCP"}[p.Proto])
	}
	return nil
}

// Matches rebuilds the frame s describes and compares it with f.
func (s FrameSpec) Matches(f []byte) bool {
	want := s.Build(nil)
	if len(want) != len(f) {
		return false
	}
	for i := range f {
		if f[i] != want[i] {
			return false
		}
	}
	return true
}

// FillFrame fills data as a test frame of flow with sequence number seq: a
// byte pattern derived from seq, with an Ethernet and IPv4 start (from
// 02:00:00:00:00:01 to 02:00:00:00:00:02) and, when there is room, flow and
// seq at bytes 42 and 46 (big endian), so a test can tell frames apart.
func FillFrame(data []byte, flow, seq uint32) {
	for i := range data {
		data[i] = byte(i*7 + int(seq))
	}
	if len(data) < 15 {
		return
	}
	copy(data[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(data[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(data[12:14], 0x0800)
	data[14] = 0x45
	if len(data) >= 50 {
		binary.BigEndian.PutUint32(data[42:46], flow)
		binary.BigEndian.PutUint32(data[46:50], seq)
	}
}

// Flatten returns a copy of a packet chain's bytes (iflib's
// Packet.CopyData, m_copydata, of the whole chain).
func Flatten(m *iflib.Packet) []byte {
	b := make([]byte, m.ChainLen())
	if err := m.CopyData(0, b); err != nil {
		panic(err) // ChainLen bytes always lie within the chain
	}
	return b
}
