package afxdp

import (
	"encoding/binary"

	"github.com/goiflib/goiflib/internal/cksum"
)

// CompleteChecksum finishes the TCP or UDP checksum of an Ethernet frame
// that a Linux sender left partial, and reports whether it changed the
// frame.
//
// A Linux socket sending through a device with TX checksum offload (veth's
// default, and most virtual devices') leaves the L4 checksum to the
// "hardware": the skb is CHECKSUM_PARTIAL and its checksum field holds only
// the folded pseudo-header sum (__tcp_v4_send_check, udp4_hwcsum). veth
// never finishes it, because its receiver takes the skb's checksum state
// with it; AF_XDP hands user space the bytes alone. The kernel exposes no
// checksum state to XDP or AF_XDP (the XDP RX metadata kfuncs of Linux 6.18
// give a timestamp, the RSS hash and the VLAN tag only), so the frame
// itself is the only witness: a field equal to the pseudo-header sum is
// what CHECKSUM_PARTIAL leaves, and the frame does not verify.
//
// So a frame is completed when it is unfragmented IPv4 or IPv6 (without
// extension headers, optionally behind one 802.1Q tag) carrying TCP or UDP
// whose lengths agree with the IP header, whose checksum field equals the
// pseudo-header sum, and whose checksum does not already verify (a complete
// checksum can equal the pseudo-header sum by chance: one frame in 65536).
// The checksum is then computed as the device would have: over the L4
// bytes from csum_start, the seeded field included, stored complemented.
//
// What a user must know: a frame corrupted in flight whose checksum field
// happens to equal the pseudo-header sum would be accepted. On veth there
// is no flight (memory to memory) and a real NIC checks the Ethernet FCS,
// so that is the FCS's residue; where it matters, turn the sender's
// offload off (ethtool -K <peer> tx off) and the frames arrive complete.
//
// Every other frame is left alone, including truncated or malformed ones
// (for the stack to reject) and frames whose checksum verifies.
func CompleteChecksum(frame []byte) bool {
	b := frame
	if len(b) < 14 {
		return false
	}
	et := binary.BigEndian.Uint16(b[12:14])
	b = b[14:]
	if et == 0x8100 {
		if len(b) < 4 {
			return false
		}
		et = binary.BigEndian.Uint16(b[2:4])
		b = b[4:]
	}
	var pseudo uint64
	var proto byte
	var l4 []byte
	switch et {
	case 0x0800:
		if len(b) < 20 || b[0]>>4 != 4 {
			return false
		}
		hl := int(b[0]&0x0f) * 4
		tl := int(binary.BigEndian.Uint16(b[2:4]))
		if hl < 20 || tl < hl || tl > len(b) {
			return false
		}
		if binary.BigEndian.Uint16(b[6:8])&0x3fff != 0 {
			return false // a fragment: its checksum spans other frames
		}
		proto, l4 = b[9], b[hl:tl]
		pseudo = cksum.Sum(b[12:20], 0)
	case 0x86dd:
		if len(b) < 40 || b[0]>>4 != 6 {
			return false
		}
		pl := int(binary.BigEndian.Uint16(b[4:6]))
		if 40+pl > len(b) {
			return false
		}
		proto, l4 = b[6], b[40:40+pl]
		pseudo = cksum.Sum(b[8:40], 0)
	default:
		return false
	}
	var off int
	switch proto {
	case 6:
		if len(l4) < 20 {
			return false
		}
		off = 16
	case 17:
		if len(l4) < 8 || int(binary.BigEndian.Uint16(l4[4:6])) != len(l4) {
			return false
		}
		off = 6
	default:
		return false
	}
	pseudo += uint64(proto) + uint64(len(l4))
	seed := cksum.Fold(pseudo)
	field := binary.BigEndian.Uint16(l4[off:])
	if field != seed && !(field == 0 && seed == 0xffff) && !(field == 0xffff && seed == 0) {
		return false
	}
	body := cksum.Fold(cksum.Sum(l4, 0))
	if cksum.Fold(uint64(body)+pseudo) == 0xffff {
		return false // it verifies as it is
	}
	// The device's computation: ones' complement sum from csum_start over
	// the seeded field, complemented; UDP sends a zero as all ones.
	c := ^body
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[off:], c)
	return true
}

// l4Candidate says, from a frame's first bytes, whether it may be one
// CompleteChecksum completes: unfragmented IPv4 or IPv6 (optionally behind
// one 802.1Q tag) carrying TCP or UDP.
func l4Candidate(b []byte) bool {
	if len(b) < 14 {
		return false
	}
	et := binary.BigEndian.Uint16(b[12:14])
	b = b[14:]
	if et == 0x8100 {
		if len(b) < 4 {
			return false
		}
		et = binary.BigEndian.Uint16(b[2:4])
		b = b[4:]
	}
	var proto byte
	switch {
	case et == 0x0800 && len(b) >= 20:
		if binary.BigEndian.Uint16(b[6:8])&0x3fff != 0 {
			return false
		}
		proto = b[9]
	case et == 0x86dd && len(b) >= 40:
		proto = b[6]
	default:
		return false
	}
	return proto == 6 || proto == 17
}
