package iflib_test

import (
	"errors"
	"expvar"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Regression tests for issue 20 §2 items 1 and 2 (lifecycle and sysctl
// calls from IFDI methods during Register; Stop never frees what a sender
// holds) and the interface-name item.

// hookDev wraps the fake with every optional IFDI method iflib calls during
// Register, running hook(point, ctx) in each after the fake's own work.
type hookDev struct {
	*fakeNIC
	hook func(point string, ctx *iflib.Context)
}

func (h *hookDev) AttachPre(ctx *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := h.fakeNIC.AttachPre(ctx, sc); err != nil {
		return err
	}
	h.hook("AttachPre", ctx)
	return nil
}
func (h *hookDev) TxQueuesAlloc(r []iflib.RingMem, n, sets int) error {
	h.hook("TxQueuesAlloc", nil)
	return nil
}
func (h *hookDev) TxqSetup(ctx *iflib.Context, qid int) error { h.hook("TxqSetup", ctx); return nil }
func (h *hookDev) RxqSetup(ctx *iflib.Context, qid int) error { h.hook("RxqSetup", ctx); return nil }
func (h *hookDev) AttachPost(ctx *iflib.Context) error        { h.hook("AttachPost", ctx); return nil }

var (
	_ iflib.QueueSetupper = (*hookDev)(nil)
	_ iflib.AttachPoster  = (*hookDev)(nil)
)

// Item 1: every public method called from each IFDI method during Register
// returns its documented result, never panics; Detach there makes Register
// fail with ErrDetached and leaves nothing allocated and the name free.
func TestLifecycleFromIFDIDuringRegister(t *testing.T) {
	for _, point := range []string{"AttachPre", "TxqSetup", "RxqSetup", "AttachPost"} {
		for _, detach := range []bool{false, true} {
			name := point
			if detach {
				name += "-detach"
			}
			t.Run(name, func(t *testing.T) {
				space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20, ContigSize: 4 << 20})
				require.NoError(t, err)
				z, err := iflib.NewZone(space, "tx", iflib.MCLBytes, 16)
				require.NoError(t, err)
				var seen *iflib.Context
				var detachErr error
				hook := func(at string, ctx *iflib.Context) {
					if at != point {
						return
					}
					seen = ctx
					require.ErrorIs(t, ctx.Init(), iflib.ErrRegistering)
					require.ErrorIs(t, ctx.Init(), iflib.ErrState)
					require.NoError(t, ctx.Stop())
					require.False(t, ctx.Running())
					_ = ctx.SysctlLines()
					_, _ = ctx.SysctlValue("dev.fake.0.iflib.txq0.opackets")
					require.NotNil(t, ctx.Sysctl())
					_ = ctx.Counter(iflib.IfCounterOPackets)
					_, _ = ctx.TxQueueStats(0)
					_, _ = ctx.RxQueueStats(0)
					_ = ctx.TxBacklog(0)
					_ = ctx.Placement()
					ctx.TxIntr(0)
					ctx.RxIntr(0)
					ctx.AdminIntr()
					ctx.ReportPauseFrames(1)
					p, err := z.Get()
					require.NoError(t, err)
					p.SetLen(100)
					require.ErrorIs(t, ctx.Transmit(p), iflib.ErrNotRunning, "freed and counted")
					if detach {
						detachErr = ctx.Detach()
					}
				}
				f, err := tryFake(t, fakeOpts{space: space, wrap: func(f *fakeNIC) iflib.Device { return &hookDev{fakeNIC: f, hook: hook} }})
				require.NotNil(t, seen, "the hook ran")
				require.Equal(t, z.Size(), z.Available(), "the refused packet was freed")
				if detach {
					require.ErrorIs(t, detachErr, iflib.ErrDeferred)
					require.ErrorIs(t, err, iflib.ErrDetached, "Register fails after a Detach from %s", point)
					require.Nil(t, f)
					select {
					case <-seen.Detached():
					default:
						require.FailNow(t, "Detached() not closed after the failed Register")
					}
					require.ErrorIs(t, seen.Detach(), iflib.ErrDetached)
					require.ErrorIs(t, seen.Init(), iflib.ErrDetached)
					require.NoError(t, z.Close())
					require.Zero(t, space.Allocated(), "a failed Register left memory allocated")
					// The name is free again.
					f2 := newFake(t, fakeOpts{space: space})
					f2.close()
					return
				}
				require.NoError(t, err)
				require.EqualValues(t, 1, f.ctx.Counter(iflib.IfCounterOQDrops), "the refused packet is counted")
				require.NoError(t, f.ctx.Init())
				f.close(z)
			})
		}
	}
}

// Interface names: two live contexts of one name (test rigs build several
// machines in one process) each get their own expvar key, so neither hides
// the other's counters; a key is free again after Detach.
func TestSameNameContextsBothPublished(t *testing.T) {
	a := newFake(t, fakeOpts{name: "dup"})
	b := newFake(t, fakeOpts{name: "dup"})
	require.Equal(t, "dup0", a.ctx.Name())
	require.Equal(t, "dup0", b.ctx.Name())
	require.Equal(t, "dup0", a.ctx.ExpvarKey())
	require.Equal(t, "dup0#2", b.ctx.ExpvarKey())
	s := expvar.Get("iflib").String()
	require.True(t, strings.Contains(s, `"dup0"`) && strings.Contains(s, `"dup0#2"`), "both contexts in expvar: %s", s)
	a.close()
	require.NotContains(t, expvar.Get("iflib").String(), `"dup0"`)
	c := newFake(t, fakeOpts{name: "dup"})
	require.Equal(t, "dup0", c.ctx.ExpvarKey())
	c.close()
	b.close()
	require.NotContains(t, expvar.Get("iflib").String(), `"dup0#2"`)
}

// slowDev delays TxdEncap while armed, to hold a TX queue past StopTimeout.
func slowEncap(f *fakeNIC, entered chan<- struct{}, release <-chan struct{}) {
	var once sync.Once
	f.encapHook = func(*iflib.PktInfo) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	}
}

// Item 2: a transmit still inside encap when StopTimeout expires keeps its
// queue: Stop returns in bounded time without freeing it (no double
// unload, no packet counted twice, no race), the queue is torn down when
// the sender leaves, Init waits for that, and Detach hands the rest of its
// work to the admin task (ErrDeferred) and finishes when the sender leaves.
func TestStopNeverFreesWhatASenderHolds(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		for _, then := range []string{"init", "detach"} {
			t.Run(mode.String()+"-"+then, func(t *testing.T) {
				// drbr: no deferral, so the stuck encap is the sender's own
				// (a TX task stuck there would hold Stop, which waits for
				// the tasks).
				f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: mode, StopTimeout: 20 * time.Millisecond, TimerInterval: time.Hour,
					DRBRMaxProducers: -1}})
				z := f.zone(iflib.MCLBytes, 256)
				require.NoError(t, f.ctx.Init())
				for i := 0; i < 5; i++ {
					require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, byte(i))))
				}
				testutil.Eventually(t, "5 frames", func() bool { return len(f.sent()) == 5 })
				// The next packets stay on the ring: Stop must free them.
				f.hangTx(t, z, 3)
				// Let the TX task (woken by the first frames' completions) go
				// idle, so that the sender below is the consumer that encaps
				// its own packet (mpring: the producer of an idle ring).
				runs := txStats(t, f.ctx).TaskRuns
				for still := 0; still < 3; {
					time.Sleep(10 * time.Millisecond)
					if r := txStats(t, f.ctx).TaskRuns; r != runs {
						runs, still = r, 0
					} else {
						still++
					}
				}
				entered, release := make(chan struct{}), make(chan struct{})
				f.mu.Lock()
				slowEncap(f, entered, release)
				f.mu.Unlock()
				var sendErr error
				done := make(chan struct{})
				go func() {
					defer close(done)
					sendErr = f.ctx.Transmit(pkt(t, z, 200, 9))
				}()
				<-entered
				start := time.Now()
				require.NoError(t, f.ctx.Stop())
				require.Less(t, time.Since(start), 2*time.Second, "Stop waited for the stuck sender")
				require.False(t, f.ctx.Running())
				// More senders meanwhile are refused, freed and counted.
				require.ErrorIs(t, f.ctx.Transmit(pkt(t, z, 100, 1)), iflib.ErrNotRunning)
				switch then {
				case "init":
					initErr := make(chan error, 1)
					go func() { initErr <- f.ctx.Init() }()
					time.Sleep(5 * time.Millisecond)
					close(release)
					<-done
					err := <-initErr
					if err != nil {
						require.ErrorIs(t, err, iflib.ErrBusy)
						require.NoError(t, f.ctx.Init())
					}
					f.mu.Lock()
					f.hold, f.encapHook = false, nil
					f.mu.Unlock()
					require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, 7)))
					testutil.Eventually(t, "a frame after the restart", func() bool { return len(f.sent()) >= 6 })
					require.NoError(t, f.ctx.Stop())
				case "detach":
					require.ErrorIs(t, f.ctx.Detach(), iflib.ErrDeferred)
					select {
					case <-f.ctx.Detached():
						require.FailNow(t, "Detach finished while a sender held a queue")
					case <-time.After(30 * time.Millisecond):
					}
					close(release)
					<-done
					select {
					case <-f.ctx.Detached():
					case <-time.After(10 * time.Second):
						require.FailNow(t, "the deferred Detach never finished")
					}
				}
				if sendErr != nil {
					require.NotErrorIs(t, sendErr, iflib.ErrUseAfterFree)
				}
				// Every packet: sent, or counted once as dropped or discarded.
				handed := uint64(5 + 3 + 1 + 1)
				if then == "init" {
					handed++
				}
				requireTxLedger(t, f.ctx, handed, f.onRing(t))
				require.Equal(t, z.Size(), z.Available(), "every packet came back to the zone")
				if then == "init" {
					f.close()
				} else {
					require.ErrorIs(t, f.ctx.Detach(), iflib.ErrDetached)
					require.NoError(t, f.bus.Close())
				}
				require.Empty(t, f.chk.Reports())
			})
		}
	}
}

// Item 2, the queue selector: a slow driver selector (mpring mode) runs
// before the sender enters a queue, so Stop never waits for it and the
// packet is refused once Stop has begun.
func TestSlowQueueSelectorDoesNotHoldStop(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := newFake(t, fakeOpts{cfg: iflib.Config{StopTimeout: time.Hour, TimerInterval: time.Hour},
		selector: func(*iflib.Packet) int {
			once.Do(func() { close(entered); <-release })
			return 0
		}})
	z := f.zone(iflib.MCLBytes, 16)
	require.NoError(t, f.ctx.Init())
	var sendErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.ctx.Transmit(pkt(t, z, 100, 1)); err != nil {
			sendErr.Store(err)
		}
	}()
	<-entered
	start := time.Now()
	require.NoError(t, f.ctx.Stop())
	require.Less(t, time.Since(start), time.Second, "Stop (StopTimeout 1h) waited for a queue selector")
	close(release)
	<-done
	require.True(t, errors.Is(sendErr.Load().(error), iflib.ErrNotRunning))
	f.close(z)
}

// fenceDev flags an IFDI_TIMER that overlaps IFDI_UPDATE_ADMIN_STATUS or
// IFDI_WATCHDOG_RESET.
type fenceDev struct {
	*fakeNIC
	in, overlaps, timers, admins atomic.Int64
}

func (d *fenceDev) enter() {
	if d.in.Add(1) > 1 {
		d.overlaps.Add(1)
	}
	time.Sleep(50 * time.Microsecond)
	d.in.Add(-1)
}
func (d *fenceDev) Timer(*iflib.Context, int)                   { d.timers.Add(1); d.enter() }
func (d *fenceDev) UpdateAdminStatus(ctx *iflib.Context)        { d.admins.Add(1); d.enter() }
func (d *fenceDev) WatchdogReset(*iflib.Context)                { d.enter() }
func (d *fenceDev) Init(ctx *iflib.Context) error               { d.enter(); return d.fakeNIC.Init(ctx) }
func (d *fenceDev) TxQueueIntrEnable(*iflib.Context, int) error { return nil }
func (d *fenceDev) RxQueueIntrEnable(*iflib.Context, int) error { return nil }

// §3, R2-B4: IFDI_TIMER never runs beside the admin task's IFDI calls or
// Init's (FreeBSD stops the ift_timer callouts around them): the timer at
// 1 ms, an admin pass every 2 ms and a few restarts for 300 ms.
func TestTimerFencedFromAdminTask(t *testing.T) {
	var d *fenceDev
	f := newFake(t, fakeOpts{cfg: iflib.Config{TimerInterval: time.Millisecond},
		wrap: func(f *fakeNIC) iflib.Device { d = &fenceDev{fakeNIC: f}; return d }})
	require.NoError(t, f.ctx.Init())
	end := time.Now().Add(300 * time.Millisecond)
	for i := 0; time.Now().Before(end); i++ {
		f.ctx.AdminIntr()
		time.Sleep(2 * time.Millisecond)
		if i%30 == 29 {
			require.NoError(t, f.ctx.Stop())
			require.NoError(t, f.ctx.Init())
		}
	}
	f.close()
	require.NotZero(t, d.timers.Load())
	require.NotZero(t, d.admins.Load())
	require.Zero(t, d.overlaps.Load(), "IFDI_TIMER overlapped an admin IFDI call (%d timers, %d admin passes)", d.timers.Load(), d.admins.Load())
}

// failDev fails one IFDI method.
type failDev struct {
	*fakeNIC
	method string
}

var errDriver = errors.New("the driver's own error")

func (d *failDev) AttachPre(ctx *iflib.Context, sc *iflib.SoftcCtx) error {
	if d.method == "IFDI_ATTACH_PRE" {
		return errDriver
	}
	return d.fakeNIC.AttachPre(ctx, sc)
}
func (d *failDev) Init(ctx *iflib.Context) error {
	if d.method == "IFDI_INIT" {
		return errDriver
	}
	return d.fakeNIC.Init(ctx)
}
func (d *failDev) AttachPost(*iflib.Context) error {
	if d.method == "IFDI_ATTACH_POST" {
		return errDriver
	}
	return nil
}

// Every error is typed: a driver's IFDI method failing reaches the caller
// as an *IFDIError naming the method, which unwraps to the driver's error.
func TestIFDIErrorsAreTyped(t *testing.T) {
	for _, method := range []string{"IFDI_ATTACH_PRE", "IFDI_ATTACH_POST", "IFDI_INIT"} {
		space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20})
		require.NoError(t, err)
		f, err := tryFake(t, fakeOpts{space: space, wrap: func(f *fakeNIC) iflib.Device { return &failDev{fakeNIC: f, method: method} }})
		if method == "IFDI_INIT" {
			require.NoError(t, err)
			err = f.ctx.Init()
			require.False(t, f.ctx.Running())
			defer f.close()
		} else {
			require.Zero(t, space.Allocated())
		}
		var ie *iflib.IFDIError
		require.ErrorAs(t, err, &ie, method)
		require.Equal(t, method, ie.Method)
		require.ErrorIs(t, err, errDriver)
	}
}
