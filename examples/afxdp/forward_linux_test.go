package afxdp

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// fwdRig is two drivers on one UMEM over two veth pairs: frames a raw
// socket sends on xb0 enter iflib RX on xa0, the input callback rewrites
// the destination MAC and transmits each packet on xa1 (no copy: the same
// UMEM offset), and a raw socket on xb1 receives them.
type fwdRig struct {
	rig    *Rig
	u      *UMEM
	a, b   *Driver
	gen    *RawSocket
	sink   *RawSocket
	txErrs atomic.Uint64 // Transmit errors in the callback (also counted by iflib)
}

func newFwdRig(t *testing.T, mode XDPMode, nrxd int) *fwdRig {
	t.Helper()
	f := &fwdRig{rig: newRig(t, RigConfig{Pairs: 2})}
	p0, p1 := f.rig.Pairs[0], f.rig.Pairs[1]
	f.u = newUMEM(t, 2*(iflib.DefaultRxZoneSize(nrxd)+64))
	chk := busdmatest.NewChecker(t)
	var ctxB *iflib.Context
	f.b, ctxB = startDriver(t, f.rig, Config{Interface: p1.A, UMEM: f.u, XDPMode: mode, NRxd: 64, NTxd: nrxd, Checker: chk},
		iflib.Attachment{Config: iflib.Config{Unit: 1, RxZoneSize: 64}})
	dst := p1.BMAC
	f.a, _ = startDriver(t, f.rig, Config{Interface: p0.A, UMEM: f.u, XDPMode: mode, NRxd: nrxd, NTxd: 64, Checker: chk},
		iflib.Attachment{Config: iflib.Config{Unit: 0, RxZoneSize: iflib.DefaultRxZoneSize(nrxd)}, Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
			for _, m := range pkts {
				copy(m.Bytes()[0:6], dst)
				if ctxB.Transmit(m) != nil {
					f.txErrs.Add(1)
				}
			}
		}})
	var err error
	f.gen, err = f.rig.OpenRaw(p0.B)
	require.NoError(t, err)
	f.sink, err = f.rig.OpenRaw(p1.B)
	require.NoError(t, err)
	t.Cleanup(func() { f.gen.Close(); f.sink.Close() })
	return f
}

// detach stops both before detaching either: B's TX ring holds packets of
// A's zone until B stops.
func (f *fwdRig) detach(t *testing.T) {
	require.NoError(t, f.a.Context().Stop())
	require.NoError(t, f.b.Context().Stop())
	require.NoError(t, f.a.Context().Detach())
	require.NoError(t, f.b.Context().Detach())
}

// drops sums every place the kernel, the drivers and iflib count a frame
// that entered xb0 and will not reach the sink socket.
func (f *fwdRig) drops(t *testing.T) (total uint64, parts map[string]uint64) {
	sa, sb := f.a.Stats(), f.b.Stats()
	ca, cb := f.a.Context(), f.b.Context()
	parts = map[string]uint64{
		"xa0 xsk rx_dropped":   sa.RxDropped,
		"xa0 xsk rx_ring_full": sa.RxRingFull,
		"xa0 iflib iqdrops":    ca.Counter(iflib.IfCounterIQDrops),
		"xa0 iflib ierrors":    ca.Counter(iflib.IfCounterIErrors),
		"xa1 iflib oqdrops":    cb.Counter(iflib.IfCounterOQDrops),
		"xa1 iflib oerrors":    cb.Counter(iflib.IfCounterOErrors),
		"xa1 xsk tx_invalid":   sb.TxInvalidDescs,
	}
	sd, err := f.sink.Drops()
	require.NoError(t, err)
	parts["xb1 socket drops"] = sd
	p0, p1 := f.rig.Pairs[0], f.rig.Pairs[1]
	for _, n := range []string{p0.A, p0.B, p1.A, p1.B} {
		ls, err := f.rig.LinkStats(n)
		require.NoError(t, err)
		if n != p0.A {
			// xa0's rx_dropped counts the frames its XDP program could
			// not redirect, which the socket's XDP_STATISTICS count
			// already; its other drops would show as a surplus.
			parts[n+" rx_dropped"] = ls.RxDropped
		}
		parts[n+" tx_dropped"] = ls.TxDropped
	}
	for _, v := range parts {
		total += v
	}
	return total, parts
}

// TestForward: frames cross two veth pairs through two iflib drivers on
// one UMEM byte-identical (but for the rewritten destination MAC) and in
// order, with flow control so that none is dropped.
func TestForward(t *testing.T) {
	needAFXDP(t)
	for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFwdRig(t, mode, 256)
			p0, p1 := f.rig.Pairs[0], f.rig.Pairs[1]
			const n = 2000
			size := func(i int) int { return 60 + (i*89)%(1514-60+1) }
			wbuf := make([]byte, 1514)
			peer := newPeerFrames(t, f.sink, func(i int) []byte { return TestFrame(wbuf, size(i), p1.BMAC, p0.BMAC, uint64(i)) })
			buf := make([]byte, 1514)
			for i := 0; i < n; i++ {
				sendRetry(t, f.gen, TestFrame(buf, size(i), p0.AMAC, p0.BMAC, uint64(i)))
				if i%32 == 31 {
					peer.recvUntil(i-64, 2*time.Second)
				}
			}
			peer.recvUntil(n, 5*time.Second)
			drops, parts := f.drops(t)
			require.Equal(t, n, peer.got, "forwarded; drops %v", parts)
			require.Zero(t, drops, "drops %v", parts)
			f.detach(t)
		})
	}
}

// TestForwardConservation: the generator sends as fast as it can, so the
// rings overflow; every frame the generator's sendto accepted is either
// received at the sink or counted as a drop somewhere (XDP statistics,
// iflib's counters, veth's and the sink socket's counters).
func TestForwardConservation(t *testing.T) {
	needAFXDP(t)
	f := newFwdRig(t, XDPNative, 64)
	p0 := f.rig.Pairs[0]
	n := 20000
	if testing.Short() {
		n = 5000
	}
	seen := make([]bool, n)
	var received, dup atomic.Uint64
	var wg sync.WaitGroup
	quit := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		rbuf := make([]byte, 2048)
		for {
			m, err := f.sink.Recv(rbuf, 20*time.Millisecond)
			if err != nil {
				return
			}
			if m == 0 {
				select {
				case <-quit:
					return
				default:
					continue
				}
			}
			if seq, ok := FrameSeq(rbuf[:m]); ok && seq < uint64(n) {
				if seen[seq] {
					dup.Add(1)
				}
				seen[seq] = true
				received.Add(1)
			}
		}
	}()
	buf := make([]byte, 1514)
	sent, refused := 0, 0
	for i := 0; i < n; i++ {
		if err := f.gen.Send(TestFrame(buf, 60+(i*89)%200, p0.AMAC, p0.BMAC, uint64(i))); err != nil {
			refused++ // ENOBUFS: sendto says the frame was not sent
			continue
		}
		sent++
	}
	var drops uint64
	var parts map[string]uint64
	settled := waitFor(t, 10*time.Second, func() bool {
		drops, parts = f.drops(t)
		return received.Load()+drops >= uint64(sent)
	})
	time.Sleep(50 * time.Millisecond) // nothing more may arrive
	drops, parts = f.drops(t)
	close(quit)
	wg.Wait()
	t.Logf("sent %d (refused %d), received %d, drops %d: %v", sent, refused, received.Load(), drops, parts)
	require.True(t, settled, "frames unaccounted for")
	assert.Zero(t, dup.Load(), "duplicates")
	assert.NotZero(t, received.Load())
	assert.Equal(t, uint64(sent), received.Load()+drops, "sent = received + counted drops")
	f.detach(t)
}
