package iflib

import (
	"math"
	"sync/atomic"
	"time"
)

// The admin task (_task_fn_admin) and the timer (iflib_timer).
//
//	iflib_timer (every TimerInterval, per TX queue)
//	   ├─ IFDI_TIMER(qid) (the driver may report pause frames here)
//	   ├─ watchdog: frozen = work the device has not reported done beyond
//	   │   the unreported tail, no progress, no doorbell pending, no pause
//	   │   frames, link up; armed only while a frozen queue takes on new
//	   │   work; armed TxWatchdogPeriods periods ─▶ credits probe:
//	   │      completions pending ─▶ lost interrupt: schedule the task
//	   │      none ─▶ hung: IFC_DO_WATCHDOG|IFC_DO_RESET ─▶ admin
//	   ├─ idle: no new descriptors for a period, nothing queued ─▶ the task's
//	   │   next reclaim is forced and flushes the queue's zone caches
//	   ├─ laggards: schedule every task (a deferred doorbell, a lost interrupt)
//	   └─ isc_pause_frames = 0
//	admin task (woken by the timer, RX errors, AdminIntr, deferred Stop/Detach)
//	   ├─ (the timer is fenced off: IFDI_TIMER never runs beside these)
//	   ├─ watchdog: count, IFDI_WATCHDOG_RESET
//	   ├─ IFDI_UPDATE_ADMIN_STATUS (the driver polls its link)
//	   ├─ reset: stop + init (iflib_if_init_locked)
//	   ├─ link up: restart stalled rings (iflib_txq_check_drain, budget 8)
//	   └─ IFDI_LINK_INTR_ENABLE (running)
//
// FreeBSD's upstream watchdog is inert (no code sets IFLIB_QUEUE_WORKING,
// so a queue is never marked hung); this is the design of the newer
// per-period frozen-queue check (tx_watchdog_periods, ift_wdog_armed),
// which also tells a lost interrupt from a hung queue by asking the driver.

// Admin requests (IFC_DO_RESET, IFC_DO_WATCHDOG and the deferred
// lifecycle calls).
const (
	adminReset    = 1 << iota // IFC_DO_RESET
	adminWatchdog             // IFC_DO_WATCHDOG
	adminStop                 // a Stop from the context's own goroutine
	adminDetach               // a Detach from the context's own goroutine
	adminStatus               // iflib_admin_intr_deferred: just the status update
	adminInit                 // a control call's init, once the TX queue teardowns are done
)

type adminTask struct {
	flags atomic.Uint32
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}

	resets         atomic.Uint64 // resets done
	watchdogEvents atomic.Uint64 // ifc_watchdog_events
}

// request sets flags and schedules the admin task
// (iflib_admin_intr_deferred).
func (a *adminTask) request(flags uint32) {
	a.flags.Or(flags)
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (c *Context) startAdmin() {
	a := &c.admin
	a.wake = make(chan struct{}, 1)
	a.quit = make(chan struct{})
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		defer c.own.enter()()
		for {
			select {
			case <-a.quit:
				return
			case <-a.wake:
			}
			if c.runAdmin(a.flags.Swap(0)) {
				return
			}
		}
	}()
}

// runAdmin is one pass of _task_fn_admin. It reports true when it carried
// out a deferred Detach (the admin task then ends).
func (c *Context) runAdmin(flags uint32) bool {
	c.lock()
	defer c.unlock()
	if c.st() >= stateDetaching {
		return false
	}
	if flags&adminDetach != 0 {
		c.state.Store(int32(stateDetaching))
		c.stopLocked()
		// A transmit that still holds a TX queue frees it as it leaves; wait
		// for that without the lock (every other lifecycle call returns
		// ErrDetached meanwhile).
		c.unlock()
		c.endLinkEvents()
		c.teardowns.wait(0)
		c.lock()
		_ = c.detachLocked()
		return true
	}
	if flags&adminInit != 0 {
		// A control call stopped the interface while a transmit held a TX
		// queue (restartLocked): wait for it without the lock, then init,
		// unless a Stop or Detach came first (they clear pendingInit).
		c.unlock()
		c.teardowns.wait(0)
		c.lock()
		if c.pendingInit.Swap(false) && c.st() == stateAttached {
			_ = c.initLocked()
		}
	}
	// _task_fn_admin stops the ift_timer callouts around its IFDI calls.
	c.timerMu.Lock()
	if flags&adminWatchdog != 0 {
		c.admin.watchdogEvents.Add(1)
		if w, ok := c.dev.(WatchdogResetter); ok {
			w.WatchdogReset(c)
		}
	}
	if u, ok := c.dev.(AdminStatusUpdater); ok {
		u.UpdateAdminStatus(c)
	}
	c.timerMu.Unlock()
	switch {
	case flags&adminStop != 0:
		c.stopLocked()
	case flags&adminReset != 0 && c.st() == stateRunning:
		// iflib_if_init_locked: stop + init.
		c.stopLocked()
		if c.initLocked() == nil {
			c.admin.resets.Add(1)
		}
	}
	if c.st() == stateRunning && c.LinkState() == LinkStateUp {
		for _, q := range c.txqs {
			q.path.restart()
			q.kick()
		}
	}
	if le, ok := c.dev.(LinkIntrEnabler); ok && c.st() == stateRunning {
		// _task_fn_admin ends with IFDI_LINK_INTR_ENABLE: the link
		// interrupt that scheduled the pass is armed again.
		le.LinkIntrEnable(c)
	}
	return false
}

// stopAdmin ends the admin task and waits for it.
// Preconditions: c.mu not held; state is detaching (so a pass that is
// waiting for the lock does nothing).
func (c *Context) stopAdmin() {
	close(c.admin.quit)
	<-c.admin.done
}

// TxIntr is iflib_fast_intr for a TX vector: the driver's interrupt
// handler calls it; iflib schedules the queue's task, which re-enables the
// interrupt when done. Safe at any time.
func (c *Context) TxIntr(qid int) {
	if qid >= 0 && qid < len(c.txqs) {
		c.txqs[qid].kick()
	}
}

// RxIntr is iflib_fast_intr for an RX vector.
func (c *Context) RxIntr(qid int) {
	if qid >= 0 && qid < len(c.rxqs) {
		c.rxqs[qid].kick()
	}
}

// AdminIntr is iflib_admin_intr_deferred: a driver's link (admin)
// interrupt handler, or its IFDI_TIMER, calls it to have the admin task
// run IFDI_UPDATE_ADMIN_STATUS. Safe at any time.
func (c *Context) AdminIntr() { c.admin.request(adminStatus) }

// requestReset is IFC_DO_RESET + iflib_admin_intr_deferred from an RX
// queue that met a descriptor it could not trust.
func (c *Context) requestReset(q *rxq) {
	q.st.add(rxResets, 1)
	c.admin.request(adminReset)
}

// Resets returns how many resets (stop + init) the admin task has done.
func (c *Context) Resets() uint64 { return c.admin.resets.Load() }

// WatchdogEvents returns ifc_watchdog_events: hung-queue resets.
func (c *Context) WatchdogEvents() uint64 { return c.admin.watchdogEvents.Load() }

// ReportPauseFrames is isc_pause_frames: the driver reports, from
// IFDI_TIMER (its Timer method), that the link partner paused the
// transmitter (802.3x PAUSE frames received) since the last timer period.
// A paused queue completes nothing through no fault of its own: the TX
// watchdog does not count the period as frozen. iflib clears the report
// after each queue's period, as iflib_timer clears isc_pause_frames.
func (c *Context) ReportPauseFrames(n uint64) {
	if n > 0 {
		c.pauseFrames.Add(n)
	}
}

// timer is iflib_timer for every TX queue, plus a kick of every RX queue
// (a lost RX interrupt is recovered within one period). Each period runs
// under timerMu, which the admin task takes around its IFDI calls.
func (c *Context) timer() {
	t := time.NewTicker(c.cfg.TimerInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case <-t.C:
		}
		if c.timerPeriod() {
			return
		}
	}
}

// timerPeriod is one period of iflib_timer over every queue. It reports
// true when the watchdog asked for a reset (the timer then ends with the
// tasks).
func (c *Context) timerPeriod() bool {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	tm, _ := c.dev.(TimerHandler)
	for _, q := range c.txqs {
		if tm != nil {
			tm.Timer(c, q.id)
		}
		hung := c.watchdog(q)
		c.pauseFrames.Store(0)
		if hung {
			return true
		}
		q.idleCheck()
		q.kick() // laggards: a deferred doorbell, a lost interrupt; the idle reclaim
	}
	for _, q := range c.rxqs {
		q.kick()
	}
	return false
}

// watchdogState is the timer's view of one TX queue between periods
// (ift_processed_prev, ift_outstanding_prev, ift_wdog_armed).
type watchdogState struct {
	processed   uint64 // ift_processed at the last period
	outstanding int64  // descriptors not reported done at the last period
	noDesc      uint64 // no_desc_avail + txq_drain_nodesc at the last period
	armed       int    // ift_wdog_armed: consecutive frozen periods since it armed
	pidx        int64  // ift_pidx at the last period (idleCheck)
	reclaimed   uint64 // packets reclaimed when idleCheck last asked for an idle reclaim
}

// resetWatchdog forgets the watchdog's history (iflib_stop's resets of
// ift_processed_prev, ift_outstanding_prev and ift_wdog_armed).
// Preconditions: the timer is not running.
func (q *txq) resetWatchdog() {
	q.idleReclaim.Store(false)
	q.wd = watchdogState{noDesc: q.st.load(txNoDescAvail) + q.st.load(txDrainNoDesc),
		pidx: q.pidxA.Load(), reclaimed: q.st.load(txReclaimed)}
}

// idleCheck is the timer's half of the idle reclaim. Reclaim keeps the
// last TxNSegments descriptors' packets on the ring (DESC_RECLAIMABLE's
// lag) and the queue's zone caches keep what it freed; under traffic the
// next pass takes them, but a queue that went quiet would keep them for
// ever, and a small zone starves its senders. A queue whose producer index
// did not move for a whole period and whose software ring is empty is
// marked (idleReclaim) while it still has descriptors in use or has
// reclaimed packets since it was last marked (they may sit in its caches):
// the consumer's next reclaim (completedReclaim) is forced and flushes the
// caches. The timer never touches the consumer's state itself: the kick
// that follows runs the queue's task, which becomes the consumer as its
// mode does (the mp_ring sentinel, the queue lock, the DRBR's lock).
// Preconditions: the timer goroutine (q.wd is its own).
func (q *txq) idleCheck() {
	w := &q.wd
	pidx, reclaimed := q.pidxA.Load(), q.st.load(txReclaimed)
	if pidx == w.pidx && (q.inUseA.Load() > 0 || reclaimed != w.reclaimed) && q.path.backlog() == 0 {
		w.reclaimed = reclaimed
		q.idleReclaim.Store(true)
	}
	w.pidx = pidx
}

// watchdog is the newer iflib_timer's hung-queue check for q, read from
// the consumer's published mirrors. A queue is frozen in a period when the
// device holds descriptors it has not reported done beyond the tail whose
// report is still deferred (outstanding > rs_pending), nothing was
// reported since the last period, no doorbell is pending, the driver
// reported no pause frames and the link is up. Being frozen is not a
// fault: a device may hold back the completion of a quiet queue's last
// descriptors indefinitely (8254x write-back deferral, em's count that
// stays one descriptor short), so the check arms only when a frozen queue
// is also offered new work, and acts only after TxWatchdogPeriods armed
// periods. It reports true when it asked for a reset.
//
// Offered work is the fork's "outstanding grew" (the queue took on new
// descriptors), and also (goiflib) work the queue could not take on: a
// non-empty software ring (mp_ring or buf_ring), a packet refused for lack
// of descriptors during the period, or a descriptor ring too full to take
// a worst-case packet. Without these a queue that hangs while its ring
// fills up in the same period as its last progress is never armed, and
// never reset, however much work waits on it (the fork arms it only when
// the stack later offers more).
func (c *Context) watchdog(q *txq) bool {
	w := &q.wd
	processed := q.processedA.Load()
	outstanding := q.inUseA.Load() - int64(processed-q.cleanedA.Load())
	noDesc := q.st.load(txNoDescAvail) + q.st.load(txDrainNoDesc)
	frozen := outstanding > q.rsPendingA.Load() && processed == w.processed &&
		q.dbPendingA.Load() == 0 && c.pauseFrames.Load() == 0 &&
		c.running.Load() && c.LinkState() == LinkStateUp
	full := int64(q.size-q.pad)-q.inUseA.Load() < int64(q.maxTxDesc())
	offered := outstanding > w.outstanding || noDesc != w.noDesc || full || q.path.backlog() > 0
	switch {
	case !frozen:
		w.armed = 0
	case (w.armed > 0 || offered) && w.armed < math.MaxUint16:
		w.armed++
	}
	w.outstanding, w.processed, w.noDesc = outstanding, processed, noDesc
	if periods := c.cfg.TxWatchdogPeriods; periods <= 0 || w.armed < periods {
		return false
	}
	if c.txrx.TxdCreditsUpdate(q.id, false) != 0 {
		// Completions are waiting: the interrupt was lost, not the queue.
		q.st.add(txMissedIntrs, 1)
		q.kick()
		return false
	}
	q.st.add(txWatchdogs, 1)
	c.admin.request(adminWatchdog | adminReset)
	return true
}
