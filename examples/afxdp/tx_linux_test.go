package afxdp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// TestTxToPeer: packets given to iflib's Transmit, from a zone carved from
// the UMEM, reach a raw socket on the peer end byte-identical and in
// order, in each transmit mode; every packet returns to its zone.
func TestTxToPeer(t *testing.T) {
	needAFXDP(t)
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			rig := newRig(t, RigConfig{})
			p := rig.Pairs[0]
			u, err := NewUMEM(UMEMConfig{Frames: 4096})
			require.NoError(t, err)
			defer func() { require.NoError(t, u.Close()) }()
			txz, err := u.NewZone("tx", 512)
			require.NoError(t, err)
			d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 128, NTxd: 256, Checker: checker(t)},
				iflib.Attachment{Config: iflib.Config{TxMode: mode, RxZoneSize: 512}})
			require.NoError(t, err)
			ctx := d.Context()
			require.NoError(t, ctx.Init())
			require.True(t, waitFor(t, 2*time.Second, func() bool { return ctx.LinkState() == iflib.LinkStateUp }))
			raw, err := rig.OpenRaw(p.B)
			require.NoError(t, err)
			defer raw.Close()

			const n = 3000
			buf := make([]byte, 1514)
			rbuf := make([]byte, 2048)
			got := 0
			recv := func(wait time.Duration) {
				for {
					m, err := raw.Recv(rbuf, wait)
					require.NoError(t, err)
					if m == 0 {
						return
					}
					want := TestFrame(buf, 60+(got*131)%(1514-60+1), p.BMAC, p.AMAC, uint64(got))
					require.Equal(t, want, rbuf[:m], "frame %d", got)
					got++
				}
			}
			for i := 0; i < n; i++ {
				m, err := txz.Get()
				for err != nil { // zone empty: packets still on the TX ring
					recv(time.Millisecond)
					m, err = txz.Get()
				}
				m.Append(TestFrame(buf, 60+(i*131)%(1514-60+1), p.BMAC, p.AMAC, uint64(i)))
				require.NoError(t, ctx.Transmit(m))
				if i%64 == 63 {
					recv(0)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for got < n && time.Now().Before(deadline) {
				recv(10 * time.Millisecond)
			}
			require.Equal(t, n, got, "frames at the peer (driver %+v)", d.Stats())
			assert.Equal(t, uint64(n), ctx.Counter(iflib.IfCounterOPackets))
			assert.Zero(t, d.Stats().TxInvalidDescs)
			require.NoError(t, ctx.Detach())
			assert.Equal(t, txz.Size(), txz.Available(), "TX packets not back in their zone")
		})
	}
}

// TestTxRefused: a packet larger than a frame is refused by iflib with
// ErrTooBig; a packet whose memory is not UMEM is refused with
// ErrWrongSpace; neither reaches the kernel.
func TestTxRefused(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	u, err := NewUMEM(UMEMConfig{Frames: 2048})
	require.NoError(t, err)
	defer func() { require.NoError(t, u.Close()) }()
	txz, err := u.NewZone("tx", 8)
	require.NoError(t, err)
	sim, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	foreign, err := iflib.NewZone(sim, "foreign", 2048, 4)
	require.NoError(t, err)
	d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 64, NTxd: 64},
		iflib.Attachment{Config: iflib.Config{RxZoneSize: 256, TxMode: iflib.TxModeSimple}})
	require.NoError(t, err)
	ctx := d.Context()
	require.NoError(t, ctx.Init())
	require.True(t, waitFor(t, 2*time.Second, func() bool { return ctx.LinkState() == iflib.LinkStateUp }))

	big, _ := txz.Get()
	big.Append(make([]byte, big.Cap()))
	next, _ := txz.Get()
	next.Append(make([]byte, 100))
	big.Next = next
	assert.ErrorIs(t, ctx.Transmit(big), iflib.ErrTooBig)

	f, _ := foreign.Get()
	f.Append(TestFrame(make([]byte, 64), 64, p.BMAC, p.AMAC, 1))
	assert.ErrorIs(t, ctx.Transmit(f), iflib.ErrWrongSpace)
	assert.Equal(t, uint64(2), ctx.Counter(iflib.IfCounterOErrors))
	assert.Zero(t, ctx.Counter(iflib.IfCounterOPackets))

	require.NoError(t, ctx.Detach())
	assert.Zero(t, d.Stats().TxInvalidDescs)
	assert.Equal(t, txz.Size(), txz.Available())
	assert.Equal(t, foreign.Size(), foreign.Available())
}
