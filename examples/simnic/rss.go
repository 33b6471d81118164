package simnic

import (
	"encoding/binary"
	"fmt"
)

// Receive side scaling, after the 82599 (82599 datasheet §7.1.2.8: the
// RSSRK key registers, the 128-entry RETA, MRQC's field enables, and the
// RSS type in the advanced RX descriptor; ixgbe_initialize_rss_mapping,
// ixgbe_determine_rsstype) and Microsoft's RSS specification: the device
// computes the Toeplitz hash of the source and destination addresses (and
// ports, for TCP and UDP when enabled) with a programmable 40-byte key,
// writes it and its type into the frame's descriptor, and picks the RX
// queue from the indirection table entry the hash's 7 low bits select.
// A frame it does not hash (not IPv4 or IPv6, or its type not enabled)
// goes to queue 0 with hash type RSSTypeNone.

// RSS sizes.
const (
	RSSKeySize = 40  // RSSRK: 10 registers of 4 bytes
	RETASize   = 128 // indirection table entries (RETA)
)

// RSSField is MRQC's set of hash field enables.
type RSSField uint32

// MRQC field enables (IXGBE_MRQC_RSS_FIELD_*).
const (
	RSSFieldTCPIPv4 RSSField = 0x00010000 // addresses and TCP ports
	RSSFieldIPv4    RSSField = 0x00020000 // addresses
	RSSFieldIPv6    RSSField = 0x00100000
	RSSFieldTCPIPv6 RSSField = 0x00200000
	RSSFieldUDPIPv4 RSSField = 0x00400000
	RSSFieldUDPIPv6 RSSField = 0x00800000

	rssFieldKnown = RSSFieldTCPIPv4 | RSSFieldIPv4 | RSSFieldIPv6 | RSSFieldTCPIPv6 | RSSFieldUDPIPv4 | RSSFieldUDPIPv6
)

// RSS types written back in the RX descriptor (IXGBE_RXDADV_RSSTYPE_*).
const (
	RSSTypeNone    = 0x0
	RSSTypeTCPIPv4 = 0x1
	RSSTypeIPv4    = 0x2
	RSSTypeTCPIPv6 = 0x3
	RSSTypeIPv6    = 0x5
	RSSTypeUDPIPv4 = 0x7
	RSSTypeUDPIPv6 = 0x8
)

// Toeplitz is the Microsoft RSS hash of input under key: for each set bit
// of the input, from the most significant bit of its first byte, the 32
// bits of the key starting at that bit position are XORed into the
// result. The key must be at least len(input)+4 bytes (40 bytes cover the
// 36 of an IPv6 4-tuple); key bits beyond it count as 0.
func Toeplitz(key []byte, input []byte) uint32 {
	var h, window uint32
	for i := 0; i < 4; i++ {
		window <<= 8
		if i < len(key) {
			window |= uint32(key[i])
		}
	}
	for i, b := range input {
		var next byte
		if i+4 < len(key) {
			next = key[i+4]
		}
		for bit := 7; bit >= 0; bit-- {
			if b>>bit&1 != 0 {
				h ^= window
			}
			window = window<<1 | uint32(next>>bit&1)
		}
	}
	return h
}

// rssRegs are the RSS registers: a snapshot replaced whole by SetRSS, so
// the device reads a consistent key and table per frame without a lock.
type rssRegs struct {
	key    [RSSKeySize]byte
	reta   [RETASize]uint8
	fields RSSField
	// tbl[i][b] is the hash contribution of byte value b at input offset i
	// (the Toeplitz hash is linear in its input: XOR over the bytes).
	tbl [36][256]uint32
}

func newRSSRegs(key [RSSKeySize]byte, reta [RETASize]uint8, fields RSSField) *rssRegs {
	r := &rssRegs{key: key, reta: reta, fields: fields}
	var in [36]byte
	for i := range r.tbl {
		for bit := 0; bit < 8; bit++ {
			in[i] = 1 << bit
			v := Toeplitz(key[:], in[:i+1])
			for b := 0; b < 256; b++ {
				if b>>bit&1 != 0 {
					r.tbl[i][b] ^= v
				}
			}
		}
		in[i] = 0
	}
	return r
}

func (r *rssRegs) hash(in []byte) uint32 {
	var h uint32
	for i, b := range in {
		h ^= r.tbl[i][b]
	}
	return h
}

// SetRSS programs the key (RSSRK), the indirection table (RETA: each entry
// an RX queue) and the hashed fields (MRQC). An unknown field bit or an
// entry naming a queue the NIC lacks is a *ConfigError. An entry naming a
// queue the driver did not program (beyond those in use) sends its frames
// to that entry modulo the queues in use.
func (n *NIC) SetRSS(key [RSSKeySize]byte, reta [RETASize]uint8, fields RSSField) error {
	if fields&^rssFieldKnown != 0 {
		return &ConfigError{Pkg: "simnic", Field: "mrqc", Value: fields, Reason: "hash fields the device does not implement"}
	}
	for i, q := range reta {
		if int(q) >= n.cfg.Queues {
			return &ConfigError{Pkg: "simnic", Field: "reta", Value: fmt.Sprintf("[%d]=%d", i, q), Reason: fmt.Sprintf("want a queue 0..%d", n.cfg.Queues-1)}
		}
	}
	n.rss.Store(newRSSRegs(key, reta, fields))
	return nil
}

// RSS reads the RSS registers.
func (n *NIC) RSS() (key [RSSKeySize]byte, reta [RETASize]uint8, fields RSSField) {
	r := n.rss.Load()
	return r.key, r.reta, r.fields
}

// rssHash hashes frame f (its Ethernet header first; an 802.1Q tag still
// in the frame is skipped) and returns the hash, its descriptor type and
// the RX queue its RETA entry names.
func (n *NIC) rssHash(f []byte) (hash uint32, typ uint8, queue int) {
	r := n.rss.Load()
	var buf [36]byte
	in, typ := rssInput(f, r.fields, &buf)
	if typ == RSSTypeNone {
		return 0, RSSTypeNone, 0
	}
	hash = r.hash(in)
	return hash, typ, int(r.reta[hash&(RETASize-1)])
}

// rssInput extracts the hash input of f for the enabled fields into buf:
// source and destination address, then source and destination port for
// TCP or UDP (not for an IPv4 fragment, nor for IPv6 with extension
// headers: those hash the addresses only).
func rssInput(f []byte, fields RSSField, buf *[36]byte) ([]byte, uint8) {
	off := 12
	if len(f) >= 16 && binary.BigEndian.Uint16(f[12:14]) == etherTypeVLAN {
		off = 16
	}
	if len(f) < off+2 {
		return nil, RSSTypeNone
	}
	l3 := f[off+2:]
	var addrs []byte
	var proto uint8
	var l4 []byte
	var v6 bool
	switch binary.BigEndian.Uint16(f[off : off+2]) {
	case etherTypeIPv4:
		if len(l3) < 20 || l3[0]>>4 != 4 {
			return nil, RSSTypeNone
		}
		ihl := int(l3[0]&0x0f) * 4
		addrs, proto = l3[12:20], l3[9]
		if frag := binary.BigEndian.Uint16(l3[6:8])&0x3fff != 0; !frag && ihl >= 20 && len(l3) >= ihl+4 {
			l4 = l3[ihl:]
		}
	case etherTypeIPv6:
		if len(l3) < 40 || l3[0]>>4 != 6 {
			return nil, RSSTypeNone
		}
		addrs, proto, v6 = l3[8:40], l3[6], true
		if len(l3) >= 44 {
			l4 = l3[40:]
		}
	default:
		return nil, RSSTypeNone
	}
	n := copy(buf[:], addrs)
	ports := func() []byte {
		copy(buf[n:], l4[:4])
		return buf[:n+4]
	}
	switch {
	case l4 != nil && proto == 6 && !v6 && fields&RSSFieldTCPIPv4 != 0:
		return ports(), RSSTypeTCPIPv4
	case l4 != nil && proto == 17 && !v6 && fields&RSSFieldUDPIPv4 != 0:
		return ports(), RSSTypeUDPIPv4
	case l4 != nil && proto == 6 && v6 && fields&RSSFieldTCPIPv6 != 0:
		return ports(), RSSTypeTCPIPv6
	case l4 != nil && proto == 17 && v6 && fields&RSSFieldUDPIPv6 != 0:
		return ports(), RSSTypeUDPIPv6
	case !v6 && fields&RSSFieldIPv4 != 0:
		return buf[:n], RSSTypeIPv4
	case v6 && fields&RSSFieldIPv6 != 0:
		return buf[:n], RSSTypeIPv6
	}
	return nil, RSSTypeNone
}

// DefaultRSSKey is the key FreeBSD's rss_config.c and Microsoft's RSS
// verification suite use (rss_key's default).
var DefaultRSSKey = [RSSKeySize]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

// RoundRobinRETA spreads the table over nq queues (entry i: i mod nq), as
// ixgbe_initialize_rss_mapping does without the kernel's RSS option.
func RoundRobinRETA(nq int) [RETASize]uint8 {
	var t [RETASize]uint8
	nq = max(nq, 1)
	for i := range t {
		t[i] = uint8(i % nq)
	}
	return t
}
