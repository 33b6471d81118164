package iflib

import (
	"runtime"
	"time"

	"github.com/goiflib/goiflib/cpumap"
)

// pinTask pins the calling task goroutine to cpu when configured; the
// returned function undoes it.
func (c *Context) pinTask(cpu int) func() {
	if !c.cfg.PinTasks || cpu < 0 {
		return func() {}
	}
	unpin, err := cpumap.PinCurrentThread(cpu)
	if err != nil {
		return func() {}
	}
	return func() { _ = unpin() }
}

// wait blocks until the task is kicked (interrupt mode) or the poll
// interval passes (poll mode). It reports false when the context stops.
func (c *Context) wait(wake <-chan struct{}, poll *time.Ticker) bool {
	if poll != nil {
		select {
		case <-c.stopCh:
			return false
		case <-wake:
		case <-poll.C:
		}
		return true
	}
	select {
	case <-c.stopCh:
		return false
	case <-wake:
		return true
	}
}

func (c *Context) pollTicker() *time.Ticker {
	if !c.cfg.Poll {
		return nil
	}
	return time.NewTicker(c.cfg.PollInterval)
}

// task is _task_fn_tx, one goroutine per TX queue on the CPU cpumap chose.
func (q *txq) task() {
	c := q.ctx
	defer c.pinTask(q.cpu)()
	poll := c.pollTicker()
	if poll != nil {
		defer poll.Stop()
	}
	for c.wait(q.wake, poll) {
		q.st.add(txTaskRuns, 1)
		q.path.task()
		if c.running.Load() {
			c.txIntrEnable(q.id)
		}
		if poll == nil {
			runtime.Gosched()
		}
	}
}

// txIntrEnable is IFDI_TX_QUEUE_INTR_ENABLE, or IFDI_INTR_ENABLE when the
// driver has no per-queue method (legacy interrupts).
func (c *Context) txIntrEnable(qid int) {
	if c.qIntr != nil {
		if c.qIntr.TxQueueIntrEnable(c, qid) == nil {
			return
		}
	}
	c.dev.IntrEnable(c)
}

// rxIntrEnable is IFDI_RX_QUEUE_INTR_ENABLE, likewise.
func (c *Context) rxIntrEnable(qid int) {
	if c.qIntr != nil {
		if c.qIntr.RxQueueIntrEnable(c, qid) == nil {
			return
		}
	}
	c.dev.IntrEnable(c)
}
