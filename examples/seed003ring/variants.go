package main

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/mpring"
)

// Parameters shared by every variant, from sys/net/iflib.c.
const (
	// ringSize = 2048: iflib_queues_alloc's ifmp_ring_alloc size; also used
	// for the drbr buf_ring (simple_txbr_size's default is unknown, §1.6).
	ringSize = 2048
	// txBatchSize = 32 (TX_BATCH_SIZE): the enqueue/check_drainage budget
	// and the most items iflib_txq_drain takes per call.
	txBatchSize = 32
	// drainQuota = 8 (net.iflib.simple_drain_quota, seed 003).
	drainQuota = 8
)

// queue is one transmit queue under test, fed by several senders at once.
type queue interface {
	// send hands p to the queue; false means it was dropped.
	send(p *packet) bool
	// finish returns once every accepted packet has been encapped, with
	// any helper goroutine stopped. Called after all senders returned.
	finish()
}

// variant is one transmit mode of the comparison.
type variant struct {
	name string
	// seed is the Gb/s seed 003 measured at fan-in 1..64, nil if none.
	seed []float64
	make func(n *nic) (queue, error)
}

// fanIns are seed 003's thread counts per queue.
var fanIns = []int{1, 2, 4, 8, 16, 32, 64}

var variants = []variant{
	{"mpring", []float64{20, 44, 48, 35, 14, 7, 4}, newMPRing(false)},
	{"mpring-abdicate", nil, newMPRing(true)},
	{"drbr-max1", []float64{44, 90, 90, 86, 57, 50, 35}, newDRBR(1)},
	{"drbr-unlimited", nil, newDRBR(1 << 30)},
	{"simple_tx", []float64{44, 44, 44, 43, 40, 36, 32}, newSimple},
}

// mpQueue is iflib's default mode: iflib_if_transmit → ifmp_ring_enqueue,
// drops when the ring is full. With abdicate (tx_abdicate=1) a separate
// goroutine plays _task_fn_tx: every sender kicks it, and it calls
// CheckDrainage.
type mpQueue struct {
	r        *mpring.Ring[*packet]
	abdicate bool
	kick     chan struct{} // GROUPTASK_ENQUEUE(&txq->ift_task); capacity 1
	done     chan struct{}
	task     sync.WaitGroup
}

func newMPRing(abdicate bool) func(n *nic) (queue, error) {
	return func(n *nic) (queue, error) {
		// iflib_txq_drain: up to TX_BATCH_SIZE encaps per call.
		drain := func(r *mpring.Ring[*packet], cidx, pidx int) int {
			count := min(r.IdxDiff(pidx, cidx), txBatchSize)
			for i, k := cidx, 0; k < count; i, k = r.IncrementIdx(i, 1), k+1 {
				n.encap(r.At(i))
			}
			return count
		}
		r, err := mpring.New(ringSize, drain, func(*mpring.Ring[*packet]) bool { return true })
		if err != nil {
			return nil, err
		}
		q := &mpQueue{r: r, abdicate: abdicate}
		if abdicate {
			q.kick = make(chan struct{}, 1)
			q.done = make(chan struct{})
			q.task.Go(q.txTask)
		}
		return q, nil
	}
}

// txTask is _task_fn_tx with tx_abdicate: check drainage on every kick.
func (q *mpQueue) txTask() {
	for {
		select {
		case <-q.kick:
			q.r.CheckDrainage(txBatchSize)
		case <-q.done:
			return
		}
	}
}

func (q *mpQueue) send(p *packet) bool {
	err := q.r.EnqueueOne(p, txBatchSize, q.abdicate)
	if q.abdicate {
		select {
		case q.kick <- struct{}{}:
		default: // already pending
		}
	}
	if err != nil {
		// iflib_if_transmit: kick the task (covered above, or the
		// inline consumer will see the ring), check drainage, drop.
		q.r.CheckDrainage(txBatchSize)
		return false
	}
	return true
}

func (q *mpQueue) finish() {
	for !q.r.IsIdle() {
		if q.abdicate {
			select {
			case q.kick <- struct{}{}:
			default:
			}
		}
		runtime.Gosched()
	}
	if q.abdicate {
		close(q.done)
		q.task.Wait()
	}
}

// drbrQueue is seed 003's deferred simple_tx (bufring.DRBR). It never drops.
type drbrQueue struct {
	d *bufring.DRBR[*packet]
}

func newDRBR(maxProducers int) func(n *nic) (queue, error) {
	return func(n *nic) (queue, error) {
		d, err := bufring.NewDRBR(ringSize, maxProducers, func(p *packet) bool {
			n.encap(p)
			return true
		})
		if err != nil {
			return nil, err
		}
		return &drbrQueue{d: d}, nil
	}
}

func (q *drbrQueue) send(p *packet) bool { return q.d.Transmit(p) == nil }

// finish plays the TX task's quota-bounded drain until nothing is deferred.
func (q *drbrQueue) finish() {
	for {
		more, err := q.d.Drain(drainQuota)
		if err != nil || !more {
			return
		}
		runtime.Gosched()
	}
}

// simpleQueue is iflib_simple_transmit without a ring: every sender takes
// ift_mtx and encaps its own packet.
type simpleQueue struct {
	mu sync.Mutex // ift_mtx
	n  *nic
}

func newSimple(n *nic) (queue, error) { return &simpleQueue{n: n}, nil }

func (q *simpleQueue) send(p *packet) bool {
	q.mu.Lock()
	q.n.encap(p)
	q.mu.Unlock()
	return true
}

func (q *simpleQueue) finish() {}

// result is one run of one variant at one fan-in.
type result struct {
	seconds   float64
	delivered uint64 // packets encapped
	dropped   uint64 // packets refused by the queue
}

func (r result) itemsPerSec() float64 { return float64(r.delivered) / r.seconds }

func (r result) dropFraction() float64 {
	if r.delivered+r.dropped == 0 {
		return 0
	}
	return float64(r.dropped) / float64(r.delivered+r.dropped)
}

// keep receives the senders' hashes so the compiler cannot drop them.
var keep atomic.Uint64

var errLost = errors.New("seed003ring: packets neither encapped nor dropped")

// cost is the per-packet work of one run, in rounds of hash.
type cost struct {
	encap int // paid by whoever encaps, under the queue's exclusion
	gen   int // paid by the sender before each send, outside the queue: building the packet, as the seed's packet generator did
}

// run sends total packets from fanIn goroutines into a fresh queue of v and
// times from the start signal until the queue has encapped everything it
// accepted.
func run(v variant, fanIn, total int, c cost, now func() float64) (result, error) {
	n := &nic{work: c.encap}
	q, err := v.make(n)
	if err != nil {
		return result{}, err
	}
	var ready, senders sync.WaitGroup
	start := make(chan struct{})
	var dropped atomic.Uint64
	for s := range fanIn {
		count := total / fanIn
		if s < total%fanIn {
			count++
		}
		ready.Add(1)
		senders.Go(func() {
			p := newPacket(s)
			ready.Done()
			<-start
			var drops, sink uint64
			for range count {
				sink += hash(p, c.gen)
				if !q.send(p) {
					drops++
				}
			}
			dropped.Add(drops)
			keep.Add(sink)
		})
	}
	ready.Wait()
	t0 := now()
	close(start)
	senders.Wait()
	q.finish()
	res := result{seconds: now() - t0, delivered: n.sent, dropped: dropped.Load()}
	if res.delivered+res.dropped != uint64(total) {
		return res, errLost
	}
	return res, nil
}
