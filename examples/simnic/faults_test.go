package simnic_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

var txModes = []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR}

// faultRig is a rig with a seeded schedule of the given faults only (nil
// profile: no schedule), a fast iflib timer, and a recording wire.
func faultRig(t *testing.T, nc simnic.Config, cfg iflib.Config, prof map[simnic.FaultKind]uint64, input func(*iflib.Context, int, []*iflib.Packet)) (*simnictest.Rig, *simnictest.Recorder) {
	t.Helper()
	if prof != nil {
		p := simnic.Profile{Every: prof, LinkDownFor: 3}
		nc.Schedule = simnic.NewSchedule(simnictest.Seed(t), p)
	}
	if cfg.TimerInterval == 0 {
		cfg.TimerInterval = 5 * time.Millisecond
	}
	if cfg.TxWatchdogPeriods == 0 {
		cfg.TxWatchdogPeriods = 3
	}
	rec := &simnictest.Recorder{}
	r := simnictest.New(t, simnictest.Options{NIC: nc, Config: cfg, Peer: rec, Input: input, TxZone: 2048})
	t.Cleanup(func() {
		if t.Failed() && nc.Schedule != nil {
			t.Logf("faults fired: %v", nc.Schedule.Fired())
		}
	})
	return r, rec
}

// runTx sends flows×perFlow frames, waits until everything accepted is
// accounted for (on the wire or dropped by the device), stops the context
// and checks the books.
func runTx(t *testing.T, r *simnictest.Rig, rec *simnictest.Recorder, flows, perFlow int, size flowSize, nseg int) txTotals {
	t.Helper()
	l := newTxLedger(r, rec, flows, size, nseg)
	l.send(t, 0, perFlow, nil)
	testutil.Settle(t, "TX to drain", l.settled, l.progress, l.describe)
	require.NoError(t, r.Ctx.Stop())
	return l.check(t)
}

// Link loss and recovery through the admin path: the link interrupt makes
// iflib's admin task call IFDI_UPDATE_ADMIN_STATUS, which reports the
// link; while it is down Transmit fails with ErrLinkDown, the device
// consumes no descriptor and drops at the wire (counted); afterwards every
// frame accepted is on the wire, in order.
func TestLinkLossAndRecovery(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := faultRig(t, simnic.Config{NTxd: 256, NRxd: 256}, iflib.Config{TxMode: mode}, nil, nil)
			l := newTxLedger(r, rec, 2, cycleSizes(60, 200, 1514), 3)
			l.send(t, 0, 50, nil)
			testutil.Settle(t, "the first frames", l.settled, l.progress, l.describe)

			r.NIC.SetLink(false)
			testutil.Eventually(t, "iflib to see the link down", func() bool { return r.Ctx.LinkState() == iflib.LinkStateDown })
			// The timer's poll may see it first; the interrupt comes too.
			testutil.Eventually(t, "the link interrupt", func() bool { return r.NIC.Stats().LinkIntrs >= 1 })
			err := l.transmit(t, 0, 50, nil)
			require.ErrorIs(t, err, iflib.ErrLinkDown, "Transmit with the link down: %v, want ErrLinkDown", err)
			require.False(t, r.NIC.Receive(l.spec(0, 50).Build(nil)), "the wire accepted a frame with the link down")
			processed := r.NIC.Stats().TxProcessed
			time.Sleep(20 * time.Millisecond)
			require.Equal(t, processed, r.NIC.Stats().TxProcessed, "the device processed TX descriptors with the link down")

			r.NIC.SetLink(true)
			testutil.Eventually(t, "iflib to see the link up", func() bool { return r.Ctx.LinkState() == iflib.LinkStateUp })
			l.send(t, 50, 100, nil)
			testutil.Settle(t, "the frames after recovery", l.settled, l.progress, l.describe)
			st := r.NIC.Stats()
			require.False(t, st.RxLinkDown != 1 || st.LinkChanges != 2 || st.LinkIntrs < 2, "device stats %+v", st)
			require.NoError(t, r.Ctx.Stop())
			l.check(t)
		})
	}
}

// Scheduled link flaps under traffic: the link drops after a drawn
// number of link-status reads and returns a few reads later (iflib's
// timer polls through IFDI_TIMER → AdminIntr), with TX DMA stopped
// meanwhile. Senders retry on ErrLinkDown; every frame is accounted for.
func TestLinkFlapsScheduled(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := faultRig(t, simnic.Config{NTxd: 256, NRxd: 256, LineRate: 2e9}, iflib.Config{TxMode: mode, TimerInterval: 2 * time.Millisecond},
				map[simnic.FaultKind]uint64{simnic.FaultLinkDown: 6}, nil)
			stop := make(chan struct{})
			done := make(chan struct{})
			l := newTxLedger(r, rec, 3, cycleSizes(60, 128, 1000), 2)
			go func() { defer close(done); l.send(t, 0, 400, stop) }()
			testutil.Eventually(t, "three link flaps", func() bool { return r.NIC.Stats().LinkChanges >= 6 })
			close(stop)
			<-done
			testutil.Settle(t, "TX to drain", func() bool { return r.NIC.LinkUp() && l.settled() }, l.progress)
			require.NoError(t, r.Ctx.Stop())
			tt := l.check(t)
			require.NotZero(t, tt.arrived, "nothing sent: %v", tt)
		})
	}
}

// Credits as real drivers see them, with late and batched write-backs:
// em's DD scheme (exact, and the historical one-short), and ixl's head
// write-back, whose head can stop inside a packet, so that only iflib's
// reclaim lag of nsegments keeps the later buffers mapped. Multi-buffer
// packets on a small, full ring; the busdma checker (on in every rig)
// reports any buffer reclaimed before the device read it.
func TestTxCompletionModes(t *testing.T) {
	for _, tc := range []simnic.TxCompletion{simnic.TxCompletionDD, simnic.TxCompletionDDUnderByOne, simnic.TxCompletionHeadWB} {
		for _, wb := range []struct {
			name   string
			thresh int
			delay  time.Duration
		}{{"immediate", 0, 0}, {"batched", 12, 100 * time.Microsecond}, {"late", 0, 300 * time.Microsecond}} {
			for _, mode := range txModes {
				name := map[simnic.TxCompletion]string{simnic.TxCompletionDD: "dd", simnic.TxCompletionDDUnderByOne: "dd-under-by-one", simnic.TxCompletionHeadWB: "head-wb"}[tc]
				t.Run(name+"/"+wb.name+"/"+mode.String(), func(t *testing.T) {
					nc := simnic.Config{NTxd: 64, NRxd: 64, TxSegs: 5, TxCompletion: tc, WBThresh: wb.thresh, WBDelay: wb.delay, LineRate: 3e9}
					r, rec := faultRig(t, nc, iflib.Config{TxMode: mode}, nil, nil)
					tt := runTx(t, r, rec, 2, 80, cycleSizes(60, 1514, 300, 2500, 127, 4000), 5)
					require.False(t, tt.resets == 0 && tt.arrived != tt.accepted, "frames lost without a reset: %v", tt)
					st := r.NIC.Stats()
					require.False(t, wb.thresh > 0 && st.TxWriteBacks >= st.TxProcessed, "%d write-backs for %d packets: not batched", st.TxWriteBacks, st.TxProcessed)
				})
			}
		}
	}
}

// Stop must not hang when the device stops completing TX (link lost with
// drbr senders blocked on a full ring): it is bounded by StopTimeout and
// everything is accounted for.
func TestStopWhileLinkDownIsBounded(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := faultRig(t, simnic.Config{NTxd: 64, NRxd: 64, LineRate: 1e9},
				iflib.Config{TxMode: mode, DRBRSize: 16, StopTimeout: 200 * time.Millisecond}, nil, nil)
			l := newTxLedger(r, rec, 4, cycleSizes(1514), 1)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { defer close(done); l.send(t, 0, 100000, stop) }()
			testutil.Eventually(t, "traffic", func() bool { return rec.Len() > 50 })
			r.NIC.SetLink(false)
			time.Sleep(10 * time.Millisecond)
			start := time.Now()
			require.NoError(t, r.Ctx.Stop())
			el := time.Since(start)
			require.LessOrEqual(t, el, 3*time.Second, "Stop took %v with the link down", el)
			close(stop)
			<-done
			l.check(t)
		})
	}
}

// A TX queue that hangs (the device stops consuming it) is detected by
// iflib's watchdog (no completion across TxWatchdogPeriods timer periods,
// link up), which calls IFDI_WATCHDOG_RESET and resets the interface; the
// reset reprograms the queue and traffic resumes. A lost DD write-back
// stalls the em walk the same way and is recovered the same way.
func TestTxHangAndLostWriteBackRecover(t *testing.T) {
	for _, kind := range []simnic.FaultKind{simnic.FaultTxHang, simnic.FaultLostWriteBack} {
		for _, mode := range txModes {
			t.Run(kind.String()+"/"+mode.String(), func(t *testing.T) {
				r, rec := faultRig(t, simnic.Config{NTxd: 128, NRxd: 64}, iflib.Config{TxMode: mode, NoTxBatch: true},
					map[simnic.FaultKind]uint64{kind: 400}, nil)
				l := newTxLedger(r, rec, 2, cycleSizes(60, 600, 1514), 2)
				l.send(t, 0, 400, nil)
				next := settleRetransmitting(t, "TX to drain", l, 400, r.Ctx.Config().TimerInterval)
				st := r.NIC.Stats()
				if faults := st.TxHangs + st.LostWriteBacks; faults == 0 {
					t.Logf("no %s fired in %d descriptors (seed)", kind, st.TxProcessed)
				} else {
					msg := fmt.Sprintf("%d faults, %d watchdog events, %d IFDI_WATCHDOG_RESET, %d resets", faults, r.Ctx.WatchdogEvents(), r.Driver.Stats().WatchdogResets, r.Ctx.Resets())
					require.NotZero(t, r.Ctx.WatchdogEvents(), msg)
					require.NotZero(t, r.Driver.Stats().WatchdogResets, msg)
					require.NotZero(t, r.Ctx.Resets(), msg)
				}
				// Traffic resumes: a second burst arrives whole unless the
				// schedule fires again meanwhile.
				fired, arrived, accepted := len(r.NIC.Schedule().Fired()), rec.Len(), l.nacc
				l.send(t, int(next), int(next)+20, nil)
				settleRetransmitting(t, "the second burst", l, next+20, r.Ctx.Config().TimerInterval)
				require.False(t, len(r.NIC.Schedule().Fired()) == fired && uint64(rec.Len()-arrived) != l.nacc-accepted, "after recovery %d of %d frames arrived: %s", rec.Len()-arrived, l.nacc-accepted, l.describe())
				require.NoError(t, r.Ctx.Stop())
				l.check(t)
			})
		}
	}
}

// settleRetransmitting is settle for TX while the test behaves as a stack
// that retransmits: whenever TX has made no progress for two timer periods
// and is not settled, it offers one more frame of each flow (sequence next,
// next+1, …, so each flow stays in order on the wire). FreeBSD's watchdog
// arms only when a frozen queue is offered new work (ift_wdog_armed grows
// only while its outstanding count grows): a queue that hangs with nothing
// more to send looks like a quiet one whose device holds back completions,
// and is not reset until traffic comes. It returns the next sequence
// number.
func settleRetransmitting(t *testing.T, what string, l *txLedger, next uint32, period time.Duration) uint32 {
	t.Helper()
	stop, done := make(chan struct{}), make(chan uint32)
	go func() {
		seq, last, since := next, l.progress(), time.Now()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- seq
				return
			case <-tick.C:
			}
			if p := l.progress(); p != last {
				last, since = p, time.Now()
				continue
			}
			if time.Since(since) >= 2*period && !l.settled() {
				l.send(t, int(seq), int(seq)+1, stop)
				seq++
				since = time.Now()
			}
		}
	}()
	testutil.Settle(t, what, l.settled, l.progress, l.describe)
	close(stop)
	seq := <-done
	// The retransmitter may have offered a frame between Settle's last
	// look and the stop (it checks settled, then sends): wait for that
	// one too, so that the caller's next snapshot of sent and arrived
	// frames sees nothing of this round still in flight.
	testutil.Settle(t, what+" (the last retransmission)", l.settled, l.progress, l.describe)
	return seq
}

// Lost and spurious interrupts: a lost one leaves its vector masked with
// the work undone until iflib's timer schedules the task; a spurious one
// runs a task for nothing. Traffic in both directions completes.
func TestInterruptFaultsRecover(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			rl := newRxLedger(3, cycleSizes(64, 300, 1514, 3000))
			r, rec := faultRig(t, simnic.Config{NTxd: 128, NRxd: 128, FIFO: 128}, iflib.Config{TxMode: mode},
				map[simnic.FaultKind]uint64{simnic.FaultLostIntr: 2, simnic.FaultSpuriousIntr: 2}, rl.input)
			gen := rl.generator(1500, true)
			require.NoError(t, r.Env.Start(gen, r.NIC))
			l := newTxLedger(r, rec, 2, cycleSizes(60, 1000), 1)
			l.send(t, 0, 400, nil)
			require.NoError(t, gen.Wait())
			testutil.Settle(t, "both directions to drain", func() bool { return rl.settled(r, gen) && l.settled() },
				func() uint64 { return rl.progress(r) + l.progress() })
			require.NoError(t, r.Ctx.Stop())
			l.check(t)
			rt := rl.check(t, r, gen)
			st := r.NIC.Stats()
			require.NotZero(t, st.LostIntrs+st.SpuriousIntrs, "no interrupt fault fired: %+v\n%s", st, l.describe())
			require.False(t, r.Ctx.Resets() == 0 && rt.delivered != 1500, "frames lost without a reset: %v", rt)
		})
	}
}

// RX frame errors flagged in the EOP descriptor, in both driver styles:
// em's EBADMSG makes iflib count the frame and reset; the Linux style
// discards it without a reset. Every frame the wire took is delivered,
// counted as an error, or counted as left on the ring by a reset.
func TestRxFrameErrors(t *testing.T) {
	for _, style := range []simnic.RxErrorStyle{simnic.RxErrorsReset, simnic.RxErrorsDiscard} {
		name := map[simnic.RxErrorStyle]string{simnic.RxErrorsReset: "em-ebadmsg", simnic.RxErrorsDiscard: "discard"}[style]
		t.Run(name, func(t *testing.T) {
			rl := newRxLedger(4, cycleSizes(60, 129, 1514, 5000))
			r, _ := faultRig(t, simnic.Config{NTxd: 64, NRxd: 128, FIFO: 128, RxErrors: style}, iflib.Config{},
				map[simnic.FaultKind]uint64{simnic.FaultRxCRC: 80, simnic.FaultRxSymbol: 150, simnic.FaultRxLength: 150, simnic.FaultRxDMA: 150}, rl.input)
			gen := rl.generator(3000, true)
			require.NoError(t, r.Env.Start(gen, r.NIC))
			require.NoError(t, gen.Wait())
			testutil.Settle(t, "RX to drain", func() bool { return rl.settled(r, gen) }, func() uint64 { return rl.progress(r) }, func() string {
				st, _ := r.Ctx.RxQueueStats(0)
				return fmt.Sprintf("gen %d/%d dev %+v\nrxq %+v", gen.Sent(), gen.Refused(), r.NIC.Stats(), st)
			})
			require.NoError(t, r.Ctx.Stop())
			rt := rl.check(t, r, gen)
			bad := rt.dev.RxErrors + rt.dev.RxDMAFaults
			require.NotZero(t, bad, "no frame error fired: %v", rt)
			switch style {
			case simnic.RxErrorsReset:
				require.NotZero(t, r.Ctx.Resets(), "%d bad frames, %d resets: %v", bad, r.Ctx.Resets(), rt)
				require.NotZero(t, rt.ierrors, "%d bad frames, %d resets: %v", bad, r.Ctx.Resets(), rt)
			case simnic.RxErrorsDiscard:
				require.Zero(t, r.Ctx.Resets(), "%d bad frames, %d resets: %v", bad, r.Ctx.Resets(), rt)
				require.Equal(t, bad, rt.discards, "%d bad frames, %d resets: %v", bad, r.Ctx.Resets(), rt)
				require.Equal(t, bad, rt.ierrors, "%d bad frames, %d resets: %v", bad, r.Ctx.Resets(), rt)
			}
		})
	}
}

// Slow DMA: every device access takes longer; traffic is slower but
// correct in both directions.
func TestSlowDMA(t *testing.T) {
	rl := newRxLedger(2, cycleSizes(64, 1514))
	// A slow device completes late: give the TX watchdog (which would
	// reset a queue that makes no progress) the time a real one has.
	r, rec := faultRig(t, simnic.Config{NTxd: 128, NRxd: 128, DMALatency: 20 * time.Microsecond},
		iflib.Config{TimerInterval: 20 * time.Millisecond, TxWatchdogPeriods: 10}, nil, rl.input)
	gen := rl.generator(300, true)
	require.NoError(t, r.Env.Start(gen, r.NIC))
	l := newTxLedger(r, rec, 2, cycleSizes(60, 1514), 2)
	l.send(t, 0, 150, nil)
	require.NoError(t, gen.Wait())
	testutil.Settle(t, "both directions", func() bool { return rl.settled(r, gen) && l.settled() }, func() uint64 { return rl.progress(r) + l.progress() })
	require.NoError(t, r.Ctx.Stop())
	tt, rt := l.check(t), rl.check(t, r, gen)
	require.False(t, r.Ctx.Resets() == 0 && (tt.arrived != 300 || rt.delivered != 300), "no reset, yet frames lost: %v; %v", tt, rt)
}

// A frame the driver fails on (em's EBADMSG) is one error. iflib leaves
// it on the ring until the admin task resets, and counts it again in
// ierrors each time rxeof meets it before the reset (its timer kicks the
// RX task every period): ierrors then exceeds the bad frames.
func TestRxErrorCountedOnce(t *testing.T) {
	rl := newRxLedger(1, cycleSizes(200))
	r, _ := faultRig(t, simnic.Config{NTxd: 64, NRxd: 128, FIFO: 128}, iflib.Config{TimerInterval: time.Millisecond},
		map[simnic.FaultKind]uint64{simnic.FaultRxCRC: 40}, rl.input)
	gen := rl.generator(2000, true)
	require.NoError(t, r.Env.Start(gen, r.NIC))
	testutil.Settle(t, "RX to drain", func() bool { return rl.settled(r, gen) }, func() uint64 { return rl.progress(r) })
	require.NoError(t, r.Ctx.Stop())
	rt := rl.check(t, r, gen)
	require.Zero(t, rt.recounted, "%d bad frames counted twice: %v", rt.recounted, rt)
}

// An idle TX queue whose last packets asked for no completion report
// (iflib batches report requests, txq_max_rs_deferred) holds descriptors
// no DD will ever cover. iflib's watchdog counts them as work the device
// does not complete, and resets an idle, healthy interface; the reset
// then counts packets that were sent as stop_discards.
func TestIdleQueueNoWatchdogReset(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := faultRig(t, simnic.Config{NTxd: 256, NRxd: 64}, iflib.Config{TxMode: mode}, nil, nil)
			l := newTxLedger(r, rec, 1, cycleSizes(100), 1)
			l.send(t, 0, 7, nil)
			time.Sleep(100 * time.Millisecond) // 20 timer periods
			require.Zero(t, r.Ctx.WatchdogEvents(), "%d watchdog resets of an idle queue: %s", r.Ctx.WatchdogEvents(), l.describe())
		})
	}
}
