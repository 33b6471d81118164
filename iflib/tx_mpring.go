package iflib

import (
	"sync/atomic"

	"github.com/goiflib/goiflib/mpring"
	"github.com/goiflib/goiflib/prefetch"
)

// The mpring transmit mode (TxModeMPRing): iflib_if_transmit. Each TX
// queue has an mp_ring of MPRingSize (ifmp_ring_alloc in
// iflib_queues_alloc); a sender enqueues and, finding the ring idle,
// becomes its consumer and runs the drain (iflib_txq_drain); the TX task
// becomes the consumer by enqueueing a sentinel. The descriptor ring is
// consumer-owned: only the mp_ring's consumer (exclusive by its BUSY
// state) touches it.

// mpringMode is TxModeMPRing to the whole context.
type mpringMode struct{}

func (mpringMode) newPath(q *txq) (txPath, error) {
	p := &mpringPath{q: q, sentinel: new(Packet)}
	r, err := mpring.New[*Packet](MPRingSize, p.drain, p.canDrain)
	if err != nil {
		return nil, err
	}
	p.r = r
	return p, nil
}

// driverSelect: iflib_if_transmit asks ift_txq_select.
func (mpringMode) driverSelect() bool { return true }

func (mpringMode) sysctl(*Node, *Config) {}

// mpringPath is one queue's mp_ring and its consumer.
type mpringPath struct {
	q *txq
	r *mpring.Ring[*Packet]
	// sentinel is the item the TX task enqueues to become the mp_ring's
	// consumer (FreeBSD enqueues the txq pointer itself).
	sentinel *Packet
	// sentinels counts the TX task's sentinels in the mp_ring, so that
	// backlog reports packets only.
	sentinels atomic.Int64
	purging   atomic.Bool // IFC_QFLUSH for this queue: the drain frees everything
}

func (p *mpringPath) send(m *Packet) error {
	abdicate := p.q.ctx.cfg.TxAbdicate
	err := p.r.EnqueueOne(m, TxBatchSize, abdicate)
	return p.enqueued(m, err, abdicate)
}

func (p *mpringPath) sendBatch(ms []*Packet, errs []error) (int, error) {
	abdicate := p.q.ctx.cfg.TxAbdicate
	if p.r.Enqueue(ms, TxBatchSize, abdicate) == nil {
		if abdicate {
			p.q.kick()
		}
		return len(ms), nil
	}
	// The run does not fit: fall back to one at a time, so that what fits
	// goes in and the rest is dropped one by one (if_transmit's semantics).
	sent := 0
	var first error
	for i, m := range ms {
		if err := p.enqueued(m, p.r.EnqueueOne(m, TxBatchSize, abdicate), abdicate); err != nil {
			if errs != nil {
				errs[i] = err
			}
			if first == nil {
				first = err
			}
			continue
		}
		sent++
	}
	return sent, first
}

// enqueued finishes an EnqueueOne: kick the task when abdicating or when
// the ring is full (ifmp_ring_enqueue's ENOBUFS path), and drop on full.
func (p *mpringPath) enqueued(m *Packet, err error, abdicate bool) error {
	q := p.q
	if abdicate {
		q.kick()
	}
	if err == nil {
		return nil
	}
	if !abdicate {
		q.kick()
	}
	p.r.CheckDrainage(TxBatchSize)
	return q.ctx.dropTx(q, m, ErrNoBufs)
}

func (p *mpringPath) task() {
	// FreeBSD enqueues the txq as a sentinel only when a doorbell is
	// pending (a racy read of consumer state); we always do, so the
	// completion that woke us is reclaimed by whoever is the consumer. A
	// full ring refuses the sentinel: then only check drainage.
	// Each enqueue also restarts a stalled ring whatever the can_drain
	// probe says (a producer becomes the consumer); sentinels are counted
	// so that backlog reports packets only.
	abdicate := p.q.ctx.cfg.TxAbdicate
	p.sentinels.Add(1)
	err := p.r.EnqueueOne(p.sentinel, TxBatchSize, abdicate)
	if err != nil {
		p.sentinels.Add(-1)
	}
	if err != nil || abdicate {
		p.r.CheckDrainage(TxBatchSize)
	}
}

// start: the mp_ring stays open across Stop (the queue's hold admits
// senders).
func (p *mpringPath) start() {}

// stop: no sender waits inside the mp_ring.
func (p *mpringPath) stop() {}

// purge is iflib_ifmp_purge: IFC_QFLUSH and a drain that frees every
// packet (iflib_txq_drain_free), each counted as an oqdrop (FreeBSD's
// drain_free counts nothing; see docs/freebsd.md).
func (p *mpringPath) purge() {
	p.purging.Store(true)
	p.r.CheckDrainage(MPRingSize)
	p.purging.Store(false)
	if st := p.r.State(); p.r.IdxDiff(int(st.PidxHead), int(st.Cidx)) == 0 {
		p.sentinels.Store(0) // an empty ring holds no sentinel
	}
}

// backlog is the packets in the mp_ring, not the TX task's sentinels.
func (p *mpringPath) backlog() int {
	st := p.r.State()
	return max(0, p.r.IdxDiff(int(st.PidxHead), int(st.Cidx))-int(p.sentinels.Load()))
}

// restart is iflib_txq_check_drain with IFLIB_RESTART_BUDGET: a ring
// that stalled while the link was down starts draining again.
func (p *mpringPath) restart() { p.r.CheckDrainage(RestartBudget) }

func (p *mpringPath) sysctl(n *Node) {
	r := p.r
	n.leaf("ring_state", "soft ring state", func() any { return r.State().String() })
	n.leaf("r_enqueues", "# of enqueues to the mp_ring for this queue", func() any { return r.Stats().Enqueues })
	n.leaf("r_drops", "# of drops in the mp_ring for this queue", func() any { return r.Stats().Drops })
	n.leaf("r_starts", "# of normal consumer starts in the mp_ring for this queue", func() any { return r.Stats().Starts })
	n.leaf("r_stalls", "# of consumer stalls in the mp_ring for this queue", func() any { return r.Stats().Stalls })
	n.leaf("r_restarts", "# of consumer restarts in the mp_ring for this queue", func() any { return r.Stats().Restarts })
	n.leaf("r_abdications", "# of consumer abdications in the mp_ring for this queue", func() any { return r.Stats().Abdications })
}

// drain is iflib_txq_drain, the mp_ring consumer: reclaim, then encap up
// to TX_BATCH_SIZE items while a worst-case packet fits, then the doorbell.
// It returns how many items it consumed; 0 stalls the ring.
func (p *mpringPath) drain(r *mpring.Ring[*Packet], cidx, pidx int) int {
	q := p.q
	defer q.publish()
	avail := r.IdxDiff(pidx, cidx)
	if p.purging.Load() {
		// IFC_QFLUSH / iflib_txq_drain_free: free all but sentinels.
		for i := 0; i < avail; i++ {
			s := r.Slot(r.IncrementIdx(cidx, i))
			if m := *s; m == p.sentinel {
				p.sentinels.Add(-1)
			} else if m != nil {
				q.st.inc(txOQDrops, 1)
				m.Free()
			}
			*s = nil
		}
		return avail
	}
	c := q.ctx
	if !c.running.Load() || c.link.Load() != int32(LinkStateUp) {
		q.st.inc(txDrainNotReady, 1)
		return 0 // txq_drain_notready
	}
	reclaimed := q.completedReclaim()
	rang := q.dbCheck(reclaimed > 0 && q.dbPending > 0)

	count := min(avail, TxBatchSize)
	prefetchOn := c.cfg.Prefetch
	consumed, encapped := 0, 0
	var err error
	for i := 0; i < count && q.avail() >= q.maxTxDesc(); i++ {
		if !c.running.Load() {
			break // FreeBSD re-checks IFF_DRV_RUNNING per packet
		}
		idx := r.IncrementIdx(cidx, i)
		s := r.Slot(idx)
		m := *s
		if prefetchOn && i+1 < count {
			// _ring_peek_one's look-ahead: the next item's packet header.
			if n := *r.Slot(r.IncrementIdx(idx, 1)); n != nil {
				prefetch.Ptr(n)
			}
		}
		if m == p.sentinel {
			p.sentinels.Add(-1)
			consumed++
			continue
		}
		err = q.encap(s) // encap writes a replacement chain back into the slot
		if err == errNoDesc {
			break
		}
		*s = nil
		consumed++
		encapped++
		// iflib_txd_db_check per packet: rang says whether the last
		// packet's check rang (FreeBSD overwrites it each time). At the
		// lowest deferral tier (few descriptors in use) FreeBSD rings for
		// every packet; here the pass rings once at its end instead (as
		// Linux drivers do with xmit_more): a pass is at most
		// TX_BATCH_SIZE packets encapsulated back to back, so the latency
		// is the same and a doorbell that costs a register write (or, on
		// AF_XDP, a system call) is paid once per pass.
		if q.maxDBDeferred() > 0 || q.avail() <= q.maxTxDesc() {
			rang = q.dbCheck(false)
		} else {
			rang = false
		}
	}
	if consumed == 0 {
		q.st.inc(txDrainNoDesc, 1)
	}
	ring := !rang && (c.cfg.MinTxLatency || (err != nil && err != errNoDesc) || c.cfg.TxReclaimThresh > 0)
	// Also ring what is pending when the drain encapsulated nothing (a
	// sentinel from the task or the timer: no completion may come to ring a
	// deferred doorbell later; FreeBSD relies on the same laggard kick but
	// never forces the doorbell there, so it can stay pending), and at the
	// lowest tier (what the pass left, once).
	q.dbCheck(ring || encapped == 0 || q.maxDBDeferred() == 0)
	return consumed
}

// canDrain is iflib_txq_can_drain: descriptors free, or completions
// pending.
func (p *mpringPath) canDrain(*mpring.Ring[*Packet]) bool {
	return p.purging.Load() || p.q.canRestart()
}
