package iflib_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Regression tests for the transmit path (issue 11 items 11–16 and
// FreeBSD's own TX bugs).

// chain builds a packet of n buffers of size bytes each from z, filled
// with a pattern, and returns it with its bytes.
func chain(t testing.TB, z *iflib.Zone, n, size int) (*iflib.Packet, []byte) {
	t.Helper()
	want := make([]byte, n*size)
	for i := range n {
		for j := range size {
			want[i*size+j] = byte(i*31 + j)
		}
	}
	m, err := z.GetChain(want, size)
	require.NoError(t, err)
	require.Equal(t, n, m.NumBufs())
	return m, want
}

func txStats(t testing.TB, ctx *iflib.Context) iflib.TxQueueStats {
	t.Helper()
	st, err := ctx.TxQueueStats(0)
	require.NoError(t, err)
	return st
}

func (f *fakeNIC) setHold(h bool) {
	f.mu.Lock()
	f.hold = h
	f.mu.Unlock()
}

// Items 11 and 12: a chain of more full buffers than the tag allows
// (5 × 1500 bytes, 4 segments) cannot be collapsed; FreeBSD then
// defragments it (m_defrag) and sends it. With the descriptors short at
// that moment, simple mode drops the replacement chain (not the freed
// original: no double free, no leak), and drbr and mpring keep it and send
// it intact once descriptors free up.
func TestDefragAfterCollapseFailsAndNoDescriptors(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeSimple, iflib.TxModeDRBR, iflib.TxModeMPRing} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFake(t, fakeOpts{ntxd: 64, segs: 4, cfg: iflib.Config{TxMode: mode}})
			z := f.zone(iflib.MCLBytes, 256)
			// LIFO reuse: debug mode's FIFO (on under -race) gives m_defrag
			// adjacent clusters, whose 4 buffers coalesce into one segment
			// that fits in the 2 descriptors left.
			z.SetDebug(nil)
			require.NoError(t, f.ctx.Init())
			f.setHold(true)
			// Fill the ring to 2 free descriptors (64 - pad 2 - 60).
			for i := 0; i < 60; i++ {
				require.NoError(t, f.ctx.Transmit(pkt(t, z, 60, byte(i))))
			}
			// simple encaps all 60; mpring and drbr stop at 59, when fewer
			// than MAX_TX_DESC (4) descriptors remain, and queue the rest.
			onRing := uint64(59)
			if mode == iflib.TxModeSimple {
				onRing = 60
			}
			testutil.Eventually(t, "the ring full", func() bool { return txStats(t, f.ctx).OPackets == onRing })
			m, want := chain(t, z, 5, 1500)
			err := f.ctx.Transmit(m)
			if mode == iflib.TxModeSimple {
				require.ErrorIs(t, err, iflib.ErrNoBufs)
			} else {
				require.NoError(t, err)
			}
			f.setHold(false)
			f.complete(-1)
			if mode != iflib.TxModeSimple {
				testutil.Eventually(t, "the defragmented chain on the wire", func() bool { return len(f.sent()) == 61 })
				require.True(t, bytes.Equal(want, f.sent()[60]), "defragmented frame differs")
				require.GreaterOrEqual(t, txStats(t, f.ctx).MbufDefrag, uint64(1))
			}
			require.Zero(t, z.Stats().DoubleFrees)
			require.NoError(t, f.ctx.Stop())
			f.close(z)
		})
	}
}

// Item 12 on its own: the 5 × 1500-byte chain with 4 segments is sent.
func TestCollapseFailureFallsThroughToDefrag(t *testing.T) {
	f := newFake(t, fakeOpts{segs: 4})
	z := f.zone(iflib.MCLBytes, 64)
	require.NoError(t, f.ctx.Init())
	m, want := chain(t, z, 5, 1500)
	require.NoError(t, f.ctx.Transmit(m))
	testutil.Eventually(t, "the frame", func() bool { return len(f.sent()) == 1 })
	require.Equal(t, want, f.sent()[0])
	st := txStats(t, f.ctx)
	require.Equal(t, uint64(1), st.MbufDefrag)
	require.Zero(t, st.MbufDefragFailed)
	f.close(z)
}

// The driver's EFBIG retries once after m_defrag and keeps IPI_TX_INTR
// (FreeBSD's goto defrag keeps ipi_flags).
func TestDriverEFBIGRetryKeepsFlags(t *testing.T) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{NoTxBatch: true}})
	z := f.zone(iflib.MCLBytes, 64)
	calls := 0
	var flags []iflib.IPIFlags
	f.encapHook = func(pi *iflib.PktInfo) error {
		calls++
		flags = append(flags, pi.Flags)
		if calls == 1 {
			return iflib.ErrEncapTooBig
		}
		return nil
	}
	require.NoError(t, f.ctx.Init())
	m, want := chain(t, z, 3, 100)
	require.NoError(t, f.ctx.Transmit(m))
	testutil.Eventually(t, "the frame", func() bool { return len(f.sent()) == 1 })
	require.Equal(t, want, f.sent()[0])
	require.Equal(t, 2, calls)
	require.NotZero(t, flags[1]&iflib.IPITxIntr, "IPI_TX_INTR lost on the retry")
	f.close(z)
}

// Item 13: the doorbell decision is per packet; with min_tx_latency no
// descriptor is left behind the doorbell at the end of a drain, and
// without it the timer's laggard kick rings a deferred doorbell (FreeBSD
// can leave it pending when no completion follows).
func TestNoDescriptorLeftBehindDoorbell(t *testing.T) {
	for _, minLat := range []bool{true, false} {
		name := "deferred"
		if minLat {
			name = "min_tx_latency"
		}
		t.Run(name, func(t *testing.T) {
			timer := time.Hour
			if !minLat {
				timer = 2 * time.Millisecond
			}
			// The device holds every completion while 100 packets go out:
			// a hung queue to the watchdog once that takes four periods,
			// which a loaded machine allows. This test is about the
			// doorbell, so the watchdog is off.
			f := newFake(t, fakeOpts{cfg: iflib.Config{MinTxLatency: minLat, TxAbdicate: true, TimerInterval: timer, TxWatchdogPeriods: -1}})
			z := f.zone(iflib.MCLBytes, 256)
			require.NoError(t, f.ctx.Init())
			f.setHold(true)
			for i := 0; i < 100; i++ {
				require.NoError(t, f.ctx.Transmit(pkt(t, z, 60, byte(i))))
			}
			testutil.Eventually(t, "100 encapsulated", func() bool { return txStats(t, f.ctx).OPackets == 100 })
			testutil.Eventually(t, "every descriptor behind the doorbell", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.txTail == 100
			})
			f.setHold(false)
			f.complete(-1)
			require.NoError(t, f.ctx.Stop())
			f.close(z)
		})
	}
}

// Item 14: the forced reclaim keeps the nsegments lag. Credits that end
// inside a packet (head write-back) must not let iflib unload a packet the
// device is still reading: the checker would report the device's reads of
// the rest. FreeBSD's reclaim_force admits a negative DESC_RECLAIMABLE
// (ift_cleaned going backwards); here it is nothing.
func TestForcedReclaimKeepsLag(t *testing.T) {
	f := newFake(t, fakeOpts{ntxd: 64, segs: 4, cfg: iflib.Config{TxMode: iflib.TxModeSimple}})
	z := f.zone(iflib.MCLBytes, 256)
	require.NoError(t, f.ctx.Init())
	f.setHold(true)
	for i := 0; i < 15; i++ {
		m, _ := chain(t, z, 4, 100)
		require.NoError(t, f.ctx.Transmit(m))
	}
	require.Equal(t, 2, f.complete(2), "the device reads half of the first packet")
	m, _ := chain(t, z, 4, 100)
	require.ErrorIs(t, f.ctx.Transmit(m), iflib.ErrNoBufs)
	v, _ := f.ctx.SysctlValue("dev.fake.0.iflib.txq0.txq_cleaned")
	require.Zero(t, v, "reclaim must lag the credits by nsegments")
	f.setHold(false)
	f.complete(-1) // the device reads the rest of the first packet: still mapped
	require.Len(t, f.sent(), 15)
	require.NoError(t, f.ctx.Stop())
	f.close(z)
}

// Item 16: bad packets get typed errors that say what is wrong.
func TestTransmitBadPackets(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 64)
	require.NoError(t, f.ctx.Init())

	require.ErrorIs(t, f.ctx.Transmit(&iflib.Packet{}), iflib.ErrForeignPacket)

	p := pkt(t, z, 100, 1)
	p.Hdr.Len = -5
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrBadLength)
	p = pkt(t, z, 100, 1)
	p.Hdr.Len = 50 // short
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrBadLength)
	p = pkt(t, z, 100, 1)
	p.Hdr.Len = 5000 // long
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrBadLength)

	other, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	oz, err := iflib.NewZone(other, "elsewhere", iflib.MCLBytes, 4)
	require.NoError(t, err)
	err = f.ctx.Transmit(pkt(t, oz, 100, 1))
	require.ErrorIs(t, err, iflib.ErrWrongSpace)
	require.ErrorIs(t, err, busdma.ErrNotInSpace)
	require.Equal(t, 4, oz.Available(), "freed")

	// Use after free: a failed Transmit freed p; retrying it is refused.
	p = pkt(t, z, 100, 1)
	p.Hdr.Len = 1
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrBadLength)
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrUseAfterFree)
	reps := f.takeClientReports()
	require.Len(t, reps, 1, "the checker reports the use after free")
	require.Contains(t, reps[0].Msg, "used after free")
	require.Contains(t, reps[0].Site, "edges_tx_test.go", "the report names where it was used again")

	st := txStats(t, f.ctx)
	require.Equal(t, uint64(6), st.OErrors, "foreign, three bad lengths, wrong space, bad length")
	require.Empty(t, f.sent())
	f.close(z, oz)
}

// A driver whose TxdEncap reports an impossible ipi_new_pidx (outside the
// ring, no descriptor for a mapped packet, more descriptors than nsegs plus
// the pad) would corrupt the ring accounting (FreeBSD MPASSes it): the
// packet is freed and counted, the error is ErrBadDriverIndex, and the
// queue keeps working.
func TestTxdEncapImpossibleIndexRefused(t *testing.T) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: iflib.TxModeSimple}})
	z := f.zone(iflib.MCLBytes, 64)
	require.NoError(t, f.ctx.Init())
	for i, lie := range []func(pi *iflib.PktInfo){
		func(pi *iflib.PktInfo) { pi.NewPIdx = f.ntxd + 3 },                        // outside the ring
		func(pi *iflib.PktInfo) { pi.NewPIdx = -1 },                                // outside the ring
		func(pi *iflib.PktInfo) { pi.NewPIdx = pi.PIdx },                           // nothing used for a mapped packet
		func(pi *iflib.PktInfo) { pi.NewPIdx = (pi.PIdx + pi.NSegs + 3) % f.ntxd }, // beyond nsegs + pad
	} {
		f.encapDone = lie
		require.ErrorIs(t, f.ctx.Transmit(pkt(t, z, 100, byte(i))), iflib.ErrBadDriverIndex, "lie %d", i)
		require.Equal(t, uint64(i+1), txStats(t, f.ctx).OErrors, "lie %d", i)
		require.Equal(t, z.Size(), z.Available(), "lie %d: the packet was not freed", i)
	}
	f.encapDone = nil
	m, want := chain(t, z, 2, 300)
	require.NoError(t, f.ctx.Transmit(m))
	testutil.Eventually(t, "a frame after the lies", func() bool { return len(f.sent()) == 1 })
	require.Equal(t, want, f.sent()[0])
	f.close(z)
}

// iflib_ether_pad: FreeBSD frees the mbuf and returns ENOBUFS, which the
// drain takes for "keep it" (a use after free). Here a runt is padded (in
// place or in a new buffer, as m_append does), and when no buffer can be
// had it is freed, counted and reported as ErrNoMem.
func TestEtherPad(t *testing.T) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: iflib.TxModeSimple}, etherPad: true})
	require.NoError(t, f.ctx.Init())
	roomy := f.zone(128, 4)
	require.NoError(t, f.ctx.Transmit(pkt(t, roomy, 20, 1)))
	testutil.Eventually(t, "padded frame", func() bool { return len(f.sent()) == 1 })
	require.Len(t, f.sent()[0], 60)
	require.Equal(t, make([]byte, 40), f.sent()[0][20:], "pad is zeros")

	tight := f.zone(32, 1) // no trailing space, and no second buffer
	require.ErrorIs(t, f.ctx.Transmit(pkt(t, tight, 32, 1)), iflib.ErrNoMem)
	require.Equal(t, 1, tight.Available())
	require.Zero(t, tight.Stats().DoubleFrees)
	f.close(roomy, tight)
}

// Issue 17 item 4: a drop that happens inside the caller's own call is
// reported to it the same way in simple and drbr modes (drbr's uncontended
// Transmit runs encap in the caller's call); mpring's drain may run on
// another goroutine, so there the drop is counted only. Every mode counts
// it in oerrors.
func TestOwnDropReportedEveryMode(t *testing.T) {
	errDriver := errors.New("driver refuses this packet")
	for _, mode := range []iflib.TxMode{iflib.TxModeSimple, iflib.TxModeDRBR, iflib.TxModeMPRing} {
		t.Run(mode.String(), func(t *testing.T) {
			// No TX interrupts and no timer: nothing else holds the queue
			// lock, so each sender sends its packet itself (a packet
			// deferred behind a lock holder has its drop counted only).
			f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: mode, TimerInterval: time.Hour}})
			f.noTxIntr = true
			z := f.zone(iflib.MCLBytes, 64)
			f.encapHook = func(pi *iflib.PktInfo) error {
				if pi.Len == 77 {
					return errDriver
				}
				return nil
			}
			require.NoError(t, f.ctx.Init())
			// The link coming up kicks the TX task once; let that pass end.
			testutil.Eventually(t, "the TX task's first pass", func() bool { return txStats(t, f.ctx).TaskRuns >= 1 })
			time.Sleep(20 * time.Millisecond)
			require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, 1)))
			err := f.ctx.Transmit(pkt(t, z, 77, 2))
			if mode == iflib.TxModeMPRing {
				require.NoError(t, err, "mpring reports drops of the drain in oerrors only")
			} else {
				require.ErrorIs(t, err, errDriver)
			}
			require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, 3)))
			testutil.Eventually(t, "two frames", func() bool { return len(f.sent()) == 2 })
			require.NoError(t, f.ctx.Stop())
			require.Equal(t, uint64(1), txStats(t, f.ctx).OErrors)
			f.close(z)
		})
	}
}

// A drain pass at the lowest deferral tier rings the doorbell once, at its
// end, not once per packet: 20 batches of 16 through the mp_ring are 20
// doorbells.
func TestOneDoorbellPerDrainPass(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 1024)
	require.NoError(t, f.ctx.Init())
	batch := make([]*iflib.Packet, 16)
	for b := 0; b < 20; b++ {
		for i := range batch {
			batch[i] = pkt(t, z, 60, byte(i))
		}
		n, err := f.ctx.TransmitBatch(batch)
		require.NoError(t, err)
		require.Equal(t, 16, n)
		testutil.Eventually(t, "the batch sent", func() bool { return len(f.sent()) == 16*(b+1) })
	}
	require.Equal(t, uint64(20), txStats(t, f.ctx).Doorbells)
	f.close(z)
}
