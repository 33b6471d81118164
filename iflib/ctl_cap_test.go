package iflib_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// ipv4UDP returns a 60-byte IPv4/UDP frame (ethertype 0x0800) or, with v6,
// an IPv6/UDP one.
func ipFrame(v6 bool) []byte {
	b := make([]byte, 90)
	if v6 {
		binary.BigEndian.PutUint16(b[12:14], 0x86dd)
		b[14] = 0x60
		binary.BigEndian.PutUint16(b[18:20], 8)
		b[20] = 17
		return b[:14+40+8]
	}
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	b[14] = 0x45
	binary.BigEndian.PutUint16(b[16:18], 28)
	b[23] = 17
	return b[:14+28]
}

// SIOCSIFCAP: only offered capabilities; an offload change stops and
// reinitialises a running interface, IFCAP_LINKSTATE does not; Transmit
// refuses offloads not enabled (counted in oerrors); RX checksum results
// are withheld for the IP version whose RX checksum is off.
func TestSetCapEnable(t *testing.T) {
	offered := iflib.CapTxCsum | iflib.CapRxCsum | iflib.CapRxCsumIPv6 | iflib.CapVLANHWTagging | iflib.CapLinkState
	var c collector
	var got []iflib.PktHdr
	f, d := newCtlFake(t, fakeOpts{input: func(ic *iflib.Context, q int, pkts []*iflib.Packet) {
		for _, p := range pkts {
			got = append(got, p.Hdr)
		}
		c.input(ic, q, pkts)
	}, softc: func(sc *iflib.SoftcCtx) {
		sc.Capabilities = offered
		sc.CapEnable = offered
	}})
	f.pktGet = func(ri *iflib.RxdInfo) error {
		ri.CsumFlags = iflib.CsumL3Calc | iflib.CsumL3Valid | iflib.CsumL4Calc | iflib.CsumL4Valid
		ri.CsumData = 0xffff
		return nil
	}
	z := f.zone(iflib.MCLBytes, 16)
	err := f.ctx.SetCapEnable(offered | iflib.CapTSO4)
	var ce *iflib.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "CapEnable", ce.Field)
	require.NoError(t, f.ctx.Init())
	require.NoError(t, f.ctx.SetCapEnable(offered&^iflib.CapLinkState))
	assert.Equal(t, 1, d.initCount(), "IFCAP_LINKSTATE: no reinit")
	send := func(csum iflib.CsumFlags, vlan bool) error {
		p := pkt(t, z, 0, 0)
		p.SetLen(0)
		p.Append(ipFrame(false))
		p.Hdr.Len = p.Len()
		p.Hdr.CsumFlags = csum
		if vlan {
			p.Hdr.Flags |= iflib.MVLANTag
			p.Hdr.VLANTag = 5
		}
		return f.ctx.Transmit(p)
	}
	require.NoError(t, send(iflib.CsumIP|iflib.CsumIPUDP, true))
	require.NoError(t, f.ctx.SetCapEnable(iflib.CapRxCsum))
	assert.Equal(t, 2, d.initCount(), "TXCSUM off: reinit")
	assert.Equal(t, []iflib.Capabilities{offered, iflib.CapRxCsum}, d.initCfg, "IFDI_INIT sees the set")
	assert.True(t, f.ctx.Running())
	before := txStats(t, f.ctx).OErrors
	require.ErrorIs(t, send(iflib.CsumIPUDP, false), iflib.ErrOffloadDisabled)
	require.ErrorIs(t, send(0, true), iflib.ErrOffloadDisabled)
	require.NoError(t, send(0, false))
	assert.Equal(t, before+2, txStats(t, f.ctx).OErrors)
	assert.Equal(t, "<RXCSUM>", sysctl(t, f.ctx, "capenable"))

	// RX: IPv4 keeps its results (RXCSUM on), IPv6 loses them.
	require.True(t, f.rx(ipFrame(false)))
	require.True(t, f.rx(ipFrame(true)))
	testutil.Eventually(t, "two frames", func() bool { return c.count() == 2 })
	assert.NotZero(t, got[0].CsumFlags)
	assert.Zero(t, got[1].CsumFlags)
	assert.Zero(t, got[1].CsumData)
	require.NoError(t, f.ctx.Stop())
	f.close(z)
}

// A driver that declares no capabilities keeps every offload enabled, as
// before the control plane.
func TestCapabilitiesDefault(t *testing.T) {
	f := newFake(t, fakeOpts{})
	caps := f.ctx.Capabilities()
	assert.Equal(t, caps, f.ctx.CapEnabled())
	assert.NotZero(t, caps&iflib.CapTxCsum)
	assert.NotZero(t, caps&iflib.CapVLANHWTagging)
	f.close()
}

// RSS: the configuration is validated and copied; a running interface is
// reinitialised; the hash the device reports (iri_flowid, iri_rsstype)
// reaches the packet.
func TestSetRSS(t *testing.T) {
	var got []iflib.PktHdr
	var c collector
	f, d := newCtlFake(t, fakeOpts{input: func(ic *iflib.Context, q int, pkts []*iflib.Packet) {
		for _, p := range pkts {
			got = append(got, p.Hdr)
		}
		c.input(ic, q, pkts)
	}})
	f.pktGet = func(ri *iflib.RxdInfo) error {
		ri.FlowID, ri.RSSType = 0xdeadbeef, iflib.HashRSSTCPv4
		return nil
	}
	def := f.ctx.RSS()
	require.Len(t, def.Table, iflib.DefaultRSSTableSize)
	r := def
	r.Table = make([]uint16, 3)
	require.ErrorIs(t, f.ctx.SetRSS(r), iflib.ErrConfig)
	r.Table = make([]uint16, iflib.DefaultRSSTableSize)
	r.Table[5] = 1 // one RX queue: no queue 1
	require.ErrorIs(t, f.ctx.SetRSS(r), iflib.ErrConfig)
	r.Table[5] = 0
	r.Types = 1 << 30
	require.ErrorIs(t, f.ctx.SetRSS(r), iflib.ErrConfig)
	r.Types = iflib.RSSHashTCPIPv4
	r.Key[0] = 0x42
	require.NoError(t, f.ctx.Init())
	require.NoError(t, f.ctx.SetRSS(r))
	assert.Equal(t, 2, d.initCount(), "reinit")
	r.Table[0] = 9 // the caller's slice is not the context's
	assert.Equal(t, uint16(0), f.ctx.RSS().Table[0])
	assert.Equal(t, byte(0x42), f.ctx.RSS().Key[0])
	assert.Equal(t, uint32(iflib.RSSHashTCPIPv4), sysctl(t, f.ctx, "rss_hash_types"))
	require.True(t, f.rx(frame(300, 1)))
	testutil.Eventually(t, "a frame", func() bool { return c.count() == 1 })
	assert.Equal(t, uint32(0xdeadbeef), got[0].FlowID)
	assert.Equal(t, iflib.HashRSSTCPv4, got[0].HashType)
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// Queue selection uses the hash (iflib_if_transmit's QIDX): a hashed
// packet goes to TX queue (flowid & (isc_rss_table_size−1)) mod nqueues, an
// unhashed one to queue 0.
func TestTxQueueFromHash(t *testing.T) {
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{Queues: 4}})
	n := r.Ctx.NumTxQueues()
	require.Equal(t, 4, n)
	want := make([]uint64, n)
	for i := 0; i < 64; i++ {
		p := r.Packet(make([]byte, 100), 1)
		if i%4 == 3 {
			want[0]++
		} else {
			p.Hdr.FlowID, p.Hdr.HashType = uint32(i*7919), iflib.HashRSSTCPv4
			want[(uint32(i*7919)&uint32(r.Ctx.Softc().RSSTableSize-1))%uint32(n)]++
		}
		require.NoError(t, r.Ctx.Transmit(p))
	}
	testutil.Eventually(t, "every queue's packets", func() bool {
		for q := 0; q < n; q++ {
			st, err := r.Ctx.TxQueueStats(q)
			require.NoError(t, err)
			if st.OPackets != want[q] {
				return false
			}
		}
		return true
	})
}
