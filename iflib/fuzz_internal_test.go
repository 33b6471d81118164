package iflib

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// fuzzZone is a zone of small clusters for building chains in fuzz tests.
func fuzzZone(tb testing.TB, size int) *Zone {
	tb.Helper()
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 4 << 20})
	require.NoError(tb, err)
	z, err := NewZone(s, "fuzz", size, 2048)
	require.NoError(tb, err)
	return z
}

// fuzzChain splits data into a chain at the cut points (each byte of cuts
// is a buffer length, 0 skipped), every buffer from z.
func fuzzChain(tb testing.TB, z *Zone, data, cuts []byte) *Packet {
	var head, tail *Packet
	for len(data) > 0 {
		n := len(data)
		if len(cuts) > 0 {
			n = min(n, max(int(cuts[0]), 1), z.ClusterSize())
			cuts = cuts[1:]
		}
		n = min(n, z.ClusterSize())
		p, err := z.Get()
		if err != nil {
			head.Free()
			tb.Skip("zone too small for this input")
		}
		p.Append(data[:n])
		data = data[n:]
		if head == nil {
			head = p
		} else {
			tail.Next = p
		}
		tail = p
	}
	if head != nil {
		head.Hdr.Len = head.ChainLen()
	}
	return head
}

func chainBytes(m *Packet) []byte {
	b := make([]byte, m.ChainLen())
	if err := m.CopyData(0, b); err != nil {
		panic(err) // ChainLen bytes always lie within the chain
	}
	return b
}

// FuzzParseHeader: iflib_parse_header on any bytes, split anywhere, with
// any offload request, never panics, keeps the frame's bytes, and reports
// header lengths that lie inside the frame.
func FuzzParseHeader(f *testing.F) {
	tcp4 := append([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0},
		make([]byte, 8+20)...)
	tcp4[14+20+12] = 0x50
	f.Add(tcp4, []byte{20, 40}, uint32(CsumIPTCP|CsumIP), uint16(0))
	f.Add(tcp4, []byte{}, uint32(CsumIPTSO), uint16(1448))
	f.Add(tcp4, []byte{10}, uint32(CsumIPTSO), uint16(536))
	vlan6 := append([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 0, 5, 0x86, 0xdd, 0x60}, make([]byte, 39+8)...)
	vlan6[18+6] = 17
	f.Add(vlan6, []byte{3, 3, 3}, uint32(CsumIP6UDP), uint16(0))
	f.Add([]byte{1, 2, 3}, []byte{1}, uint32(CsumIPTCP), uint16(0))
	z := fuzzZone(f, 128)
	q := &txq{st: newCounters[txCounter](int(numTxCounters))}
	q.ctx = &Context{}
	f.Fuzz(func(t *testing.T, data, cuts []byte, csum uint32, mss uint16) {
		if len(data) == 0 || len(data) > 4096 {
			return
		}
		m := fuzzChain(t, z, data, cuts)
		defer m.Free()
		m.Hdr.TSOSegSize = mss
		pi := &PktInfo{CsumFlags: CsumFlags(csum), VTag: mss, Len: m.Hdr.Len}
		err := q.parseHeader(pi, m)
		got := chainBytes(m)
		if err == nil && pi.CsumFlags&CsumTSO != 0 {
			// TSO writes the pseudo-header sum into th_sum: allow exactly
			// those two bytes to change.
			o := int(pi.EHdrLen) + int(pi.IPHLen) + 16
			require.LessOrEqual(t, o+2, len(data), "th_sum at %d beyond the %d-byte frame", o, len(data))
			copy(got[o:o+2], data[o:o+2])
		}
		require.Equal(t, data, got, "parseHeader changed the frame's bytes")
		if err != nil {
			return
		}
		require.False(t, pi.EHdrLen != 0 && pi.EHdrLen != 14 && pi.EHdrLen != 18, "ehdrlen %d", pi.EHdrLen)
		require.LessOrEqual(t, int(pi.EHdrLen)+int(pi.IPHLen), len(data), "headers (%d+%d) beyond the %d-byte frame", pi.EHdrLen, pi.IPHLen, len(data))
	})
}

// FuzzCollapseDefrag: m_collapse and m_defrag keep every byte in order,
// free what they empty (no packet lost or freed twice), and defrag reaches
// the fewest clusters the bytes need.
func FuzzCollapseDefrag(f *testing.F) {
	f.Add(bytes.Repeat([]byte{7}, 700), []byte{100, 50, 3, 200, 128}, uint8(2))
	f.Add(bytes.Repeat([]byte{1, 2, 3}, 100), []byte{1, 1, 1, 1, 1, 1}, uint8(1))
	f.Add([]byte{9}, []byte{}, uint8(0))
	const cl = 128
	z := fuzzZone(f, cl)
	q := &txq{st: newCounters[txCounter](int(numTxCounters))}
	f.Fuzz(func(t *testing.T, data, cuts []byte, maxSegs uint8) {
		if len(data) == 0 || len(data) > 8*cl {
			return
		}
		m := fuzzChain(t, z, data, cuts)
		before := z.Outstanding()
		ok := collapse(m, int(maxSegs))
		got := chainBytes(m)
		require.Equal(t, data, got, "collapse changed the bytes")
		require.Equal(t, m.NumBufs() <= int(maxSegs), ok, "collapse reported %v with %d buffers for %d segments", ok, m.NumBufs(), maxSegs)
		require.Equal(t, m.NumBufs(), z.Outstanding(), "collapse: %d packets out, chain of %d", z.Outstanding(), m.NumBufs())
		require.LessOrEqual(t, z.Outstanding(), before, "collapse: %d packets out, chain of %d", z.Outstanding(), m.NumBufs())
		d, ok := q.defragChain(m)
		if ok {
			m = d
		}
		got = chainBytes(m)
		require.Equal(t, data, got, "defrag changed the bytes")
		require.False(t, ok && m.NumBufs() != (len(data)+cl-1)/cl, "defrag made %d clusters for %d bytes", m.NumBufs(), len(data))
		require.Equal(t, len(data), m.Hdr.Len, "header length %d after defrag, want %d", m.Hdr.Len, len(data))
		m.Free()
		require.Zero(t, z.Outstanding(), "after free: %d out, %d double frees", z.Outstanding(), z.Stats().DoubleFrees)
		require.Zero(t, z.Stats().DoubleFrees, "after free: %d out, %d double frees", z.Outstanding(), z.Stats().DoubleFrees)
	})
}

// TSO: iflib_parse_header writes the pseudo-header sum (addresses and
// protocol, no length) into th_sum, and with IFLIB_TSO_INIT_IP sets the
// first segment's ip_len and zeroes ip_sum.
func TestParseHeaderTSO(t *testing.T) {
	z := fuzzZone(t, MCLBytes)
	q := &txq{st: newCounters[txCounter](int(numTxCounters)), ctx: &Context{}}
	q.ctx.shared.Flags = FlagTSOInitIP
	p, _ := z.Get()
	frame := make([]byte, 14+20+20+3000)
	frame[12], frame[13] = 0x08, 0x00
	ip := frame[14:]
	ip[0], ip[9] = 0x45, ipProtoTCP
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	ip[10], ip[11] = 0xde, 0xad
	ip[20+12] = 0x50
	p.Append(frame[:MCLBytes])
	p.Hdr.Len = MCLBytes
	p.Hdr.TSOSegSize = 1000
	pi := &PktInfo{CsumFlags: CsumIPTSO, Len: p.Hdr.Len}
	require.NoError(t, q.parseHeader(pi, p))
	b := p.Bytes()
	// 0x0a00+0x0001 + 0x0a00+0x0002 + 6 = 0x1409
	got := uint16(b[14+20+16])<<8 | uint16(b[14+20+17])
	require.Equal(t, uint16(0x1409), got, "th_sum %#x, want the pseudo-header sum 0x1409", got)
	got = uint16(b[14+2])<<8 | uint16(b[14+3])
	require.Equal(t, uint16(20+20+1000), got, "ip_len %d, want one segment (1040)", got)
	require.Zero(t, b[14+10], "ip_sum not zeroed")
	require.Zero(t, b[14+11], "ip_sum not zeroed")
	require.Equal(t, CsumIPTCP|CsumIP, pi.CsumFlags&(CsumIPTCP|CsumIP), "pi %+v", pi)
	require.Equal(t, uint16(1000), pi.TSOSegSize, "pi %+v", pi)
	require.Equal(t, uint8(20), pi.TCPHLen, "pi %+v", pi)
	p.Free()
}
