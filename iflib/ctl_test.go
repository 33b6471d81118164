package iflib_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// The control-plane types print as ifconfig does and carry FreeBSD's bits.
func TestCtlTypes(t *testing.T) {
	assert.Equal(t, "02:00:5e:00:00:0a", iflib.EtherAddr{2, 0, 0x5e, 0, 0, 10}.String())
	assert.True(t, iflib.EtherAddr{1, 0, 0x5e, 0, 0, 1}.IsMulticast())
	assert.False(t, iflib.EtherAddr{2}.IsMulticast())
	assert.Equal(t, "<PROMISC,ALLMULTI>", (iflib.IffPromisc | iflib.IffAllMulti).String())
	assert.Equal(t, "<RXCSUM,TXCSUM,TSO4,0x80000000>", (iflib.CapRxCsum | iflib.CapTxCsum | iflib.CapTSO4 | 1<<31).String())
	assert.Equal(t, uint64(1e9), (iflib.Media1000T | iflib.MediaFDX).Baudrate())
	assert.Equal(t, uint64(100e9), iflib.Media100GSR4.Baudrate())
	assert.Equal(t, uint64(0), iflib.MediaAuto.Baudrate())
	assert.Equal(t, "1000baseT <full-duplex,rxpause,txpause>", (iflib.Media1000T | iflib.MediaFDX | iflib.MediaRxPause | iflib.MediaTxPause).String())
	assert.Equal(t, "autoselect", iflib.MediaAuto.String())
	assert.Equal(t, iflib.Media10GT, (iflib.Media10GT | iflib.MediaFDX).Subtype())
}

// ctlDev is the fake with the control-plane IFDI methods; each call is
// recorded.
type ctlDev struct {
	*fakeNIC
	attach func(ic *iflib.Context)
}

func (d *ctlDev) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := d.fakeNIC.AttachPre(ic, sc); err != nil {
		return err
	}
	if d.attach != nil {
		d.attach(ic)
	}
	return nil
}

// iflib_set_mac from IFDI_ATTACH_PRE sets the address; bad addresses are
// typed errors; the sysctl tree shows it.
func TestSetMACFromAttachPre(t *testing.T) {
	mac := iflib.EtherAddr{2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	var attachErr, badErr error
	f := newFake(t, fakeOpts{wrap: func(f *fakeNIC) iflib.Device {
		return &ctlDev{fakeNIC: f, attach: func(ic *iflib.Context) {
			attachErr = ic.SetMAC(mac)
			badErr = ic.SetMAC(iflib.EtherAddr{1, 2, 3, 4, 5, 6})
		}}
	}})
	require.NoError(t, attachErr)
	var ce *iflib.ConfigError
	require.ErrorAs(t, badErr, &ce)
	assert.Equal(t, "MAC", ce.Field)
	assert.Equal(t, mac, f.ctx.MAC())
	require.ErrorIs(t, f.ctx.SetMAC(iflib.EtherAddr{}), iflib.ErrConfig)
	v, ok := f.ctx.SysctlValue("dev.fake.0.mac")
	require.True(t, ok)
	assert.Equal(t, mac.String(), v)
	v, ok = f.ctx.SysctlValue("dev.fake.0.mtu")
	require.True(t, ok)
	assert.Equal(t, 1500, v)
	f.close()
	require.ErrorIs(t, f.ctx.SetMAC(mac), iflib.ErrDetached)
	assert.Equal(t, mac, f.ctx.MAC(), "readable after Detach")
}

// A CapEnable the device does not offer is refused at Register.
func TestCapEnableSubsetOfCapabilities(t *testing.T) {
	_, err := tryFake(t, fakeOpts{softc: func(sc *iflib.SoftcCtx) {
		sc.Capabilities = iflib.CapRxCsum
		sc.CapEnable = iflib.CapRxCsum | iflib.CapTSO4
	}})
	var ce *iflib.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "CapEnable", ce.Field)
	f := newFake(t, fakeOpts{softc: func(sc *iflib.SoftcCtx) {
		sc.Capabilities = iflib.CapRxCsum | iflib.CapTxCsum
		sc.CapEnable = iflib.CapRxCsum
	}})
	assert.Equal(t, iflib.CapRxCsum|iflib.CapTxCsum, f.ctx.Capabilities())
	assert.Equal(t, iflib.CapRxCsum, f.ctx.CapEnabled())
	f.close()
}

// RxdFrag.Off: a fragment's data starts Off bytes into its buffer (after
// the pad in the first); iflib delivers exactly the bytes named, on the
// copy path and the cluster path, and a fragment whose Off + Len overruns
// its buffer is a driver error (ierrors, a reset), never a panic.
func TestRxFragOffset(t *testing.T) {
	const off = 24
	var c collector
	f := newFake(t, fakeOpts{input: c.input})
	f.rxPad = off // the device writes off junk bytes before the frame
	var lie atomic.Bool
	f.pktGet = func(ri *iflib.RxdInfo) error {
		// Describe the junk as an offset, not a pad.
		ri.Pad = 0
		ri.Frags[0].Off = off
		ri.Len -= off
		if lie.Load() {
			ri.Frags[0].Off = uint32(iflib.MCLBytes)
		}
		return nil
	}
	require.NoError(t, f.ctx.Init())
	want := [][]byte{frame(60, 1), frame(1000, 2), frame(3000, 3)}
	for _, fr := range want {
		require.True(t, f.rx(fr))
	}
	testutil.Eventually(t, "frames", func() bool { return c.count() == len(want) })
	c.mu.Lock()
	for i := range want {
		assert.Equal(t, want[i], c.frames[i], "frame %d", i)
	}
	c.mu.Unlock()
	lie.Store(true)
	before := rxStats(t, f.ctx)
	require.True(t, f.rx(frame(200, 4)))
	testutil.Eventually(t, "the lie counted", func() bool { return rxStats(t, f.ctx).IErrors > before.IErrors })
	testutil.Eventually(t, "the reset", func() bool { return f.ctx.Resets() > 0 })
	lie.Store(false)
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// SubscribeLink: every change of state or speed reaches the subscribers in
// order, outside the context lock (a subscriber may call the lifecycle,
// even Detach); cancel stops the calls; ErrLinkDown does not blame the
// driver for a carrier loss.
func TestSubscribeLink(t *testing.T) {
	f := newFake(t, fakeOpts{})
	var mu sync.Mutex
	var got, got2 []iflib.LinkEvent
	cancel := f.ctx.SubscribeLink(func(ev iflib.LinkEvent) {
		_ = f.ctx.MTU()
		_, _ = f.ctx.MediaStatus()
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	})
	cancel2 := f.ctx.SubscribeLink(func(ev iflib.LinkEvent) {
		mu.Lock()
		got2 = append(got2, ev)
		mu.Unlock()
	})
	events := func() []iflib.LinkEvent {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	require.NoError(t, f.ctx.Init())
	f.ctx.LinkStateChange(iflib.LinkStateUp, 1e9) // no change: no event
	f.ctx.LinkStateChange(iflib.LinkStateUp, 1e8) // a speed change
	f.ctx.LinkStateChange(iflib.LinkStateDown, 0) // carrier lost
	z := f.zone(2048, 4)
	err := f.ctx.Transmit(pkt(t, z, 60, 1))
	require.ErrorIs(t, err, iflib.ErrLinkDown)
	assert.NotContains(t, err.Error(), "has not reported")
	assert.Contains(t, err.Error(), "no carrier")
	want := []iflib.LinkEvent{{State: iflib.LinkStateUp, Baudrate: 1e9}, {State: iflib.LinkStateUp, Baudrate: 1e8}, {State: iflib.LinkStateDown}}
	testutil.Eventually(t, "three events", func() bool { return len(events()) == 3 })
	assert.Equal(t, want, events())
	cancel()
	cancel()
	f.ctx.LinkStateChange(iflib.LinkStateUp, 1e9)
	testutil.Eventually(t, "the second subscriber", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got2) == 4
	})
	assert.Len(t, events(), 3, "cancelled")
	cancel2()
	// A subscriber may Detach: it is not under the context lock.
	detached := make(chan error, 1)
	f.ctx.SubscribeLink(func(ev iflib.LinkEvent) {
		if ev.State == iflib.LinkStateDown {
			detached <- f.ctx.Detach()
		}
	})
	f.ctx.LinkStateChange(iflib.LinkStateDown, 0)
	require.NoError(t, <-detached)
	require.Equal(t, z.Size(), z.Available())
	require.NoError(t, f.bus.Close())
}
