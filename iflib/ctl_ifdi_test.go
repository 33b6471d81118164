package iflib_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// ctlFake is the fake with every optional control-plane IFDI method; it
// records each call and may fail it.
type ctlFake struct {
	*fakeNIC
	mu       sync.Mutex
	intrOff  bool // between IntrDisable and IntrEnable
	promisc  []iflib.IfFlags
	multiOff []bool // interrupts were off during each MultiSet
	multi    [][]iflib.EtherAddr
	vlanOps  []int // +tag registered, -tag unregistered
	restart  bool
	media    []iflib.Media
	status   iflib.MediaStatus
	fail     error
	inMulti  func(ic *iflib.Context)
	inits    int
	initCfg  []iflib.Capabilities
}

// multiState reads what MultiSet recorded and the interrupt state under
// the lock (the queue tasks call IntrEnable concurrently).
func (d *ctlFake) multiState() (multi [][]iflib.EtherAddr, multiOff []bool, intrOff bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.multi, d.multiOff, d.intrOff
}

func (d *ctlFake) IntrDisable(ic *iflib.Context) {
	d.mu.Lock()
	d.intrOff = true
	d.mu.Unlock()
}
func (d *ctlFake) IntrEnable(ic *iflib.Context) {
	d.mu.Lock()
	d.intrOff = false
	d.mu.Unlock()
}
func (d *ctlFake) Init(ic *iflib.Context) error {
	d.mu.Lock()
	d.inits++
	d.initCfg = append(d.initCfg, ic.CapEnabled())
	d.mu.Unlock()
	return d.fakeNIC.Init(ic)
}
func (d *ctlFake) PromiscSet(ic *iflib.Context, f iflib.IfFlags) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.promisc = append(d.promisc, f)
	return d.fail
}
func (d *ctlFake) MultiSet(ic *iflib.Context) error {
	if d.inMulti != nil {
		d.inMulti(ic)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.multiOff = append(d.multiOff, d.intrOff)
	d.multi = append(d.multi, ic.Multicast())
	return d.fail
}
func (d *ctlFake) VLANRegister(ic *iflib.Context, vtag uint16) {
	d.mu.Lock()
	d.vlanOps = append(d.vlanOps, int(vtag))
	d.mu.Unlock()
}
func (d *ctlFake) VLANUnregister(ic *iflib.Context, vtag uint16) {
	d.mu.Lock()
	d.vlanOps = append(d.vlanOps, -int(vtag))
	d.mu.Unlock()
}
func (d *ctlFake) NeedsRestart(ic *iflib.Context, ev iflib.RestartEvent) bool {
	return ev == iflib.RestartVLANConfig && d.restart
}
func (d *ctlFake) MediaChange(ic *iflib.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.media = append(d.media, ic.Media())
	return d.fail
}
func (d *ctlFake) MediaStatus(ic *iflib.Context) iflib.MediaStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}
func (d *ctlFake) setFail(err error) {
	d.mu.Lock()
	d.fail = err
	d.mu.Unlock()
}
func (d *ctlFake) initCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inits
}

func newCtlFake(t *testing.T, o fakeOpts) (*fakeNIC, *ctlFake) {
	var d *ctlFake
	o.wrap = func(f *fakeNIC) iflib.Device { d = &ctlFake{fakeNIC: f}; return d }
	f := newFake(t, o)
	return f, d
}

// sysctl reads a leaf below the context's root.
func sysctl(t *testing.T, ic *iflib.Context, leaf string) any {
	t.Helper()
	v, ok := ic.SysctlValue(ic.Sysctl().Name + "." + leaf)
	require.True(t, ok, leaf)
	return v
}

var errDrv = errors.New("driver says no")

// SIOCSIFFLAGS: IFDI_PROMISC_SET only on a running interface and only on a
// change; a driver error restores the flags; bad bits are typed errors; a
// driver without the method refuses.
func TestSetFlags(t *testing.T) {
	plain := newFake(t, fakeOpts{})
	require.ErrorIs(t, plain.ctx.SetFlags(iflib.IffPromisc), iflib.ErrNotSupported)
	require.Equal(t, iflib.IfFlags(0), plain.ctx.Flags())
	plain.close()

	f, d := newCtlFake(t, fakeOpts{})
	require.ErrorIs(t, f.ctx.SetFlags(1), iflib.ErrConfig)
	require.NoError(t, f.ctx.SetFlags(iflib.IffAllMulti)) // stopped: kept for IFDI_INIT
	assert.Empty(t, d.promisc)
	require.NoError(t, f.ctx.Init())
	require.NoError(t, f.ctx.SetFlags(iflib.IffAllMulti|iflib.IffPromisc))
	require.NoError(t, f.ctx.SetFlags(iflib.IffAllMulti|iflib.IffPromisc)) // no change: no call
	assert.Equal(t, []iflib.IfFlags{iflib.IffAllMulti | iflib.IffPromisc}, d.promisc)
	d.setFail(errDrv)
	err := f.ctx.SetFlags(0)
	var ie *iflib.IFDIError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "IFDI_PROMISC_SET", ie.Method)
	require.ErrorIs(t, err, errDrv)
	assert.Equal(t, iflib.IffAllMulti|iflib.IffPromisc, f.ctx.Flags(), "restored")
	assert.Equal(t, "<PROMISC,ALLMULTI>", sysctl(t, f.ctx, "flags"))
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// SIOCADDMULTI/SIOCDELMULTI: IFDI_MULTI_SET with the interrupts disabled
// around it, on a running interface; typed errors; a failed call leaves the
// list as it was.
func TestMulticast(t *testing.T) {
	f, d := newCtlFake(t, fakeOpts{})
	m1 := iflib.EtherAddr{0x01, 0x00, 0x5e, 0, 0, 1}
	m2 := iflib.EtherAddr{0x33, 0x33, 0, 0, 0, 1}
	require.ErrorIs(t, f.ctx.AddMulti(iflib.EtherAddr{2, 0, 0, 0, 0, 1}), iflib.ErrConfig)
	require.NoError(t, f.ctx.AddMulti(m1)) // stopped: no IFDI call
	multi, _, _ := d.multiState()
	assert.Empty(t, multi)
	require.NoError(t, f.ctx.Init())
	require.NoError(t, f.ctx.AddMulti(m2))
	require.NoError(t, f.ctx.AddMulti(m2)) // already listed
	multi, multiOff, intrOff := d.multiState()
	require.Equal(t, [][]iflib.EtherAddr{{m1, m2}}, multi)
	require.Equal(t, []bool{true}, multiOff, "interrupts disabled around IFDI_MULTI_SET")
	assert.False(t, intrOff, "and enabled again")
	require.ErrorIs(t, f.ctx.DelMulti(iflib.EtherAddr{1, 2, 3, 4, 5, 6}), iflib.ErrConfig)
	d.setFail(errDrv)
	require.ErrorIs(t, f.ctx.DelMulti(m1), errDrv)
	assert.Equal(t, []iflib.EtherAddr{m1, m2}, f.ctx.Multicast(), "restored in place")
	require.ErrorIs(t, f.ctx.AddMulti(iflib.EtherAddr{1, 0, 0, 0, 0, 9}), errDrv)
	assert.Equal(t, []iflib.EtherAddr{m1, m2}, f.ctx.Multicast())
	d.setFail(nil)
	require.NoError(t, f.ctx.DelMulti(m1))
	assert.Equal(t, []iflib.EtherAddr{m2}, f.ctx.Multicast())
	assert.Equal(t, "[33:33:00:00:00:01]", sysctl(t, f.ctx, "multicast"))
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// iflib_vlan_register/unregister: the driver is told, a running interface
// is reinitialised only when IFDI_NEEDS_RESTART says so, a stopped one is
// not started (FreeBSD's iflib_if_init_locked would start it).
func TestVLANRegister(t *testing.T) {
	f, d := newCtlFake(t, fakeOpts{})
	require.ErrorIs(t, f.ctx.RegisterVLAN(0), iflib.ErrConfig)
	require.ErrorIs(t, f.ctx.RegisterVLAN(4096), iflib.ErrConfig)
	require.ErrorIs(t, f.ctx.UnregisterVLAN(7), iflib.ErrConfig)
	d.restart = true
	require.NoError(t, f.ctx.RegisterVLAN(100))
	assert.False(t, f.ctx.Running(), "a stopped interface stays stopped")
	assert.Equal(t, 0, d.initCount())
	require.NoError(t, f.ctx.Init())
	require.NoError(t, f.ctx.RegisterVLAN(7))
	require.NoError(t, f.ctx.RegisterVLAN(7))
	assert.Equal(t, 2, d.initCount(), "NeedsRestart: reinit")
	assert.True(t, f.ctx.Running())
	d.restart = false
	require.NoError(t, f.ctx.UnregisterVLAN(100))
	assert.Equal(t, 2, d.initCount(), "no restart asked")
	assert.Equal(t, []int{100, 7, -100}, d.vlanOps)
	assert.Equal(t, []uint16{7}, f.ctx.VLANs())
	assert.Equal(t, "[7]", sysctl(t, f.ctx, "vlans"))
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// ifmedia: the list and default from attach, SetMedia → IFDI_MEDIA_CHANGE,
// an unlisted medium refused, a failed change restores the selection;
// MediaStatus from the driver, or iflib's view with autoselect resolved.
func TestMedia(t *testing.T) {
	attach := func(ic *iflib.Context) {
		ic.MediaAdd(iflib.Media1000T | iflib.MediaFDX)
		ic.MediaAdd(iflib.Media100TX | iflib.MediaFDX)
		ic.MediaAdd(iflib.Media100TX | iflib.MediaFDX) // twice: once
		ic.MediaAdd(iflib.Media(99))                   // unknown: ignored
		ic.MediaSetDefault(iflib.MediaAuto)
	}
	plain := newFake(t, fakeOpts{wrap: func(f *fakeNIC) iflib.Device { return &ctlDev{fakeNIC: f, attach: attach} }})
	assert.Equal(t, []iflib.Media{iflib.Media1000T | iflib.MediaFDX, iflib.Media100TX | iflib.MediaFDX, iflib.MediaAuto}, plain.ctx.MediaList())
	assert.Equal(t, iflib.MediaAuto, plain.ctx.Media())
	require.ErrorIs(t, plain.ctx.SetMedia(iflib.Media100TX|iflib.MediaFDX), iflib.ErrNotSupported)
	ms, err := plain.ctx.MediaStatus()
	require.NoError(t, err)
	assert.Equal(t, iflib.MediaStatus{Valid: true, Active: false, Current: iflib.MediaAuto}, ms)
	require.NoError(t, plain.ctx.Init()) // the fake reports 1 Gb/s
	ms, err = plain.ctx.MediaStatus()
	require.NoError(t, err)
	assert.Equal(t, iflib.MediaStatus{Valid: true, Active: true, Current: iflib.Media1000T | iflib.MediaFDX}, ms)
	require.NoError(t, plain.ctx.Stop())
	plain.close()

	f, d := newCtlFake(t, fakeOpts{softc: func(*iflib.SoftcCtx) {}})
	require.ErrorIs(t, f.ctx.SetMedia(iflib.Media10GT), iflib.ErrConfig)
	f.ctx.MediaAdd(iflib.Media10GT)
	require.NoError(t, f.ctx.SetMedia(iflib.Media10GT))
	assert.Equal(t, []iflib.Media{iflib.Media10GT}, d.media)
	f.ctx.MediaAdd(iflib.Media10T)
	d.setFail(errDrv)
	require.ErrorIs(t, f.ctx.SetMedia(iflib.Media10T), errDrv)
	assert.Equal(t, iflib.Media10GT, f.ctx.Media(), "restored")
	assert.Equal(t, "10Gbase-T", sysctl(t, f.ctx, "media"))
	d.status = iflib.MediaStatus{Valid: true, Active: true, Current: iflib.Media10GT | iflib.MediaFDX}
	ms, err = f.ctx.MediaStatus()
	require.NoError(t, err)
	assert.Equal(t, d.status, ms)
	f.close()
	_, err = f.ctx.MediaStatus()
	require.ErrorIs(t, err, iflib.ErrDetached)
}

// RequestReset from the driver's own IFDI method (CTX_LOCK held): the
// admin task resets the interface after the method returns and it runs
// again.
func TestRequestResetFromDriver(t *testing.T) {
	f, d := newCtlFake(t, fakeOpts{})
	require.NoError(t, f.ctx.Init())
	d.inMulti = func(ic *iflib.Context) { ic.RequestReset() }
	require.NoError(t, f.ctx.AddMulti(iflib.EtherAddr{1, 0, 0, 0, 0, 1}))
	testutil.Eventually(t, "the reset", func() bool { return f.ctx.Resets() == 1 })
	assert.True(t, f.ctx.Running())
	assert.Equal(t, 2, d.initCount())
	require.NoError(t, f.ctx.Stop())
	f.ctx.RequestReset() // stopped: left alone
	require.NoError(t, f.ctx.Init())
	require.NoError(t, f.ctx.Stop())
	assert.False(t, f.ctx.Running())
	f.close()
}

// A control call from the context's own task goroutine (the input
// callback) is refused, not deadlocked; from an IFDI method it runs.
func TestCtlReentrant(t *testing.T) {
	errs := make(chan error, 2)
	var f *fakeNIC
	f = newFake(t, fakeOpts{input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
		for _, p := range pkts {
			p.Free()
		}
		errs <- f.ctx.AddMulti(iflib.EtherAddr{1, 0, 0, 0, 0, 1})
		errs <- f.ctx.SetMTU(1400)
	}})
	require.NoError(t, f.ctx.Init())
	require.True(t, f.rx(frame(200, 1)))
	require.ErrorIs(t, <-errs, iflib.ErrReentrant)
	require.ErrorIs(t, <-errs, iflib.ErrState)
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// linkIntrFake counts IFDI_LINK_INTR_ENABLE.
type linkIntrFake struct {
	*fakeNIC
	n atomic.Int64
}

func (d *linkIntrFake) LinkIntrEnable(*iflib.Context) { d.n.Add(1) }

// IFDI_LINK_INTR_ENABLE ends every admin pass of a running interface
// (AdminIntr here), and none runs while it is stopped.
func TestLinkIntrEnable(t *testing.T) {
	var d *linkIntrFake
	f := newFake(t, fakeOpts{cfg: iflib.Config{TimerInterval: time.Hour}, wrap: func(f *fakeNIC) iflib.Device { d = &linkIntrFake{fakeNIC: f}; return d }})
	f.ctx.AdminIntr()
	time.Sleep(20 * time.Millisecond)
	assert.Zero(t, d.n.Load(), "stopped")
	require.NoError(t, f.ctx.Init())
	f.ctx.AdminIntr()
	testutil.Eventually(t, "IFDI_LINK_INTR_ENABLE", func() bool { return d.n.Load() >= 1 })
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// TxBacklog counts packets, not the TX task's sentinels: with the link
// down the task runs every timer period and the drain cannot proceed, yet
// the backlog stays 0 (it once grew by one sentinel a period, to 2046).
func TestTxBacklogIgnoresSentinels(t *testing.T) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{TimerInterval: time.Millisecond}})
	f.noLink = true
	require.NoError(t, f.ctx.Init())
	testutil.Eventually(t, "timer periods", func() bool { return txStats(t, f.ctx).TaskRuns > 20 })
	assert.Zero(t, f.ctx.TxBacklog(0))
	f.ctx.LinkStateChange(iflib.LinkStateUp, 1e9)
	z := f.zone(iflib.MCLBytes, 8)
	require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, 1)))
	testutil.Eventually(t, "sent", func() bool { return len(f.sent()) == 1 })
	// Idle: the one descriptor reclaim leaves (below its threshold), and
	// no sentinel, however many periods pass.
	runs := txStats(t, f.ctx).TaskRuns
	testutil.Eventually(t, "more periods", func() bool { return txStats(t, f.ctx).TaskRuns > runs+20 })
	assert.LessOrEqual(t, f.ctx.TxBacklog(0), 1)
	require.NoError(t, f.ctx.Stop())
	f.close(z)
}
