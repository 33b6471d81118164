package afxdp

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// jumboSizes are frame lengths around the single-frame limit (3840 bytes
// of a 4096-byte frame after XDP_PACKET_HEADROOM) up to MTU 9000's 9014.
var jumboSizes = []int{60, 1514, 3840, 3841, 7680, 7681, 9014}

// chainFrom builds a packet chain holding b from zone clusters (what a
// stack does for a frame larger than a cluster) with iflib's
// Zone.GetChain (m_getm2), waiting for clusters while the TX ring still
// holds them: 5 s for each cluster the frame needs.
func chainFrom(t *testing.T, z *iflib.Zone, b []byte) *iflib.Packet {
	t.Helper()
	var m *iflib.Packet
	bufs := max(1, (len(b)+z.ClusterSize()-1)/z.ClusterSize())
	require.Eventually(t, func() bool {
		var err error
		m, err = z.GetChain(b, 0)
		return err == nil
	}, time.Duration(bufs)*5*time.Second, time.Millisecond)
	return m
}

// TestJumbo: at MTU 9000 the driver binds for XDP multi-buffer and moves
// frames of every size up to 9014 bytes both ways, byte-identical:
// received ones as fragment chains (each fragment at its own offset in
// its UMEM frame, RxdFrag.Off), sent ones as descriptor chains
// (XDP_PKT_CONTD), in native and generic XDP.
func TestJumbo(t *testing.T) {
	needAFXDP(t)
	for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			rig := newRig(t, RigConfig{MTU: 9000})
			p := rig.Pairs[0]
			u := newUMEM(t, 2048)
			txz, err := u.NewZone("tx", 256)
			require.NoError(t, err)
			sk := newSink()
			d, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, XDPMode: mode, NRxd: 128, NTxd: 128, Checker: busdmatest.NewChecker(t)},
				iflib.Attachment{Input: sk.input, Config: iflib.Config{RxZoneSize: 512}})
			if !d.MultiBuffer() {
				t.Skip("this kernel has no XDP multi-buffer (BPF_F_XDP_HAS_FRAGS)")
			}
			require.Equal(t, 9000, ic.MTU())
			for _, q := range d.q {
				require.True(t, q.s.sg, "queue %d not bound with XDP_USE_SG", q.id)
			}
			raw, err := rig.OpenRaw(p.B)
			require.NoError(t, err)
			defer raw.Close()

			const rounds = 20
			n := rounds * len(jumboSizes)
			frame := func(buf []byte, i int, dst, src []byte) []byte {
				return TestFrame(buf, jumboSizes[i%len(jumboSizes)], dst, src, uint64(i))
			}
			// Peer → driver.
			buf := make([]byte, 9014)
			for i := 0; i < n; i++ {
				sendRetry(t, raw, frame(buf, i, p.AMAC, p.BMAC))
				if i%16 == 15 {
					require.True(t, waitFor(t, 2*time.Second, func() bool { return sk.count() > i-32 }))
				}
			}
			require.True(t, waitFor(t, 5*time.Second, func() bool { return sk.count() >= n }), "received %d of %d (driver %+v)", sk.count(), n, d.Stats())
			sk.mu.Lock()
			for i, got := range sk.frames {
				require.Equal(t, frame(buf, i, p.AMAC, p.BMAC), got, "received frame %d", i)
			}
			sk.mu.Unlock()
			rs, err := ic.RxQueueStats(0)
			require.NoError(t, err)
			assert.Zero(t, rs.IErrors)
			assert.Zero(t, d.Stats().RxDropped)

			// Driver → peer.
			wbuf := make([]byte, 9014)
			peer := newPeerFrames(t, raw, func(i int) []byte { return frame(wbuf, i, p.BMAC, p.AMAC) })
			for i := 0; i < n; i++ {
				require.NoError(t, ic.Transmit(chainFrom(t, txz, frame(buf, i, p.BMAC, p.AMAC))), "frame %d", i)
				if i%16 == 15 {
					peer.recvUntil(i-16, time.Second)
				}
			}
			peer.recvUntil(n, 5*time.Second)
			require.Equal(t, n, peer.got, "frames at the peer (driver %+v)", d.Stats())
			assert.Zero(t, d.Stats().TxInvalidDescs)
			require.NoError(t, ic.Detach())
			assert.Equal(t, txz.Size(), txz.Available(), "TX packets not back in their zone")
		})
	}
}

// TestNativePeerMTU (review P4): a native attach on a veth whose peer's
// MTU is larger than a page works with the frags-aware program, and where
// the kernel refuses (ERANGE, the reason only in a netlink extack) the
// error names the interface and the MTU as the cause.
func TestNativePeerMTU(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	require.NoError(t, rig.Netlink().LinkSetMTU(mustLink(t, rig, p.B), 9000))
	d, ic := startDriver(t, rig, Config{Interface: p.A, XDPMode: XDPNative, NRxd: 64, NTxd: 64}, iflib.Attachment{Config: iflib.Config{RxZoneSize: 256}})
	if !d.MultiBuffer() {
		t.Skip("this kernel has no XDP multi-buffer (BPF_F_XDP_HAS_FRAGS)")
	}
	require.NoError(t, ic.Detach())

	err := attachErr(fmt.Errorf("create link: %w", unix.ERANGE), "va", XDPNative, false)
	require.ErrorIs(t, err, ErrFrameTooBig)
	require.ErrorIs(t, err, unix.ERANGE)
	assert.Contains(t, err.Error(), "attach native XDP to va: the kernel refused a single-buffer XDP program (this kernel has no XDP multi-buffer) because of an MTU")
	assert.NotContains(t, err.Error(), "ifindex")
}
