package iflib_test

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Regression tests for the receive path (issue 11 items 17–20, issue 17
// items 1 and 2, and FreeBSD's rxeof error-path leak).

// collector is an input callback that keeps copies of what it receives.
type collector struct {
	mu     sync.Mutex
	frames [][]byte
	hold   bool // keep the packets instead of freeing them
	held   []*iflib.Packet
}

func (c *collector) input(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pkts {
		c.frames = append(c.frames, simnictest.Flatten(p))
		if c.hold {
			c.held = append(c.held, p)
		} else {
			p.Free()
		}
	}
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

func (c *collector) release() {
	c.mu.Lock()
	held := c.held
	c.held, c.hold = nil, false
	c.mu.Unlock()
	for _, p := range held {
		p.Free()
	}
}

func frame(n int, tag byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = tag ^ byte(i*7)
	}
	return b
}

func rxStats(t testing.TB, ctx *iflib.Context) iflib.RxQueueStats {
	t.Helper()
	st, err := ctx.RxQueueStats(0)
	require.NoError(t, err)
	return st
}

// Item 17: a driver that names the same slot twice is a driver error:
// counted, the interface reset; never a panic. The packets rxeof had
// collected before it are delivered (FreeBSD's error path leaks them).
func TestRxDuplicateSlotIsDriverError(t *testing.T) {
	var c collector
	f := newFake(t, fakeOpts{input: c.input, cfg: iflib.Config{RxBudget: 32}})
	var bad atomic.Bool
	f.pktGet = func(ri *iflib.RxdInfo) error {
		if ri.NFrags == 2 && bad.CompareAndSwap(true, false) {
			ri.Frags[1] = ri.Frags[0]
		}
		return nil
	}
	require.NoError(t, f.ctx.Init())
	f.mu.Lock()
	f.noRxIntr = true // let frames pile up, then one rxeof takes them all
	f.mu.Unlock()
	for i := 0; i < 3; i++ {
		require.True(t, f.rx(frame(300, byte(i))))
	}
	bad.Store(true)
	require.True(t, f.rx(frame(3000, 9))) // two buffers
	f.ctx.RxIntr(0)
	testutil.Eventually(t, "a reset", func() bool { return f.ctx.Resets() >= 1 })
	require.Equal(t, 3, c.count(), "the good packets before the bad one are delivered")
	require.GreaterOrEqual(t, rxStats(t, f.ctx).IErrors, uint64(1))
	f.mu.Lock()
	f.noRxIntr = false
	f.mu.Unlock()
	testutil.Eventually(t, "running after the reset", f.ctx.Running)
	require.True(t, f.rx(frame(300, 5)))
	testutil.Eventually(t, "a frame after the reset", func() bool { return c.count() == 4 })
	f.close()
}

// Item 18: FreeBSD's pad convention: irf_len excludes the pad, iri_len
// includes it (enetc sets iri_len = size + pad, iri_pad = pad). A padding
// driver's frames arrive intact, on the copy path and the hand-up path.
func TestRxPadConvention(t *testing.T) {
	var c collector
	f := newFake(t, fakeOpts{input: c.input})
	f.rxPad = 2
	require.NoError(t, f.ctx.Init())
	want := [][]byte{frame(60, 1), frame(1000, 2), frame(2046, 3), frame(5000, 4)}
	for _, w := range want {
		require.True(t, f.rx(w))
	}
	testutil.Eventually(t, "4 frames", func() bool { return c.count() == 4 })
	for i, w := range want {
		require.True(t, bytes.Equal(w, c.frames[i]), "frame %d differs", i)
	}
	// The counters are published at the end of the rxeof pass that
	// delivered the frames.
	testutil.Eventually(t, "ibytes published", func() bool { return rxStats(t, f.ctx).IPackets == 4 })
	st := rxStats(t, f.ctx)
	require.Zero(t, st.IErrors)
	require.Zero(t, f.ctx.Resets())
	require.Equal(t, uint64(60+1000+2046+5000), st.IBytes, "ibytes exclude the pad")
	f.close()
}

// Item 19: a zero-length frame is counted as an error, not received and
// then lost. Frames the device flags (Discard) are recycled and counted.
func TestRxZeroLengthAndDiscard(t *testing.T) {
	var c collector
	f := newFake(t, fakeOpts{input: c.input})
	var mode atomic.Int32 // 1: zero length, 2: discard
	f.pktGet = func(ri *iflib.RxdInfo) error {
		switch mode.Swap(0) {
		case 1:
			ri.Frags[0].Len, ri.Len = 0, 0
		case 2:
			ri.Discard = true
		}
		return nil
	}
	require.NoError(t, f.ctx.Init())
	mode.Store(1)
	require.True(t, f.rx(frame(100, 1)))
	testutil.Eventually(t, "zero-length counted", func() bool { return rxStats(t, f.ctx).IErrors == 1 })
	mode.Store(2)
	require.True(t, f.rx(frame(1000, 2)))
	testutil.Eventually(t, "discard counted", func() bool { return rxStats(t, f.ctx).Discards == 1 })
	require.True(t, f.rx(frame(1000, 3)))
	testutil.Eventually(t, "a good frame", func() bool { return c.count() == 1 && rxStats(t, f.ctx).IPackets == 1 })
	st := rxStats(t, f.ctx)
	require.Equal(t, uint64(2), st.IErrors)
	require.Equal(t, uint64(1), st.IPackets)
	require.Zero(t, f.ctx.Resets(), "neither is a reason to reset")
	require.Equal(t, frame(1000, 3), c.frames[0])
	f.close()
}

// Item 20: impossible RX buffer sizes are refused at Register; others are
// rounded up to a standard cluster size, as m_getzone does.
func TestRxBufSizeRounding(t *testing.T) {
	var c collector
	f := newFake(t, fakeOpts{rxBuf: 16, input: c.input})
	require.Equal(t, iflib.MCLBytes, f.ctx.Softc().RxdBufSize[0])
	require.NoError(t, f.ctx.Init())
	require.True(t, f.rx(frame(1500, 7)))
	testutil.Eventually(t, "a 1500-byte frame with 16-byte buffers asked", func() bool { return c.count() == 1 })
	f.close()

	f = newFake(t, fakeOpts{rxBuf: 3000})
	require.Equal(t, iflib.MJumPageSize, f.ctx.Softc().RxdBufSize[0])
	f.close()

	_, err := tryFake(t, fakeOpts{rxBuf: 20000})
	require.ErrorIs(t, err, iflib.ErrConfig)
}

// Issue 17 item 1: the stack holds received packets until the free list
// drains to zero credits (the zone runs dry), then releases them. The next
// refill must post descriptor d with the buffer of slot d: every frame
// arrives, in order, with no reset and no error.
func TestFreeListDrainToEmptyAndRefill(t *testing.T) {
	for _, nrxd := range []int{64, 256} {
		c := &collector{hold: true}
		f := newFake(t, fakeOpts{nrxd: nrxd, input: c.input, cfg: iflib.Config{RxZoneSize: nrxd}})
		require.NoError(t, f.ctx.Init())
		sent := 0
		send := func() bool {
			ok := f.rx(frame(1000, byte(sent)))
			if ok {
				sent++
			}
			return ok
		}
		// Receive until the zone is dry and every posted buffer was used.
		credits := func() int64 {
			v, _ := f.ctx.SysctlValue("dev.fake.0.iflib.rxq0.rxq_fl0.credits")
			return v.(int64)
		}
		testutil.Eventually(t, "the free list drained to zero credits", func() bool {
			for send() {
			}
			return rxStats(t, f.ctx).AllocFails > 0 && c.count() == sent && credits() == 0
		})
		c.release()
		// The watchdog retries the refill; then traffic flows again.
		for i := 0; i < 3*nrxd; i++ {
			testutil.Eventually(t, "a posted buffer", send)
			testutil.Eventually(t, "frame delivered", func() bool { return c.count() == sent })
		}
		require.Zero(t, f.ctx.Resets(), "nrxd %d: spurious reset", nrxd)
		st := rxStats(t, f.ctx)
		require.Zero(t, st.IErrors)
		for i, b := range c.frames {
			require.True(t, bytes.Equal(frame(1000, byte(i)), b), "nrxd %d: frame %d corrupted", nrxd, i)
		}
		f.close()
	}
}

// Issue 17 item 2: jumbo clusters on physically scattered memory are
// carved contiguous, so they load in one segment and never wedge RX
// (a tag that still could not load them is refused at Register). And a refill that keeps failing backs off instead of
// retrying every millisecond.
func TestJumboClustersOnScatteredMemory(t *testing.T) {
	for _, size := range []int{9216, 3000} {
		space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 64 << 20, ContigSize: 4 << 20, Layout: busdma.LayoutScattered})
		require.NoError(t, err)
		var c collector
		// The zone carves each cluster contiguous (AllocChunks), so the
		// one-segment RX tag loads it: Register accepts both sizes.
		f := newFake(t, fakeOpts{space: space, rxBuf: size, nrxd: 64, input: c.input, cfg: iflib.Config{RxZoneSize: 256}})
		require.NoError(t, f.ctx.Init())
		for i := 0; i < 300; i++ {
			testutil.Eventually(t, "a posted buffer", func() bool { return f.rx(frame(8000, byte(i))) })
		}
		testutil.Eventually(t, "300 jumbo frames", func() bool { return c.count() == 300 })
		require.Zero(t, rxStats(t, f.ctx).LoadFails)
		f.close()
	}
}

// The other half of issue 17 item 2: RX clusters the device's tag cannot
// load in one segment (memory above the device's 32-bit DMA window, and
// no bounce pages to reach it) are refused at Register with a ConfigError
// that says why, instead of a free list whose every refill fails.
func TestRxClustersOutOfReachRefused(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20, ContigSize: 4 << 20, Layout: busdma.LayoutHigh, BouncePages: -1})
	require.NoError(t, err)
	_, err = tryFake(t, fakeOpts{space: space, dmaWidth: 32})
	require.ErrorIs(t, err, iflib.ErrConfig)
	var ce *iflib.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "RxdBufSize[0]", ce.Field)
	require.Contains(t, ce.Reason, "one segment")
	require.Zero(t, space.Allocated(), "the refused Register left memory allocated")
}

func TestRxRefillBackoff(t *testing.T) {
	c := &collector{hold: true}
	f := newFake(t, fakeOpts{nrxd: 64, input: c.input, cfg: iflib.Config{RxZoneSize: 64, TimerInterval: time.Hour}})
	require.NoError(t, f.ctx.Init())
	for f.rx(frame(1000, 1)) {
	}
	testutil.Eventually(t, "the zone dry", func() bool { return rxStats(t, f.ctx).AllocFails > 0 })
	w0 := rxStats(t, f.ctx).Watchdogs
	time.Sleep(300 * time.Millisecond)
	w1 := rxStats(t, f.ctx).Watchdogs
	require.Less(t, w1-w0, uint64(30), "a failing refill retried every millisecond")
	c.release()
	testutil.Eventually(t, "refilled", func() bool { return f.rx(frame(1000, 2)) })
	f.close()
}

// Issue 17 item 1, every transition: random traffic where the stack holds
// packets for a while and the zone runs dry, so that the free list passes
// through empty, full, partly refilled and failed-refill states. After
// every rxeof pass (checked from the input callback, on the queue's own
// goroutine) the posted slots are exactly [cidx, pidx), credits count
// them, every slot with a cluster has its map loaded, and fragidx = pidx.
func TestFreeListInvariantsRandom(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var mu sync.Mutex
		var held []*iflib.Packet
		var checkErr error
		var got int
		input := func(ic *iflib.Context, qid int, pkts []*iflib.Packet) {
			if err := iflib.CheckFreeLists(ic, qid); err != nil && checkErr == nil {
				checkErr = err
			}
			mu.Lock()
			got += len(pkts)
			held = append(held, pkts...)
			mu.Unlock()
		}
		f := newFake(t, fakeOpts{nrxd: 64, input: input, cfg: iflib.Config{RxZoneSize: 64 + int(seed)*8, TimerInterval: time.Millisecond}})
		ctx := f.ctx
		require.NoError(t, ctx.Init())
		sent := 0
		for step := 0; step < 400; step++ {
			switch rng.IntN(4) {
			case 0, 1: // the device receives a burst
				for k := rng.IntN(40); k > 0; k-- {
					size := []int{60, 128, 129, 1000, 3000}[rng.IntN(5)]
					if f.rx(frame(size, byte(sent))) {
						sent++
					}
				}
			case 2: // the stack frees some of what it holds
				mu.Lock()
				n := rng.IntN(len(held) + 1)
				free := held[:n]
				held = append([]*iflib.Packet(nil), held[n:]...)
				mu.Unlock()
				for _, p := range free {
					p.Free()
				}
			case 3:
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
			}
		}
		// Small frames are copied into a fresh packet: with the zone dry
		// they are dropped and counted (iqdrops).
		testutil.Eventually(t, "every frame delivered or counted", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return uint64(got)+rxStats(t, ctx).IQDrops == uint64(sent)
		})
		mu.Lock()
		for _, p := range held {
			p.Free()
		}
		held = nil
		mu.Unlock()
		require.NoError(t, checkErr, "seed %d", seed)
		require.Zero(t, ctx.Resets(), "seed %d", seed)
		f.close()
	}
}

// Back-pressure: while InputReady says no, received frames stay in the
// ring (counted as held passes, not received and dropped); when it says
// yes again they are delivered, none lost.
func TestInputReadyHoldsRxBack(t *testing.T) {
	var ready atomic.Bool
	var c collector
	f := newFake(t, fakeOpts{input: c.input, inputReady: func(int) bool { return ready.Load() }})
	require.NoError(t, f.ctx.Init())
	for i := 0; i < 20; i++ {
		require.True(t, f.rx(frame(300, byte(i))))
	}
	testutil.Eventually(t, "held passes", func() bool { return rxStats(t, f.ctx).Held >= 3 })
	require.Zero(t, c.count(), "nothing received while held back")
	require.Zero(t, rxStats(t, f.ctx).IPackets)
	ready.Store(true)
	testutil.Eventually(t, "20 frames", func() bool { return c.count() == 20 })
	for i, b := range c.frames {
		require.Equal(t, frame(300, byte(i)), b)
	}
	f.close()
}
