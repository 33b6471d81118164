package iflib

import (
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// rxeof results (IFLIB_RXEOF_*).
const (
	rxeofMore  = 1 // IFLIB_RXEOF_MORE: work remains, reschedule the task
	rxeofEmpty = 2 // IFLIB_RXEOF_EMPTY: a refill could not get buffers
)

// rxq is struct iflib_rxq.
//
// Inbound flow (one rxeof pass):
//
//	POSTREAD|POSTWRITE ring ─▶ RxdAvailable ─▶ RxdPktGet ─▶ per fragment: POSTREAD
//	   ├─ ≤ RxCopyThresh, one fragment: copy out; cluster stays mapped in its slot
//	   └─ otherwise: unload, hand the clusters up as a chain
//	─▶ refill (reuse ifsd_ba, load only new clusters) ─▶ RxdFlush
//	─▶ Input(batch) ─▶ MORE: run again; EMPTY: watchdog in 1 ms; else re-enable the interrupt
//
// All fields but the counters and wake are owned by the queue's task.
type rxq struct {
	ctx   *Context
	id    int
	cpu   int
	fls   []*freeList
	frags [MaxRxSegs]RxdFrag
	ri    RxdInfo
	batch []*Packet
	one   [1]*Packet
	wake  chan struct{}
	wdog  *time.Timer // ifr_watchdog

	st rxqStats
}

// rxqStats are the RX counters (interface counters and the debug counters
// of reference §10.1 that concern RX).
type rxqStats struct {
	iPackets    atomic.Uint64 // IFCOUNTER_IPACKETS (rx_pkts)
	iBytes      atomic.Uint64 // IFCOUNTER_IBYTES
	iqDrops     atomic.Uint64 // IFCOUNTER_IQDROPS: no packet for a copy
	iErrors     atomic.Uint64 // IFCOUNTER_IERRORS: bad packets from the device
	copies      atomic.Uint64 // small packets copied (RX_COPY_THRESH path)
	filtered    atomic.Uint64 // dropped by the early-drop filter (pfil), recycled
	rxUnavail   atomic.Uint64 // rx_unavail
	rxIfInput   atomic.Uint64 // rx_if_input: input calls
	rxdFlush    atomic.Uint64 // rxd_flush
	resets      atomic.Uint64 // IFC_DO_RESET requests from this queue
	watchdogs   atomic.Uint64 // RX watchdog arms after EMPTY
	intrEnables atomic.Uint64 // rx_intr_enables
	taskRuns    atomic.Uint64 // task_fn_rx
	ctxInactive atomic.Uint64 // rx_ctx_inactive
}

func (c *Context) newRxq(id int, rings []RingMem, low busdma.BusAddr) (*rxq, error) {
	q := &rxq{ctx: c, id: id, wake: make(chan struct{}, 1)}
	budget := c.rxBudget()
	q.batch = make([]*Packet, 0, budget)
	for j := 0; j < c.shared.NFL; j++ {
		size := c.sc.NRxd[j]
		buf := c.sc.RxdBufSize[j]
		if buf == 0 {
			buf = rxBufSizeFor(c.sc.MaxFrameSize)
		}
		zs := c.cfg.RxZoneSize
		if zs == 0 {
			zs = 2*size + 1024
		}
		fl, err := newFreeList(q, j, rings[j], size, buf, zs, low)
		if err != nil {
			q.free()
			return nil, err
		}
		q.fls = append(q.fls, fl)
	}
	return q, nil
}

func (c *Context) rxBudget() int {
	if c.cfg.RxBudget == 0 {
		return DefaultRxBudget
	}
	return c.cfg.RxBudget
}

func (c *Context) copyThresh() int {
	switch t := c.cfg.CopyThresh; {
	case t < 0:
		return -1
	case t == 0:
		return RxCopyThresh
	default:
		return t
	}
}

// setup is iflib_fl_setup for every list: free everything, then post
// min(128, size-1) buffers.
func (q *rxq) setup() {
	for _, fl := range q.fls {
		fl.bufsFree()
		fl.refill(min(InitialRxFill, fl.size-1))
	}
}

// stop is the RX part of iflib_stop: the task is already stopped and the
// device too; free the posted buffers.
func (q *rxq) stop() {
	if q.wdog != nil {
		q.wdog.Stop()
	}
	for _, fl := range q.fls {
		fl.bufsFree()
	}
}

// free is iflib_rx_structures_free.
func (q *rxq) free() {
	for _, fl := range q.fls {
		fl.bufsFree()
		fl.destroy()
	}
}

func (q *rxq) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// rxdAvail is iflib_rxd_avail: sync every free-list ring, then ask.
func (q *rxq) rxdAvail(cidx, budget int) int {
	for _, fl := range q.fls {
		fl.ring.Sync(busdma.PostRead | busdma.PostWrite)
	}
	return q.ctx.txrx.RxdAvailable(q.id, cidx, budget)
}

func (q *rxq) refillAll() int {
	r := 0
	for _, fl := range q.fls {
		r |= fl.refillAll()
	}
	return r
}

// validate checks a packet description before any slot is consumed, so a
// lying device cannot corrupt the free lists.
func (q *rxq) validate(ri *RxdInfo) bool {
	if ri.NFrags < 0 || ri.NFrags > len(q.frags) || ri.Pad < 0 {
		return false
	}
	total := 0
	for i := 0; i < ri.NFrags; i++ {
		f := ri.Frags[i]
		if int(f.FLID) >= len(q.fls) || !q.fls[f.FLID].validFrag(f) {
			return false
		}
		total += int(f.Len)
	}
	if ri.NFrags > 0 && (ri.Len != total || ri.Pad > int(ri.Frags[0].Len)) {
		return false
	}
	return true
}

// rxeof is iflib_rxeof: up to budget packets, refill, one Input call.
func (q *rxq) rxeof(budget int) int {
	c := q.ctx
	fl0 := q.fls[0]
	avail := q.rxdAvail(fl0.cidx, budget)
	if avail == 0 {
		q.st.rxUnavail.Add(1)
		return q.refillAll()
	}
	q.batch = q.batch[:0]
	left := budget
	for left > 0 && avail > 0 {
		if !c.running.Load() {
			q.st.ctxInactive.Add(1)
			break
		}
		ri := &q.ri
		*ri = RxdInfo{QSIdx: q.id, CIdx: fl0.cidx, Frags: q.frags[:]}
		if err := c.txrx.RxdPktGet(ri); err != nil || !q.validate(ri) {
			q.st.iErrors.Add(1)
			q.deliver()
			c.requestReset(q)
			return 0
		}
		avail--
		left--
		if ri.NFrags == 0 {
			continue
		}
		q.st.iPackets.Add(1)
		q.st.iBytes.Add(uint64(ri.Len))
		m := q.pktGet(ri)
		if avail == 0 && left > 0 {
			avail = q.rxdAvail(fl0.cidx, left)
		}
		if m == nil {
			continue
		}
		q.batch = append(q.batch, m)
	}
	ret := q.refillAll()
	q.deliver()
	if avail != 0 || q.rxdAvail(fl0.cidx, 1) != 0 {
		ret |= rxeofMore
	}
	return ret
}

// pktGet is iflib_rxd_pkt_get: the copy path or assemble_segments, then
// the packet header from ri.
func (q *rxq) pktGet(ri *RxdInfo) *Packet {
	c := q.ctx
	f0 := ri.Frags[0]
	fl := q.fls[f0.FLID]
	var m *Packet
	if ri.NFrags == 1 && f0.Len != 0 && int(f0.Len) <= c.copyThresh() {
		// Small-packet copy: the cluster stays mapped in its slot.
		cl := fl.fragToSD(f0, false)
		frame := cl.cl[ri.Pad:f0.Len]
		if c.rxFilter != nil && c.rxFilter(q.id, frame) {
			q.st.filtered.Add(1)
			return nil
		}
		var err error
		if m, err = fl.cache.Get(); err != nil {
			q.st.iqDrops.Add(1)
			return nil
		}
		m.Append(frame)
		q.st.copies.Add(1)
	} else {
		consumed := false
		if c.rxFilter != nil {
			// pfil_mem_in on the first buffer before anything is unloaded.
			s := fl.sdCl[f0.Idx]
			fl.sdMap[f0.Idx].Sync(busdma.PostRead)
			if c.rxFilter(q.id, s.cl[ri.Pad:f0.Len]) {
				q.st.filtered.Add(1)
				consumed = true
			}
		}
		var tail *Packet
		for i := 0; i < ri.NFrags; i++ {
			f := ri.Frags[i]
			sfl := q.fls[f.FLID]
			p := sfl.fragToSD(f, !consumed)
			if consumed || f.Len == 0 {
				// The cluster stays in its slot (still mapped).
				continue
			}
			pad := 0
			if m == nil {
				pad = ri.Pad
			}
			p.Next, p.Hdr = nil, PktHdr{}
			p.off, p.n = pad, int(f.Len)-pad
			if m == nil {
				m = p
			} else {
				tail.Next = p
			}
			tail = p
		}
		if m == nil {
			return nil
		}
	}
	m.Hdr = PktHdr{
		Len:       ri.Len - ri.Pad,
		Flags:     ri.Flags,
		VLANTag:   ri.VTag,
		FlowID:    ri.FlowID,
		HashType:  ri.RSSType,
		CsumFlags: ri.CsumFlags,
		CsumData:  ri.CsumData,
		RxQueue:   uint16(q.id),
	}
	return m
}

// deliver hands the batch to if_input: once for the batch (D27755), or
// per packet (the comparison), optionally sorted by flow first.
func (q *rxq) deliver() {
	b := q.batch
	if len(b) == 0 {
		return
	}
	c := q.ctx
	if c.cfg.RxSortByFlow {
		sortByFlow(b)
	}
	switch {
	case c.input == nil:
		for _, m := range b {
			m.Free()
		}
	case c.cfg.RxPerPacket:
		for _, m := range b {
			q.one[0] = m
			c.input(q.id, q.one[:])
			q.st.rxIfInput.Add(1)
		}
		q.one[0] = nil
	default:
		c.input(q.id, b)
		q.st.rxIfInput.Add(1)
	}
	clear(b)
	q.batch = b[:0]
}

// sortByFlow is a stable insertion sort by flow id: packets of one flow
// stay in arrival order (tcp_lro_queue_mbuf sorts by hash and sequence).
// Batches are at most rx_budget long, so the quadratic worst case is small
// and nothing is allocated.
func sortByFlow(b []*Packet) {
	for i := 1; i < len(b); i++ {
		m := b[i]
		j := i
		for j > 0 && b[j-1].Hdr.FlowID > m.Hdr.FlowID {
			b[j] = b[j-1]
			j--
		}
		b[j] = m
	}
}

// task is _task_fn_rx.
func (q *rxq) task() {
	c := q.ctx
	defer c.tasks.Done()
	defer c.pinTask(q.cpu)()
	poll := c.pollTicker()
	if poll != nil {
		defer poll.Stop()
	}
	budget := c.rxBudget()
	for c.wait(q.wake, poll) {
		if !c.running.Load() {
			continue
		}
		q.st.taskRuns.Add(1)
		r := q.rxeof(budget)
		switch {
		case r&rxeofMore != 0:
			q.kick()
		default:
			if r&rxeofEmpty != 0 {
				q.armWatchdog()
			}
			q.st.intrEnables.Add(1)
			c.rxIntrEnable(q.id)
		}
	}
}

// armWatchdog is callout_reset_curcpu(&ifr_watchdog, 1, _task_fn_rx_watchdog):
// retry the refill a tick later.
func (q *rxq) armWatchdog() {
	q.st.watchdogs.Add(1)
	if q.wdog == nil {
		q.wdog = time.AfterFunc(time.Millisecond, q.kick)
		return
	}
	q.wdog.Reset(time.Millisecond)
}

// RxZones returns the packet zones behind the free lists, for accounting
// (every cluster is back in its zone after Stop).
func (c *Context) RxZones() []*Zone {
	var zs []*Zone
	for _, q := range c.rxqs {
		for _, fl := range q.fls {
			zs = append(zs, fl.zone)
		}
	}
	return zs
}

// RxStats are one RX queue's counters of interest to tests and benchmarks.
type RxStats struct {
	Packets, Bytes, Copies, Filtered, IQDrops, IErrors uint64
	MapLoads, BAReuses, AllocFails, LoadFails          uint64
	Watchdogs, Resets                                  uint64
}

// RxQueueStats sums the counters of RX queue qid and its free lists.
func (c *Context) RxQueueStats(qid int) RxStats {
	q := c.rxqs[qid]
	s := RxStats{
		Packets: q.st.iPackets.Load(), Bytes: q.st.iBytes.Load(), Copies: q.st.copies.Load(),
		Filtered: q.st.filtered.Load(), IQDrops: q.st.iqDrops.Load(), IErrors: q.st.iErrors.Load(),
		Watchdogs: q.st.watchdogs.Load(), Resets: q.st.resets.Load(),
	}
	for _, fl := range q.fls {
		s.MapLoads += fl.loads.Load()
		s.BAReuses += fl.reuses.Load()
		s.AllocFails += fl.allocFails.Load()
		s.LoadFails += fl.loadFails.Load()
	}
	return s
}
