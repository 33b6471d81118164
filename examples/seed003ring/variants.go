package main

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/examples/seedbench"
	"github.com/goiflib/goiflib/internal/cputime"
	"github.com/goiflib/goiflib/mpring"
)

// Parameters shared by every variant, from sys/net/iflib.c.
const (
	// ringSize = 2048: iflib_queues_alloc's ifmp_ring_alloc size, given to
	// every variant's ring (drbr's too, whose own default,
	// bufring.DefaultDRBRSize, is 256) so that they buffer the same amount.
	ringSize = 2048
	// txBatchSize = 32 (TX_BATCH_SIZE): the enqueue/check_drainage budget
	// and the most items iflib_txq_drain takes per call.
	txBatchSize = 32
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
	// review is the Gb/s the review measured at each of fanIns, nil if
	// it did not measure this mode.
	review []float64
	make   func(n *nic) (queue, error)
}

// fanIns are the review's thread counts per queue.
var fanIns = seedbench.FanIns

var variants = []variant{
	{"mpring", seedbench.FreeBSDFanInGbps["mpring"], newMPRing(false)},
	{"mpring-abdicate", nil, newMPRing(true)},
	{"drbr-max1", seedbench.FreeBSDFanInGbps["drbr"], newDRBR(1)},
	{"drbr-unlimited", nil, newDRBR(1 << 30)},
	{"simple_tx", seedbench.FreeBSDFanInGbps["simple"], newSimple},
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
			n.doorbell() // once per drain batch
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

// drbrQueue is the deferred simple_tx (bufring.DRBR). It never drops.
// Its Doorbell hook stands in for the one doorbell per run of encaps.
type drbrQueue struct {
	d *bufring.DRBR[*packet]
}

func newDRBR(maxProducers int) func(n *nic) (queue, error) {
	return func(n *nic) (queue, error) {
		d, err := bufring.NewDRBRWith(bufring.DRBRConfig[*packet]{
			Size:         ringSize,
			MaxProducers: maxProducers,
			Xmit: func(p **packet) error {
				n.encap(*p)
				return nil
			},
			Doorbell: n.doorbell,
		})
		if err != nil {
			return nil, err
		}
		return &drbrQueue{d: d}, nil
	}
}

func (q *drbrQueue) send(p *packet) bool { return q.d.Transmit(p) == nil }

// finish plays the TX task's quota-bounded restart until nothing is
// deferred. With a NIC that never runs out of descriptors nothing stays
// deferred once the senders returned; this only checks it.
func (q *drbrQueue) finish() {
	for q.d.Pending() > 0 {
		if _, _, err := q.d.Restart(); err != nil {
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
	q.n.doorbell() // iflib_simple_transmit rings for every packet
	q.mu.Unlock()
	return true
}

func (q *simpleQueue) finish() {}

// result is one run of one variant at one fan-in.
type result struct {
	seconds   float64
	cpu       time.Duration // process CPU time (user+system) during the run
	delivered uint64        // packets encapped
	dropped   uint64        // packets refused by the queue
	doorbells float64       // doorbells per packet encapped
}

func (r result) itemsPerSec() float64 { return float64(r.delivered) / r.seconds }

// cpuNsPerItem is process CPU time per packet offered (sent or dropped):
// what each packet cost the machine, senders' packet building included.
func (r result) cpuNsPerItem() float64 {
	if r.delivered+r.dropped == 0 {
		return 0
	}
	return float64(r.cpu.Nanoseconds()) / float64(r.delivered+r.dropped)
}

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
	gen   int // paid by the sender before each send, outside the queue: building the packet, as the review's packet generator did
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
	t0, c0 := now(), cputime.Process()
	close(start)
	senders.Wait()
	q.finish()
	res := result{seconds: now() - t0, cpu: cputime.Process() - c0, delivered: n.sent, dropped: dropped.Load()}
	if n.sent > 0 {
		res.doorbells = float64(n.dbs) / float64(n.sent)
	}
	if res.delivered+res.dropped != uint64(total) {
		return res, errLost
	}
	return res, nil
}
