package afxdp

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// errBadDesc is EBADMSG from RxdPktGet: the kernel returned a frame the
// driver never posted, or one that does not fit its frame. iflib counts it
// and resets the queue.
var errBadDesc = errors.New("afxdp: RX descriptor names no posted frame (EBADMSG)")

// errSegCrossesFrame is a TX segment that crosses a UMEM frame: the kernel
// would reject the descriptor (xp_aligned_validate_desc) without a
// completion, so the driver refuses it first. Only packets from zones that
// are not UMEM.NewZone's can do that.
var errSegCrossesFrame = errors.New("afxdp: TX segment crosses a UMEM frame boundary")

// errNotBound is TxdEncap on a stopped queue (iflib never does it).
var errNotBound = errors.New("afxdp: queue has no socket")

// TxdEncap is ift_txd_encap: one xdp_desc per segment (a segment is
// one UMEM frame's data), written straight into the kernel's TX ring;
// published by TxdFlush. A packet of several segments needs a socket
// bound for multi-buffer (XDP_USE_SG): every descriptor but the last
// carries XDP_PKT_CONTD. Without it a packet larger than one frame is
// refused (iflib.ErrTooBig); a smaller one in several segments, or one
// of more than MaxFrags, gets EFBIG and iflib defragments it.
func (d *Driver) TxdEncap(pi *iflib.PktInfo) error {
	q := d.q[pi.QSIdx]
	s := q.s
	if s == nil {
		return errNotBound
	}
	n := pi.NSegs
	if n > 1 && !s.sg && pi.Len > d.umem.frameSize {
		return iflib.ErrTooBig // no multi-buffer: one frame is the most
	}
	if n < 1 || n > 1 && (!s.sg || n > MaxFrags) {
		return iflib.ErrEncapTooBig
	}
	fm := uint64(d.umem.frameSize - 1)
	for _, seg := range pi.Segs[:n] {
		off := uint64(seg.Addr)
		if seg.Len <= 0 || (off&fm)+uint64(seg.Len) > fm+1 || off+uint64(seg.Len) > uint64(len(d.umem.mem)) {
			return errSegCrossesFrame
		}
	}
	if s.tx.free(uint32(n)) < uint32(n) {
		// Cannot happen while the TX ring is twice ntxd (see Driver); if it
		// did, dropping is safer than overwriting.
		q.st.txRingFull.Add(1)
		return iflib.ErrNoBufs
	}
	for i, seg := range pi.Segs[:n] {
		desc := s.tx.desc(s.tx.cachedProd)
		desc.Addr, desc.Len, desc.Options = uint64(seg.Addr), uint32(seg.Len), 0
		if i < n-1 {
			desc.Options = unix.XDP_PKT_CONTD
		}
		s.tx.cachedProd++
	}
	pi.NewPIdx = (pi.PIdx + n) & (q.ntxd - 1)
	return nil
}

// TxdFlush is ift_txd_flush: publish the TX ring's producer (the doorbell
// proper) and, if the kernel asks (XDP_RING_NEED_WAKEUP; always in copy
// mode, where it transmits only inside the syscall), make sure it is kicked
// with sendto.
//
// A doorbell is an MMIO write on a NIC but a system call here, so the kick
// follows what the doorbell covers:
//
//   - several descriptors (iflib deferred the doorbell itself: the end of a
//     TransmitBatch run in simple mode, the end of an mp_ring drain pass or
//     a txq_max_db_deferred tier within it) or kickBatch waiting: kick now,
//     one sendto for the batch, as a hand-written loop kicks once per burst;
//   - one descriptor: a packet sent alone (simple mode rings once per
//     Transmit call, an mp_ring drain pass may find a single packet), so a
//     kick here would be a system call per packet for a sender of single
//     packets. The kick is left to the queue's TX task
//     (iflib_fast_intr), whose IFDI_TX_QUEUE_INTR_ENABLE kicks whatever is
//     waiting by then: under load one sendto per kickBatch frames or per
//     task run, when the sender pauses at once.
func (d *Driver) TxdFlush(qid int, pidx int) {
	q := d.q[qid]
	s := q.s
	if s == nil {
		return
	}
	if d.bus.Checker() != nil {
		q.checkTx()
	}
	n := s.tx.cachedProd - s.tx.producer.Load() // descriptors this doorbell hands over
	s.tx.publish()
	q.st.doorbells.Add(1)
	if s.wakeup && !s.tx.needWakeup() {
		return // a zero-copy driver is already polling the ring
	}
	if n > 1 || s.tx.pending() >= kickBatch {
		q.kickTxLoop()
	} else if q.kickDeferred.CompareAndSwap(false, true) {
		q.st.deferredKicks.Add(1)
		d.ic.TxIntr(qid)
	}
}

// kickBatch is the kernel's TX batch in copy mode (TX_BATCH_SIZE, 32, in
// net/xdp/xsk.c: the frames one sendto sends without
// XDP_MAX_TX_SKB_BUDGET): descriptors that make a kick worth its system
// call even when they came one doorbell at a time.
const kickBatch = 32

// TxdCreditsUpdate is ift_txd_credits_update: completion-ring entries are
// the credits, one per sent descriptor. clear=false only compares the
// kernel's producer with the published consumer (both atomics), so it is
// safe beside the consumer.
func (d *Driver) TxdCreditsUpdate(qid int, clear bool) int {
	q := d.q[qid]
	s := q.s
	if s == nil {
		return 0
	}
	if !clear {
		if s.comp.producer.Load() != s.comp.consumer.Load() {
			return 1
		}
		return 0
	}
	n := s.comp.peekAvail()
	if n == 0 {
		return 0
	}
	s.comp.cachedCons += n
	s.comp.release()
	return int(n)
}

// RxdAvailable is ift_rxd_available: packets ready in the RX ring, to
// about budget. Without multi-buffer each entry is a packet; with it a
// packet is the entries up to one without XDP_PKT_CONTD (the kernel
// publishes whole packets). When it finds none it gives the consumed
// slots back to the kernel.
func (d *Driver) RxdAvailable(qid int, cidx int, budget int) int {
	s := d.q[qid].s
	if s == nil {
		return 0
	}
	r := &s.rx
	if !s.sg {
		n := r.cachedProd - r.cachedCons
		if int(n) < budget {
			n = r.peekAvail()
		}
		if n == 0 {
			r.release()
		}
		return min(int(n), budget)
	}
	pkts, i := 0, r.cachedCons
	for pass := 0; pass < 2 && pkts < budget; pass++ {
		if pass == 1 {
			r.peekAvail()
		}
		for ; i != r.cachedProd && pkts < budget; i++ {
			if r.desc(i).Options&unix.XDP_PKT_CONTD == 0 {
				pkts++
			}
		}
	}
	if pkts == 0 && i == r.cachedCons {
		r.release()
	}
	return pkts
}

// RxdPktGet is ift_rxd_pkt_get: the frame at the RX ring's consumer. Its
// UMEM offset names the free-list slot iflib posted it from; the data
// starts XDP_PACKET_HEADROOM (in general: offset mod frame size) into the
// cluster, which iflib takes as iri_pad (irf_len is the frame alone,
// iri_len = pad + frame, as in FreeBSD).
//
// A multi-buffer frame (a socket bound with XDP_USE_SG) is one fragment
// per descriptor up to the one without XDP_PKT_CONTD; each fragment's data
// starts at its own offset in its chunk (XDP_PACKET_HEADROOM in copy
// mode), the first one's as iri_pad, the others' as RxdFrag.Off.
func (d *Driver) RxdPktGet(ri *iflib.RxdInfo) error {
	q := d.q[ri.QSIdx]
	s := q.s
	if s == nil {
		return errNotBound
	}
	total := 0
	for nf := 0; ; nf++ {
		if s.rx.cachedCons == s.rx.cachedProd || nf == len(ri.Frags) || nf == MaxFrags+1 {
			// A packet that does not end (RxdAvailable counted only whole
			// ones) or has more fragments than a frame can.
			q.st.badDescs.Add(1)
			return errBadDesc
		}
		desc := s.rx.desc(s.rx.cachedCons)
		addr, n, opts := desc.Addr, int(desc.Len), desc.Options
		s.rx.cachedCons++
		frame := addr >> d.umem.frameShift
		off := int(addr & uint64(d.umem.frameSize-1))
		more := opts&unix.XDP_PKT_CONTD != 0
		if frame >= uint64(len(q.slotOf)) || q.slotOf[frame] < 0 || off+n > d.umem.frameSize || n == 0 || more && !s.sg {
			q.st.badDescs.Add(1)
			return errBadDesc
		}
		slot := q.slotOf[frame]
		q.slotOf[frame] = -1
		if d.bus.Checker() != nil {
			// Mirror the kernel's write into busdma: it must land in a
			// current mapping of this device (the slot's, by its ifsd_ba).
			_ = d.bus.Write(busdma.BusAddr(addr), d.umem.mem[addr:addr+uint64(n)])
		}
		f := iflib.RxdFrag{FLID: 0, Idx: uint16(slot), Len: uint16(n)}
		if nf == 0 {
			ri.Pad = off
		} else {
			f.Off = uint32(off)
		}
		ri.Frags[nf] = f
		total += n
		if !more {
			ri.NFrags = nf + 1
			break
		}
	}
	ri.Len = ri.Pad + total
	// Forwarded packets keep their queue: the TX queue is chosen by flow id.
	ri.FlowID, ri.RSSType = uint32(ri.QSIdx), iflib.HashOpaque
	return nil
}

// RxdRefill is ift_rxd_refill: the buffers' bus addresses (UMEM offsets of
// whole frames, the stored ifsd_ba of reused clusters) go into the fill
// ring; the driver remembers which slot each frame came from.
func (d *Driver) RxdRefill(iru *iflib.RxdUpdate) {
	q := d.q[iru.QSIdx]
	s := q.s
	if s == nil {
		return
	}
	for i := 0; i < iru.Count; i++ {
		a := uint64(iru.PAddrs[i])
		q.slotOf[a>>d.umem.frameShift] = int32(iru.Idxs[i])
		if len(q.fillBacklog) == 0 && s.fill.free(1) > 0 {
			*s.fill.addr(s.fill.cachedProd) = a
			s.fill.cachedProd++
			continue
		}
		// The kernel has not published its consumer yet (see Driver):
		// keep the frame for the next flush.
		q.fillBacklog = append(q.fillBacklog, a)
		q.st.fillDeferred.Add(1)
	}
}

// RxdFlush is ift_rxd_flush: give the consumed RX slots back, publish the
// fill ring, and wake the kernel if it asks (zero-copy drivers only).
func (d *Driver) RxdFlush(qid int, flid int, pidx int) {
	q := d.q[qid]
	s := q.s
	if s == nil {
		return
	}
	s.rx.release()
	q.pushFillBacklog()
	s.fill.publish()
	if s.fill.needWakeup() {
		q.st.rxKicks.Add(1)
		s.kickRx()
	}
}
