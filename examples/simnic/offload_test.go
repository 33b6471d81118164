package simnic_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// offloadRig is a rig on a NIC with Config.Offload and a recording wire.
// Its TX zone has 4 KB clusters and its TX ring 1024 descriptors, so that
// a 64 KB TSO packet fits the TSO tag's segments (isc_tx_tso_segments_max
// is clamped to ntxd/12).
func offloadRig(t *testing.T, mode iflib.TxMode, offload bool, input func(*iflib.Context, int, []*iflib.Packet)) (*simnictest.Rig, *simnictest.Recorder) {
	t.Helper()
	rec := &simnictest.Recorder{}
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 1024, NRxd: 256, Offload: offload},
		Config: iflib.Config{TxMode: mode}, Peer: rec, Input: input, TxZone: 1024, TxZoneClusterSize: iflib.MJumPageSize})
	return r, rec
}

// transmitAll sends each packet, retrying a full mp_ring.
func transmitAll(t *testing.T, r *simnictest.Rig, pkts func(i int) *iflib.Packet, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		for {
			err := r.Ctx.Transmit(pkts(i))
			if err == nil {
				break
			}
			require.ErrorIs(t, err, iflib.ErrNoBufs, "packet %d: %v", i, err)
		}
	}
}

// TX checksum insertion end to end: the stack hands iflib frames with the
// IPv4 header checksum 0 and the TCP/UDP checksum seeded with the
// pseudo-header (CSUM_IP|CSUM_TCP or CSUM_UDP); iflib parses the headers
// into the packet info, the driver writes a context descriptor, and the
// device fills both in: every frame on the wire is byte-identical to the
// same frame with its checksums computed in software.
func TestTxChecksumOffload(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := offloadRig(t, mode, true, nil)
			sizes := []int{64, 127, 128, 129, 1514, 3000, 9000}
			const n = 84
			spec := func(i int) simnictest.FrameSpec {
				s := simnictest.FrameSpec{Flow: uint32(i % 3), Seq: uint32(i), Len: sizes[i%len(sizes)], Proto: simnictest.ProtoUDP, TCPSeq: uint32(i) * 7919}
				if i%2 == 1 {
					s.Proto = simnictest.ProtoTCP
				}
				return s
			}
			transmitAll(t, r, func(i int) *iflib.Packet {
				s := spec(i)
				s.Seed = true
				m := r.Packet(s.Build(nil), 1+i%4)
				m.Hdr.CsumFlags = iflib.CsumIP | iflib.CsumIPUDP
				if s.Proto == simnictest.ProtoTCP {
					m.Hdr.CsumFlags = iflib.CsumIP | iflib.CsumIPTCP
				}
				return m
			}, n)
			testutil.Eventually(t, "every frame", func() bool { return rec.Len() == n })
			for i, f := range rec.Frames() {
				p, err := simnictest.Parse(f)
				if err == nil && p.Stamped {
					err = simnictest.VerifyCsum(f, p)
				}
				require.NoError(t, err, "frame %d", i)
				require.True(t, spec(int(p.Seq)).Matches(f), "frame %d differs from its software-checksummed twin", i)
			}
		})
	}
}

// A driver without the offloads (Config.Offload off) refuses a packet
// that asks for one: it is dropped and counted, never sent with a
// checksum nobody computed.
func TestTxOffloadRefusedWithoutSupport(t *testing.T) {
	r, rec := offloadRig(t, iflib.TxModeSimple, false, nil)
	s := simnictest.FrameSpec{Len: 200, Proto: simnictest.ProtoTCP, Seed: true}
	m := r.Packet(s.Build(nil), 1)
	m.Hdr.CsumFlags = iflib.CsumIP | iflib.CsumIPTCP
	err := r.Ctx.Transmit(m)
	require.Error(t, err, "an offload the driver does not advertise was accepted")
	require.Zero(t, rec.Len(), "%d frames on the wire, oerrors %d", rec.Len(), r.Ctx.Counter(iflib.IfCounterOErrors))
	require.Equal(t, uint64(1), r.Ctx.Counter(iflib.IfCounterOErrors), "%d frames on the wire, oerrors %d", rec.Len(), r.Ctx.Counter(iflib.IfCounterOErrors))
}

// TSO end to end: a TCP packet of up to 64 KB with CSUM_IP_TSO and an MSS
// leaves the device as MSS-sized frames with correct IPv4 total lengths,
// consecutive IP identifications, advancing TCP sequence numbers, FIN and
// PSH only on the last segment, valid IPv4 and TCP checksums (iflib seeds
// th_sum with the pseudo-header without the length; the device adds each
// segment's), and payloads that concatenate to the original. VLAN-tagged
// TSO packets get the tag on every segment.
func TestTSO(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := offloadRig(t, mode, true, nil)
			cases := []struct{ payload, mss int }{{1, 536}, {1448, 1448}, {1449, 1448}, {20000, 1448}, {60000, 8960}, {65535 - 40, 1460}, {9000, 536}, {4000, 1000}}
			for ci, tc := range cases {
				base := len(rec.Frames())
				s := simnictest.FrameSpec{Flow: uint32(ci), Seq: uint32(ci), Proto: simnictest.ProtoTCP, TCPSeq: 0xfffff000 + uint32(ci),
					TCPFlags: 0x19 | 0x80, IPID: 0xfff0, Seed: true, VLAN: uint16(ci%2) * 42}
				s.Len = simnictest.EtherLen + simnictest.IPv4Len + simnictest.TCPLen + tc.payload
				orig := s.Build(nil)
				// The stack hands the packet untagged, with M_VLANTAG.
				vlan := s.VLAN
				s.VLAN = 0
				pkt := s.Build(nil)
				s.VLAN = vlan
				m := r.Packet(pkt, (len(pkt)+4095)/4096)
				m.Hdr.CsumFlags = iflib.CsumIPTSO
				m.Hdr.TSOSegSize = uint16(tc.mss)
				if s.VLAN != 0 {
					m.Hdr.Flags |= iflib.MVLANTag
					m.Hdr.VLANTag = s.VLAN
				}
				transmitAll(t, r, func(int) *iflib.Packet { return m }, 1)
				nseg := (tc.payload + tc.mss - 1) / tc.mss
				testutil.Eventually(t, fmt.Sprintf("case %d: %d segments", ci, nseg), func() bool { return rec.Len() >= base+nseg })
				segs := rec.Frames()[base:]
				require.Len(t, segs, nseg, "case %d: %d segments, want %d", ci, len(segs), nseg)
				require.NoError(t, checkTSO(orig, segs, tc.mss), "case %d (payload %d, mss %d, vlan %d)", ci, tc.payload, tc.mss, s.VLAN)
			}
			st := r.NIC.Stats()
			require.False(t, st.TxTSO != uint64(len(cases)) || st.TxBadContext != 0, "device stats %+v", st)
		})
	}
}

// checkTSO verifies the segments of the TSO packet orig (as it would be
// on the wire, tag included).
func checkTSO(orig []byte, segs [][]byte, mss int) error {
	po, err := simnictest.Parse(orig)
	if err != nil {
		return err
	}
	hdr := po.Payload
	var payload []byte
	for i, f := range segs {
		p, err := simnictest.Parse(f)
		if err != nil || p.Payload == 0 {
			return fmt.Errorf("segment %d: %v", i, err)
		}
		if p.HasVLAN != po.HasVLAN || p.VLAN != po.VLAN {
			return fmt.Errorf("segment %d: VLAN %v/%d, want %v/%d", i, p.HasVLAN, p.VLAN, po.HasVLAN, po.VLAN)
		}
		if err := simnictest.VerifyCsum(f, p); err != nil {
			return fmt.Errorf("segment %d: %w", i, err)
		}
		last := i == len(segs)-1
		if l := len(f) - hdr; l != mss && !last || l > mss || l <= 0 {
			return fmt.Errorf("segment %d carries %d bytes, mss %d", i, l, mss)
		}
		if p.IPID != po.IPID+uint16(i) {
			return fmt.Errorf("segment %d: IP id %#x, want %#x", i, p.IPID, po.IPID+uint16(i))
		}
		if want := po.TCPSeq + uint32(len(payload)); p.TCPSeq != want {
			return fmt.Errorf("segment %d: seq %#x, want %#x", i, p.TCPSeq, want)
		}
		want := po.TCPFlags
		if !last {
			want &^= 0x01 | 0x08 // FIN, PSH
		}
		if i > 0 {
			want &^= 0x80 // CWR
		}
		if p.TCPFlags != want {
			return fmt.Errorf("segment %d: flags %#x, want %#x", i, p.TCPFlags, want)
		}
		if !bytes.Equal(f[:p.L3], orig[:p.L3]) || !bytes.Equal(f[p.L3+12:p.L3+20], orig[po.L3+12:po.L3+20]) {
			return fmt.Errorf("segment %d: Ethernet header or addresses changed", i)
		}
		payload = append(payload, f[hdr:]...)
	}
	if !bytes.Equal(payload, orig[hdr:]) {
		return fmt.Errorf("the segments' payloads (%d bytes) differ from the packet's (%d)", len(payload), len(orig)-hdr)
	}
	return nil
}

// VLAN tag insertion on TX (M_VLANTAG → VLE) with and without the other
// offloads. Without Config.Offload, IFCAP_VLAN_HWTAGGING is offered but
// not enabled: a tagged packet is refused until SIOCSIFCAP enables it
// (and the device's CTRL.VME with it).
func TestVLANInsertion(t *testing.T) {
	for _, offload := range []bool{false, true} {
		t.Run(fmt.Sprint("offload=", offload), func(t *testing.T) {
			r, rec := offloadRig(t, iflib.TxModeMPRing, offload, nil)
			require.NotZero(t, r.Ctx.Capabilities()&iflib.CapVLANHWTagging)
			if !offload {
				require.Zero(t, r.Ctx.CapEnabled()&iflib.CapVLANHWTagging)
				require.False(t, r.NIC.VLANMode())
				m := r.Packet(simnictest.FrameSpec{Len: 100}.Build(nil), 1)
				m.Hdr.Flags |= iflib.MVLANTag
				m.Hdr.VLANTag = 100
				require.ErrorIs(t, r.Ctx.Transmit(m), iflib.ErrOffloadDisabled)
				require.NoError(t, r.Ctx.SetCapEnable(r.Ctx.CapEnabled()|iflib.CapVLANHWTagging))
			}
			require.True(t, r.NIC.VLANMode(), "CTRL.VME programmed from IFCAP_VLAN_HWTAGGING")
			const n = 40
			transmitAll(t, r, func(i int) *iflib.Packet {
				s := simnictest.FrameSpec{Seq: uint32(i), Len: []int{60, 200, 1514, 5000}[i%4]}
				m := r.Packet(s.Build(nil), 1+i%3)
				m.Hdr.Flags |= iflib.MVLANTag
				m.Hdr.VLANTag = uint16(100 + i)
				return m
			}, n)
			testutil.Eventually(t, "every frame", func() bool { return rec.Len() == n })
			for _, f := range rec.Frames() {
				p, err := simnictest.Parse(f)
				require.NoError(t, err, "frame %d: tag %v/%d, err", p.Seq, p.HasVLAN, p.VLAN)
				require.True(t, p.HasVLAN, "frame %d: tag %v/%d, err %v", p.Seq, p.HasVLAN, p.VLAN, err)
				require.Equal(t, uint16(100+p.Seq), p.VLAN, "frame %d: tag %v/%d, err %v", p.Seq, p.HasVLAN, p.VLAN, err)
				want := simnictest.FrameSpec{Seq: p.Seq, Len: []int{60, 200, 1514, 5000}[p.Seq%4], VLAN: uint16(100 + p.Seq)}
				require.True(t, want.Matches(f), "frame %d differs from the tagged original", p.Seq)
			}
		})
	}
}

// RX: the device strips VLAN tags into the descriptor (iflib hands them
// up in Hdr.VLANTag with M_VLANTAG) and checks IPv4 and TCP/UDP
// checksums, which the driver reports as CSUM_L3_CALC|L3_VALID and
// CSUM_L4_CALC|L4_VALID (a bad one: CALC without VALID). Without the
// offloads frames come up as they were, with no checksum flags.
func TestRxChecksumAndVLANStrip(t *testing.T) {
	type want struct {
		csum iflib.CsumFlags
		vlan uint16
	}
	type sent struct {
		frame []byte
		off   want // with Offload
	}
	corrupt := func(f []byte, at int) []byte { f[at] ^= 0xff; return f }
	var frames []sent
	good := iflib.CsumL3Calc | iflib.CsumL3Valid | iflib.CsumL4Calc | iflib.CsumL4Valid
	for i, proto := range []uint8{simnictest.ProtoUDP, simnictest.ProtoTCP} {
		s := simnictest.FrameSpec{Seq: uint32(10 * i), Proto: proto, Len: 300}
		frames = append(frames, sent{s.Build(nil), want{good, 0}})
		s.Seq++
		f := s.Build(nil)
		frames = append(frames, sent{corrupt(f, simnictest.EtherLen+10), want{iflib.CsumL3Calc | iflib.CsumL4Calc | iflib.CsumL4Valid, 0}})
		s.Seq++
		f = s.Build(nil)
		frames = append(frames, sent{corrupt(f, len(f)-1), want{iflib.CsumL3Calc | iflib.CsumL3Valid | iflib.CsumL4Calc, 0}})
		s.Seq++
		s.VLAN = 7
		frames = append(frames, sent{s.Build(nil), want{good, 7}})
		s.Seq++
		s.VLAN, s.Len = 9, 4000
		frames = append(frames, sent{s.Build(nil), want{good, 9}})
	}
	// A non-IP frame: no checksum flags.
	raw := make([]byte, 100)
	copy(raw, simnic.DefaultMAC[:]) // to the NIC: the address filter passes it
	raw[12], raw[13] = 0x88, 0xb5
	frames = append(frames, sent{raw, want{}})
	for _, offload := range []bool{false, true} {
		t.Run(fmt.Sprint("offload=", offload), func(t *testing.T) {
			type got struct {
				data  []byte
				csum  iflib.CsumFlags
				vlan  uint16
				vflag bool
			}
			var gots []got
			var mu = make(chan struct{}, 1)
			mu <- struct{}{}
			input := func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
				<-mu
				for _, m := range pkts {
					gots = append(gots, got{flatten(m), m.Hdr.CsumFlags, m.Hdr.VLANTag, m.Hdr.Flags&iflib.MVLANTag != 0})
					m.Free()
				}
				mu <- struct{}{}
			}
			r, _ := offloadRig(t, iflib.TxModeMPRing, offload, input)
			for _, s := range frames {
				f := s.frame
				testutil.Eventually(t, "the wire", func() bool { return r.NIC.Receive(f) })
			}
			count := func() int { <-mu; defer func() { mu <- struct{}{} }(); return len(gots) }
			testutil.Eventually(t, "every frame", func() bool { return count() == len(frames) })
			<-mu
			defer func() { mu <- struct{}{} }()
			for i, s := range frames {
				g := gots[i]
				w, data := s.off, s.frame
				if offload && w.vlan != 0 {
					data = append(append([]byte{}, s.frame[:12]...), s.frame[16:]...)
				}
				if !offload {
					w = want{}
				}
				require.Equal(t, data, g.data, "frame %d: got csum %#x vlan %v/%d (%d bytes), want csum %#x vlan %d (%d bytes)", i, g.csum, g.vflag, g.vlan, len(g.data), w.csum, w.vlan, len(data))
				require.Equal(t, w.csum, g.csum, "frame %d: got csum %#x vlan %v/%d (%d bytes), want csum %#x vlan %d (%d bytes)", i, g.csum, g.vflag, g.vlan, len(g.data), w.csum, w.vlan, len(data))
				require.Equal(t, w.vlan != 0, g.vflag, "frame %d: got csum %#x vlan %v/%d (%d bytes), want csum %#x vlan %d (%d bytes)", i, g.csum, g.vflag, g.vlan, len(g.data), w.csum, w.vlan, len(data))
				require.Equal(t, w.vlan, g.vlan, "frame %d: got csum %#x vlan %v/%d (%d bytes), want csum %#x vlan %d (%d bytes)", i, g.csum, g.vflag, g.vlan, len(g.data), w.csum, w.vlan, len(data))
			}
			st := r.NIC.Stats()
			require.False(t, offload && st.RxCsumErrors != 4, "%d frames flagged with a bad checksum, want 4", st.RxCsumErrors)
		})
	}
}

// Config.TSOSegs is isc_tx_tso_segments_max: a TSO packet may span more
// descriptors than TxSegs (isc_tx_nsegments) allows any other packet, as on
// ixl (IXL_MAX_TX_SEGS 8, IXL_MAX_TSO_SEGS 128). With TxSegs 2 and
// TSOSegs 32, a 20-buffer TSO packet goes out as one packet of 21
// descriptors (its context and 20 data descriptors), segmented right;
// with TSOSegs left at its default (TxSegs) the same packet cannot be
// mapped, and iflib drops it and counts it.
func TestTSOSegs(t *testing.T) {
	for _, tc := range []struct {
		tsoSegs int
		sent    bool
	}{{32, true}, {0, false}} {
		t.Run(fmt.Sprint("TSOSegs=", tc.tsoSegs), func(t *testing.T) {
			rec := &simnictest.Recorder{}
			r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 1024, NRxd: 256, Offload: true, TxSegs: 2, TSOSegs: tc.tsoSegs},
				Config: iflib.Config{TxMode: iflib.TxModeSimple}, Peer: rec, TxZone: 64})
			got, want := r.NIC.Config().TSOSegs, max(tc.tsoSegs, 2)
			require.Equal(t, want, got, "Config().TSOSegs = %d, want %d", got, want)
			const payload, mss, nbuf = 20000, 1448, 20
			s := simnictest.FrameSpec{Proto: simnictest.ProtoTCP, TCPSeq: 1000, TCPFlags: 0x18, IPID: 7, Seed: true}
			s.Len = simnictest.EtherLen + simnictest.IPv4Len + simnictest.TCPLen + payload
			orig := s.Build(nil)
			m := r.Packet(orig, nbuf)
			m.Hdr.CsumFlags = iflib.CsumIPTSO
			m.Hdr.TSOSegSize = mss
			err := r.Ctx.Transmit(m)
			if !tc.sent {
				require.Error(t, err, "Transmit = %v, oerrors %d; want a refusal counted once", err, r.Ctx.Counter(iflib.IfCounterOErrors))
				require.Equal(t, uint64(1), r.Ctx.Counter(iflib.IfCounterOErrors), "Transmit = %v, oerrors %d; want a refusal counted once", err, r.Ctx.Counter(iflib.IfCounterOErrors))
				return
			}
			require.NoError(t, err)
			nseg := (payload + mss - 1) / mss
			testutil.Eventually(t, "every segment", func() bool { return rec.Len() >= nseg })
			require.NoError(t, checkTSO(orig, rec.Frames(), mss))
			ds := r.Driver.Stats()
			require.Equal(t, uint64(1), ds.TxEncapped, "driver stats %+v", ds)
			st := r.NIC.Stats()
			require.False(t, st.TxTSO != 1 || st.TxProcessed != 1, "device stats %+v", st)
		})
	}
}
