package iflib

import (
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// RingMem is struct iflib_dma_info: one descriptor ring's DMA memory as
// handed to the driver by IFDI_{TX,RX}_QUEUES_ALLOC.
type RingMem struct {
	Vaddr []byte         // idi_vaddr: the CPU's view
	Paddr busdma.BusAddr // idi_paddr: the device's view
	mem   *busdma.DMAMem
}

// Sync syncs the ring memory (bus_dmamap_sync on idi_map).
func (r RingMem) Sync(op busdma.SyncOp) {
	if r.mem != nil {
		r.mem.Sync(op)
	}
}

// sdFlag tags an ifsd_m entry with the map it was loaded on, as
// IFLIB_TSO / IFLIB_NO_TSO tag the low bits of the pointer in FreeBSD.
const (
	sdNoTSO uint8 = 2 // IFLIB_NO_TSO
	sdTSO   uint8 = 1 // IFLIB_TSO
)

// txq is struct iflib_txq.
//
// Invariants: the hardware-ring state below (pidx … segs) is touched only
// by the queue's consumer, which the transmit mode (path) decides: the
// mp_ring consumer (exclusive by the BUSY flag), the holder of the queue
// lock (simple mode), the holder of the DRBR's lock (drbr mode: xmit, its
// doorbell hook, the TX task's Do), or the teardown with everything else
// stopped. ifsd_m[i] != nil exactly when slot i starts a
// packet whose map is loaded; the map is unloaded and the packet freed by
// reclaim, or by the error paths of encap.
type txq struct {
	ctx  *Context
	id   int     // ift_id
	size int     // ift_size: descriptors
	mask int     // size - 1
	pad  int     // ift_pad (isc_tx_pad)
	ring RingMem // ift_ifdi

	tag    *busdma.Tag   // ift_buf_tag
	tsoTag *busdma.Tag   // ift_tso_buf_tag (nil without TSO)
	maps   []*busdma.Map // ifsd_map
	tsoMap []*busdma.Map // ifsd_tso_map
	// syncBufs is false when every sync of the buffer maps would be empty
	// (busdma.Tag.SyncNeeded): the hot paths then skip the calls.
	syncBufs bool
	sdM      []*Packet // ifsd_m: the packet at its first descriptor
	sdFl     []uint8   // the IFLIB_TSO / IFLIB_NO_TSO tag of ifsd_m
	// sdN is the number of descriptors the packet at its first descriptor
	// uses (ipi_new_pidx - ipi_pidx): reclaim frees a packet only once the
	// device's credits cover its last descriptor (goiflib; see reclaim).
	sdN []int32

	// hold is the queue's admission word (hold.go): the senders inside,
	// holdClosed and holdOwed.
	hold atomic.Int64
	// wd is the watchdog's view of the queue between timer periods; the
	// timer goroutine's (Init resets it with the timer stopped).
	wd watchdogState

	// Hardware-ring state, consumer-owned (see the invariants).
	pidx          int  // ift_pidx
	cidx          int  // ift_cidx
	gen           bool // ift_gen: pidx wrapped and cidx has not yet
	inUse         int  // ift_in_use
	processed     int  // ift_processed
	cleaned       int  // ift_cleaned
	cidxProcessed int  // ift_cidx_processed
	dbPending     int  // ift_db_pending
	npending      int  // ift_npending
	rsPending     int  // ift_rs_pending
	segs          []busdma.Segment
	bufs          [][]byte
	pi            PktInfo
	piHdr         bool // pi's header fields were set by the last packet
	defrag        [MaxTxSegs]*Packet
	// caches take the packets reclaim frees, one per zone seen (the
	// forwarded packets of an RX zone, a sender's zone): one zone lock per
	// half bucket instead of one per buffer. Consumer-owned; flushed at stop.
	caches  [4]*ZoneCache
	evictAt int

	// path is the queue in its transmit mode (tx.go), built at Register:
	// its software ring, and who the consumer is.
	path txPath
	// idleReclaim is the timer's request that the consumer's next reclaim
	// take everything the device reported done, without the nsegments lag,
	// and return the queue's cached packets to their zones (the queue went
	// idle: idleCheck). Set by the timer, cleared by the consumer.
	idleReclaim atomic.Bool

	wake  chan struct{} // GROUPTASK_ENQUEUE(&ift_task), buffered 1
	retry *time.Timer   // the task's retry when the queue's lock was held (the task's)
	cpu   int

	st counters[txCounter]
	// Mirrors of the consumer's state for concurrent readers (the sysctl
	// tree, can_drain, the watchdog), stored once per pass (publish).
	pidxA, cidxA, inUseA, dbPendingA, rsPendingA atomic.Int64
	processedA, cleanedA                         atomic.Uint64
}

// errNoDesc is ENOBUFS from iflib_encap's ring-space check: the packet was
// not consumed; the caller keeps it (mpring, drbr) or frees it (simple).
var errNoDesc = ErrNoBufs

// getInuse is get_inuse(size, cidx, pidx, gen).
func (q *txq) getInuse() int {
	switch {
	case q.pidx > q.cidx:
		return q.pidx - q.cidx
	case q.pidx < q.cidx:
		return q.size - q.cidx + q.pidx
	case q.gen:
		return q.size
	}
	return 0
}

// avail is TXQ_AVAIL: (size - pad) - in use.
func (q *txq) avail() int { return q.size - q.pad - q.getInuse() }

// maxTxDesc is MAX_TX_DESC(ctx).
func (q *txq) maxTxDesc() int {
	sc := &q.ctx.sc
	return max(sc.TxNSegments, sc.TxTSOSegmentsMax)
}

// notifyCount is TXD_NOTIFY_COUNT.
func (q *txq) notifyCount() int { return q.size/DefaultTxUpdateFreq - 1 }

// deferTier is the in-use tier that txq_max_db_deferred and
// txq_max_rs_deferred both switch on: 0 up to size/8 descriptors in use,
// then 1, 2 and 3 above size/8, size/4 and size/2.
func (q *txq) deferTier() int {
	minthresh := q.size / 8
	switch {
	case q.inUse > 4*minthresh:
		return 3
	case q.inUse > 2*minthresh:
		return 2
	case q.inUse > minthresh:
		return 1
	}
	return 0
}

// maxDBDeferred is txq_max_db_deferred: TXD_NOTIFY_COUNT, >>1, >>3 by
// tier, 0 at the lowest.
func (q *txq) maxDBDeferred() int {
	n := q.notifyCount()
	switch q.deferTier() {
	case 3:
		return n
	case 2:
		return n >> 1
	case 1:
		return n >> 3
	}
	return 0
}

// maxRSDeferred is txq_max_rs_deferred: TXD_NOTIFY_COUNT, >>1, >>2 by
// tier, 2 at the lowest.
func (q *txq) maxRSDeferred() int {
	n := q.notifyCount()
	switch q.deferTier() {
	case 3:
		return n
	case 2:
		return n >> 1
	case 1:
		return n >> 2
	}
	return 2
}

// dbCheck is iflib_txd_db_check: ring the doorbell when asked, when the
// deferral tier is reached, or when the ring is nearly full. Unlike
// FreeBSD it never rings with nothing pending (FreeBSD's tier 0 rings a
// redundant doorbell); the result is the same descriptors made visible.
// Preconditions: the caller is the queue's consumer.
func (q *txq) dbCheck(ring bool) bool {
	if q.dbPending == 0 {
		return false
	}
	if !ring && q.dbPending < q.maxDBDeferred() && q.avail() > q.maxTxDesc() {
		return false
	}
	dbval := q.pidx
	if q.npending != 0 {
		dbval = q.npending
	}
	q.ring.Sync(busdma.PreRead | busdma.PreWrite)
	q.ctx.txrx.TxdFlush(q.id, dbval)
	q.dbPending, q.npending = 0, 0
	q.st.inc(txDoorbells, 1)
	return true
}

// creditsUpdate is iflib_tx_credits_update.
func (q *txq) creditsUpdate() int {
	q.ring.Sync(busdma.PostRead)
	credits := q.ctx.txrx.TxdCreditsUpdate(q.id, true)
	if credits <= 0 {
		return 0
	}
	q.processed += credits
	q.cidxProcessed = (q.cidxProcessed + credits) & q.mask
	// Publish the progress at once, not at the end of the pass: the
	// watchdog's probe reads the device's unconsumed credits, so a
	// consumer descheduled between this call and its publish would look
	// like a device that completed nothing.
	q.processedA.Store(uint64(q.processed))
	return credits
}

// reclaimable is iflib_txq_can_reclaim without the tick rate limit: it
// updates the credits and returns the descriptors the device reported done
// and reclaim has not yet cleaned (processed - cleaned), or 0 when
// FreeBSD's DESC_RECLAIMABLE = processed - cleaned - isc_tx_nsegments is
// not above the threshold (force ignores the threshold, as
// iflib_completed_tx_reclaim_force does).
//
// FreeBSD reclaims DESC_RECLAIMABLE descriptors and frees each packet
// whose first descriptor lies among them: the lag of nsegments is all that
// keeps a packet whose credits end inside it (head write-back, as ixl)
// mapped while the device still reads its later buffers, and a packet may
// span more than that (a TSO packet of up to isc_tx_tso_segments_max
// descriptors, a packet with both pad descriptors). Here reclaim frees a
// packet only when the credits cover its last descriptor (sdN), so no lag
// is needed for safety; the lag only decides when to reclaim, as in
// FreeBSD. (FreeBSD's reclaim_force also admits a negative
// DESC_RECLAIMABLE, which makes ift_cleaned go backwards.)
func (q *txq) reclaimable(force bool) int {
	q.creditsUpdate()
	r := q.processed - q.cleaned
	if r <= 0 || !force && r-q.ctx.sc.TxNSegments <= q.ctx.cfg.TxReclaimThresh {
		return 0
	}
	return r
}

// reclaim is _iflib_completed_tx_reclaim + iflib_tx_desc_free: walk the
// packets from cidx whose every descriptor lies within the n credited
// ones; for each: POSTWRITE, unload, free. A packet the credits end
// inside stays (the device may still read it). It returns the
// descriptors cleaned.
func (q *txq) reclaim(n int) int {
	if n <= 0 {
		return 0
	}
	cidx, done := q.cidx, 0
	freed := uint64(0)
	for done < n {
		nd := 1
		if m := q.sdM[cidx]; m != nil {
			if nd = int(q.sdN[cidx]); done+nd > n {
				break
			}
			q.unloadSlot(cidx)
			q.freePacket(m)
			freed++
		}
		if cidx+nd >= q.size {
			q.gen = false // cidx wraps
		}
		cidx = (cidx + nd) & q.mask
		done += nd
	}
	q.cidx = cidx
	q.cleaned += done
	q.inUse -= done
	q.st.inc(txReclaimed, freed)
	return done
}

// freePacket frees a reclaimed chain through the queue's cache for its
// zone (m_freem, or the deferred free of tx_defer_mfree: both avoid taking
// the zone's lock per packet).
// Preconditions: the caller is the queue's consumer.
func (q *txq) freePacket(m *Packet) {
	z := m.zone
	for _, c := range q.caches {
		if c != nil && c.z == z {
			c.Put(m)
			return
		}
	}
	slot := -1
	for i, c := range q.caches {
		if c == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		// More zones than caches: replace the oldest cache.
		slot = q.evictAt
		q.evictAt = (q.evictAt + 1) % len(q.caches)
		q.caches[slot].Flush()
	}
	q.caches[slot] = z.NewCache()
	q.caches[slot].Put(m)
}

// flushCaches returns every cached packet to its zone.
func (q *txq) flushCaches() {
	for _, c := range q.caches {
		if c != nil {
			c.Flush()
		}
	}
}

// unloadSlot syncs POSTWRITE and unloads the map of slot i (by its
// IFLIB_TSO tag) and forgets the packet.
func (q *txq) unloadSlot(i int) {
	mp := q.maps[i]
	if q.sdFl[i] == sdTSO {
		mp = q.tsoMap[i]
	}
	if q.syncBufs {
		mp.Sync(busdma.PostWrite)
	}
	_ = mp.Unload()
	q.sdM[i], q.sdFl[i], q.sdN[i] = nil, 0, 0
}

// completedReclaim is iflib_completed_tx_reclaim, run by the queue's
// consumer in every mode. When the timer found the queue idle
// (idleReclaim) it is iflib_completed_tx_reclaim_force instead, and the
// queue's zone caches are flushed: at idle no packet the device reported
// done stays on the ring for lack of later traffic (goiflib; FreeBSD
// leaves the lag until the next transmit, docs/freebsd.md).
// Preconditions: the caller is the queue's consumer.
func (q *txq) completedReclaim() int {
	if q.idleReclaim.Load() && q.idleReclaim.Swap(false) {
		n := q.reclaimForce()
		q.flushCaches()
		return n
	}
	return q.reclaim(q.reclaimable(false))
}

// reclaimForce is iflib_completed_tx_reclaim_force.
func (q *txq) reclaimForce() int { return q.reclaim(q.reclaimable(true)) }

// publish makes one pass's counts and ring state visible (one atomic per
// moved counter and per mirror).
// Preconditions: the caller is the queue's consumer.
func (q *txq) publish() {
	q.st.publish()
	q.pidxA.Store(int64(q.pidx))
	q.cidxA.Store(int64(q.cidx))
	q.inUseA.Store(int64(q.inUse))
	q.dbPendingA.Store(int64(q.dbPending))
	q.rsPendingA.Store(int64(q.rsPending))
	q.processedA.Store(uint64(q.processed))
	q.cleanedA.Store(uint64(q.cleaned))
}

// freeAll is iflib_txsd_free after the device stopped: every packet still
// on the ring is unloaded and freed (POSTWRITE first); those beyond the
// device's last completion report are counted in stop_discards. The ring
// is zeroed (iflib_stop's bzero) and the indices reset (or cidx = pidx
// with IFLIB_PRESERVE_TX_INDICES).
// Preconditions: the device is stopped and no other goroutine uses q.
func (q *txq) freeAll() {
	q.creditsUpdate()
	// Descriptors cleaned..processed were reported sent; the rest were not.
	// A packet counts as sent only if its last descriptor was reported (with
	// head write-back the report can stop inside a packet).
	done, inUse := q.processed-q.cleaned, q.getInuse()
	for i, k := q.cidx, 0; k < inUse; {
		m := q.sdM[i]
		if m == nil {
			i, k = (i+1)&q.mask, k+1
			continue
		}
		nd := int(q.sdN[i])
		q.unloadSlot(i)
		if k+nd > done { // its last descriptor was not reported
			q.st.inc(txStopDiscards, 1)
		}
		q.freePacket(m)
		i, k = (i+nd)&q.mask, k+nd
	}
	q.flushCaches()
	q.ring.zero()
	if q.ctx.shared.Flags&FlagPreserveTxIdx != 0 {
		q.cidx = q.pidx
	} else {
		q.pidx, q.cidx = 0, 0
	}
	q.gen = false
	q.inUse, q.dbPending, q.npending, q.rsPending = 0, 0, 0, 0
	q.processed, q.cleaned, q.cidxProcessed = 0, 0, q.cidx
	q.publish()
}

// canRestart is can_drain's probe, for a stalled software ring (the
// mp_ring's can_drain, drbr's restart): safe beside the queue's consumer.
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

// taskRetry is how soon a TX task that found its queue's lock held looks
// again.
const taskRetry = 100 * time.Microsecond

// retrySoon schedules the queue's task after taskRetry.
// Preconditions: called from the queue's task.
func (q *txq) retrySoon() {
	if q.retry == nil {
		q.retry = time.AfterFunc(taskRetry, q.kick)
		return
	}
	q.retry.Reset(taskRetry)
}

// kick is GROUPTASK_ENQUEUE(&txq->ift_task).
func (q *txq) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
