package ifliblink

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

var (
	lroSrc = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	lroDst = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
)

// segFrame is an Ethernet/IPv4/TCP frame with a timestamp option and a
// valid checksum (corrupt flips a payload byte after the checksum).
func segFrame(seq uint32, flags header.TCPFlags, payload []byte, corrupt bool) []byte {
	opts := []byte{1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9} // NOP NOP TS
	tcpLen := header.TCPMinimumSize + len(opts) + len(payload)
	f := make([]byte, etherHdrLen+header.IPv4MinimumSize+tcpLen)
	header.Ethernet(f).Encode(&header.EthernetFields{SrcAddr: "\x02\x00\x00\x00\x00\x01", DstAddr: "\x02\x00\x00\x00\x00\x02", Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(f[etherHdrLen:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(header.IPv4MinimumSize + tcpLen), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		Flags: header.IPv4FlagDontFragment, SrcAddr: lroSrc, DstAddr: lroDst})
	ip.SetChecksum(^ip.CalculateChecksum())
	th := header.TCP(ip[header.IPv4MinimumSize:])
	th.Encode(&header.TCPFields{SrcPort: 5000, DstPort: 80, SeqNum: seq, AckNum: 777, DataOffset: uint8(header.TCPMinimumSize + len(opts)),
		Flags: flags, WindowSize: 1000})
	copy(th[header.TCPMinimumSize:], opts)
	copy(th[header.TCPMinimumSize+len(opts):], payload)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, lroSrc, lroDst, uint16(tcpLen))
	th.SetChecksum(^checksum.Checksum(th, xsum))
	if corrupt && len(payload) > 0 {
		f[len(f)-1] ^= 0x40
	}
	return f
}

func lroZone(t *testing.T) *iflib.Zone {
	t.Helper()
	sp, err := busdma.NewSimSpace(busdma.SimConfig{Size: 8 << 20})
	require.NoError(t, err)
	z, err := iflib.NewZone(sp, "lro", iflib.MCLBytes, 64)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, z.Close()) })
	return z
}

func pkt(t *testing.T, z *iflib.Zone, f []byte) *iflib.Packet {
	t.Helper()
	m, err := z.Get()
	require.NoError(t, err)
	require.Equal(t, len(f), m.Append(f))
	m.Hdr.Len = len(f)
	return m
}

// verify checks a frame's IPv4 and TCP checksums with gVisor's own code.
func verify(t *testing.T, f []byte) (header.IPv4, header.TCP) {
	t.Helper()
	ip := header.IPv4(f[etherHdrLen:])
	require.True(t, ip.IsValid(len(ip)), "IPv4 header valid")
	require.True(t, ip.IsChecksumValid(), "IPv4 checksum")
	th := header.TCP(ip.Payload())
	return ip, th
}

// TestLROMerge: in-order segments merge into one whose headers and
// checksums gVisor accepts and whose payload is the segments' in order,
// with odd payload lengths (the sums cross byte boundaries); a corrupt
// segment makes the merged checksum fail; what must not merge does not.
func TestLROMerge(t *testing.T) {
	z := lroZone(t)
	for _, sizes := range [][]int{{1448, 1448, 1448, 700}, {1001, 1001, 1001, 7}, {1, 1}, {1447, 1447, 1447, 1447, 1447, 1447}} {
		var l lro
		var want []byte
		seq := uint32(1 << 31)
		for i, n := range sizes {
			payload := bytes.Repeat([]byte{byte(i + 1), byte(0x5a ^ i)}, n)[:n]
			want = append(want, payload...)
			f := segFrame(seq, header.TCPFlagAck, payload, false)
			h, ok := parseLRO(f, len(f))
			require.True(t, ok)
			m := pkt(t, z, f)
			if i == 0 {
				l.start(m, len(f), h, 64<<10)
			} else {
				require.True(t, l.matches(h), "segment %d of %v", i, sizes)
				l.add(m, h)
			}
			seq += uint32(n)
		}
		v, segs := l.take()
		assert.Equal(t, len(sizes), segs)
		f := v.AsSlice()
		ip, th := verify(t, f)
		assert.Equal(t, want, []byte(th[th.DataOffset():]))
		assert.Equal(t, uint32(1<<31), th.SequenceNumber())
		assert.Equal(t, uint32(777), th.AckNumber())
		xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(th)))
		assert.True(t, th.IsChecksumValid(ip.SourceAddress(), ip.DestinationAddress(), checksum.Checksum(th[th.DataOffset():], 0), uint16(len(th)-int(th.DataOffset()))),
			"merged TCP checksum, sizes %v", sizes)
		assert.Equal(t, uint16(0xffff), checksum.Checksum(th, xsum))
		v.Release()
	}

	// A corrupt segment in the middle: the merged checksum fails.
	var l lro
	seq := uint32(100)
	for i := range 3 {
		f := segFrame(seq, header.TCPFlagAck, bytes.Repeat([]byte{byte(i)}, 1000), i == 1)
		h, _ := parseLRO(f, len(f))
		if i == 0 {
			l.start(pkt(t, z, f), len(f), h, 64<<10)
		} else {
			require.True(t, l.matches(h))
			l.add(pkt(t, z, f), h)
		}
		seq += 1000
	}
	v, _ := l.take()
	ip, th := verify(t, v.AsSlice())
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(th)))
	assert.NotEqual(t, uint16(0xffff), checksum.Checksum(th, xsum), "a corrupt segment spoils the merge")
	v.Release()
}

func TestLRONoMerge(t *testing.T) {
	z := lroZone(t)
	first := segFrame(1000, header.TCPFlagAck, make([]byte, 1000), false)
	h0, ok := parseLRO(first, len(first))
	require.True(t, ok)
	for _, c := range []struct {
		name string
		f    []byte
	}{
		{"gap", segFrame(3000, header.TCPFlagAck, make([]byte, 1000), false)},
		{"bigger", segFrame(2000, header.TCPFlagAck, make([]byte, 1001), false)},
		{"fin", segFrame(2000, header.TCPFlagAck|header.TCPFlagFin, make([]byte, 10), false)},
	} {
		var l lro
		l.start(pkt(t, z, first), len(first), h0, 64<<10)
		if h, ok := parseLRO(c.f, len(c.f)); ok {
			assert.False(t, l.matches(h), c.name)
		}
		v, n := l.take()
		assert.Equal(t, 1, n)
		assert.Equal(t, first, v.AsSlice(), "a single segment goes up untouched")
		v.Release()
	}
	for _, c := range []struct {
		name string
		f    []byte
	}{
		{"syn", segFrame(1, header.TCPFlagSyn, nil, false)},
		{"pure ack", segFrame(1, header.TCPFlagAck, nil, false)},
		{"rst", segFrame(1, header.TCPFlagRst|header.TCPFlagAck, make([]byte, 5), false)},
	} {
		_, ok := parseLRO(c.f, len(c.f))
		assert.False(t, ok, c.name)
	}
	// After a PSH, the merge is closed.
	var l lro
	psh := segFrame(1000, header.TCPFlagAck|header.TCPFlagPsh, make([]byte, 1000), false)
	hp, _ := parseLRO(psh, len(psh))
	l.start(pkt(t, z, psh), len(psh), hp, 64<<10)
	next := segFrame(2000, header.TCPFlagAck, make([]byte, 1000), false)
	hn, _ := parseLRO(next, len(next))
	assert.False(t, l.matches(hn))
	v, _ := l.take()
	v.Release()
}
