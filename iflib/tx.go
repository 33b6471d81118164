package iflib

import (
	"github.com/goiflib/goiflib/mpring"
	"github.com/goiflib/goiflib/prefetch"
	"unsafe"
)

// Transmit is if_transmit: iflib_if_transmit (mpring mode),
// iflib_simple_transmit (simple mode) or the seed 003 drbr transmit.
//
// Ownership: the packet is iflib's from this call on, whatever the result.
// nil means it was sent or queued; on an error it has been freed and
// counted (ErrNotRunning and ErrNoBufs in oqdrops, others in oerrors).
// Only ErrNilPacket counts nothing.
func (c *Context) Transmit(m *Packet) error {
	if m == nil {
		return ErrNilPacket
	}
	// Stop flips running and then waits for inflight to drain: a sender
	// counts itself in only after seeing running, and re-checks after, so
	// senders that arrive once Stop has begun never hold it up.
	if !c.running.Load() {
		return c.notRunning(m)
	}
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	if !c.running.Load() || c.link.Load() != int32(LinkStateUp) {
		return c.notRunning(m)
	}
	q := c.txqs[c.selectQueue(m)]
	n := m.ChainLen() // one walk of the chain per packet
	if m.Hdr.Len <= 0 {
		m.Hdr.Len = n
	}
	if n == 0 {
		q.st.oErrors.Add(1)
		m.Free()
		return ErrEmptyPacket
	}
	if m.Hdr.Len != n || n > c.txMaxLen(m) {
		// Checked here rather than at encap so every mode reports it to
		// the sender (mpring would otherwise fail it later, in the drain).
		q.st.oErrors.Add(1)
		m.Free()
		return ErrTooBig
	}
	switch c.cfg.TxMode {
	case TxModeSimple:
		return q.simpleTransmit(m)
	case TxModeDRBR:
		// DRBR.Transmit never drops: it sends, defers, or waits for room.
		if err := q.drbr.Transmit(m); err != nil {
			q.st.oErrors.Add(1)
			m.Free()
			return err
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
		q.st.oqDrops.Add(1)
		m.Free()
		return ErrNoBufs
	}
	return nil
}

// txMaxLen is the maxsize of the tag the packet will be loaded on.
func (c *Context) txMaxLen(m *Packet) int {
	if m.Hdr.CsumFlags&CsumTSO != 0 && c.shared.TSOMaxSize > 0 {
		return c.shared.TSOMaxSize
	}
	return c.shared.TxMaxSize
}

// notRunning drops a packet sent while the interface is down (ENETDOWN).
func (c *Context) notRunning(m *Packet) error {
	if len(c.txqs) > 0 {
		c.txqs[0].st.oqDrops.Add(1)
	}
	m.Free()
	return ErrNotRunning
}

// selectQueue is the queue choice of iflib_if_transmit: a driver selector,
// else QIDX for hashed packets when there are several queues, else queue 0.
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
	return 0
}

// simpleTransmit is iflib_simple_transmit: encap under the queue lock, a
// doorbell per packet, opportunistic reclaim. A lack of descriptors drops.
func (q *txq) simpleTransmit(m *Packet) error {
	q.mu.Lock()
	err := q.encap(m)
	switch err {
	case nil:
		q.dbCheck(true)
	case errNoDesc:
		q.st.oqDrops.Add(1)
		m.Free()
	default:
		q.st.oErrors.Add(1)
	}
	q.completedReclaim()
	q.mu.Unlock()
	return err
}

// drbrXmit is the DRBR transmit callback, called with the DRBR lock held:
// encap under the queue lock, doorbell per packet, opportunistic reclaim.
// It refuses (false) only for lack of descriptors; the packet then stays at
// the head of the buf_ring for a later Drain.
func (q *txq) drbrXmit(m *Packet) bool {
	q.mu.Lock()
	if q.avail() < 2*q.maxTxDesc() {
		q.completedReclaim()
	}
	err := q.encap(m)
	switch err {
	case nil:
		q.dbCheck(true)
	case errNoDesc:
		q.mu.Unlock()
		return false
	default:
		q.st.oErrors.Add(1)
	}
	q.mu.Unlock()
	return true
}

// txqDrain is iflib_txq_drain, the mp_ring consumer: reclaim, then encap up
// to TX_BATCH_SIZE items while a worst-case packet fits, then the doorbell.
// It returns how many items it consumed; 0 stalls the ring.
func (q *txq) txqDrain(r *mpring.Ring[*Packet], cidx, pidx int) int {
	avail := r.IdxDiff(pidx, cidx)
	if q.purging.Load() {
		// IFC_QFLUSH / iflib_txq_drain_free: free all but sentinels.
		for i := 0; i < avail; i++ {
			s := r.Slot(r.IncrementIdx(cidx, i))
			if m := *s; m != q.sentinel && m != nil {
				q.st.oqDrops.Add(1)
				m.Free()
			}
			*s = nil
		}
		return avail
	}
	if !q.ctx.running.Load() || q.ctx.link.Load() != int32(LinkStateUp) {
		q.st.drainNotReady.Add(1)
		return 0 // txq_drain_notready
	}
	reclaimed := q.completedReclaim()
	rang := q.dbCheck(reclaimed > 0 && q.dbPending > 0)

	count := min(avail, TxBatchSize)
	prefetchOn := q.ctx.cfg.Prefetch
	consumed := 0
	var err error
	for i := 0; i < count && q.avail() >= q.maxTxDesc(); i++ {
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
		err = q.encap(m)
		if err == errNoDesc {
			break
		}
		*s = nil
		consumed++
		if err != nil {
			q.st.oErrors.Add(1)
		}
		if q.dbCheck(false) {
			rang = true
		}
	}
	if consumed == 0 {
		q.st.drainNoDesc.Add(1)
	}
	ring := !rang && (q.ctx.cfg.MinTxLatency || err != nil || q.ctx.cfg.TxReclaimThresh > 0)
	if !q.dbCheck(ring) && consumed > 0 && q.dbPending > 0 && q.inUse-q.dbPending <= 0 {
		// Nothing in flight would raise a completion to ring the deferred
		// doorbell later: ring it now (FreeBSD relies on iflib_timer).
		q.dbCheck(true)
	}
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
	if q.size-q.pad-int(q.st.inUseA.Load()) > q.maxTxDesc() {
		return true
	}
	// FreeBSD syncs the ring POSTREAD here; we do not, because this probe
	// may run while another goroutine is the queue's consumer and a busdma
	// map is used by one goroutine at a time. The TxRx contract makes the
	// clear=false probe read only what is safe concurrently (registers).
	return q.ctx.txrx.TxdCreditsUpdate(q.id, false) != 0
}
