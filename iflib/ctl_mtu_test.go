package iflib_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// mtuFake is the fake with IFDI_MTU_SET: frames of the MTU plus 18 bytes,
// up to hwMax; its Stop halts reception as hardware does (no buffer stays
// posted to the device).
type mtuFake struct {
	*fakeNIC
	hwMax int
	mu    sync.Mutex
	sets  []int
}

func (d *mtuFake) MTUSet(ic *iflib.Context, mtu int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sets = append(d.sets, mtu)
	if mtu+18 > d.hwMax {
		return 0, fmt.Errorf("mtu %d above the hardware's %d", mtu, d.hwMax-18)
	}
	return mtu + 18, nil
}

func (d *mtuFake) Stop(ic *iflib.Context) {
	d.fakeNIC.mu.Lock()
	d.rxTail = d.rxHead
	d.fakeNIC.mu.Unlock()
	d.fakeNIC.Stop(ic)
}

func newMTUFake(t *testing.T, o fakeOpts) (*fakeNIC, *mtuFake) {
	var d *mtuFake
	o.wrap = func(f *fakeNIC) iflib.Device { d = &mtuFake{fakeNIC: f, hwMax: 9216}; return d }
	o.rxBuf = -1 // the fake sets RxdBufSize 0: iflib chooses from the frame size
	o.softc = func(sc *iflib.SoftcCtx) { sc.RxdBufSize[0] = 0 }
	o.shared = func(sh *iflib.SharedCtx) { sh.RxMaxSize, sh.RxMaxSegSize = 0, 0 }
	f := newFake(t, o)
	return f, d
}

// SIOCSIFMTU: bounds are typed errors; IFDI_MTU_SET decides; the RX
// clusters follow the frame size (MCLBYTES, MJUMPAGESIZE for jumbo frames,
// several per frame); a refusal changes nothing and leaves the interface
// running; a stopped interface stays stopped; the sysctl tree shows it.
func TestSetMTU(t *testing.T) {
	plain := newFake(t, fakeOpts{})
	require.ErrorIs(t, plain.ctx.SetMTU(9000), iflib.ErrNotSupported)
	plain.close()

	c := &collector{}
	f, d := newMTUFake(t, fakeOpts{input: c.input})
	for _, bad := range []int{0, iflib.MinMTU - 1, iflib.MaxMTU + 1, -5} {
		err := f.ctx.SetMTU(bad)
		var ce *iflib.ConfigError
		require.ErrorAs(t, err, &ce, "%d", bad)
		assert.Equal(t, "MTU", ce.Field)
	}
	assert.Empty(t, d.sets, "bounds are checked before the driver is asked")
	assert.Equal(t, 2048, sysctl(t, f.ctx, "iflib.rxq0.rxq_fl0.buf_size"))
	require.NoError(t, f.ctx.SetMTU(9000)) // stopped
	assert.False(t, f.ctx.Running())
	assert.Equal(t, 9000, f.ctx.MTU())
	assert.Equal(t, 9018, f.ctx.Softc().MaxFrameSize)
	assert.Equal(t, iflib.MJumPageSize, f.ctx.RxBufSize(0))
	assert.Equal(t, iflib.MJumPageSize, sysctl(t, f.ctx, "iflib.rxq0.rxq_fl0.buf_size"))
	assert.Equal(t, 9000, sysctl(t, f.ctx, "mtu"))
	require.NoError(t, f.ctx.Init())
	jumbo := frame(9014, 7)
	require.True(t, f.rx(jumbo))
	testutil.Eventually(t, "the jumbo frame", func() bool { return c.count() == 1 })
	c.mu.Lock()
	assert.Equal(t, jumbo, c.frames[0])
	c.mu.Unlock()

	err := f.ctx.SetMTU(9300) // the hardware refuses
	var ie *iflib.IFDIError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "IFDI_MTU_SET", ie.Method)
	assert.Equal(t, 9000, f.ctx.MTU())
	assert.True(t, f.ctx.Running(), "a refused MTU leaves the interface running")

	// A packet of the jumbo zone held across the change: its zone retires
	// and closes when it comes back.
	c.mu.Lock()
	c.hold = true
	c.mu.Unlock()
	require.True(t, f.rx(frame(5000, 8)))
	testutil.Eventually(t, "held", func() bool { return c.count() == 2 })
	require.NoError(t, f.ctx.SetMTU(1500))
	assert.True(t, f.ctx.Running())
	assert.Equal(t, iflib.MCLBytes, f.ctx.RxBufSize(0))
	assert.Equal(t, 1518, f.ctx.Softc().MaxFrameSize)
	c.mu.Lock()
	c.hold = false
	held := c.held
	c.held = nil
	c.mu.Unlock()
	require.Len(t, held, 1)
	assert.Equal(t, iflib.MJumPageSize, held[0].ClusterSize())
	held[0].Free()
	require.True(t, f.rx(frame(1514, 9)))
	testutil.Eventually(t, "a frame after the change", func() bool { return c.count() == 3 })
	assert.Equal(t, []int{9000, 9300, 1500}, d.sets)
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// A received packet of a retired zone the stack still holds at Detach is
// reported as a leak, as one of the live zones would be.
func TestSetMTURetiredZoneLeak(t *testing.T) {
	c := &collector{hold: true}
	f, _ := newMTUFake(t, fakeOpts{input: c.input})
	require.NoError(t, f.ctx.Init())
	require.True(t, f.rx(frame(1000, 1)))
	testutil.Eventually(t, "held", func() bool { return c.count() == 1 })
	require.NoError(t, f.ctx.SetMTU(4000))
	require.NoError(t, f.ctx.Stop())
	err := f.ctx.Detach()
	var le *iflib.LeakError
	require.ErrorAs(t, err, &le)
	require.Len(t, le.Zones, 1)
	assert.Equal(t, 1, le.Zones[0].Outstanding)
	c.held[0].Free()
	require.NoError(t, f.bus.Close())
}

// An MTU change under traffic loses nothing unaccounted: while senders
// transmit and the device receives, the MTU flips between 1500 and 9000;
// every packet handed to Transmit is on the wire or counted (oqdrops,
// oerrors, stop_discards), every frame the device accepted is delivered or
// counted (rx_stop_discards), and every packet is back in its zone.
func TestSetMTUUnderTraffic(t *testing.T) {
	var delivered atomic.Uint64
	f, _ := newMTUFake(t, fakeOpts{input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
		for _, p := range pkts {
			delivered.Add(1)
			p.Free()
		}
	}})
	z := f.zone(iflib.MCLBytes, 512)
	require.NoError(t, f.ctx.Init())
	const senders, each = 3, 400
	var handed, rxOK atomic.Uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	txSenders(&wg, f.ctx, z, senders, each, 300, stop, &handed, nil)
	rxPump(&wg, stop, func(i int) bool { return f.rx(frame([]int{100, 1400, 3000}[i%3], byte(i))) }, &rxOK)
	for i := 0; i < 6; i++ {
		// Traffic between the changes, whatever the scheduler does.
		n := rxOK.Load()
		testutil.Eventually(t, "frames received", func() bool { return rxOK.Load() >= n+5 })
		require.NoError(t, f.ctx.SetMTU([]int{9000, 1500}[i%2]))
		require.True(t, f.ctx.Running())
	}
	close(stop)
	wg.Wait()
	require.NoError(t, f.ctx.Stop())
	requireTxLedger(t, f.ctx, handed.Load(), f.onRing(t))
	requireRxLedger(t, f.ctx, rxOK.Load(), delivered.Load())
	assert.GreaterOrEqual(t, rxOK.Load(), uint64(30))
	f.close(z)
}
