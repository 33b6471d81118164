package iflib

import (
	"sync/atomic"
	"time"
)

// The admin task (_task_fn_admin) and the timer (iflib_timer).
//
//	iflib_timer (every TimerInterval, per TX queue)
//	   ├─ IFDI_TIMER(qid)
//	   ├─ watchdog: descriptors handed to the device, no completion for
//	   │   TxWatchdogPeriods periods, link up ─▶ credits probe:
//	   │      completions pending ─▶ lost interrupt: schedule the task
//	   │      none ─▶ hung: IFC_DO_WATCHDOG|IFC_DO_RESET ─▶ admin
//	   └─ laggards: schedule every task (a deferred doorbell, a lost interrupt)
//	admin task (woken by the timer, RX errors, AdminIntr, deferred Stop/Detach)
//	   ├─ watchdog: count, IFDI_WATCHDOG_RESET
//	   ├─ IFDI_UPDATE_ADMIN_STATUS (the driver polls its link)
//	   ├─ reset: stop + init (iflib_if_init_locked)
//	   └─ link up: restart stalled rings (iflib_txq_check_drain, budget 8)
//
// FreeBSD's upstream watchdog is inert (no code sets IFLIB_QUEUE_WORKING,
// so a queue is never marked hung); this is the design of the newer
// per-period frozen-queue check (tx_watchdog_periods), which also tells a
// lost interrupt from a hung queue by asking the driver.

// Admin requests (IFC_DO_RESET, IFC_DO_WATCHDOG and the deferred
// lifecycle calls).
const (
	adminReset    = 1 << iota // IFC_DO_RESET
	adminWatchdog             // IFC_DO_WATCHDOG
	adminStop                 // a Stop from the context's own goroutine
	adminDetach               // a Detach from the context's own goroutine
	adminStatus               // iflib_admin_intr_deferred: just the status update
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
		_ = c.detachLocked()
		return true
	}
	if flags&adminWatchdog != 0 {
		c.admin.watchdogEvents.Add(1)
		if w, ok := c.dev.(WatchdogResetter); ok {
			w.WatchdogReset(c)
		}
	}
	if u, ok := c.dev.(AdminStatusUpdater); ok {
		u.UpdateAdminStatus(c)
	}
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
			if q.mpr != nil {
				q.mpr.CheckDrainage(RestartBudget)
			}
			q.kick()
		}
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

// timer is iflib_timer for every TX queue, plus a kick of every RX queue
// (a lost RX interrupt is recovered within one period).
func (c *Context) timer() {
	t := time.NewTicker(c.cfg.TimerInterval)
	defer t.Stop()
	tm, _ := c.dev.(TimerHandler)
	wd := make([]watchdogState, len(c.txqs))
	for {
		select {
		case <-c.stopCh:
			return
		case <-t.C:
		}
		for i, q := range c.txqs {
			if tm != nil {
				tm.Timer(c, q.id)
			}
			if c.watchdog(q, &wd[i]) {
				return
			}
			q.kick() // laggards: a deferred doorbell, a lost interrupt
		}
		for _, q := range c.rxqs {
			q.kick()
		}
	}
}

// watchdogState is the timer's view of one TX queue between periods.
type watchdogState struct {
	processed uint64 // ift_processed at the last period
	frozen    int    // consecutive periods with work out and no progress
}

// watchdog is iflib_timer's hung-queue check for q. It reports true when
// it asked for a reset (the timer then ends with the tasks).
func (c *Context) watchdog(q *txq, w *watchdogState) bool {
	periods := c.cfg.TxWatchdogPeriods
	processed := q.processedA.Load()
	progressed := processed != w.processed
	w.processed = processed
	if periods <= 0 || !c.running.Load() || c.LinkState() != LinkStateUp || progressed || !q.hwBusy() {
		w.frozen = 0
		return false
	}
	w.frozen++
	if w.frozen < periods {
		return false
	}
	w.frozen = 0
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
