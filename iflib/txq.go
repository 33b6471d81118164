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
// flag), or the holder of mu (simple and drbr modes, the TX task's reclaim
// in those modes, and Stop). ifsd_m[i] != nil exactly when slot i starts a
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
	sdM    []*Packet     // ifsd_m: the packet at its first descriptor
	sdFl   []uint8       // the IFLIB_TSO / IFLIB_NO_TSO tag of ifsd_m

	mu sync.Mutex // ift_mtx: serializes the consumer in simple and drbr modes

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
	defrag        [MaxTxSegs]*Packet

	mpr  *mpring.Ring[*Packet]
	drbr *bufring.DRBR[*Packet]
	// sentinel is the item the TX task enqueues to become the mp_ring's
	// consumer (FreeBSD enqueues the txq pointer itself).
	sentinel *Packet
	purging  atomic.Bool // IFC_QFLUSH for this queue: the drain frees everything

	wake chan struct{} // GROUPTASK_ENQUEUE(&ift_task), buffered 1
	cpu  int

	st txqStats
}

// txqStats are the per-queue counters (dev.X.Y.iflib.txqN.*) and the
// interface counters iflib maintains on TX.
type txqStats struct {
	mbufDefrag       atomic.Uint64 // mbuf_defrag
	mbufDefragFailed atomic.Uint64 // mbuf_defrag_failed
	noDescAvail      atomic.Uint64 // no_desc_avail
	mapFailed        atomic.Uint64 // tx_map_failed
	encapEFBIG       atomic.Uint64 // txd_encap_efbig
	noTxDMASetup     atomic.Uint64 // no_tx_dma_setup
	pullups          atomic.Uint64 // m_pullups
	collapses        atomic.Uint64 // chains collapsed (m_collapse) before defrag
	oPackets         atomic.Uint64 // IFCOUNTER_OPACKETS
	oBytes           atomic.Uint64 // IFCOUNTER_OBYTES
	oMcasts          atomic.Uint64 // IFCOUNTER_OMCASTS
	oqDrops          atomic.Uint64 // IFCOUNTER_OQDROPS
	oErrors          atomic.Uint64 // IFCOUNTER_OERRORS
	doorbells        atomic.Uint64 // isc_txd_flush calls
	reclaimed        atomic.Uint64 // packets freed by reclaim
	processedA       atomic.Uint64 // txq_processed (mirror)
	cleanedA         atomic.Uint64 // txq_cleaned (mirror)
	pidxA, cidxA     atomic.Int64  // txq_pidx, txq_cidx (mirrors)
	inUseA           atomic.Int64  // txq_in_use (mirror)
	taskRuns         atomic.Uint64 // TX task passes
	drainNotReady    atomic.Uint64 // txq_drain_notready: drain while not running
	drainNoDesc      atomic.Uint64 // drains that stalled for lack of descriptors
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

// maxDBDeferred is txq_max_db_deferred.
func (q *txq) maxDBDeferred(inUse int) int {
	notify, minthresh := q.notifyCount(), q.size/8
	switch {
	case inUse > 4*minthresh:
		return notify
	case inUse > 2*minthresh:
		return notify >> 1
	case inUse > minthresh:
		return notify >> 3
	}
	return 0
}

// maxRSDeferred is txq_max_rs_deferred.
func (q *txq) maxRSDeferred() int {
	notify, minthresh := q.notifyCount(), q.size/8
	switch {
	case q.inUse > 4*minthresh:
		return notify
	case q.inUse > 2*minthresh:
		return notify >> 1
	case q.inUse > minthresh:
		return notify >> 2
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
	if !ring && q.dbPending < q.maxDBDeferred(q.inUse) && q.avail() > q.maxTxDesc() {
		return false
	}
	dbval := q.pidx
	if q.npending != 0 {
		dbval = q.npending
	}
	q.ring.Sync(busdma.PreRead | busdma.PreWrite)
	q.ctx.txrx.TxdFlush(q.id, dbval)
	q.dbPending, q.npending = 0, 0
	q.st.doorbells.Add(1)
	q.st.pidxA.Store(int64(q.pidx))
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
	q.st.processedA.Store(uint64(q.processed))
	return credits
}

// reclaimable is iflib_txq_can_reclaim without the tick rate limit:
// DESC_RECLAIMABLE = processed - cleaned - isc_tx_nsegments, if above the
// threshold. Reclaim deliberately lags the hardware by nsegments.
func (q *txq) reclaimable(force bool) int {
	q.creditsUpdate()
	r := q.processed - q.cleaned
	if !force {
		r -= q.ctx.sc.TxNSegments
		if r <= q.ctx.cfg.TxReclaimThresh {
			return 0
		}
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
			mp := q.maps[cidx]
			if q.sdFl[cidx] == sdTSO {
				mp = q.tsoMap[cidx]
			}
			mp.Sync(busdma.PostWrite)
			_ = mp.Unload()
			q.sdM[cidx] = nil
			q.sdFl[cidx] = 0
			m.Free()
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
	q.st.reclaimed.Add(freed)
	q.st.cleanedA.Store(uint64(q.cleaned))
	q.st.cidxA.Store(int64(q.cidx))
	q.st.inUseA.Store(int64(q.inUse))
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

// freeAll is iflib_txsd_free after the device stopped: every packet still
// on the ring is unloaded and freed (POSTWRITE first), and the indices
// reset (or cidx = pidx with IFLIB_PRESERVE_TX_INDICES).
// Preconditions: the device is stopped and no other goroutine uses q.
func (q *txq) freeAll() {
	q.creditsUpdate()
	for i := range q.sdM {
		if m := q.sdM[i]; m != nil {
			mp := q.maps[i]
			if q.sdFl[i] == sdTSO {
				mp = q.tsoMap[i]
			}
			mp.Sync(busdma.PostWrite)
			_ = mp.Unload()
			q.sdM[i], q.sdFl[i] = nil, 0
			m.Free()
		}
	}
	if q.ctx.shared.Flags&FlagPreserveTxIdx != 0 {
		q.cidx = q.pidx
	} else {
		q.pidx, q.cidx = 0, 0
	}
	q.gen = false
	q.inUse, q.dbPending, q.npending, q.rsPending = 0, 0, 0, 0
	q.processed, q.cleaned, q.cidxProcessed = 0, 0, q.cidx
	q.st.pidxA.Store(int64(q.pidx))
	q.st.cidxA.Store(int64(q.cidx))
	q.st.inUseA.Store(0)
}

// kick is GROUPTASK_ENQUEUE(&txq->ift_task).
func (q *txq) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
