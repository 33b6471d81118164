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

// TestTxKicks: the TX kick follows what a doorbell covers. A TransmitBatch
// run in simple mode rings one doorbell for the run, and the driver kicks
// the kernel once for it (one sendto per batch, none left to the TX task).
// Per-packet doorbells (Transmit in simple mode; the mp_ring drain at low
// ring occupancy) are one descriptor each: the driver leaves their kick to
// the TX task instead of making a system call per packet, and every frame
// still reaches the peer.
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
			u, err := NewUMEM(UMEMConfig{Frames: 2048})
			require.NoError(t, err)
			defer func() { require.NoError(t, u.Close()) }()
			txz, err := u.NewZone("tx", 256)
			require.NoError(t, err)
			d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 64, NTxd: 256, Checker: checker(t)},
				iflib.Attachment{Config: iflib.Config{TxMode: tc.mode, RxZoneSize: 256}})
			require.NoError(t, err)
			ctx := d.Context()
			require.NoError(t, ctx.Init())
			require.True(t, waitFor(t, 2*time.Second, func() bool { return ctx.LinkState() == iflib.LinkStateUp }))
			raw, err := rig.OpenRaw(p.B)
			require.NoError(t, err)
			defer raw.Close()

			buf := make([]byte, 64)
			rbuf := make([]byte, 2048)
			pkts := make([]*iflib.Packet, per)
			got := 0
			before := d.Stats()
			for b := 0; b < batches; b++ {
				for i := range pkts {
					m, err := txz.Get()
					require.NoError(t, err)
					m.Append(TestFrame(buf, 60, p.BMAC, p.AMAC, uint64(b*per+i)))
					pkts[i] = m
				}
				if tc.batch {
					n, err := ctx.TransmitBatch(pkts)
					require.NoError(t, err)
					require.Equal(t, per, n)
				} else {
					for _, m := range pkts {
						require.NoError(t, ctx.Transmit(m))
					}
				}
				// The whole batch reaches the peer before the next is sent.
				for want := (b + 1) * per; got < want; got++ {
					n, err := raw.Recv(rbuf, 2*time.Second)
					require.NoError(t, err)
					require.NotZero(t, n, "frame %d never arrived (driver %+v)", got, d.Stats())
					seq, ok := FrameSeq(rbuf[:n])
					require.True(t, ok)
					require.Equal(t, uint64(got), seq)
				}
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
				// iflib_txd_db_check rings per packet at low occupancy; should
				// it ring once per drain instead, the batch is kicked at once.
				assert.NotZero(t, kicks+deferred)
			}
			require.NoError(t, ctx.Detach())
			assert.Zero(t, d.Stats().TxInvalidDescs)
			assert.Equal(t, txz.Size(), txz.Available())
		})
	}
}
