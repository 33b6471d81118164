package iflib

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/prefetch"
)

// freeList is struct iflib_fl: one receive free list of an RX queue.
//
// The D17901 invariant, checked by the tests: sdCl[i] != nil exactly when a
// cluster is attached to slot i, its map sdMap[i] is loaded, and sdBA[i]
// holds the bus address of that mapping. The map is unloaded only when the
// cluster is handed up (assemble) or freed (bufsFree). Slot i is posted to
// the device exactly when bit i of bitmap is set; credits counts the set
// bits and never exceeds size-1.
//
// FreeBSD keeps a raw mbuf header per slot (ifsd_m) beside the cluster
// (ifsd_cl); our packets are zone_pack pairs (header and cluster together),
// so sdCl holds the Packet that owns the cluster and there is no separate
// ifsd_m. A small received frame is copied into a fresh packet from the
// queue's cache, as FreeBSD copies it into the slot's raw mbuf.
//
// All fields are owned by the RX queue's task (or Init/Stop with the task
// stopped).
type freeList struct {
	rxq     *rxq
	id      int     // ifl_id
	size    int     // ifl_size
	mask    int     // ifl_size - 1
	bufSize int     // ifl_buf_size
	ring    RingMem // ifl_ifdi
	tag     *busdma.Tag
	// syncBufs is false when every sync of the cluster maps would be empty
	// (busdma.Tag.SyncNeeded).
	syncBufs bool
	zone     *Zone      // ifl_zone
	cache    *ZoneCache // the queue's bucket in front of zone

	sdMap  []*busdma.Map    // ifsd_map
	sdCl   []*Packet        // ifsd_cl (with the ifsd_m role, see above)
	sdBA   []busdma.BusAddr // ifsd_ba
	bitmap []uint64         // ifl_rx_bitmap: set = posted

	pidx    int // ifl_pidx
	cidx    int // ifl_cidx
	credits int // ifl_credits
	fragidx int // ifl_fragidx

	busAddrs [MaxRxRefresh]busdma.BusAddr // ifl_bus_addrs
	rxdIdxs  [MaxRxRefresh]uint16         // ifl_rxd_idxs
	segs     []busdma.Segment
	iru      RxdUpdate
	marks    []uint64 // validate's scratch: slots named by the packet being checked

	st                     *counters[rxCounter] // the queue's
	pidxA, cidxA, creditsA atomic.Int64         // mirrors for the sysctl tree
	bufSizeA               atomic.Int64         // bufSize, for the sysctl tree
	// retired are the zones of the cluster sizes earlier MTUs chose
	// (resize); each closes itself when its last packet comes back.
	retired []*Zone
}

func newFreeList(q *rxq, id int, ring RingMem, size, bufSize, zoneSize int, low busdma.BusAddr) (*freeList, error) {
	c := q.ctx
	fl := &freeList{
		rxq: q, id: id, size: size, mask: size - 1, bufSize: bufSize, ring: ring,
		sdMap: make([]*busdma.Map, size), sdCl: make([]*Packet, size), sdBA: make([]busdma.BusAddr, size),
		bitmap: make([]uint64, (size+63)/64), marks: make([]uint64, (size+63)/64),
		segs: make([]busdma.Segment, 0, 1), st: &q.st,
	}
	var err error
	fl.tag, err = busdma.NewTag(c.bus.Tag(), busdma.TagConfig{
		Alignment: 1, LowAddr: low, HighAddr: busdma.MaxAddr,
		MaxSize: max(c.shared.RxMaxSize, bufSize), NSegments: c.shared.RxNSegments, MaxSegSize: max(c.shared.RxMaxSegSize, bufSize),
	})
	if err != nil {
		return nil, fmt.Errorf("iflib: %s: RX tag: %w", c.name, err)
	}
	fl.syncBufs = fl.tag.SyncNeeded()
	if err := fl.tag.OneSegment(bufSize, min(bufSize&-bufSize, pageSize)); err != nil {
		// Every refill would fail: refuse the configuration instead.
		return nil, cfgErr(fmt.Sprintf("RxdBufSize[%d]", id), bufSize,
			fmt.Sprintf("RX clusters cannot be loaded in one segment on %s: %v", c.space.Name(), err))
	}
	fl.zone, err = NewZone(c.space, fmt.Sprintf("%s.rxq%d.fl%d", c.name, q.id, id), bufSize, zoneSize)
	var ce *ConfigError
	if errors.As(err, &ce) {
		return nil, cfgErr("RxZoneSize", zoneSize, ce.Reason)
	}
	if err != nil {
		return nil, err
	}
	fl.cache = fl.zone.NewCache()
	for i := range fl.sdMap {
		if fl.sdMap[i], err = fl.tag.CreateMap(); err != nil {
			return fl, fmt.Errorf("iflib: %s: Unable to create RX DMA map: %w", c.name, err)
		}
	}
	fl.iru = RxdUpdate{QSIdx: q.id, BufSize: bufSize, FLIdx: id}
	fl.bufSizeA.Store(int64(bufSize))
	return fl, nil
}

// resize gives a stopped free list clusters of bufSize: a new tag, zone
// and maps (iflib_fl_setup choosing ifl_buf_size anew after an MTU
// change). The old zone closes when the packets the stack still holds
// come back. On an error nothing changed.
// Preconditions: the queue is stopped (bufsFree done).
func (fl *freeList) resize(bufSize int) error {
	if bufSize == fl.bufSize {
		return nil
	}
	c := fl.rxq.ctx
	n, err := newFreeList(fl.rxq, fl.id, fl.ring, fl.size, bufSize, c.cfg.RxZoneSize, busdma.LowAddrForWidth(c.sc.DMAWidth))
	if err != nil {
		if n != nil {
			destroyMaps(n.sdMap)
			_ = n.zone.Close()
		}
		return err
	}
	destroyMaps(fl.sdMap)
	fl.cache.Flush()
	fl.retired = slices.DeleteFunc(fl.retired, func(z *Zone) bool { return z.closed.Load() })
	if fl.zone.closeWhenIdle() != nil {
		fl.retired = append(fl.retired, fl.zone)
	}
	fl.bufSize, fl.tag, fl.syncBufs = n.bufSize, n.tag, n.syncBufs
	fl.zone, fl.cache, fl.sdMap, fl.iru = n.zone, n.cache, n.sdMap, n.iru
	fl.bufSizeA.Store(int64(bufSize))
	return nil
}

func (fl *freeList) isSet(i int) bool { return fl.bitmap[i>>6]&(1<<(uint(i)&63)) != 0 }
func (fl *freeList) set(i int)        { fl.bitmap[i>>6] |= 1 << (uint(i) & 63) }
func (fl *freeList) clr(i int)        { fl.bitmap[i>>6] &^= 1 << (uint(i) & 63) }

// findClear is bit_ffc_at from start, wrapping to bit_ffc from 0.
func (fl *freeList) findClear(start int) int {
	for pass := 0; pass < 2; pass++ {
		for w := start >> 6; w < len(fl.bitmap); w++ {
			word := ^fl.bitmap[w]
			if w == start>>6 {
				word &= ^uint64(0) << (uint(start) & 63)
			}
			if word != 0 {
				if i := w<<6 + bits.TrailingZeros64(word); i < fl.size {
					return i
				}
			}
		}
		start = 0
	}
	return -1
}

// refill is iflib_fl_refill: post up to count buffers. A slot that still
// holds a mapped cluster is reposted by its stored bus address (ifsd_ba)
// with no load; only new clusters are loaded. With Config.NoRxReuse the
// recycled cluster is unloaded and loaded again (the pre-D17901 cost).
// It returns rxeofEmpty when an allocation or a load stopped it early.
func (fl *freeList) refill(count int) int {
	if count <= 0 {
		return 0
	}
	q := fl.rxq
	reuse := !q.ctx.cfg.NoRxReuse
	pidx, idx, frag := fl.pidx, fl.pidx, fl.fragidx
	i, posted, ret := 0, 0, 0
	for n := 0; n < count; n++ {
		frag = fl.findClear(frag)
		if frag < 0 {
			break
		}
		mp := fl.sdMap[frag]
		if fl.sdCl[frag] == nil || !reuse {
			p := fl.sdCl[frag]
			if p == nil {
				var err error
				if p, err = fl.cache.Get(); err != nil {
					fl.st.inc(rxAllocFails, 1)
					ret = rxeofEmpty
					break
				}
			} else {
				_ = mp.Unload()
				fl.sdCl[frag] = nil
			}
			segs, err := mp.Load(p.cl, fl.segs[:0])
			if err != nil || len(segs) != 1 {
				if err == nil {
					_ = mp.Unload()
				}
				fl.st.inc(rxLoadFails, 1)
				fl.cache.Put(p)
				ret = rxeofEmpty
				break
			}
			fl.st.inc(rxMapLoads, 1)
			fl.sdBA[frag], fl.sdCl[frag] = segs[0].Addr, p
		} else {
			fl.st.inc(rxBAReuses, 1)
		}
		if fl.syncBufs {
			mp.Sync(busdma.PreRead)
		}
		fl.set(frag)
		fl.rxdIdxs[i], fl.busAddrs[i] = uint16(frag), fl.sdBA[frag]
		fl.credits++
		i++
		posted++
		idx = (idx + 1) & fl.mask
		if i == MaxRxRefresh {
			fl.post(pidx, i)
			pidx, fl.pidx, i = idx, idx, 0
		}
	}
	if posted > 0 {
		if i > 0 {
			fl.post(pidx, i)
			fl.pidx = idx
		}
		fl.ring.Sync(busdma.PreRead | busdma.PreWrite)
		q.ctx.txrx.RxdFlush(q.id, fl.id, fl.pidx)
		q.st.inc(rxdFlushes, 1)
	}
	// _iflib_fl_refill: continue after the last slot if it was posted,
	// else retry it next time. (Testing the bit after it instead, as this
	// code once did, leaves fragidx one behind pidx after a refill that
	// ends with the list full; once the list then drains empty, the next
	// refill posts descriptor d with the buffer of slot d-1.)
	if frag >= 0 {
		if fl.isSet(frag) {
			fl.fragidx = (frag + 1) & fl.mask
		} else {
			fl.fragidx = frag
		}
	}
	return ret
}

func (fl *freeList) post(pidx, n int) {
	iru := &fl.iru
	iru.PIdx, iru.Count = pidx, n
	iru.PAddrs, iru.Idxs = fl.busAddrs[:n], fl.rxdIdxs[:n]
	fl.rxq.ctx.txrx.RxdRefill(iru)
}

// refillAll is iflib_fl_refill_all for one list: leave one slot unused.
func (fl *freeList) refillAll() int {
	return fl.refill(fl.size - fl.credits - 1)
}

// markFrag checks that a fragment names a posted slot not yet named by
// the packet being validated, and that off (the pad and RxdFrag.Off) plus
// its length fit the
// buffer; it marks the slot (clearMarks forgets the marks). The driver's
// word is not trusted.
func (fl *freeList) markFrag(f RxdFrag, off int) bool {
	i := int(f.Idx)
	if i >= fl.size || !fl.isSet(i) || fl.sdCl[i] == nil || off+int(f.Len) > fl.bufSize {
		return false
	}
	w, b := i>>6, uint64(1)<<(uint(i)&63)
	if fl.marks[w]&b != 0 {
		return false // the same slot twice in one packet
	}
	fl.marks[w] |= b
	return true
}

// clearMarks forgets the marks of a packet's fragments.
func (fl *freeList) clearMarks(ri *RxdInfo) {
	for i := 0; i < ri.NFrags && i < len(ri.Frags); i++ {
		if f := ri.Frags[i]; int(f.FLID) == fl.id && int(f.Idx) < fl.size {
			fl.marks[f.Idx>>6] = 0
		}
	}
}

// fragToSD is rxd_frag_to_sd: consume one posted slot. POSTREAD always;
// unload only when the cluster leaves (unload && len != 0), and then the
// slot forgets the cluster. The consumer index advances by one descriptor
// (ifl_cidx + 1), whatever slot the driver named.
// Preconditions: markFrag(f) held at validation.
func (fl *freeList) fragToSD(f RxdFrag, unload bool) *Packet {
	slot := int(f.Idx)
	fl.credits--
	if fl.rxq.ctx.cfg.Prefetch {
		// prefetch_pkts: the next slots' clusters.
		for k := 1; k <= 4; k++ {
			if p := fl.sdCl[(slot+k)&fl.mask]; p != nil {
				prefetch.Bytes(p.cl)
			}
		}
	}
	mp := fl.sdMap[slot]
	if fl.syncBufs {
		mp.Sync(busdma.PostRead)
	}
	p := fl.sdCl[slot]
	if unload && f.Len != 0 {
		_ = mp.Unload()
		fl.sdCl[slot] = nil
	}
	fl.cidx = (fl.cidx + 1) & fl.mask
	fl.clr(slot)
	return p
}

// publish stores the mirrors the sysctl tree reads, once per rxeof pass.
func (fl *freeList) publish() {
	fl.pidxA.Store(int64(fl.pidx))
	fl.cidxA.Store(int64(fl.cidx))
	fl.creditsA.Store(int64(fl.credits))
}

// skip moves the consumer index past n descriptors the driver consumed
// without a valid description (a driver error being reset); their slots
// stay posted until the reset frees them.
func (fl *freeList) skip(n int) {
	n = min(max(n, 0), fl.size)
	fl.cidx = (fl.cidx + n) & fl.mask
}

// bufsFree is iflib_fl_bufs_free: POSTREAD, unload and free every
// attached cluster, reset the indices and zero the ring (synced around the
// zeroing, so that the device's last write-backs are not written back over
// it on a non-coherent machine).
func (fl *freeList) bufsFree() {
	for i, p := range fl.sdCl {
		if p == nil {
			continue
		}
		mp := fl.sdMap[i]
		mp.Sync(busdma.PostRead)
		_ = mp.Unload()
		fl.sdCl[i] = nil
		fl.cache.Put(p)
	}
	fl.cache.Flush()
	clear(fl.bitmap)
	fl.credits, fl.cidx, fl.pidx, fl.fragidx = 0, 0, 0, 0
	fl.ring.zero()
	fl.publish()
}

// destroy is iflib_rx_sds_free (after bufsFree). It returns how many maps
// were still loaded.
func (fl *freeList) destroy() int { return destroyMaps(fl.sdMap) }
