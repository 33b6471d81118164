package iflib

import (
	"unsafe"

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
// oqdrops; ErrEmptyPacket, ErrBadLength, ErrTooBig, ErrWrongSpace and
// ErrNoMem in oerrors. Never use a packet after passing it here: a failed
// Transmit has freed it, and the zone may already have handed the same
// pointer to someone else.
//
// Errors by mode, beyond the checks every mode makes first (nil, foreign,
// freed, not running, link down, empty, bad length, too big, wrong space):
//   - mpring: ErrNoBufs when the mp_ring is full. Mapping failures happen
//     later, in the drain: they are counted, not returned.
//   - simple: ErrNoBufs when the descriptors are exhausted; ErrNoMem when
//     the DMA mapping (or defrag) fails; a driver encap error.
//   - drbr: never drops for lack of space (the sender waits);
//     ErrNotRunning when Stop wakes a waiting sender.
func (c *Context) Transmit(m *Packet) error {
	if m == nil {
		return ErrNilPacket
	}
	if m.zone == nil {
		if len(c.txqs) > 0 {
			c.txqs[0].st.add(txOErrors, 1)
		}
		return ErrForeignPacket
	}
	if m.free.Load() {
		m.zone.usedAfterFree(m, "Transmit")
		return ErrUseAfterFree
	}
	// Stop clears running and then waits for inflight to drain: a sender
	// counts itself in only after seeing running, and re-checks after, so
	// senders that arrive once Stop has begun never hold it up.
	if !c.running.Load() {
		return c.dropTx(nil, m, ErrNotRunning)
	}
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	if !c.running.Load() {
		return c.dropTx(nil, m, ErrNotRunning)
	}
	if c.link.Load() != int32(LinkStateUp) {
		return c.dropTx(nil, m, ErrLinkDown)
	}
	q := c.txqs[c.selectQueue(m)]
	if err := c.checkTx(m); err != nil {
		if err == ErrUseAfterFree || err == ErrForeignPacket {
			return err
		}
		return c.dropTx(q, m, err)
	}
	switch c.cfg.TxMode {
	case TxModeSimple:
		return q.simpleTransmit(m)
	case TxModeDRBR:
		// DRBR.Transmit never drops: it sends, defers, or waits for room.
		if err := q.drbr.Transmit(m); err != nil {
			return c.dropTx(q, m, err)
		}
		return nil
	}
	abdicate := c.cfg.TxAbdicate
	err := q.mpr.EnqueueOne(m, TxBatchSize, abdicate)
	if abdicate {
		q.kick()
	}
	if err != nil {
		if !abdicate {
			q.kick()
		}
		q.mpr.CheckDrainage(TxBatchSize)
		return c.dropTx(q, m, ErrNoBufs)
	}
	return nil
}

// checkTx validates a packet before it is queued: one walk of the chain
// checks every buffer is live and from a zone of the device's space, and
// sums the lengths (m_pkthdr.len must equal the sum of m_len; 0 means "fill
// it in").
func (c *Context) checkTx(m *Packet) error {
	n := 0
	for p := m; p != nil; p = p.Next {
		switch {
		case p.zone == nil:
			return ErrForeignPacket
		case p != m && p.free.Load():
			p.zone.usedAfterFree(p, "Transmit (a buffer of the chain)")
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
	}
	return nil
}

// dropTx frees and counts a packet Transmit will not send: ENETDOWN and
// ENOBUFS as oqdrops, everything else as oerrors (iflib_if_transmit's
// accounting). q nil means queue 0.
func (c *Context) dropTx(q *txq, m *Packet, err error) error {
	if q == nil && len(c.txqs) > 0 {
		q = c.txqs[0]
	}
	if q != nil {
		switch err {
		case ErrNotRunning, ErrLinkDown, ErrNoBufs:
			q.st.add(txOQDrops, 1)
		default:
			q.st.add(txOErrors, 1)
		}
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

// selectQueue is the queue choice of iflib_if_transmit: a driver selector,
// else QIDX for hashed packets when there are several queues, else queue 0
// (the mp_ring path) or the last queue (iflib_simple_select_queue, simple
// and drbr modes).
func (c *Context) selectQueue(m *Packet) int {
	n := len(c.txqs)
	if c.txqSelect != nil {
		if q := c.txqSelect(m); q >= 0 && q < n {
			return q
		}
		return 0
	}
	if n > 1 && m.Hdr.HashType != HashNone {
		// QIDX: ((flowid & isc_rss_table_mask) % NTXQSETS) + FIRST_QSET
		return int(m.Hdr.FlowID&uint32(c.sc.RSSTableSize-1)) % n
	}
	if c.cfg.TxMode != TxModeMPRing {
		return n - 1
	}
	return 0
}

// simpleTransmit is iflib_simple_transmit: encap under the queue lock, a
// doorbell per packet, opportunistic reclaim. A lack of descriptors drops.
func (q *txq) simpleTransmit(m *Packet) error {
	q.mu.Lock()
	err := q.encap(&m)
	switch err {
	case nil:
		q.dbCheck(true)
	case errNoDesc:
		q.st.inc(txOQDrops, 1)
		m.Free()
	}
	q.completedReclaim()
	q.publish()
	q.mu.Unlock()
	return err
}

// drbrXmit is the DRBR transmit callback, called with the DRBR lock held:
// encap under the queue lock, doorbell per packet, opportunistic reclaim.
// It refuses (false) while a worst-case packet might not fit, or while the
// interface is not running or the link is down; the packet then stays at
// the head of the buf_ring for a later Drain. Because it encaps only with
// TXQ_AVAIL >= MAX_TX_DESC (the mp_ring drain's guard), encap never runs
// out of descriptors here: a packet it accepts (even one collapse or
// defrag replaced) is on the ring or freed and counted.
func (q *txq) drbrXmit(m *Packet) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.publish()
	c := q.ctx
	if !c.running.Load() || c.link.Load() != int32(LinkStateUp) {
		q.st.inc(txDrainNotReady, 1)
		return false
	}
	if q.avail() < 2*q.maxTxDesc() {
		q.completedReclaim()
	}
	if q.avail() < q.maxTxDesc() {
		q.st.inc(txDrainNoDesc, 1)
		return false
	}
	if q.encap(&m) == nil {
		q.dbCheck(true)
	}
	return true
}

// txqDrain is iflib_txq_drain, the mp_ring consumer: reclaim, then encap up
// to TX_BATCH_SIZE items while a worst-case packet fits, then the doorbell.
// It returns how many items it consumed; 0 stalls the ring.
func (q *txq) txqDrain(r *mpring.Ring[*Packet], cidx, pidx int) int {
	defer q.publish()
	avail := r.IdxDiff(pidx, cidx)
	if q.purging.Load() {
		// IFC_QFLUSH / iflib_txq_drain_free: free all but sentinels.
		for i := 0; i < avail; i++ {
			s := r.Slot(r.IncrementIdx(cidx, i))
			if m := *s; m != q.sentinel && m != nil {
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
				prefetch.Pointer(unsafe.Pointer(n))
			}
		}
		if m == q.sentinel {
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
		// packet's check rang (FreeBSD overwrites it each time).
		rang = q.dbCheck(false)
	}
	if consumed == 0 {
		q.st.inc(txDrainNoDesc, 1)
	}
	ring := !rang && (c.cfg.MinTxLatency || (err != nil && err != errNoDesc) || c.cfg.TxReclaimThresh > 0)
	// A drain that encapsulated nothing (a sentinel from the task or the
	// timer) rings a deferred doorbell: no completion may come to ring it
	// later. FreeBSD relies on the same laggard kick but never forces the
	// doorbell there, so a deferred doorbell can stay pending.
	q.dbCheck(ring || (encapped == 0 && q.dbPending > 0))
	return consumed
}

// txqCanDrain is iflib_txq_can_drain: descriptors free, or completions
// pending.
func (q *txq) txqCanDrain(r *mpring.Ring[*Packet]) bool {
	if q.purging.Load() {
		return true
	}
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
