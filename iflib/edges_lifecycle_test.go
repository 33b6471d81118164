package iflib_test

import (
	"errors"
	"expvar"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Regression tests for the lifecycle edges (issue 11 items 1–10).

// Item 1: two concurrent Detach calls: one detaches, the other gets
// ErrDetached; never a panic.
func TestConcurrentDetach(t *testing.T) {
	for i := 0; i < 20; i++ {
		f := newFake(t, fakeOpts{})
		require.NoError(t, f.ctx.Init())
		var errs [2]error
		var wg sync.WaitGroup
		for k := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[k] = f.ctx.Detach() }()
		}
		wg.Wait()
		nils := 0
		for _, err := range errs {
			if err == nil {
				nils++
			} else {
				require.ErrorIs(t, err, iflib.ErrDetached)
				require.ErrorIs(t, err, iflib.ErrState)
			}
		}
		require.Equal(t, 1, nils, "exactly one Detach succeeds: %v", errs)
		require.NoError(t, f.bus.Close())
	}
}

// Item 2: Init racing Detach never leaves a running context; once Detach
// has begun, Init fails with ErrDetached.
func TestInitRacingDetach(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		f := newFake(t, fakeOpts{})
		var initErr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); initErr = f.ctx.Init() }()
		detErr := f.ctx.Detach()
		wg.Wait()
		require.NoError(t, detErr)
		if initErr != nil {
			require.ErrorIs(t, initErr, iflib.ErrDetached)
		}
		require.False(t, f.ctx.Running(), "run %d: running after Detach", i)
		require.ErrorIs(t, f.ctx.Init(), iflib.ErrDetached)
		require.ErrorIs(t, f.ctx.Stop(), iflib.ErrDetached)
		require.NoError(t, f.bus.Close())
	}
	testutil.Eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// Item 3: Transmit, Counter, the sysctl tree and expvar during Detach are
// race-free; afterwards Transmit fails (freed and counted), the counters
// keep their final values and RxQueueStats answers or errors, never panics.
func TestReadersDuringAndAfterDetach(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 4096)
	require.NoError(t, f.ctx.Init())
	for i := 0; i < 10; i++ {
		require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, byte(i))))
	}
	testutil.Eventually(t, "10 frames sent", func() bool { return len(f.sent()) == 10 })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sendErrs atomic.Uint64
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := z.Get()
				if err != nil {
					continue
				}
				p.SetLen(64)
				if f.ctx.Transmit(p) != nil {
					sendErrs.Add(1)
				}
				_ = f.ctx.Counter(iflib.IfCounterOPackets)
				_ = f.ctx.SysctlLines()
				_ = expvar.Get("iflib").String()
				_, _ = f.ctx.RxQueueStats(0)
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, f.ctx.Detach())
	close(stop)
	wg.Wait()
	opk := f.ctx.Counter(iflib.IfCounterOPackets)
	require.GreaterOrEqual(t, opk, uint64(10), "final opackets after Detach")
	v, ok := f.ctx.SysctlValue("dev.fake.0.iflib.txq0.opackets")
	require.True(t, ok)
	require.Equal(t, opk, v)
	drops := f.ctx.Counter(iflib.IfCounterOQDrops)
	require.ErrorIs(t, f.ctx.Transmit(pkt(t, z, 60, 1)), iflib.ErrNotRunning)
	require.Equal(t, drops+1, f.ctx.Counter(iflib.IfCounterOQDrops), "a transmit after Detach is counted")
	_, err := f.ctx.RxQueueStats(0)
	require.NoError(t, err)
	_, err = f.ctx.RxQueueStats(7)
	require.ErrorIs(t, err, iflib.ErrNoQueue)
	_, err = f.ctx.TxQueueStats(-1)
	require.ErrorIs(t, err, iflib.ErrNoQueue)
	require.Equal(t, z.Size(), z.Available(), "every sender packet came back")
	require.NoError(t, f.bus.Close())
}

// Item 4: an input callback or RxFilter that calls Stop or Detach does
// not deadlock: the call is handed to the admin task (ErrDeferred).
func TestLifecycleFromCallbacks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		detach bool
		filter bool
	}{{"input-stop", false, false}, {"input-detach", true, false}, {"filter-stop", false, true}, {"filter-detach", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fakeNIC
			var got atomic.Value
			call := func() {
				var err error
				if tc.detach {
					err = f.ctx.Detach()
				} else {
					err = f.ctx.Stop()
				}
				got.CompareAndSwap(nil, err)
			}
			o := fakeOpts{}
			if tc.filter {
				o.filter = func(int, []byte) bool { call(); return true }
			} else {
				o.input = func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
					for _, p := range pkts {
						p.Free()
					}
					call()
				}
			}
			f = newFake(t, o)
			require.NoError(t, f.ctx.Init())
			require.True(t, f.rx(make([]byte, 300)))
			testutil.Eventually(t, "the callback to run", func() bool { return got.Load() != nil })
			require.ErrorIs(t, got.Load().(error), iflib.ErrDeferred)
			if tc.detach {
				select {
				case <-f.ctx.Detached():
				case <-time.After(10 * time.Second):
					require.FailNow(t, "deferred Detach never finished")
				}
				require.ErrorIs(t, f.ctx.Detach(), iflib.ErrDetached)
				require.NoError(t, f.bus.Close())
				return
			}
			testutil.Eventually(t, "the deferred Stop", func() bool { return !f.ctx.Running() })
			require.NoError(t, f.ctx.Init(), "the context restarts after a deferred Stop")
			f.close()
		})
	}
}

// Item 5: Stop never hangs. In drbr mode with a device that stopped
// completing TX and senders asleep on a full buf_ring, Stop returns
// promptly, wakes the senders with ENETDOWN, and every packet is
// accounted for; the TX task does not spin meanwhile.
func TestStopDRBRHungDevice(t *testing.T) {
	f := newFake(t, fakeOpts{ntxd: 64, cfg: iflib.Config{TxMode: iflib.TxModeDRBR, DRBRSize: 4,
		TimerInterval: time.Hour}})
	f.hold = true
	z := f.zone(iflib.MCLBytes, 1024)
	require.NoError(t, f.ctx.Init())
	const senders, each = 4, 100
	var ok, failed atomic.Uint64
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if f.ctx.Transmit(pkt(t, z, 200, byte(i))) == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	testutil.Eventually(t, "senders to block on the full ring", func() bool {
		st, _ := f.ctx.TxQueueStats(0)
		return st.DrainNoDesc > 0 && ok.Load()+failed.Load() < senders*each
	})
	runs0, _ := f.ctx.TxQueueStats(0)
	time.Sleep(50 * time.Millisecond)
	runs1, _ := f.ctx.TxQueueStats(0)
	assert.Less(t, runs1.TaskRuns-runs0.TaskRuns, uint64(100), "the TX task spins while the head is refused")
	start := time.Now()
	require.NoError(t, f.ctx.Stop())
	require.Less(t, time.Since(start), 5*time.Second)
	wg.Wait()
	st, _ := f.ctx.TxQueueStats(0)
	require.Equal(t, uint64(senders*each), ok.Load()+failed.Load())
	// Every packet: sent by the device, dropped (oqdrops: woken or purged),
	// or discarded at stop; nothing else.
	require.Equal(t, uint64(senders*each), uint64(len(f.sent()))+st.OQDrops+st.OErrors+st.StopDiscards)
	f.close(z)
}

// Item 5, the watchdog: a queue that holds work the device never completes
// (link up) is detected by iflib_timer and reset through the admin task;
// traffic flows again afterwards. A completion whose interrupt was lost is
// recovered without a reset.
func TestTxWatchdogResetsHungQueue(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: mode, TimerInterval: 2 * time.Millisecond}})
			z := f.zone(iflib.MCLBytes, 256)
			require.NoError(t, f.ctx.Init())
			// Several packets, so that a completion report was requested
			// (a tail without one is never reported and is not "hung").
			f.hangTx(t, z, 5)
			testutil.Eventually(t, "a watchdog reset", func() bool { return f.ctx.WatchdogEvents() >= 1 && f.ctx.Resets() >= 1 })
			st, _ := f.ctx.TxQueueStats(0)
			require.GreaterOrEqual(t, st.WatchdogTimeouts, uint64(1))
			f.setHold(false)
			testutil.Eventually(t, "running again", f.ctx.Running)
			testutil.Eventually(t, "link up again", func() bool { return f.ctx.LinkState() == iflib.LinkStateUp })
			require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, 2)))
			testutil.Eventually(t, "a frame after the reset", func() bool { return len(f.sent()) >= 1 })
			f.close(z)
		})
	}
}

func TestTxLostInterruptRecovered(t *testing.T) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{TimerInterval: 2 * time.Millisecond, TxMode: iflib.TxModeSimple}})
	z := f.zone(iflib.MCLBytes, 256)
	f.noTxIntr = true
	require.NoError(t, f.ctx.Init())
	// Simple mode reclaims only from the sender's call and the task: with
	// no interrupt, the timer's kick must reclaim.
	for i := 0; i < 50; i++ {
		require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, byte(i))))
	}
	testutil.Eventually(t, "reclaim without interrupts", func() bool {
		st, _ := f.ctx.TxQueueStats(0)
		return st.Reclaimed >= 40
	})
	require.Zero(t, f.ctx.WatchdogEvents(), "a completed queue is not hung")
	f.close(z)
}

// Item 6: frames the device wrote to host memory that rxeof had not taken
// when Stop runs are counted, so received + discarded = sent.
func TestStopCountsUntakenRxFrames(t *testing.T) {
	var got atomic.Uint64
	f := newFake(t, fakeOpts{cfg: iflib.Config{TimerInterval: time.Hour}, input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
		for _, p := range pkts {
			got.Add(1)
			p.Free()
		}
	}})
	require.NoError(t, f.ctx.Init())
	require.True(t, f.rx(make([]byte, 500)))
	testutil.Eventually(t, "one frame taken", func() bool { return got.Load() == 1 })
	// Now the device writes frames but raises no interrupt: nobody takes them.
	f.mu.Lock()
	f.noRxIntr = true
	f.mu.Unlock()
	const n = 37
	for i := 0; i < n; i++ {
		require.True(t, f.rx(make([]byte, 500)))
	}
	require.NoError(t, f.ctx.Stop())
	st, _ := f.ctx.RxQueueStats(0)
	require.Equal(t, uint64(n+1), got.Load()+st.StopDiscards, "received + discarded = sent")
	require.Equal(t, uint64(n), st.StopDiscards)
	f.close()
}

// Item 8: an RX allocation failure inside Register (a negative or an
// impossible zone size) is a typed error, cleanup calls no TX method of a
// driver that has no queues yet, and nothing stays loaded.
func TestRegisterCleanupOnRxFailure(t *testing.T) {
	for _, size := range []int{-1, 1 << 40} {
		space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 64 << 20, ContigSize: 4 << 20})
		require.NoError(t, err)
		_, err = tryFake(t, fakeOpts{space: space, cfg: iflib.Config{RxZoneSize: size}})
		require.Error(t, err)
		if size < 0 {
			require.ErrorIs(t, err, iflib.ErrConfig)
		}
		require.Zero(t, space.Allocated(), "zone size %d: Register's cleanup left ring memory allocated", size)
	}
}

// Item 9: Register/Detach repeated on one address space returns every
// byte: the space never runs out.
func TestRegisterDetachLoopReturnsMemory(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 8 << 20, ContigSize: 1 << 20})
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		f := newFake(t, fakeOpts{space: space, cfg: iflib.Config{RxZoneSize: 1024}})
		require.NoError(t, f.ctx.Init())
		f.close()
		require.Zero(t, space.Allocated(), "attach %d left memory allocated", i)
	}
}

// Item 10: Detach with packets still held by the stack reports them.
func TestDetachReportsPacketsHeldByStack(t *testing.T) {
	var held []*iflib.Packet
	var mu sync.Mutex
	f := newFake(t, fakeOpts{input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
		mu.Lock()
		held = append(held, pkts...)
		mu.Unlock()
	}})
	require.NoError(t, f.ctx.Init())
	for i := 0; i < 5; i++ {
		require.True(t, f.rx(make([]byte, 1000)))
	}
	testutil.Eventually(t, "5 packets up", func() bool { mu.Lock(); defer mu.Unlock(); return len(held) == 5 })
	err := f.ctx.Detach()
	require.ErrorIs(t, err, iflib.ErrLeak)
	var le *iflib.LeakError
	require.True(t, errors.As(err, &le))
	require.Len(t, le.Zones, 1)
	require.Equal(t, 5, le.Zones[0].Outstanding)
	require.NotZero(t, f.space.Allocated(), "the zone keeps its memory while the stack holds packets")
	for _, p := range held {
		p.Free() // the packets stay valid: their zone kept its memory
	}
	// Issue 20 (the fuzzer's first finding): once the last packet is back,
	// the orphaned zone returns its memory to the space.
	require.Zero(t, f.space.Allocated(), "the detached zone kept its memory after every packet came back")
	require.NoError(t, f.bus.Close())
}
