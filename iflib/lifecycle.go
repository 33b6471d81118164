package iflib

import (
	"errors"
	"fmt"
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
// queue tasks and the timer, set RUNNING, enable interrupts, and
// IFDI_UPDATE_ADMIN_STATUS. The link stays as the driver reports it: a
// driver must call LinkStateChange(LinkStateUp, ...) (from IFDI_INIT or
// IFDI_UPDATE_ADMIN_STATUS) before Transmit can send (ErrLinkDown). Init on
// a running context does nothing, and so does Init from the context's own
// goroutines (they exist only while it runs or is being reset); once Detach
// has begun it returns ErrDetached.
func (c *Context) Init() error {
	if c.st() >= stateDetaching {
		return ErrDetached
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
	if err := c.dev.Init(c); err != nil {
		return fmt.Errorf("iflib: %s: IFDI_INIT: %w", c.name, err)
	}
	for _, q := range c.rxqs {
		q.setup()
	}
	c.running.Store(true)
	c.stopCh = make(chan struct{})
	for _, q := range c.txqs {
		if q.drbr != nil {
			q.drbr.Reopen()
		}
		c.startTask(q.task)
	}
	for _, q := range c.rxqs {
		c.startTask(q.task)
	}
	c.startTask(c.timer)
	c.state.Store(int32(stateRunning))
	c.dev.IntrEnable(c)
	if u, ok := c.dev.(AdminStatusUpdater); ok {
		u.UpdateAdminStatus(c)
	}
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

// Stop is iflib_stop: clear RUNNING so new transmits fail, wake senders
// blocked in drbr mode (their Transmit returns ErrNotRunning), wait for the
// transmits in progress (at most Config.StopTimeout), stop the tasks, purge
// what is still queued (counted as oqdrops), IFDI_STOP, then free every
// packet left on a descriptor ring (counted as stop_discards: the device
// never reported them sent) and every posted RX buffer (frames the device
// had written but rxeof had not taken are counted as rx_stop_discards).
// After Stop no map is loaded and every packet of iflib's zones is back,
// except those the stack holds.
//
// Stop never waits for the device: a device that stopped completing
// transmits cannot hold it up. Called from the context's own goroutines it
// is handed to the admin task (ErrDeferred). After Detach began it returns
// ErrDetached.
func (c *Context) Stop() error {
	if c.st() >= stateDetaching {
		return ErrDetached
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
	// drbr mode: close the buf_rings, which wakes every sender blocked for
	// ring space or for the lock; their Transmit frees and counts the packet
	// and returns ErrNotRunning (ENETDOWN).
	for _, q := range c.txqs {
		if q.drbr != nil {
			q.drbr.Close(ErrNotRunning)
		}
	}
	// Transmits in progress counted themselves in inflight after seeing
	// running; with RUNNING clear and the buf_rings closed each ends in
	// bounded time. Keep the TX tasks kicked meanwhile. The wait is bounded
	// by StopTimeout in case a driver method or a callback blocks against
	// its contract.
	deadline := time.Now().Add(c.cfg.StopTimeout)
	for c.inflight.Load() > 0 && time.Now().Before(deadline) {
		for _, q := range c.txqs {
			q.kick()
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
	c.dev.IntrDisable(c)
	close(c.stopCh)
	c.tasks.Wait()
	c.stopCh = nil
	for _, q := range c.txqs {
		q.purge()
	}
	c.dev.Stop(c)
	for _, q := range c.txqs {
		q.freeAll()
	}
	for _, q := range c.rxqs {
		q.stop()
	}
	c.state.CompareAndSwap(int32(stateRunning), int32(stateAttached)) // detaching stays
}

// Detach is iflib_device_deregister: mark the context detaching
// (IFC_IN_DETACH, so nothing can start it again), stop it if it runs, end
// the admin task, free the queues, the rings and iflib's RX zones, call
// IFDI_DETACH then IFDI_QUEUES_FREE, and release the CPU placement.
//
// A second Detach, concurrent or later, returns ErrDetached. Called from
// the context's own goroutines it is handed to the admin task
// (ErrDeferred; Detached() is closed when it is done). Detach verifies the
// teardown itself: if the stack still holds received packets, or a map is
// still loaded, it returns a *LeakError (errors.Is ErrLeak) and keeps the
// memory of the affected zones so those packets stay valid; the error of
// IFDI_DETACH, if any, is joined to it.
func (c *Context) Detach() error {
	if c.ownGoroutine() {
		if c.st() >= stateDetaching {
			return ErrDetached
		}
		c.admin.request(adminDetach)
		return ErrDeferred
	}
	c.lock()
	if c.st() >= stateDetaching {
		c.unlock()
		return ErrDetached
	}
	c.state.Store(int32(stateDetaching))
	c.stopLocked()
	// The admin task may be waiting for CTX_LOCK to run a reset; it finds
	// the context detaching and does nothing, so wait for it unlocked.
	c.unlock()
	c.stopAdmin()
	c.lock()
	defer c.unlock()
	return c.detachLocked()
}

// detachLocked finishes Detach after the admin task has ended.
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
		err = fmt.Errorf("iflib: %s: IFDI_DETACH: %w", c.name, err)
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
