package afxdp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
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
			u := newUMEM(t, 4096)
			txz, err := u.NewZone("tx", 512)
			require.NoError(t, err)
			d, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, NRxd: 128, NTxd: 256, Checker: busdmatest.NewChecker(t)},
				iflib.Attachment{Config: iflib.Config{TxMode: mode, RxZoneSize: 512}})
			raw, err := rig.OpenRaw(p.B)
			require.NoError(t, err)
			defer raw.Close()

			const n = 3000
			frame := func(buf []byte, i int) []byte {
				return TestFrame(buf, 60+(i*131)%(1514-60+1), p.BMAC, p.AMAC, uint64(i))
			}
			wbuf := make([]byte, 1514)
			peer := newPeerFrames(t, raw, func(i int) []byte { return frame(wbuf, i) })
			buf := make([]byte, 1514)
			for i := 0; i < n; i++ {
				m, err := txz.Get()
				for err != nil { // zone empty: packets still on the TX ring
					peer.recvUntil(n, time.Millisecond)
					m, err = txz.Get()
				}
				m.Append(frame(buf, i))
				require.NoError(t, ic.Transmit(m))
				if i%64 == 63 {
					peer.recvUntil(n, 0)
				}
			}
			peer.recvUntil(n, 5*time.Second)
			require.Equal(t, n, peer.got, "frames at the peer (driver %+v)", d.Stats())
			assert.Equal(t, uint64(n), ic.Counter(iflib.IfCounterOPackets))
			assert.Zero(t, d.Stats().TxInvalidDescs)
			require.NoError(t, ic.Detach())
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
	u := newUMEM(t, 2048)
	txz, err := u.NewZone("tx", 8)
	require.NoError(t, err)
	sim, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	foreign, err := iflib.NewZone(sim, "foreign", 2048, 4)
	require.NoError(t, err)
	d, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, NRxd: 64, NTxd: 64},
		iflib.Attachment{Config: iflib.Config{RxZoneSize: 256, TxMode: iflib.TxModeSimple}})

	big, _ := txz.Get()
	big.Append(make([]byte, big.Cap()))
	next, _ := txz.Get()
	next.Append(make([]byte, 100))
	big.Next = next
	assert.ErrorIs(t, ic.Transmit(big), iflib.ErrTooBig)

	f, _ := foreign.Get()
	f.Append(TestFrame(make([]byte, 64), 64, p.BMAC, p.AMAC, 1))
	assert.ErrorIs(t, ic.Transmit(f), iflib.ErrWrongSpace)
	assert.Equal(t, uint64(2), ic.Counter(iflib.IfCounterOErrors))
	assert.Zero(t, ic.Counter(iflib.IfCounterOPackets))

	require.NoError(t, ic.Detach())
	assert.Zero(t, d.Stats().TxInvalidDescs)
	assert.Equal(t, txz.Size(), txz.Available())
	assert.Equal(t, foreign.Size(), foreign.Available())
}

// TestTxKicks: the TX kick follows what a doorbell covers. A TransmitBatch
// run in simple mode rings one doorbell for the run, and the driver kicks
// the kernel once for it (one sendto per batch, none left to the TX task).
// Per-packet doorbells (Transmit in simple mode) are one descriptor each:
// the driver leaves their kick to the TX task instead of making a system
// call per packet, and every frame still reaches the peer. The mp_ring
// drain rings once per pass, so its batches are kicked at once too: never
// a sendto per packet.
func TestTxKicks(t *testing.T) {
	needAFXDP(t)
	const batches, per = 20, 16
	for _, tc := range []struct {
		name  string
		mode  iflib.TxMode
		batch bool
	}{
		{"simple/batch", iflib.TxModeSimple, true},
		{"simple/single", iflib.TxModeSimple, false},
		{"mpring/batch", iflib.TxModeMPRing, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newRig(t, RigConfig{})
			p := rig.Pairs[0]
			u := newUMEM(t, 2048)
			txz, err := u.NewZone("tx", 256)
			require.NoError(t, err)
			d, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, NRxd: 64, NTxd: 256, Checker: busdmatest.NewChecker(t)},
				iflib.Attachment{Config: iflib.Config{TxMode: tc.mode, RxZoneSize: 256}})
			raw, err := rig.OpenRaw(p.B)
			require.NoError(t, err)
			defer raw.Close()

			buf, wbuf := make([]byte, 64), make([]byte, 64)
			peer := newPeerFrames(t, raw, func(i int) []byte { return TestFrame(wbuf, 60, p.BMAC, p.AMAC, uint64(i)) })
			pkts := make([]*iflib.Packet, per)
			before := d.Stats()
			for b := 0; b < batches; b++ {
				for i := range pkts {
					m, err := txz.Get()
					require.NoError(t, err)
					m.Append(TestFrame(buf, 60, p.BMAC, p.AMAC, uint64(b*per+i)))
					pkts[i] = m
				}
				if tc.batch {
					n, err := ic.TransmitBatch(pkts)
					require.NoError(t, err)
					require.Equal(t, per, n)
				} else {
					for _, m := range pkts {
						require.NoError(t, ic.Transmit(m))
					}
				}
				// The whole batch reaches the peer, in order, before the
				// next is sent.
				peer.recvUntil((b+1)*per, 2*time.Second)
				require.Equal(t, (b+1)*per, peer.got, "frame %d never arrived (driver %+v)", peer.got, d.Stats())
			}
			st := d.Stats()
			kicks, deferred := st.TxKicks-before.TxKicks, st.DeferredKicks-before.DeferredKicks
			t.Logf("%d frames: %d doorbells, %d kicks, %d deferred to the TX task", batches*per, st.Doorbells-before.Doorbells, kicks, deferred)
			switch tc.name {
			case "simple/batch":
				assert.Equal(t, uint64(batches), st.Doorbells-before.Doorbells, "one doorbell per TransmitBatch run")
				assert.Equal(t, uint64(batches), kicks, "one sendto per batch")
				assert.Zero(t, deferred)
			case "simple/single":
				assert.Equal(t, uint64(batches*per), st.Doorbells-before.Doorbells, "a doorbell per packet")
				assert.NotZero(t, deferred, "single-descriptor doorbells are left to the TX task")
				assert.Less(t, kicks, uint64(batches*per), "not a sendto per packet")
			default:
				assert.NotZero(t, kicks+deferred)
				assert.Less(t, kicks, uint64(batches*per), "not a sendto per packet")
			}
			require.NoError(t, ic.Detach())
			assert.Zero(t, d.Stats().TxInvalidDescs)
			assert.Equal(t, txz.Size(), txz.Available())
		})
	}
}
