package iflib

import (
	"errors"
	"runtime"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// maxRxWatchdog caps the RX watchdog's back-off: the longest a queue whose
// refill failed waits before it tries again.
const maxRxWatchdog = 50 * time.Millisecond

// rxeof results (IFLIB_RXEOF_*).
const (
	rxeofMore  = 1 // IFLIB_RXEOF_MORE: work remains, reschedule the task
	rxeofEmpty = 2 // IFLIB_RXEOF_EMPTY: a refill could not get buffers
	rxeofHeld  = 4 // goiflib: the input callback asked to hold back (InputReady)
)

// backpressureRetry is how soon an RX queue held back by InputReady looks
// again.
const backpressureRetry = 100 * time.Microsecond

// rxq is struct iflib_rxq.
//
// Inbound flow (one rxeof pass):
//
//	POSTREAD|POSTWRITE ring ─▶ RxdAvailable ─▶ RxdPktGet ─▶ validate ─▶ per fragment: POSTREAD
//	   ├─ ≤ RxCopyThresh, one fragment: copy out; cluster stays mapped in its slot
//	   ├─ Discard (a frame error) or zero length: recycle the clusters, count ierrors
//	   └─ otherwise: unload, hand the clusters up as a chain
//	─▶ refill (reuse ifsd_ba, load only new clusters) ─▶ RxdFlush
//	─▶ Input(batch) ─▶ MORE: run again; EMPTY: watchdog (backing off); else re-enable the interrupt
//
// All fields but the published counters and wake are owned by the queue's
// task (or by Init/Stop with the task stopped).
type rxq struct {
	ctx   *Context
	id    int
	cpu   int
	fls   []*freeList
	frags [MaxRxSegs]RxdFrag
	ri    RxdInfo
	batch []*Packet
	one   [1]*Packet
	// filterBuf holds a frame of several buffers for RxFilter.
	filterBuf []byte
	wake      chan struct{}
	wdog      *time.Timer // ifr_watchdog
	// emptyRuns counts consecutive rxeof passes whose refill failed: the
	// RX watchdog backs off exponentially from 1 ms (FreeBSD: one tick) so
	// that a refill that keeps failing does not spin.
	emptyRuns int
	// errHeld says the last RxdPktGet failed and, as em does, left the
	// packet's descriptors in place: stop counts that packet once, as the
	// error it is, not again as a stop discard.
	errHeld bool

	st counters[rxCounter]
}

func (c *Context) newRxq(id int, rings []RingMem, low busdma.BusAddr) (*rxq, error) {
	q := &rxq{ctx: c, id: id, wake: make(chan struct{}, 1), st: newCounters[rxCounter](int(numRxCounters))}
	q.batch = make([]*Packet, 0, c.cfg.RxBudget)
	for j := 0; j < c.shared.NFL; j++ {
		fl, err := newFreeList(q, j, rings[j], c.sc.NRxd[j], c.rxBufSize(j), c.cfg.RxZoneSize, low)
		if fl != nil {
			q.fls = append(q.fls, fl)
		}
		if err != nil {
			q.free()
			return nil, err
		}
	}
	return q, nil
}

// RxBufSize is ifl_buf_size of free list flid: the size of the buffers
// iflib posts to it (iflib_get_rx_mbuf_sz for a driver that sets no
// isc_rxd_buf_size): MCLBYTES or MJUMPAGESIZE, chosen at Register from
// SoftcCtx.RxdBufSize or MaxFrameSize. A driver programs its device's
// receive buffer size with it (em: RCTL.BSIZE from the mbuf size) in
// IFDI_INIT; the device must never write more than this into one buffer.
// It is 0 for a free list that does not exist.
func (c *Context) RxBufSize(flid int) int {
	if flid < 0 || flid >= max(c.shared.NFL, 1) || flid >= MaxQueuesPerSet {
		return 0
	}
	return c.rxBufSize(flid)
}

// rxBufSize is the cluster size of free list j: isc_rxd_buf_size, else
// from isc_max_frame_size (iflib_calc_rx_mbuf_sz), pulled up to MCLBYTES
// or MJUMPAGESIZE (resolved and checked at Register).
func (c *Context) rxBufSize(j int) int {
	if b := c.sc.RxdBufSize[j]; b != 0 {
		return b
	}
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return rxBufSizeFor(c.sc.MaxFrameSize)
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
// device too. Frames the device wrote that rxeof did not take are counted
// (rx_stop_discards), then the posted buffers are freed and the rings
// zeroed.
func (q *rxq) stop() {
	if q.wdog != nil {
		q.wdog.Stop()
	}
	q.emptyRuns = 0
	if len(q.fls) > 0 {
		n := q.rxdAvail(q.fls[0].cidx, q.fls[0].size)
		if q.errHeld && n > 0 {
			n-- // the packet the driver failed on, already in ierrors
		}
		q.st.inc(rxStopDiscards, uint64(n))
	}
	q.errHeld = false
	for _, fl := range q.fls {
		fl.bufsFree()
	}
	q.st.publish()
}

// free is iflib_rx_structures_free: it destroys the free lists and closes
// their zones, and reports what was still in use.
func (q *rxq) free() *LeakError {
	leak := &LeakError{}
	for _, fl := range q.fls {
		fl.bufsFree()
		leak.Maps += fl.destroy()
		if err := fl.zone.closeWhenIdle(); err != nil {
			var le *LeakError
			if errors.As(err, &le) {
				leak.Zones = append(leak.Zones, le.Zones...)
			}
		}
		// The zones an MTU change retired close when their last packet
		// comes back; those the stack still holds are leaks too.
		for _, z := range fl.retired {
			if n := z.Outstanding(); n > 0 {
				leak.Zones = append(leak.Zones, ZoneLeak{Zone: z.Name(), Outstanding: n, Size: z.Size()})
			}
		}
	}
	q.st.publish()
	return leak
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
// lying driver cannot corrupt the free lists: a fragment count in range,
// every fragment naming a distinct posted slot whose buffer holds it, and
// iri_len = iri_pad + the fragments' lengths (FreeBSD's convention:
// irf_len excludes the pad, iri_len includes it; the pad sits before the
// frame in the first buffer; RxdFrag.Off bytes before each fragment's
// data, after the pad).
func (q *rxq) validate(ri *RxdInfo) bool {
	if ri.NFrags < 0 || ri.NFrags > len(q.frags) || ri.Pad < 0 {
		return false
	}
	total, ok := ri.Pad, true
	for i := 0; i < ri.NFrags && ok; i++ {
		f := ri.Frags[i]
		pad := 0
		if i == 0 {
			pad = ri.Pad
		}
		if int(f.FLID) >= len(q.fls) || !q.fls[f.FLID].markFrag(f, pad+int(f.Off)) {
			ok = false
		}
		total += int(f.Len)
	}
	for _, fl := range q.fls {
		fl.clearMarks(ri)
	}
	return ok && (ri.NFrags == 0 || ri.Len == total)
}

// rxeof is iflib_rxeof: up to budget packets, refill, one Input call.
// The task publishes the pass's counters after it.
func (q *rxq) rxeof(budget int) int {
	c := q.ctx
	if c.inputReady != nil && !c.inputReady(q.id) {
		// Back-pressure: the frames stay in the ring (the device drops
		// what it cannot hold, and counts it) instead of being received
		// and then dropped by a transmit path that has no room.
		q.st.inc(rxHeld, 1)
		return rxeofHeld
	}
	if q.errHeld {
		// The driver failed on the packet at cidx and left it: nothing can
		// be read until the reset the admin task is doing. Reading it again
		// would count the same bad frame again.
		return 0
	}
	fl0 := q.fls[0]
	avail := q.rxdAvail(fl0.cidx, budget)
	if avail == 0 {
		q.st.inc(rxUnavail, 1)
		return q.refillAll()
	}
	q.batch = q.batch[:0]
	left := budget
	for left > 0 && avail > 0 {
		if !c.running.Load() {
			q.st.inc(rxCtxInactive, 1)
			break
		}
		ri := &q.ri
		*ri = RxdInfo{QSIdx: q.id, CIdx: fl0.cidx, Frags: q.frags[:]}
		err := c.txrx.RxdPktGet(ri)
		if err != nil || !q.validate(ri) {
			// The driver could not describe the packet (em returns EBADMSG
			// for a frame error, leaving its descriptors) or described it
			// wrongly (then it consumed them, so the consumer index moves
			// past them: the frames behind it can still be counted at
			// stop). Either way: count it and reset the interface. FreeBSD's
			// error path leaks the packets it had collected; they are
			// delivered first here.
			q.st.inc(rxIErrors, 1)
			if err == nil {
				fl0.skip(ri.NFrags)
			} else {
				q.errHeld = true
			}
			q.deliver()
			c.requestReset(q)
			return 0
		}
		avail--
		left--
		if ri.NFrags == 0 {
			continue // a completion entry without a packet
		}
		if m := q.pktGet(ri); m != nil {
			if c.cfg.RxPerPacketInput {
				q.inputOne(m) // if_input per mbuf, inside the loop
			} else {
				q.batch = append(q.batch, m)
			}
		}
		if avail == 0 && left > 0 {
			avail = q.rxdAvail(fl0.cidx, left)
		}
	}
	ret := q.refillAll()
	q.deliver()
	if avail != 0 || q.rxdAvail(fl0.cidx, 1) != 0 {
		ret |= rxeofMore
	}
	return ret
}

// publish makes the pass's counters and free-list mirrors visible.
func (q *rxq) publish() {
	q.st.publish()
	for _, fl := range q.fls {
		fl.publish()
	}
}

// recycle consumes a packet's slots without handing anything up: the
// clusters stay mapped in their slots and are reposted by ifsd_ba.
func (q *rxq) recycle(ri *RxdInfo) {
	for i := 0; i < ri.NFrags; i++ {
		f := ri.Frags[i]
		q.fls[f.FLID].fragToSD(f, false)
	}
}

// pktGet is iflib_rxd_pkt_get: the copy path or assemble_segments, then
// the packet header from ri. Frames the device flagged (Discard) and
// zero-length frames are recycled and counted as errors.
func (q *rxq) pktGet(ri *RxdInfo) *Packet {
	c := q.ctx
	if ri.Discard || ri.Len == ri.Pad {
		q.recycle(ri)
		q.st.inc(rxIErrors, 1)
		if ri.Discard {
			q.st.inc(rxDiscards, 1)
		}
		return nil
	}
	q.st.inc(rxIPackets, 1)
	q.st.inc(rxIBytes, uint64(ri.Len-ri.Pad))
	f0 := ri.Frags[0]
	fl := q.fls[f0.FLID]
	var m *Packet
	if ri.NFrags == 1 && f0.Len != 0 && int(f0.Len) <= c.cfg.CopyThresh {
		// Small-packet copy: the cluster stays mapped in its slot.
		cl := fl.fragToSD(f0, false)
		start := ri.Pad + int(f0.Off)
		frame := cl.cl[start : start+int(f0.Len)]
		if c.rxFilter != nil && c.rxFilter(q.id, frame) {
			q.st.inc(rxFiltered, 1)
			return nil
		}
		var err error
		if m, err = fl.cache.Get(); err != nil {
			q.st.inc(rxIQDrops, 1)
			return nil
		}
		m.Append(frame)
		q.st.inc(rxCopies, 1)
	} else {
		consumed, filtered := false, false
		if c.rxFilter != nil && f0.Len != 0 {
			// pfil_mem_in on the whole frame before anything is unloaded.
			if c.rxFilter(q.id, q.filterFrame(ri)) {
				q.st.inc(rxFiltered, 1)
				consumed, filtered = true, true
			}
		}
		var tail *Packet
		for i := 0; i < ri.NFrags; i++ {
			f := ri.Frags[i]
			if i == 0 && f.Len == 0 {
				// FreeBSD: a zero-length first fragment consumes the whole
				// packet (the pad would belong to no buffer).
				consumed = true
			}
			p := q.fls[f.FLID].fragToSD(f, !consumed)
			if consumed || f.Len == 0 {
				// The cluster stays in its slot (still mapped).
				continue
			}
			pad := 0
			if m == nil {
				pad = ri.Pad
			}
			p.Next, p.Hdr = nil, PktHdr{}
			p.off, p.n = pad+int(f.Off), int(f.Len)
			if m == nil {
				m = p
			} else {
				tail.Next = p
			}
			tail = p
		}
		if m == nil {
			if !filtered {
				q.st.inc(rxIErrors, 1) // nothing but empty fragments
			}
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
	if ri.CsumFlags != 0 {
		if caps := Capabilities(c.ctl.capEnable.Load()); caps&(CapRxCsum|CapRxCsumIPv6) != CapRxCsum|CapRxCsumIPv6 {
			withholdCsum(m, caps)
		}
	}
	return m
}

// withholdCsum clears the RX checksum results of a packet whose IP
// version's RX checksum offload is disabled (IFCAP_RXCSUM for IPv4,
// IFCAP_RXCSUM_IPV6 for IPv6): FreeBSD drivers skip their
// *_receive_checksum then; iflib does it for every driver, from the
// EtherType (after one 802.1Q tag) of the first buffer.
func withholdCsum(m *Packet, caps Capabilities) {
	b := m.Bytes()
	if len(b) < etherHdrLen {
		return
	}
	et := uint16(b[12])<<8 | uint16(b[13])
	if et == 0x8100 && len(b) >= etherHdrLen+etherVLANEncapLen {
		et = uint16(b[16])<<8 | uint16(b[17])
	}
	ipv6 := et == 0x86dd
	if (ipv6 && caps&CapRxCsumIPv6 == 0) || (!ipv6 && caps&CapRxCsum == 0) {
		m.Hdr.CsumFlags, m.Hdr.CsumData = 0, 0
	}
}

// filterFrame returns the frame ri describes as one slice for RxFilter,
// each buffer synced POSTREAD first: the first buffer's bytes in place
// when the frame lies in it alone, else a copy of every buffer's bytes in
// the queue's scratch slice (grown once to the largest frame seen).
// FreeBSD's assemble_segments calls pfil_mem_in on every fragment with the
// whole frame's length from that fragment's cluster (docs/freebsd.md).
func (q *rxq) filterFrame(ri *RxdInfo) []byte {
	one := true
	for i := 1; i < ri.NFrags; i++ {
		if ri.Frags[i].Len != 0 {
			one = false
		}
	}
	buf := q.filterBuf[:0]
	for i := 0; i < ri.NFrags; i++ {
		f := ri.Frags[i]
		if f.Len == 0 {
			continue
		}
		fl := q.fls[f.FLID]
		if fl.syncBufs {
			fl.sdMap[f.Idx].Sync(busdma.PostRead)
		}
		off := int(f.Off)
		if i == 0 {
			off += ri.Pad
		}
		b := fl.sdCl[f.Idx].cl[off : off+int(f.Len)]
		if one {
			return b
		}
		buf = append(buf, b...)
	}
	q.filterBuf = buf
	return buf
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
			c.input(c, q.id, q.one[:])
			q.st.inc(rxIfInput, 1)
		}
		q.one[0] = nil
	default:
		c.input(c, q.id, b)
		q.st.inc(rxIfInput, 1)
	}
	clear(b)
	q.batch = b[:0]
}

// inputOne hands one packet to if_input at once (Config.RxPerPacketInput).
func (q *rxq) inputOne(m *Packet) {
	c := q.ctx
	if c.input == nil {
		m.Free()
		return
	}
	q.one[0] = m
	c.input(c, q.id, q.one[:])
	q.one[0] = nil
	q.st.inc(rxIfInput, 1)
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
	defer c.pinTask(q.cpu)()
	poll := c.pollTicker()
	if poll != nil {
		defer poll.Stop()
	}
	budget := c.cfg.RxBudget
	for c.wait(q.wake, poll) {
		if !c.running.Load() {
			continue
		}
		q.st.inc(rxTaskRuns, 1)
		r := q.rxeof(budget)
		switch {
		case r&rxeofMore != 0:
			// GROUPTASK_ENQUEUE re-queues the task behind the others on its
			// taskqueue: let the goroutines that share this CPU (the
			// device, the TX task) run before the next pass.
			q.kick()
			runtime.Gosched()
		case r&rxeofHeld != 0:
			q.armRetry(backpressureRetry)
		default:
			if r&rxeofEmpty != 0 {
				q.armWatchdog()
			} else {
				q.emptyRuns = 0
			}
			q.st.inc(rxIntrEnables, 1)
			c.rxIntrEnable(q.id)
		}
		q.publish()
	}
}

// armWatchdog is callout_reset_curcpu(&ifr_watchdog, 1, _task_fn_rx_watchdog):
// retry the refill later. FreeBSD retries every tick; here the delay
// doubles with each consecutive failure, from 1 ms up to maxRxWatchdog (or
// the timer interval if shorter), so a refill that keeps failing (an
// exhausted zone, a cluster the tag cannot load) costs little while
// rx_watchdogs and alloc_fails or load_fails report it.
func (q *rxq) armWatchdog() {
	q.st.inc(rxWatchdogs, 1)
	d := time.Millisecond << min(q.emptyRuns, 16)
	d = min(d, maxRxWatchdog, q.ctx.cfg.TimerInterval)
	q.emptyRuns++
	q.armRetry(d)
}

// armRetry schedules the RX task after d.
func (q *rxq) armRetry(d time.Duration) {
	if q.wdog == nil {
		q.wdog = time.AfterFunc(d, q.kick)
		return
	}
	q.wdog.Reset(d)
}
