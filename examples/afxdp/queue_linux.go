package afxdp

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// queue is one queue pair: the socket bound to kernel queue qid, serving
// iflib queue set id.
//
// Ownership: the RX fields (slotOf, fillBacklog, the RX and fill rings'
// caches) belong to iflib's RX task for the queue, the TX fields (the TX
// and completion rings' caches, txChecked) to the queue's TX consumer;
// iflib runs each from one goroutine at a time. s is replaced only by
// Init and Stop, while no task runs (iflib's CTX_LOCK, after the tasks
// were waited for). The poller goroutine reads only the rings' shared
// indices (atomics) and the socket fd.
type queue struct {
	d   *Driver
	id  int // iflib queue set
	qid int // kernel queue id
	s   *xsk

	ntxd int

	// slotOf maps a UMEM frame (offset >> frame shift) to the free-list
	// slot it was posted from (iru_idxs), or -1: the driver's ifsd_ba →
	// slot table, since the kernel returns frames in the order it fills
	// them, not the order they were posted.
	slotOf      []int32
	fillBacklog []uint64
	txChecked   uint32 // TX producer up to which the checker has seen the frames
	scratch     []byte
	csumBuf     []byte // RX task's: a multi-buffer frame whose checksum is completed

	rxArmed atomic.Bool // RX interrupt enabled (IFDI_RX_QUEUE_INTR_ENABLE)
	// kickDeferred says a TX kick is owed: TxdFlush published descriptors
	// without a sendto and scheduled the TX task, whose interrupt enable
	// pays it.
	kickDeferred atomic.Bool
	armCh        chan struct{} // wakes the poller when RX is armed
	quit         chan struct{}
	done         chan struct{}
	efd          int // eventfd: wakes the poller out of poll(2) at Stop

	st queueStats
}

// queueStats are the driver's own per-queue counters.
type queueStats struct {
	doorbells     atomic.Uint64 // TxdFlush calls
	txKicks       atomic.Uint64 // sendto(2) calls
	txKickErrs    atomic.Uint64 // sendto(2) failures other than back-pressure
	rxKicks       atomic.Uint64 // recvfrom(2) fill-ring wakeups
	rxIntrs       atomic.Uint64 // RX interrupts raised (poll(2) saw frames)
	deferredKicks atomic.Uint64 // kicks handed to the TX task
	polls         atomic.Uint64 // poll(2) calls
	fillDeferred  atomic.Uint64 // frames that waited for fill-ring room
	badDescs      atomic.Uint64 // RX descriptors refused
	txRingFull    atomic.Uint64 // TX ring without room (should stay 0)
	csumDone      atomic.Uint64 // partial checksums completed (CompleteChecksum)
}

func newQueue(d *Driver, id, qid int) *queue {
	q := &queue{d: d, id: id, qid: qid, efd: -1, armCh: make(chan struct{}, 1)}
	q.slotOf = make([]int32, d.umem.Frames())
	if d.cfg.Checker != nil {
		q.scratch = make([]byte, d.umem.FrameSize())
	}
	return q
}

// start resets the queue's software state for a fresh socket and starts
// the poller.
// Preconditions: q.s is bound; no task runs.
func (q *queue) start(ic *iflib.Context) {
	for i := range q.slotOf {
		q.slotOf[i] = -1
	}
	q.fillBacklog = q.fillBacklog[:0]
	q.ntxd = ic.Softc().NTxd[0]
	q.txChecked = q.s.tx.cachedProd
	q.rxArmed.Store(false)
	q.kickDeferred.Store(false)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		// Without an eventfd the poller cannot be woken at Stop: poll
		// with a timeout instead.
		efd = -1
	}
	q.efd = efd
	q.quit = make(chan struct{})
	q.done = make(chan struct{})
	go q.poller(ic, q.s.fd)
}

// stop ends the poller and waits for it.
func (q *queue) stop() {
	if q.done == nil {
		return
	}
	close(q.quit)
	if q.efd >= 0 {
		var one = [8]byte{1}
		_, _ = unix.Write(q.efd, one[:])
	}
	<-q.done
	if q.efd >= 0 {
		_ = unix.Close(q.efd)
		q.efd = -1
	}
	q.done, q.quit = nil, nil
}

func (q *queue) armRx() {
	q.rxArmed.Store(true)
	select {
	case q.armCh <- struct{}{}:
	default:
	}
}

// poller is the queue's RX interrupt line: while armed it sleeps in
// poll(2) on the socket (POLLIN: the RX ring is not empty) and raises
// iflib's RX interrupt once (iflib_fast_intr → the RX task), which
// re-arms it when it runs dry.
func (q *queue) poller(ic *iflib.Context, fd int) {
	defer close(q.done)
	rx := &q.s.rx
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(q.efd), Events: unix.POLLIN}}
	timeout := -1
	if q.efd < 0 {
		fds, timeout = fds[:1], 10
	}
	for {
		select {
		case <-q.quit:
			return
		case <-q.armCh:
		}
		for q.rxArmed.Load() {
			if rx.producer.Load() != rx.consumer.Load() {
				q.fire(ic)
				break
			}
			q.st.polls.Add(1)
			_, err := unix.Poll(fds, timeout)
			select {
			case <-q.quit:
				return
			default:
			}
			if err == nil && fds[0].Revents&unix.POLLIN != 0 {
				q.fire(ic)
				break
			}
		}
	}
}

func (q *queue) fire(ic *iflib.Context) {
	if q.rxArmed.CompareAndSwap(true, false) {
		q.st.rxIntrs.Add(1)
		ic.RxIntr(q.id)
	}
}

// maxKicks bounds the sendto loop of one doorbell: with
// XDP_MAX_TX_SKB_BUDGET at the ring size one call sends everything; on
// kernels with the fixed budget of 32 a full ring takes 2*ntxd/32 calls,
// and whatever is left is kicked again at the next TX interrupt enable.
const maxKicks = 8

// kickTxLoop wakes the kernel's transmit if it asks, until the TX ring is
// drained or the kernel stops making progress.
func (q *queue) kickTxLoop() {
	s := q.s
	if s.wakeup && !s.tx.needWakeup() {
		return
	}
	for i := 0; i < maxKicks; i++ {
		q.st.txKicks.Add(1)
		if err := s.kickTx(); err != nil {
			q.st.txKickErrs.Add(1)
			return
		}
		if s.tx.pending() == 0 {
			return
		}
	}
}

// retryTx pays a deferred kick, and kicks a TX ring the kernel left
// unsent. The flag is cleared before the pending check, so a descriptor
// published after the check found its own flag clear and scheduled another
// run.
func (q *queue) retryTx() {
	q.kickDeferred.Store(false)
	if s := q.s; s != nil && s.tx.pending() > 0 {
		q.kickTxLoop()
	}
}

// pushFillBacklog moves frames that waited for room into the fill ring.
func (q *queue) pushFillBacklog() {
	s := q.s
	n := len(q.fillBacklog)
	if n == 0 {
		return
	}
	k := min(int(s.fill.free(uint32(n))), n)
	for _, a := range q.fillBacklog[:k] {
		*s.fill.addr(s.fill.cachedProd) = a
		s.fill.cachedProd++
	}
	q.fillBacklog = append(q.fillBacklog[:0], q.fillBacklog[k:]...)
}

// checkTx mirrors the kernel's reads of the frames about to be published
// into busdma's checker: each must lie in a current, PREWRITE-synced
// mapping of this device.
func (q *queue) checkTx() {
	s := q.s
	for i := q.txChecked; i != s.tx.cachedProd; i++ {
		desc := s.tx.desc(i)
		_ = q.d.bus.Read(busdma.BusAddr(desc.Addr), q.scratch[:desc.Len])
	}
	q.txChecked = s.tx.cachedProd
}
