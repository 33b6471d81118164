package iflib

import (
	"sync"
	"sync/atomic"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/mpring"
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
// by the queue's consumer: the mp_ring consumer (exclusive by the BUSY
// flag), the holder of mu (simple mode), the holder of the DRBR's lock
// (drbr mode: xmit, its doorbell hook, the TX task's Do), or Stop with
// everything else stopped. ifsd_m[i] != nil exactly when slot i starts a
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

	mu sync.Mutex // ift_mtx in simple mode (drbr mode uses the DRBR's lock)

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

	path txPath // the transmit mode, chosen at Register
	mpr  *mpring.Ring[*Packet]
	drbr *bufring.DRBR[*Packet]
	// sentinel is the item the TX task enqueues to become the mp_ring's
	// consumer (FreeBSD enqueues the txq pointer itself).
	sentinel *Packet
	purging  atomic.Bool // IFC_QFLUSH for this queue: the drain frees everything

	wake chan struct{} // GROUPTASK_ENQUEUE(&ift_task), buffered 1
	cpu  int

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
	return credits
}

// reclaimable is iflib_txq_can_reclaim without the tick rate limit:
// DESC_RECLAIMABLE = processed - cleaned - isc_tx_nsegments, if above the
// threshold (force ignores the threshold, as
// iflib_completed_tx_reclaim_force does). Reclaim always lags the hardware
// by nsegments: drivers whose credits can end inside a packet (head
// write-back, as ixl) rely on it. FreeBSD's reclaim_force tests
// `reclaim != 0` and so admits a negative DESC_RECLAIMABLE, which makes
// ift_cleaned go backwards; here a negative value is nothing.
func (q *txq) reclaimable(force bool) int {
	q.creditsUpdate()
	r := q.processed - q.cleaned - q.ctx.sc.TxNSegments
	if !force && r <= q.ctx.cfg.TxReclaimThresh {
		return 0
	}
	return max(r, 0)
}

// reclaim is _iflib_completed_tx_reclaim + iflib_tx_desc_free: walk n slots
// from cidx; for each packet: POSTWRITE, unload, free.
func (q *txq) reclaim(n int) {
	if n <= 0 {
		return
	}
	cidx := q.cidx
	freed := uint64(0)
	for i := 0; i < n; i++ {
		if m := q.sdM[cidx]; m != nil {
			q.unloadSlot(cidx)
			q.freePacket(m)
			freed++
		}
		cidx = (cidx + 1) & q.mask
		if cidx == 0 {
			q.gen = false
		}
	}
	q.cidx = cidx
	q.cleaned += n
	q.inUse -= n
	q.st.inc(txReclaimed, freed)
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
	q.sdM[i], q.sdFl[i] = nil, 0
}

// completedReclaim is iflib_completed_tx_reclaim.
func (q *txq) completedReclaim() int {
	n := q.reclaimable(false)
	q.reclaim(n)
	return n
}

// reclaimForce is iflib_completed_tx_reclaim_force.
func (q *txq) reclaimForce() int {
	n := q.reclaimable(true)
	q.reclaim(n)
	return n
}

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

// hwBusy reports, from the mirrors, whether descriptors were handed to the
// device (doorbell rung) that it should have reported complete by now:
// outstanding descriptors beyond those after the last report requested
// (rs_pending: a device reports completion only at an RS descriptor, so
// the tail of an idle ring is never reported), the newer watchdog's
// "outstanding > rs_pending".
func (q *txq) hwBusy() bool {
	outstanding := q.inUseA.Load() - int64(q.processedA.Load()-q.cleanedA.Load())
	return outstanding-q.dbPendingA.Load()-q.rsPendingA.Load() > 0
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
	for i, k := q.cidx, 0; k < inUse; i, k = (i+1)&q.mask, k+1 {
		m := q.sdM[i]
		if m == nil {
			continue
		}
		last := k // the packet's last descriptor: before the next packet's first
		for j, kk := (i+1)&q.mask, k+1; kk < inUse && q.sdM[j] == nil; j, kk = (j+1)&q.mask, kk+1 {
			last = kk
		}
		q.unloadSlot(i)
		if last >= done {
			q.st.inc(txStopDiscards, 1)
		}
		q.freePacket(m)
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

// purge is iflib_ifmp_purge (mpring) or drbr_flush: free what is still
// queued, counting each as an oqdrop.
// Preconditions: no transmit in flight and the TX task stopped.
func (q *txq) purge() {
	switch {
	case q.mpr != nil:
		q.purging.Store(true)
		q.mpr.CheckDrainage(MPRingSize)
		q.purging.Store(false)
	case q.drbr != nil:
		n := q.drbr.Flush(func(m *Packet) { m.Free() })
		q.st.add(txOQDrops, uint64(n))
	}
}

// kick is GROUPTASK_ENQUEUE(&txq->ift_task).
func (q *txq) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
