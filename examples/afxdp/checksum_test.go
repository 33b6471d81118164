package afxdp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// csumFrame builds an Ethernet frame (with an 802.1Q tag when vlan) of
// IPv4 or IPv6 carrying TCP (proto 6) or UDP (17) with payload, its L4
// checksum complete. It returns the frame and the offset of the checksum.
func csumFrame(v6, vlan bool, proto byte, payload []byte) ([]byte, int) {
	f := []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2}
	if vlan {
		f = append(f, 0x81, 0x00, 0x00, 0x07)
	}
	l4 := make([]byte, 20)
	off := 16
	if proto == 17 {
		l4, off = make([]byte, 8), 6
	}
	binary.BigEndian.PutUint16(l4[0:], 40000)
	binary.BigEndian.PutUint16(l4[2:], 80)
	if proto == 6 {
		l4[12] = 5 << 4
	}
	l4 = append(l4, payload...)
	if proto == 17 {
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	}
	var ip, pseudo []byte
	if v6 {
		f = append(f, 0x86, 0xdd)
		ip = make([]byte, 40)
		ip[0] = 6 << 4
		binary.BigEndian.PutUint16(ip[4:], uint16(len(l4)))
		ip[6], ip[7] = proto, 64
		ip[23], ip[39] = 1, 2 // fd00::1 → fd00::2 (enough for the sum)
		ip[8], ip[24] = 0xfd, 0xfd
		pseudo = append(append([]byte{}, ip[8:40]...), 0, 0, byte(len(l4)>>8), byte(len(l4)), 0, 0, 0, proto)
	} else {
		f = append(f, 0x08, 0x00)
		ip = make([]byte, 20)
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)))
		ip[6] = 0x40 // DF
		ip[8], ip[9] = 64, proto
		copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		pseudo = append(append([]byte{}, ip[12:20]...), 0, proto, byte(len(l4)>>8), byte(len(l4)))
	}
	c := ^refSum(append(pseudo, l4...))
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[off:], c)
	at := len(f) + len(ip) + off
	return append(append(f, ip...), l4...), at
}

// refSum is a plain RFC 1071 sum, folded, written independently of the
// driver's.
func refSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// verifies checks a frame's L4 checksum with the reference sum.
func verifies(f []byte) bool {
	b := f[14:]
	if binary.BigEndian.Uint16(f[12:]) == 0x8100 {
		b = f[18:]
	}
	var pseudo, l4 []byte
	if b[0]>>4 == 6 {
		pl := int(binary.BigEndian.Uint16(b[4:]))
		l4 = b[40 : 40+pl]
		pseudo = append(append([]byte{}, b[8:40]...), 0, 0, byte(pl>>8), byte(pl), 0, 0, 0, b[6])
	} else {
		hl := int(b[0]&0xf) * 4
		tl := int(binary.BigEndian.Uint16(b[2:]))
		l4 = b[hl:tl]
		pseudo = append(append([]byte{}, b[12:20]...), 0, b[9], byte(len(l4)>>8), byte(len(l4)))
	}
	return refSum(append(pseudo, l4...)) == 0xffff
}

// partial turns a complete frame into what a CHECKSUM_PARTIAL sender
// leaves: the field holds the folded pseudo-header sum.
func partial(f []byte, at int) []byte {
	p := bytes.Clone(f)
	b := p[14:]
	if binary.BigEndian.Uint16(p[12:]) == 0x8100 {
		b = p[18:]
	}
	var pseudo []byte
	if b[0]>>4 == 6 {
		pl := binary.BigEndian.Uint16(b[4:])
		pseudo = append(append([]byte{}, b[8:40]...), 0, 0, byte(pl>>8), byte(pl), 0, 0, 0, b[6])
	} else {
		hl := int(b[0]&0xf) * 4
		l := binary.BigEndian.Uint16(b[2:]) - uint16(hl)
		pseudo = append(append([]byte{}, b[12:20]...), 0, b[9], byte(l>>8), byte(l))
	}
	binary.BigEndian.PutUint16(p[at:], refSum(pseudo))
	return p
}

func TestCompleteChecksum(t *testing.T) {
	payload := []byte("GET / HTTP/1.1\r\nHost: 10.0.0.2\r\n\r\n+odd")
	for _, c := range []struct {
		name       string
		v6, vlan   bool
		proto      byte
		payloadLen int
	}{
		{"tcp4", false, false, 6, len(payload)},
		{"tcp4-empty", false, false, 6, 0},
		{"udp4", false, false, 17, len(payload)},
		{"tcp6", true, false, 6, len(payload)},
		{"udp6", true, false, 17, len(payload) - 1},
		{"tcp4-vlan", false, true, 6, len(payload)},
	} {
		t.Run(c.name, func(t *testing.T) {
			full, at := csumFrame(c.v6, c.vlan, c.proto, payload[:c.payloadLen])
			require.True(t, verifies(full))
			p := partial(full, at)
			require.False(t, verifies(p), "a partial frame does not verify")
			require.True(t, CompleteChecksum(p))
			assert.Equal(t, full, p, "completed as the device would have")
			assert.True(t, verifies(p))

			same := bytes.Clone(full)
			assert.False(t, CompleteChecksum(same), "a complete frame is left alone")
			assert.Equal(t, full, same)

			bad := bytes.Clone(full)
			bad[at] ^= 0x5a
			assert.False(t, CompleteChecksum(bad), "a wrong checksum that is not the seed is left for the stack")
			for n := range len(p) {
				assert.False(t, CompleteChecksum(bytes.Clone(p[:n])), "truncated at %d", n)
			}
		})
	}
}

func TestCompleteChecksumLeavesOthers(t *testing.T) {
	full, at := csumFrame(false, false, 17, []byte("datagram"))
	p := partial(full, at)

	frag := bytes.Clone(p)
	frag[14+6] = 0x20 // MF: a fragment
	assert.False(t, CompleteChecksum(frag))

	badLen := bytes.Clone(p)
	binary.BigEndian.PutUint16(badLen[14+20+4:], 9) // UDP length disagrees with IP
	assert.False(t, CompleteChecksum(badLen))

	icmp := bytes.Clone(p)
	icmp[14+9] = 1
	assert.False(t, CompleteChecksum(icmp))

	arp := bytes.Clone(p)
	arp[12], arp[13] = 0x08, 0x06
	assert.False(t, CompleteChecksum(arp))
}

// A complete checksum that happens to equal the pseudo-header sum is left
// alone: the frame verifies.
func TestCompleteChecksumCoincidence(t *testing.T) {
	payload := make([]byte, 16)
	full, at := csumFrame(false, false, 6, payload)
	seed := binary.BigEndian.Uint16(partial(full, at)[at:])
	have := binary.BigEndian.Uint16(full[at:])
	// Adding d to a payload word lowers the checksum by d (ones'
	// complement): pick d so that the checksum becomes the seed.
	d := refSum([]byte{byte(have >> 8), byte(have), byte(^seed >> 8), byte(^seed)})
	w := full[len(full)-2:]
	binary.BigEndian.PutUint16(w, d)
	binary.BigEndian.PutUint16(full[at:], seed)
	require.True(t, verifies(full), "constructed a complete frame whose checksum is the seed")
	c := bytes.Clone(full)
	assert.False(t, CompleteChecksum(c))
	assert.Equal(t, full, c)
}

func FuzzCompleteChecksum(f *testing.F) {
	for _, v6 := range []bool{false, true} {
		for _, proto := range []byte{6, 17} {
			full, at := csumFrame(v6, false, proto, []byte("seed payload"))
			f.Add(full)
			f.Add(partial(full, at))
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := bytes.Clone(frame)
		if !CompleteChecksum(c) {
			require.Equal(t, frame, c, "changed a frame it reported unchanged")
			return
		}
		require.True(t, l4Candidate(frame), "completed a frame l4Candidate rules out (multi-buffer frames would miss it)")
		diff := 0
		for i := range c {
			if c[i] != frame[i] {
				diff++
			}
		}
		require.LessOrEqual(t, diff, 2, "completed frame: %d bytes changed, verifies %v", diff, verifies(c))
		require.True(t, verifies(c), "completed frame: %d bytes changed, verifies %v", diff, verifies(c))
	})
}

// TestL4Candidate: the first-buffer filter of multi-buffer frames passes
// every frame CompleteChecksum may complete and rules out the rest.
func TestL4Candidate(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []bool{false, true} {
			for _, proto := range []byte{6, 17} {
				full, at := csumFrame(v6, vlan, proto, []byte("payload"))
				assert.True(t, l4Candidate(partial(full, at)), "v6 %v vlan %v proto %d", v6, vlan, proto)
			}
		}
	}
	icmp, _ := csumFrame(false, false, 1, nil)
	assert.False(t, l4Candidate(icmp))
	frag, _ := csumFrame(false, false, 6, []byte("x"))
	frag[14+6] |= 0x20 // IP_MF
	assert.False(t, l4Candidate(frag))
	other := make([]byte, 64)
	other[12], other[13] = 0x88, 0xb5 // EtherTypeTest
	assert.False(t, l4Candidate(other))
	assert.False(t, l4Candidate(nil))
}
