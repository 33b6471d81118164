package iflib

import (
	"errors"
	"runtime"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// lock takes CTX_LOCK and records the holder, so that a lifecycle call
// from inside an IFDI method (same goroutine) is recognised.
func (c *Context) lock() {
	c.mu.Lock()
	c.lockOwner.Store(goid())
}

func (c *Context) unlock() {
	c.lockOwner.Store(0)
	c.mu.Unlock()
}

func (c *Context) st() ctxState { return ctxState(c.state.Load()) }

// ownGoroutine reports whether the caller is one of the context's own
// goroutines or holds CTX_LOCK (an IFDI method calling back).
func (c *Context) ownGoroutine() bool {
	id := goid()
	return c.own.has(id) || c.lockOwner.Load() == id
}

// Init is iflib_init_locked: IFDI_INIT, fill the free lists, start the
// queue tasks, set RUNNING, enable interrupts, IFDI_UPDATE_ADMIN_STATUS,
// and then start the timer (FreeBSD stops the timer callouts around
// IFDI_INIT and arms them at the end). The link stays as the driver
// reports it: a driver must call LinkStateChange(LinkStateUp, ...) (from
// IFDI_INIT or IFDI_UPDATE_ADMIN_STATUS) before Transmit can send
// (ErrLinkDown). Init on a running context does nothing, and so does Init
// from the context's own goroutines (they exist only while it runs or is
// being reset); from an IFDI method during Register it returns
// ErrRegistering; once Detach has begun it returns ErrDetached. If a
// transmit from before the last Stop still holds a TX queue (see Stop),
// Init waits for it up to Config.StopTimeout and then returns ErrBusy.
func (c *Context) Init() error {
	switch st := c.st(); {
	case st >= stateDetaching:
		return ErrDetached
	case st == stateRegistering && c.ownGoroutine():
		return ErrRegistering
	}
	if c.ownGoroutine() {
		// Only a running context has tasks; an IFDI method calling Init
		// while Init or a reset runs finds it starting anyway.
		return nil
	}
	c.lock()
	defer c.unlock()
	return c.initLocked()
}

func (c *Context) initLocked() error {
	switch c.st() {
	case stateRunning:
		return nil
	case stateAttached:
	default:
		return ErrDetached
	}
	if !c.teardowns.wait(c.cfg.StopTimeout) {
		return ErrBusy
	}
	if err := c.dev.Init(c); err != nil {
		return c.ifdiErr("IFDI_INIT", err)
	}
	for _, q := range c.rxqs {
		q.setup()
	}
	c.stopCh = make(chan struct{})
	for _, q := range c.txqs {
		q.resetWatchdog()
		q.path.start()
		q.openHold()
	}
	c.running.Store(true)
	for _, q := range c.txqs {
		c.startTask(q.task)
	}
	for _, q := range c.rxqs {
		c.startTask(q.task)
	}
	c.state.Store(int32(stateRunning))
	c.dev.IntrEnable(c)
	if u, ok := c.dev.(AdminStatusUpdater); ok {
		u.UpdateAdminStatus(c)
	}
	c.startTask(c.timer)
	return nil
}

// startTask runs fn as one of the context's own goroutines until Stop.
func (c *Context) startTask(fn func()) {
	c.tasks.Add(1)
	go func() {
		defer c.tasks.Done()
		defer c.own.enter()()
		fn()
	}()
}

// Stop is iflib_stop: clear RUNNING and close the TX queues to new
// senders, wake senders blocked in drbr mode (their Transmit returns
// ErrNotRunning), wait for the transmits in progress to leave the queues
// (at most Config.StopTimeout), stop the tasks and the timer, IFDI_STOP,
// then tear down each TX queue — free what is still queued in its software
// ring (counted as oqdrops) and every packet left on its descriptor ring
// (counted as stop_discards: the device never reported them sent) — and
// free every posted RX buffer (frames the device had written but rxeof had
// not taken are counted as rx_stop_discards). After Stop no map is loaded
// and every packet of iflib's zones is back, except those the stack holds.
//
// Stop never waits for the device, and never frees what a transmit still
// uses: a transmit that still holds a TX queue when StopTimeout expires (a
// driver method or callback that blocks against its contract) keeps that
// queue, and the queue is torn down when it leaves; Stop returns without
// waiting for it, and Init and Detach wait for it. Called from the
// context's own goroutines it is handed to the admin task (ErrDeferred);
// from an IFDI method during Register there is nothing to stop (nil).
// After Detach began it returns ErrDetached.
func (c *Context) Stop() error {
	switch st := c.st(); {
	case st >= stateDetaching:
		return ErrDetached
	case st == stateRegistering && c.ownGoroutine():
		return nil
	}
	if c.ownGoroutine() {
		c.admin.request(adminStop)
		return ErrDeferred
	}
	c.lock()
	defer c.unlock()
	if c.st() >= stateDetaching {
		return ErrDetached
	}
	c.pendingInit.Store(false)
	c.stopLocked()
	return nil
}

// stopLocked stops a running context.
// Preconditions: c.mu held; the caller is not one of c's tasks.
func (c *Context) stopLocked() {
	if !c.running.Load() && c.stopCh == nil {
		return
	}
	c.running.Store(false)
	// Close every TX queue to new senders, then its mode (drbr mode closes
	// the buf_rings, which wakes every sender blocked for ring space or for
	// the lock; their Transmit frees and counts the packet and returns
	// ErrNotRunning).
	for _, q := range c.txqs {
		q.closeHold()
		q.path.stop()
	}
	// The senders inside a queue end in bounded time (RUNNING is clear, the
	// buf_rings closed) unless a driver method or a callback blocks against
	// its contract; StopTimeout bounds the wait for those. Keep the TX tasks
	// kicked meanwhile.
	start := time.Now()
	deadline := start.Add(c.cfg.StopTimeout)
	for c.txUsers() > 0 && time.Now().Before(deadline) {
		for _, q := range c.txqs {
			q.kick()
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
	stuck := c.txUsers() > 0
	c.dev.IntrDisable(c)
	close(c.stopCh)
	c.tasks.Wait()
	c.stopCh = nil
	c.dev.Stop(c)
	// Tear down each TX queue now, or, if a sender is still inside, when it
	// leaves. A sender that raced in and out of a closed queue may take the
	// teardown from us; wait for it (it is short) unless senders are stuck.
	for _, q := range c.txqs {
		q.oweTeardown()
	}
	if !stuck {
		c.teardowns.wait(c.cfg.StopTimeout)
	}
	for _, q := range c.rxqs {
		q.stop()
	}
	c.state.CompareAndSwap(int32(stateRunning), int32(stateAttached)) // detaching stays
}

// txUsers counts the senders inside the TX queues.
func (c *Context) txUsers() int64 {
	var n int64
	for _, q := range c.txqs {
		n += q.users()
	}
	return n
}

// Detach is iflib_device_deregister: mark the context detaching
// (IFC_IN_DETACH, so nothing can start it again), stop it if it runs, end
// the admin task, free the queues, the rings and iflib's RX zones, call
// IFDI_DETACH then IFDI_QUEUES_FREE, and release the CPU placement and the
// expvar key.
//
// A second Detach, concurrent or later, returns ErrDetached. Called from
// the context's own goroutines it is handed to the admin task
// (ErrDeferred; Detached() is closed when it is done); called from an IFDI
// method during Register it makes Register fail with ErrDetached once the
// method returns (ErrDeferred). If a transmit still holds a TX queue after
// Stop (see Stop) and does not leave within Config.StopTimeout, the rest
// of the teardown is handed to the admin task, which finishes it when the
// transmit leaves (ErrDeferred). Detach verifies the teardown itself: if
// the stack still holds received packets (or forwarded them to another
// interface that still has them queued), or a map is still loaded, it
// returns a *LeakError (errors.Is ErrLeak) and keeps the memory of the
// affected zones so those packets stay valid, until the last of them is
// freed: then the zone returns its memory to the address space. The error
// of IFDI_DETACH, if any, is joined to it.
func (c *Context) Detach() error {
	st := c.st()
	if st >= stateDetaching {
		return ErrDetached
	}
	if c.ownGoroutine() {
		if st == stateRegistering {
			c.regDetach = true
		} else {
			c.admin.request(adminDetach)
		}
		return ErrDeferred
	}
	c.lock()
	if c.st() >= stateDetaching {
		c.unlock()
		return ErrDetached
	}
	c.state.Store(int32(stateDetaching))
	c.pendingInit.Store(false)
	c.stopLocked()
	// The admin task may be waiting for CTX_LOCK to run a reset; it finds
	// the context detaching and does nothing, so wait for it unlocked.
	c.unlock()
	c.stopAdmin()
	c.endLinkEvents()
	if !c.teardowns.wait(c.cfg.StopTimeout) {
		go c.finishDetach()
		return ErrDeferred
	}
	c.lock()
	defer c.unlock()
	return c.detachLocked()
}

// finishDetach completes a Detach that waited for a transmit still
// holding a TX queue: it waits for the queue's teardown, then detaches.
func (c *Context) finishDetach() {
	c.teardowns.wait(0)
	c.lock()
	defer c.unlock()
	_ = c.detachLocked()
}

// detachLocked finishes Detach after the admin task has ended and every
// owed TX queue teardown is done.
// Preconditions: c.mu held, state detaching, the context stopped.
func (c *Context) detachLocked() error {
	leak := c.freeQueues()
	err := c.dev.Detach(c)
	if qf, ok := c.dev.(QueuesFreer); ok {
		qf.QueuesFree(c)
	}
	c.placement.release()
	unpublishExpvar(c)
	c.state.Store(int32(stateDetached))
	close(c.detached)
	if err != nil {
		err = c.ifdiErr("IFDI_DETACH", err)
	}
	return errors.Join(leak, err)
}

// free syncs and frees one ring's DMA memory (iflib_dma_free).
func (r *RingMem) free() {
	if r.mem == nil {
		return
	}
	r.mem.Sync(busdma.PostRead | busdma.PostWrite)
	_ = r.mem.Free()
	r.mem = nil
}

// zero is the bzero of a descriptor ring in iflib_stop and at setup, with
// the syncs a non-coherent machine needs around it: POSTREAD|POSTWRITE
// first, so that write-backs the device made since the last sync are not
// written back over the zeros later, and PREWRITE after, so the device
// sees the zeros.
func (r RingMem) zero() {
	if r.mem == nil {
		return
	}
	r.mem.Sync(busdma.PostRead | busdma.PostWrite)
	clear(r.Vaddr)
	r.mem.Sync(busdma.PreWrite)
}
