package iflib_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Issue 20's lifecycle class (docs/edges.md): the IFDI and if_txrx methods
// TestLifecycleFromIFDIDuringRegister and FuzzModel do not hook — the
// interrupt enables, IFDI_DETACH, IFDI_QUEUES_FREE, IFDI_GET_COUNTER, the
// queue allocations, every if_txrx method and the control methods
// (IFDI_MTU_SET, IFDI_PROMISC_SET, IFDI_MULTI_SET, IFDI_VLAN_REGISTER and
// _UNREGISTER, IFDI_NEEDS_RESTART, IFDI_MEDIA_STATUS, IFDI_MEDIA_CHANGE,
// reached through the control calls, and IFDI_LINK_INTR_ENABLE at the end
// of an admin pass) — each call Init, Stop,
// Detach, the readers or two control calls (SetMAC, which reinitialises a
// running interface, and AddMulti) once, with the *Context the driver kept
// from AttachPre. Every call returns a documented result without a panic or a
// hang, and the context still detaches cleanly: every packet back, no map
// loaded, nothing reported by the busdma checker.

// auditDev wraps the fake; hook runs after the fake's own work in each
// method, never under the fake's lock.
type auditDev struct {
	*fakeNIC
	hook func(point string)
}

func (d *auditDev) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := d.fakeNIC.AttachPre(ic, sc); err != nil {
		return err
	}
	sc.TxRx = &auditTxRx{fakeNIC: d.fakeNIC, hook: d.hook}
	return nil
}
func (d *auditDev) TxQueuesAlloc(r []iflib.RingMem, n, sets int) error {
	d.hook("TxQueuesAlloc")
	return nil
}
func (d *auditDev) RxQueuesAlloc(r []iflib.RingMem, n, sets int) error {
	d.hook("RxQueuesAlloc")
	return nil
}
func (d *auditDev) IntrEnable(*iflib.Context)  { d.hook("IntrEnable") }
func (d *auditDev) IntrDisable(*iflib.Context) { d.hook("IntrDisable") }
func (d *auditDev) Detach(*iflib.Context) error {
	d.hook("Detach")
	return nil
}
func (d *auditDev) QueuesFree(*iflib.Context) { d.hook("QueuesFree") }
func (d *auditDev) GetCounter(_ *iflib.Context, _ iflib.IfCounter) (uint64, bool) {
	d.hook("GetCounter")
	return 0, false
}
func (d *auditDev) RxQueueIntrEnable(*iflib.Context, int) error {
	d.hook("RxQueueIntrEnable")
	return nil
}
func (d *auditDev) TxQueueIntrEnable(*iflib.Context, int) error {
	d.hook("TxQueueIntrEnable")
	return nil
}

func (d *auditDev) MTUSet(_ *iflib.Context, mtu int) (int, error) {
	d.hook("MTUSet")
	return mtu + 18, nil
}
func (d *auditDev) PromiscSet(*iflib.Context, iflib.IfFlags) error {
	d.hook("PromiscSet")
	return nil
}
func (d *auditDev) MultiSet(*iflib.Context) error {
	d.hook("MultiSet")
	return nil
}
func (d *auditDev) VLANRegister(*iflib.Context, uint16)   { d.hook("VLANRegister") }
func (d *auditDev) VLANUnregister(*iflib.Context, uint16) { d.hook("VLANUnregister") }
func (d *auditDev) NeedsRestart(*iflib.Context, iflib.RestartEvent) bool {
	d.hook("NeedsRestart")
	return true
}
func (d *auditDev) MediaStatus(ic *iflib.Context) iflib.MediaStatus {
	d.hook("MediaStatus")
	return iflib.MediaStatus{Valid: true, Current: iflib.MediaAuto}
}
func (d *auditDev) MediaChange(*iflib.Context) error {
	d.hook("MediaChange")
	return nil
}
func (d *auditDev) LinkIntrEnable(*iflib.Context) { d.hook("LinkIntrEnable") }

var (
	_ iflib.MTUSetter        = (*auditDev)(nil)
	_ iflib.PromiscSetter    = (*auditDev)(nil)
	_ iflib.MultiSetter      = (*auditDev)(nil)
	_ iflib.VLANRegisterer   = (*auditDev)(nil)
	_ iflib.RestartNeeder    = (*auditDev)(nil)
	_ iflib.MediaStatuser    = (*auditDev)(nil)
	_ iflib.MediaChanger     = (*auditDev)(nil)
	_ iflib.LinkIntrEnabler  = (*auditDev)(nil)
	_ iflib.QueuesFreer      = (*auditDev)(nil)
	_ iflib.CounterGetter    = (*auditDev)(nil)
	_ iflib.QueueIntrEnabler = (*auditDev)(nil)
)

type auditTxRx struct {
	*fakeNIC
	hook func(point string)
}

func (x *auditTxRx) TxdEncap(pi *iflib.PktInfo) error {
	err := x.fakeNIC.TxdEncap(pi)
	x.hook("TxdEncap")
	return err
}
func (x *auditTxRx) TxdFlush(qid, pidx int) { x.fakeNIC.TxdFlush(qid, pidx); x.hook("TxdFlush") }
func (x *auditTxRx) TxdCreditsUpdate(qid int, clear bool) int {
	n := x.fakeNIC.TxdCreditsUpdate(qid, clear)
	x.hook("TxdCreditsUpdate")
	return n
}
func (x *auditTxRx) RxdAvailable(qid, cidx, budget int) int {
	n := x.fakeNIC.RxdAvailable(qid, cidx, budget)
	x.hook("RxdAvailable")
	return n
}
func (x *auditTxRx) RxdPktGet(ri *iflib.RxdInfo) error {
	err := x.fakeNIC.RxdPktGet(ri)
	x.hook("RxdPktGet")
	return err
}
func (x *auditTxRx) RxdRefill(iru *iflib.RxdUpdate) { x.fakeNIC.RxdRefill(iru); x.hook("RxdRefill") }
func (x *auditTxRx) RxdFlush(qid, flid, pidx int) {
	x.fakeNIC.RxdFlush(qid, flid, pidx)
	x.hook("RxdFlush")
}

func TestLifecycleFromEveryOtherDriverMethod(t *testing.T) {
	points := []string{"TxQueuesAlloc", "RxQueuesAlloc", "IntrEnable", "IntrDisable", "Detach", "QueuesFree",
		"GetCounter", "RxQueueIntrEnable", "TxQueueIntrEnable", "TxdEncap", "TxdFlush", "TxdCreditsUpdate",
		"RxdAvailable", "RxdPktGet", "RxdRefill", "RxdFlush",
		"MTUSet", "PromiscSet", "MultiSet", "VLANRegister", "VLANUnregister", "NeedsRestart", "MediaStatus", "MediaChange", "LinkIntrEnable"}
	lifecycleErrs := []error{iflib.ErrDeferred, iflib.ErrDetached, iflib.ErrRegistering, iflib.ErrBusy}
	ctlErrs := []error{iflib.ErrReentrant, iflib.ErrDetached, iflib.ErrNotSupported, iflib.ErrConfig, iflib.ErrBusy}
	for _, point := range points {
		for _, action := range []string{"init", "stop", "detach", "reads", "ctl"} {
			t.Run(point+"/"+action, func(t *testing.T) {
				var (
					mu    sync.Mutex
					ic    *iflib.Context
					fired bool
					got   error
				)
				hook := func(at string) {
					mu.Lock()
					c := ic
					if at != point || fired || c == nil {
						mu.Unlock()
						return
					}
					fired = true
					mu.Unlock()
					var err error
					switch action {
					case "init":
						err = c.Init()
					case "stop":
						err = c.Stop()
					case "detach":
						err = c.Detach()
					case "ctl":
						// SetMAC reinitialises a running interface (stop + init).
						err = c.SetMAC(iflib.EtherAddr{2, 0, 0, 0, 0, 9})
						e := c.AddMulti(iflib.EtherAddr{1, 0, 0x5e, 0, 0, 1})
						assert.False(t, e != nil && !isOneOf(e, ctlErrs...), "AddMulti from %s: undocumented error %T %v", point, e, e)
					case "reads":
						_ = c.SysctlLines()
						_ = c.Counter(iflib.IfCounterOPackets)
						_, _ = c.TxQueueStats(0)
						_, _ = c.RxQueueStats(0)
						_ = c.TxBacklog(0)
						_ = c.RxBufSize(0)
						_ = c.Placement()
						c.AdminIntr()
						c.TxIntr(0)
						c.RxIntr(0)
						c.LinkStateChange(iflib.LinkStateUp, 1e9)
					}
					t.Logf("%s from %s: %v", action, point, err)
					mu.Lock()
					got = err
					mu.Unlock()
				}
				// The driver keeps the *Context AttachPre receives, as drivers do.
				o := fakeOpts{cfg: iflib.Config{StopTimeout: 20 * time.Millisecond, TimerInterval: time.Hour},
					wrap: func(f *fakeNIC) iflib.Device {
						return &keepCtx{auditDev: &auditDev{fakeNIC: f, hook: hook},
							keep: func(c *iflib.Context) { mu.Lock(); ic = c; mu.Unlock() }}
					}}
				f, err := tryFake(t, o)
				if err != nil {
					// Only a Detach from a Register-time method may fail Register.
					require.ErrorIs(t, err, iflib.ErrDetached, "%s from %s", action, point)
					return
				}
				z := f.zone(iflib.MCLBytes, 64)
				if err := f.ctx.Init(); err != nil {
					require.ErrorIs(t, err, iflib.ErrDetached)
				}
				// A frame from the wire first (the fake device, unlike a real
				// one, would still write its posted buffers after IFDI_STOP),
				// then a transmit: sent, or refused and counted.
				// A control call from a method Init runs (IntrEnable, …)
				// hands a reset to the admin task, which may discard the
				// frame (the fake forgets what it wrote at IFDI_INIT): once
				// such a reset is done, send it again.
				resets := f.ctx.Resets()
				if f.ctx.Running() && f.rx(make([]byte, 300)) {
					testutil.Eventually(t, "the frame taken", func() bool {
						st, err := f.ctx.RxQueueStats(0)
						if err == nil && st.IPackets >= 1 || !f.ctx.Running() {
							return true
						}
						if r := f.ctx.Resets(); r != resets {
							resets = r
							f.rx(make([]byte, 300))
						}
						return false
					})
				}
				_ = f.ctx.Transmit(pkt(t, z, 100, 1))
				_ = f.ctx.Counter(iflib.IfCounterOPackets)
				// An admin pass (IFDI_UPDATE_ADMIN_STATUS, IFDI_LINK_INTR_ENABLE),
				// then the control calls, which reach the IFDI control methods.
				f.ctx.AdminIntr()
				time.Sleep(2 * time.Millisecond)
				f.ctx.MediaAdd(iflib.Media1000T | iflib.MediaFDX)
				for _, call := range []func() error{
					func() error { return f.ctx.SetMTU(1400) },
					func() error { return f.ctx.SetFlags(iflib.IffPromisc) },
					func() error { return f.ctx.AddMulti(iflib.EtherAddr{1, 0, 0x5e, 0, 0, 2}) },
					func() error { return f.ctx.RegisterVLAN(5) },
					func() error { return f.ctx.UnregisterVLAN(5) },
					func() error { return f.ctx.SetMedia(iflib.Media1000T | iflib.MediaFDX) },
					func() error { _, err := f.ctx.MediaStatus(); return err },
				} {
					err := call()
					require.False(t, err != nil && !isOneOf(err, append(lifecycleErrs, ctlErrs...)...), "a control call with %s hooked: undocumented error %T %v", point, err, err)
				}
				time.Sleep(5 * time.Millisecond)
				if err := f.ctx.Stop(); err != nil {
					require.ErrorIs(t, err, iflib.ErrDetached)
				}
				err = f.ctx.Detach()
				require.False(t, err != nil && !errors.Is(err, iflib.ErrDetached) && !errors.Is(err, iflib.ErrDeferred), "Detach: %v", err)
				select {
				case <-f.ctx.Detached():
				case <-time.After(10 * time.Second):
					require.FailNow(t, fmt.Sprintf("%s from %s: the context never finished detaching", action, point))
				}
				mu.Lock()
				require.True(t, fired, "the hook at %s ran", point)
				require.False(t, got != nil && !isOneOf(got, append(lifecycleErrs, ctlErrs...)...), "%s from %s: undocumented error %T %v", action, point, got, got)
				mu.Unlock()
				require.Equal(t, z.Size(), z.Available(), "every packet back in its zone")
				require.NoError(t, f.bus.Close(), "no map left loaded")
				require.Empty(t, f.chk.Reports())
			})
		}
	}
}

// keepCtx records the *Context AttachPre receives.
type keepCtx struct {
	*auditDev
	keep func(*iflib.Context)
}

func (k *keepCtx) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	k.keep(ic)
	return k.auditDev.AttachPre(ic, sc)
}

// Issue 20's watchdog class (docs/edges.md): a queue the device stopped
// completing is not reset while the link is down (a queue is frozen only
// with the link up, as iflib_timer checks IFF_DRV_RUNNING and the link);
// once the link is back and the queue takes on new work, the same hang is
// found and reset — the check was not merely inert.
func TestTxWatchdogLinkDownNotReset(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: mode, TimerInterval: 20 * time.Millisecond}})
			z := f.zone(iflib.MCLBytes, 256)
			require.NoError(t, f.ctx.Init())
			f.hangTx(t, z, 5)
			f.ctx.LinkStateChange(iflib.LinkStateDown, 0)
			time.Sleep(300 * time.Millisecond) // 15 periods, 4 would reset
			require.Zero(t, f.ctx.WatchdogEvents(), "a queue was reset with the link down")
			f.ctx.LinkStateChange(iflib.LinkStateUp, 1e9)
			require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, 9))) // new work on the frozen queue: arms
			testutil.Eventually(t, "the watchdog once the link is up", func() bool { return f.ctx.WatchdogEvents() >= 1 })
			f.setHold(false)
			testutil.Eventually(t, "running again", f.ctx.Running)
			f.close(z)
		})
	}
}
