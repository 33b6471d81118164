package iflib

import (
	"errors"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/mpring"
	"github.com/goiflib/goiflib/prefetch"
)

// Transmit is if_transmit: iflib_if_transmit (mpring mode),
// iflib_simple_transmit (simple mode) or the drbr transmit (simple_tx with
// buf_ring deferral).
//
// Ownership: the packet is iflib's from this call on, whatever the result,
// except for ErrNilPacket, ErrForeignPacket and ErrUseAfterFree (nothing
// was taken). nil means it was sent or queued. On any other error it has
// been freed and counted: ErrNotRunning, ErrLinkDown and ErrNoBufs in
// oqdrops; ErrEmptyPacket, ErrBadLength, ErrTooBig, ErrWrongSpace,
// ErrOffloadDisabled and ErrNoMem in oerrors. Never use a packet after passing it here: a failed
// Transmit has freed it, and the zone may already have handed the same
// pointer to someone else.
//
// Errors by mode, beyond the checks every mode makes first (nil, foreign,
// freed, not running, link down, empty, bad length, too big, wrong space,
// an offload not enabled):
//   - mpring: ErrNoBufs when the mp_ring is full. Mapping failures happen
//     later, in the drain: they are counted, not returned.
//   - simple: ErrNoBufs when the descriptors are exhausted; ErrNoMem when
//     the DMA mapping (or defrag) fails; a driver encap error.
//   - drbr: never drops for lack of space (the sender waits);
//     ErrNotRunning when Stop wakes a waiting sender; when the sender sends
//     its packet itself (the queue lock free), a mapping or driver encap
//     error as in simple mode. A deferred packet's failure is counted only.
func (c *Context) Transmit(m *Packet) error {
	if err := c.screen(m, "Transmit"); err != nil {
		return err
	}
	if !c.running.Load() {
		return c.dropTx(nil, m, ErrNotRunning)
	}
	// The queue choice runs before the sender enters the queue: a slow
	// driver selector holds nothing Stop must wait for.
	q := c.txqs[c.selectQueue(m)]
	if !q.enter() {
		return c.dropTx(q, m, ErrNotRunning)
	}
	defer q.leave()
	// Stop clears RUNNING before it closes the queues: a sender inside a
	// queue re-checks, so that Stop waits only for senders that saw it
	// running (iflib_if_transmit's IFF_DRV_RUNNING test).
	if !c.running.Load() {
		return c.dropTx(q, m, ErrNotRunning)
	}
	if c.link.Load() != int32(LinkStateUp) {
		return c.dropTx(q, m, ErrLinkDown)
	}
	if err := c.checkTx(m); err != nil {
		return c.rejectTx(q, m, err)
	}
	return q.path.send(q, m)
}

// TransmitBatch is Transmit for a batch, as a forwarding path passes on the
// batch its input callback received: the packets of each run bound for the
// same queue go into that queue with one mp_ring enqueue of the run
// (ifmp_ring_enqueue with n > 1), one drain and one doorbell decision; in
// simple mode a run is encapsulated under one hold of the queue lock with
// one doorbell. Order is kept within a queue.
//
// Ownership passes to iflib for every packet, as with Transmit. It returns
// how many were accepted (sent or queued); each other packet was freed and
// counted as Transmit would (or kept by the caller: ErrNilPacket,
// ErrForeignPacket, ErrUseAfterFree), and err is the first such error met:
// the per-packet checks run over the whole batch before the runs are sent,
// so a check's error comes before a queue's. The entries of pkts are set to
// nil; the slice is not kept.
func (c *Context) TransmitBatch(pkts []*Packet) (int, error) {
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	// Screen each packet, choose its queue, and compact the runs bound for
	// one queue to the front of pkts, sending each run as it ends.
	sent, k, runStart := 0, 0, 0
	var runQ *txq
	flush := func() {
		if k > runStart {
			n, err := c.sendRun(runQ, pkts[runStart:k])
			sent += n
			if err != nil {
				note(err)
			}
			clear(pkts[runStart:k])
		}
		runStart = k
	}
	for i, m := range pkts {
		pkts[i] = nil
		if err := c.screen(m, "TransmitBatch"); err != nil {
			note(err)
			continue
		}
		if !c.running.Load() {
			note(c.dropTx(nil, m, ErrNotRunning))
			continue
		}
		q := c.txqs[c.selectQueue(m)]
		if err := c.checkTx(m); err != nil {
			note(c.rejectTx(q, m, err))
			continue
		}
		if q != runQ {
			flush()
			runQ = q
		}
		pkts[k] = m
		k++
	}
	flush()
	return sent, first
}

// sendRun sends a run of checked packets bound for q, as Transmit does
// from the queue's entry on.
func (c *Context) sendRun(q *txq, run []*Packet) (int, error) {
	var down error
	switch {
	case !q.enter():
		return 0, c.dropRun(q, run, ErrNotRunning)
	case !c.running.Load():
		down = ErrNotRunning
	case c.link.Load() != int32(LinkStateUp):
		down = ErrLinkDown
	}
	defer q.leave()
	if down != nil {
		return 0, c.dropRun(q, run, down)
	}
	return q.path.sendBatch(q, run)
}

// dropRun drops every packet of run with err.
func (c *Context) dropRun(q *txq, run []*Packet, err error) error {
	for _, m := range run {
		c.dropTx(q, m, err)
	}
	return err
}

// screen refuses what iflib cannot take ownership of: a nil packet, one no
// zone handed out (counted in oerrors of queue 0), or a freed one
// (reported as used after free at use). The caller keeps such a packet.
func (c *Context) screen(m *Packet, use string) error {
	switch {
	case m == nil:
		return ErrNilPacket
	case m.zone == nil:
		if len(c.txqs) > 0 {
			c.txqs[0].st.add(txOErrors, 1)
		}
		return ErrForeignPacket
	case m.free.Load():
		c.usedAfterFree(m, use)
		return ErrUseAfterFree
	}
	return nil
}

// usedAfterFree reports a freed packet passed to a transmit call: to the
// zone's debug reporter, and to the device's busdma checker when it has
// one (the report names where the packet was freed if the zone records it,
// Zone.SetDebug, and where it was used again).
func (c *Context) usedAfterFree(p *Packet, use string) {
	msg := p.zone.usedAfterFree(p, use)
	if chk := c.bus.Checker(); chk != nil {
		chk.Add(busdma.Report{Kind: busdma.KindClient, Device: c.bus.Name(), Site: callerSite(), Msg: msg})
	}
}

// rejectTx is dropTx for checkTx's verdicts: a foreign or freed buffer in
// the chain means nothing was taken.
func (c *Context) rejectTx(q *txq, m *Packet, err error) error {
	if err == ErrUseAfterFree || err == ErrForeignPacket {
		return err
	}
	return c.dropTx(q, m, err)
}

// MaxChainBufs bounds the buffers of one packet Transmit accepts: more
// than a 64 KB TSO packet of single-byte buffers could need. A longer
// chain, or a cyclic one (which would make every walk of it endless), is
// ErrBadLength.
const MaxChainBufs = 1 << 16

// checkTx validates a packet before it is queued: one walk of the chain
// checks every buffer is live and from a zone of the device's space, and
// sums the lengths (m_pkthdr.len must equal the sum of m_len; 0 means "fill
// it in").
func (c *Context) checkTx(m *Packet) error {
	n, bufs := 0, 0
	for p := m; p != nil; p = p.Next {
		if bufs++; bufs > MaxChainBufs {
			return ErrBadLength // a cyclic chain (a.Next = b, b.Next = a), or absurdly long
		}
		switch {
		case p.zone == nil:
			return ErrForeignPacket
		case p != m && p.free.Load():
			c.usedAfterFree(p, "Transmit (a buffer of the chain)")
			return ErrUseAfterFree
		case p.zone.space != c.space:
			return ErrWrongSpace
		}
		n += p.n
	}
	if m.Hdr.Len == 0 {
		m.Hdr.Len = n
	}
	switch {
	case n == 0:
		return ErrEmptyPacket
	case m.Hdr.Len != n:
		return ErrBadLength
	case n > c.txMaxLen(m):
		return ErrTooBig
	case m.Hdr.CsumFlags&csumOffloadTx&^CsumFlags(c.ctl.hwassist.Load()) != 0:
		return ErrOffloadDisabled
	case m.Hdr.Flags&MVLANTag != 0 && Capabilities(c.ctl.capEnable.Load())&CapVLANHWTagging == 0:
		return ErrOffloadDisabled
	}
	return nil
}

// dropTx frees and counts a packet Transmit will not send: ENETDOWN and
// ENOBUFS as oqdrops, everything else as oerrors. q nil means queue 0;
// before the context has queues (Transmit from an IFDI method during
// Register) the context's own count. FreeBSD frees an ENETDOWN refusal
// without counting it (iflib_if_transmit); goiflib counts every packet it
// does not send (docs/freebsd.md).
func (c *Context) dropTx(q *txq, m *Packet, err error) error {
	if q == nil && len(c.txqs) > 0 {
		q = c.txqs[0]
	}
	drop := err == ErrNotRunning || err == ErrLinkDown || err == ErrNoBufs
	switch {
	case q != nil && drop:
		q.st.add(txOQDrops, 1)
	case q != nil:
		q.st.add(txOErrors, 1)
	case drop:
		c.noQueueDrops[0].Add(1)
	default:
		c.noQueueDrops[1].Add(1)
	}
	m.Free()
	return err
}

// txMaxLen is the maxsize of the tag the packet will be loaded on.
func (c *Context) txMaxLen(m *Packet) int {
	if m.Hdr.CsumFlags&CsumTSO != 0 && c.shared.TSOMaxSize > 0 {
		return c.shared.TSOMaxSize
	}
	return c.shared.TxMaxSize
}

// selectQueue is the queue choice. mpring mode (iflib_if_transmit): the
// driver's selector (ift_txq_select; an out-of-range answer means queue
// 0), else QIDX for a hashed packet when there are several queues, else
// queue 0. simple and drbr modes (iflib_simple_select_queue): QIDX for a
// hashed packet on several queues, else the last queue; the driver's
// selector is not asked.
func (c *Context) selectQueue(m *Packet) int {
	n := len(c.txqs)
	if c.txqSelect != nil && c.cfg.TxMode == TxModeMPRing {
		if q := c.txqSelect(m); q >= 0 && q < n {
			return q
		}
		return 0
	}
	if n > 1 && m.Hdr.HashType != HashNone {
		// QIDX: ((flowid & isc_rss_table_mask) % NTXQSETS) + FIRST_QSET
		return int(m.Hdr.FlowID&uint32(c.sc.RSSTableSize-1)) % n
	}
	return c.unhashedQueue
}

// txPath is a transmit mode: what Transmit, TransmitBatch, the TX task
// and Stop do for a queue. It is chosen once, at Register.
type txPath interface {
	send(q *txq, m *Packet) error
	sendBatch(q *txq, ms []*Packet) (int, error)
	task(q *txq)
}

func pathFor(m TxMode) txPath {
	switch m {
	case TxModeSimple:
		return simplePath{}
	case TxModeDRBR:
		return drbrPath{}
	}
	return mpringPath{}
}

// mpringPath is iflib_if_transmit: the mp_ring, whose consumer (a producer
// that finds it idle, or the TX task) runs txqDrain.
type mpringPath struct{}

func (mpringPath) send(q *txq, m *Packet) error {
	abdicate := q.ctx.cfg.TxAbdicate
	err := q.mpr.EnqueueOne(m, TxBatchSize, abdicate)
	return q.enqueued(m, err, abdicate)
}

func (mpringPath) sendBatch(q *txq, ms []*Packet) (int, error) {
	abdicate := q.ctx.cfg.TxAbdicate
	if q.mpr.Enqueue(ms, TxBatchSize, abdicate) == nil {
		if abdicate {
			q.kick()
		}
		return len(ms), nil
	}
	// The run does not fit: fall back to one at a time, so that what fits
	// goes in and the rest is dropped one by one (if_transmit's semantics).
	sent := 0
	var first error
	for _, m := range ms {
		if err := q.enqueued(m, q.mpr.EnqueueOne(m, TxBatchSize, abdicate), abdicate); err != nil {
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
func (q *txq) enqueued(m *Packet, err error, abdicate bool) error {
	if abdicate {
		q.kick()
	}
	if err == nil {
		return nil
	}
	if !abdicate {
		q.kick()
	}
	q.mpr.CheckDrainage(TxBatchSize)
	return q.ctx.dropTx(q, m, ErrNoBufs)
}

func (mpringPath) task(q *txq) {
	// FreeBSD enqueues the txq as a sentinel only when a doorbell is
	// pending (a racy read of consumer state); we always do, so the
	// completion that woke us is reclaimed by whoever is the consumer. A
	// full ring refuses the sentinel: then only check drainage.
	// Each enqueue also restarts a stalled ring whatever the can_drain
	// probe says (a producer becomes the consumer); sentinels are counted
	// (q.sentinels) so that TxBacklog reports packets only.
	abdicate := q.ctx.cfg.TxAbdicate
	q.sentinels.Add(1)
	err := q.mpr.EnqueueOne(q.sentinel, TxBatchSize, abdicate)
	if err != nil {
		q.sentinels.Add(-1)
	}
	if err != nil || abdicate {
		q.mpr.CheckDrainage(TxBatchSize)
	}
}

// simplePath is iflib_simple_transmit: encap under the queue lock, a
// doorbell per call, opportunistic reclaim. A lack of descriptors drops.
type simplePath struct{}

func (simplePath) send(q *txq, m *Packet) error {
	q.mu.Lock()
	err := q.simpleEncap(m)
	q.dbCheck(true)
	q.completedReclaim()
	q.publish()
	q.mu.Unlock()
	return err
}

func (simplePath) sendBatch(q *txq, ms []*Packet) (int, error) {
	sent := 0
	var first error
	q.mu.Lock()
	for _, m := range ms {
		if err := q.simpleEncap(m); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		sent++
	}
	q.dbCheck(true)
	q.completedReclaim()
	q.publish()
	q.mu.Unlock()
	return sent, first
}

// simpleEncap is iflib_encap in simple mode: no descriptors drops.
// Preconditions: q.mu held.
func (q *txq) simpleEncap(m *Packet) error {
	err := q.encap(&m)
	if err == errNoDesc {
		q.st.inc(txOQDrops, 1)
		m.Free()
	}
	return err
}

func (simplePath) task(q *txq) {
	// The task never waits for a sender (Stop waits for the task, and a
	// sender may hold the lock past StopTimeout): the holder reclaims and
	// rings before it unlocks; the task looks again shortly.
	if !q.mu.TryLock() {
		q.retrySoon()
		return
	}
	q.completedReclaim()
	q.dbCheck(true)
	q.publish()
	q.mu.Unlock()
}

// drbrPath is simple_tx with buf_ring deferral (bufring.DRBR). DRBR's lock
// is ift_mtx here: xmit, the doorbell and the TX task's reclaim all run
// under it, so a packet takes one lock at most.
type drbrPath struct{}

func (drbrPath) send(q *txq, m *Packet) error {
	// DRBR.Transmit never drops for lack of room: it sends, defers, or
	// waits for room. It fails when Stop closed the queue (the packet is
	// still ours) or when xmit dropped the packet in this very call (freed
	// and counted by encap), which is reported as simple mode reports it.
	err := q.drbr.Transmit(m)
	if err != nil && errors.Is(err, bufring.ErrClosed) {
		return q.ctx.dropTx(q, m, ErrNotRunning)
	}
	return err
}

func (drbrPath) sendBatch(q *txq, ms []*Packet) (int, error) {
	n, err := q.drbr.TransmitBurst(ms)
	if err != nil && errors.Is(err, bufring.ErrClosed) {
		for _, m := range ms[n:] {
			q.ctx.dropTx(q, m, ErrNotRunning)
		}
		return n, ErrNotRunning
	}
	return n, err
}

func (drbrPath) task(q *txq) {
	// As in simple mode, the task never waits for a sender holding the
	// lock.
	if !q.drbr.TryDo(func() {
		q.completedReclaim()
		q.dbCheck(true)
		q.publish()
	}) {
		q.retrySoon()
	}
	// Descriptors may have come back: restart a stalled queue. Re-run only
	// while the quota ran out with items left; a queue stalled again waits
	// for the next completion interrupt or timer tick instead of spinning.
	if _, more, _ := q.drbr.Restart(); more {
		q.kick()
	}
}

// drbrXmit is the DRBR transmit callback, called with the DRBR lock held:
// opportunistic reclaim, then encap. It refuses (bufring.ErrRefused) while
// a worst-case packet might not fit, or while the interface is not running
// or the link is down; the packet then stays at the head of the buf_ring
// and the queue is stalled until the TX task's Restart (or a sender's
// can_drain probe). Because it encaps only with TXQ_AVAIL >= MAX_TX_DESC
// (the mp_ring drain's guard), encap never runs out of descriptors here,
// and a refused head costs no failed mapping. A packet encap dropped
// (freed and counted) is reported with encap's error. The doorbell is
// rung once per run, by drbrDoorbell.
func (q *txq) drbrXmit(mp **Packet) error {
	c := q.ctx
	if !c.running.Load() || c.link.Load() != int32(LinkStateUp) {
		q.st.inc(txDrainNotReady, 1)
		q.publish() // a refusal stalls the queue: no doorbell hook will follow
		return bufring.ErrRefused
	}
	if q.avail() < 2*q.maxTxDesc() {
		q.completedReclaim()
	}
	if q.avail() < q.maxTxDesc() {
		// The ring is nearly full: make what this run encapsulated visible
		// to the device before stalling (iflib_txd_db_check rings when
		// TXQ_AVAIL is low), or nothing would complete to restart it.
		q.dbCheck(true)
		q.st.inc(txDrainNoDesc, 1)
		q.publish()
		return bufring.ErrRefused
	}
	switch err := q.encap(mp); err {
	case nil:
		return nil
	case errNoDesc:
		return bufring.ErrRefused // *mp may be a replacement: it stays queued
	default:
		return err
	}
}

// drbrDoorbell is DRBR's once-per-run hook: ring the doorbell for the run
// (iflib_txd_db_check) and publish the counters.
func (q *txq) drbrDoorbell() {
	q.dbCheck(true)
	q.publish()
}

// drain is iflib_txq_drain, the mp_ring consumer: reclaim, then encap up
// to TX_BATCH_SIZE items while a worst-case packet fits, then the doorbell.
// It returns how many items it consumed; 0 stalls the ring.
func (q *txq) drain(r *mpring.Ring[*Packet], cidx, pidx int) int {
	defer q.publish()
	avail := r.IdxDiff(pidx, cidx)
	if q.purging.Load() {
		// IFC_QFLUSH / iflib_txq_drain_free: free all but sentinels.
		for i := 0; i < avail; i++ {
			s := r.Slot(r.IncrementIdx(cidx, i))
			if m := *s; m == q.sentinel {
				q.sentinels.Add(-1)
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
		if m == q.sentinel {
			q.sentinels.Add(-1)
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
func (q *txq) canDrain(r *mpring.Ring[*Packet]) bool {
	return q.purging.Load() || q.canRestart()
}

// canRestart is can_drain's probe, for mp_ring and for a stalled drbr
// queue: safe beside the queue's consumer.
func (q *txq) canRestart() bool {
	// TXQ_AVAIL > MAX_TX_DESC, read from the consumer's published mirror
	// of ift_in_use (FreeBSD reads the consumer's fields unlocked).
	if q.size-q.pad-int(q.inUseA.Load()) > q.maxTxDesc() {
		return true
	}
	// FreeBSD syncs the ring POSTREAD here; we do not, because this probe
	// may run while another goroutine is the queue's consumer and a busdma
	// map is used by one goroutine at a time. The TxRx contract makes the
	// clear=false probe read only what is safe concurrently (registers).
	return q.ctx.txrx.TxdCreditsUpdate(q.id, false) != 0
}
