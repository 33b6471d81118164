package iflib

import (
	"encoding/binary"
	"errors"

	"github.com/goiflib/goiflib/busdma"
)

// encap is iflib_encap(txq, &m): map the chain, fill the if_pkt_info, hand
// it to TxdEncap, sync PREWRITE, and account the descriptors. Like
// FreeBSD's struct mbuf **m_headp, mp is where the caller keeps the
// packet: when collapse or defrag replaces the chain, encap writes the
// replacement back, so the caller always holds the live chain.
//
// Results and ownership:
//   - nil: the packet is on the ring (ifsd_m) and will be freed by reclaim;
//   - errNoDesc: too few descriptors even after a forced reclaim; the map
//     was unloaded and *mp (possibly a replacement) is still the caller's
//     (FreeBSD frees it here in simple mode only; the caller does that);
//   - any other error: *mp was freed, set to nil, and counted (oerrors).
//
// FreeBSD quirks not modelled: when bus_dmamap_load_mbuf_sg returns ENOMEM
// (bounce pages exhausted), iflib_encap neither frees the mbuf nor keeps it
// in the ring (the mp_ring drain counts it consumed), leaking it; and when
// iflib_ether_pad cannot append it frees the mbuf and returns ENOBUFS,
// which the drain takes for "keep it" (a use after free). Here both are
// freed, counted and reported as ErrNoMem.
//
// Preconditions: the caller is the queue's consumer.
func (q *txq) encap(mp **Packet) error {
	ctx := q.ctx
	m := *mp
	pidx := q.pidx
	tso := m.Hdr.CsumFlags&CsumTSO != 0 && q.tsoTag != nil
	dmap, maxSegs, fl := q.maps[pidx], ctx.sc.TxNSegments, sdNoTSO
	if tso {
		dmap, maxSegs, fl = q.tsoMap[pidx], ctx.sc.TxTSOSegmentsMax, sdTSO
	}
	fail := func(err error) error {
		q.st.inc(txOErrors, 1)
		(*mp).Free()
		*mp = nil
		return err
	}
	// unmap undoes a load that will not reach the ring.
	unmap := func() {
		_ = dmap.Unload()
		q.sdM[pidx], q.sdFl[pidx], q.sdN[pidx] = nil, 0, 0
	}

	if ctx.shared.Flags&FlagNeedEtherPad != 0 && m.Hdr.Len < ctx.sc.MinFrameSize {
		if !etherPad(m, ctx.sc.MinFrameSize) {
			q.st.inc(txMapFailed, 1)
			return fail(ErrNoMem)
		}
	}

	// Fill the if_pkt_info field by field: the header fields are cleared
	// only when the last packet set them (a whole-struct reset costs more
	// than the rest of the per-packet bookkeeping).
	pi := &q.pi
	pi.Len, pi.QSIdx, pi.PIdx, pi.NewPIdx, pi.NDescs = m.Hdr.Len, q.id, pidx, 0, 0
	pi.Flags, pi.CsumFlags, pi.MFlags, pi.VTag = 0, m.Hdr.CsumFlags, m.Hdr.Flags&(MVLANTag|MBcast|MMcast), 0
	if q.piHdr {
		pi.EHdrLen, pi.IPHLen, pi.TCPHLen, pi.IPProto, pi.IPTos, pi.EType = 0, 0, 0, 0, 0, 0
		pi.TSOSegSize, pi.TCPHFlags, pi.TCPSeq = 0, 0, 0
		q.piHdr = false
	}
	if m.Hdr.Flags&MVLANTag != 0 {
		pi.VTag = m.Hdr.VLANTag
	}
	if pi.CsumFlags != 0 || pi.VTag != 0 {
		q.piHdr = true
		if err := q.parseHeader(pi, m); err != nil {
			q.st.inc(txMapFailed, 1)
			return fail(err)
		}
	}

	remap := 0
	for {
		segs, err := dmap.LoadMulti(q.chainBufs(m), q.segs[:0])
		if err == nil && len(segs) > maxSegs {
			// The tag allows more segments than the clamped ntxd/12: treat
			// it as EFBIG, as the clamped tag would have.
			_ = dmap.Unload()
			err = busdma.ErrTooBig
		}
		if errors.Is(err, busdma.ErrTooBig) {
			// EFBIG: m_collapse once, m_defrag once (also when the collapse
			// failed), then give up.
			if !q.remapChain(mp, &remap, maxSegs) {
				return fail(ErrNoMem)
			}
			m = *mp
			continue
		}
		if err != nil {
			q.st.inc(txNoDMASetup, 1)
			q.st.inc(txMapFailed, 1)
			switch {
			case errors.Is(err, busdma.ErrInvalid):
				return fail(ErrTooBig)
			case errors.Is(err, busdma.ErrNotInSpace):
				return fail(ErrWrongSpace)
			}
			return fail(ErrNoMem)
		}
		nsegs := len(segs)
		q.sdM[pidx], q.sdFl[pidx] = m, fl

		if nsegs > q.avail() {
			q.reclaimForce()
			if nsegs > q.avail() {
				q.st.inc(txNoDescAvail, 1)
				unmap()
				q.kick()
				return errNoDesc
			}
		}

		// Report-status batching. pi keeps IPI_TX_INTR across a retry after
		// the driver's EFBIG, as FreeBSD's goto defrag does.
		q.rsPending += nsegs + 1
		if q.rsPending > q.maxRSDeferred() || ctx.cfg.NoTxBatch || q.avail()-nsegs <= q.maxTxDesc() {
			pi.Flags |= IPITxIntr
			q.rsPending = 0
		}
		pi.Segs, pi.NSegs = segs, nsegs

		if err := ctx.txrx.TxdEncap(pi); err != nil {
			unmap()
			if errors.Is(err, ErrEncapTooBig) && remap < 2 {
				q.st.inc(txEncapEFBIG, 1)
				remap = 1 // straight to m_defrag
				if !q.remapChain(mp, &remap, maxSegs) {
					return fail(ErrNoMem)
				}
				m = *mp
				continue
			}
			q.st.inc(txMapFailed, 1)
			return fail(err)
		}
		if ndesc := pi.NewPIdx - pidx; pi.NewPIdx < 0 || pi.NewPIdx >= q.size || ndesc == 0 && nsegs > 0 ||
			(ndesc+q.size)&q.mask > nsegs+q.pad {
			// A driver that reports an impossible new producer index would
			// corrupt the ring accounting (FreeBSD MPASSes it).
			unmap()
			q.st.inc(txMapFailed, 1)
			return fail(ErrBadDriverIndex)
		}
		if q.syncBufs {
			dmap.Sync(busdma.PreWrite)
		}
		ndesc := pi.NewPIdx - pidx
		if ndesc <= 0 {
			ndesc += q.size
			q.gen = true
		}
		q.sdN[pidx] = int32(ndesc)
		q.inUse += ndesc
		q.dbPending += ndesc
		q.pidx = pi.NewPIdx & q.mask
		q.npending += pi.NDescs
		if opk, obytes := txCounts(pi, tso); opk == 1 {
			q.st.inc(txOPackets, 1)
			q.st.inc(txOBytes, uint64(pi.Len))
		} else {
			q.st.inc(txOPackets, uint64(opk))
			q.st.inc(txOBytes, uint64(obytes))
		}
		if pi.MFlags&MMcast != 0 {
			q.st.inc(txOMcasts, 1)
		}
		return nil
	}
}

// txCounts is iflib_encap's accounting of a packet it put on the ring:
// one packet of ipi_len bytes, except a TSO packet (loaded on the TSO map,
// IFLIB_TSO), which counts as the segments the device cuts it into, each
// with a copy of the headers: nsegs = ceil((ipi_len - hlen) / tso_segsz),
// bytes = ipi_len - hlen + nsegs × hlen.
func txCounts(pi *PktInfo, tso bool) (pkts, bytes int) {
	hlen := int(pi.EHdrLen) + int(pi.IPHLen) + int(pi.TCPHLen)
	if !tso || pi.TSOSegSize == 0 || pi.Len <= hlen {
		return 1, pi.Len
	}
	tsolen := pi.Len - hlen
	n := (tsolen + int(pi.TSOSegSize) - 1) / int(pi.TSOSegSize)
	return n, tsolen + n*hlen
}

// remapChain is the EFBIG step of iflib_encap: m_collapse the first time
// (falling through to m_defrag when collapsing cannot get the chain down
// to maxSegs), m_defrag the second; a third EFBIG fails (defrag_failed).
// A replacement chain is written back to *mp.
func (q *txq) remapChain(mp **Packet, remap *int, maxSegs int) bool {
	if *remap == 0 {
		*remap = 1
		q.st.inc(txCollapses, 1)
		if collapse(*mp, maxSegs) {
			return true
		}
	}
	if *remap == 1 {
		*remap = 2
		q.st.inc(txMbufDefrag, 1)
		if m, ok := q.defragChain(*mp); ok {
			*mp = m
			return true
		}
	}
	q.st.inc(txMbufDefragFailed, 1)
	q.st.inc(txMapFailed, 1)
	return false
}

// chainBufs lists the chain's non-empty buffers in q.bufs (no allocation
// once q.bufs has grown to the longest chain).
func (q *txq) chainBufs(m *Packet) [][]byte {
	b := q.bufs[:0]
	for p := m; p != nil; p = p.Next {
		if p.n > 0 {
			b = append(b, p.Bytes())
		}
	}
	q.bufs = b
	return b
}

// collapse is m_collapse(m, M_NOWAIT, maxfrags): move data of later
// buffers into the trailing space of earlier ones and free the emptied
// buffers, until the chain has at most maxSegs buffers. It reports whether
// that was reached.
func collapse(m *Packet, maxSegs int) bool {
	for prev := m; prev != nil && prev.Next != nil; {
		next := prev.Next
		if next.n <= prev.Cap() {
			prev.Append(next.Bytes())
			prev.Next = next.Next
			next.Next = nil
			next.Free()
			continue
		}
		prev = next
	}
	return m.NumBufs() <= maxSegs
}

// defragChain is m_defrag(m, M_NOWAIT): copy the chain into as few full
// clusters of the head's zone as it needs. On success the old chain is
// freed and the new one returned; on failure the old chain is returned
// unchanged.
func (q *txq) defragChain(m *Packet) (*Packet, bool) {
	total := m.ChainLen()
	z := m.zone
	n := (total + z.size - 1) / z.size
	if n == 0 || n > len(q.defrag) {
		return m, false
	}
	bufs := q.defrag[:n]
	for i := range bufs {
		p, err := z.Get()
		if err != nil {
			for _, b := range bufs[:i] {
				b.Free()
			}
			return m, false
		}
		bufs[i] = p
	}
	i := 0
	for p := m; p != nil; p = p.Next {
		src := p.Bytes()
		for len(src) > 0 {
			c := bufs[i].Append(src)
			src = src[c:]
			if bufs[i].Cap() == 0 {
				i++
			}
		}
	}
	for i := 0; i < n-1; i++ {
		bufs[i].Next = bufs[i+1]
	}
	head := bufs[0]
	head.Hdr = m.Hdr
	m.Free()
	clear(bufs)
	return head, true
}

// etherPad is iflib_ether_pad: append zeros until the frame is min bytes,
// in the last buffer's trailing space or, like m_append, in a new buffer
// from the head's zone. It reports false when no buffer could be had.
func etherPad(m *Packet, min int) bool {
	last := m
	for last.Next != nil {
		last = last.Next
	}
	need := min - m.Hdr.Len
	if need <= 0 {
		return true
	}
	if last.Cap() < need {
		p, err := m.zone.Get()
		if err != nil || p.Cap() < need {
			if p != nil {
				p.Free()
			}
			return false
		}
		last.Next = p
		last = p
	}
	b := last.cl[last.off+last.n : last.off+last.n+need]
	clear(b)
	last.n += need
	m.Hdr.Len += need
	return true
}

// EtherType values iflib_parse_header distinguishes.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	etherTypeVLAN = 0x8100
	ipProtoTCP    = 6
	ipProtoUDP    = 17
)

// parseHeader is iflib_parse_header for the fields a descriptor needs:
// Ethernet/VLAN, IPv4 or IPv6 (no extension headers), TCP or UDP. The
// headers must lie in the first buffer; a shorter first buffer is pulled up
// (m_pullup into its trailing space, counted in m_pullups).
func (q *txq) parseHeader(pi *PktInfo, m *Packet) error {
	need := 14 + 60 + 60
	if need > m.Hdr.Len {
		need = m.Hdr.Len
	}
	if m.n < need && m.Next != nil {
		q.st.inc(txPullups, 1)
		pullup(m, need)
	}
	b := m.Bytes()
	if len(b) < 14 {
		return ErrBadHeader
	}
	etype := binary.BigEndian.Uint16(b[12:14])
	ehdr := 14
	if etype == etherTypeVLAN {
		if len(b) < 18 {
			return ErrBadHeader
		}
		etype = binary.BigEndian.Uint16(b[16:18])
		ehdr = 18
	}
	pi.EType, pi.EHdrLen = etype, uint8(ehdr)
	switch etype {
	case etherTypeIPv4:
		if len(b) < ehdr+20 {
			return ErrBadHeader
		}
		ip := b[ehdr:]
		hl := int(ip[0]&0x0f) << 2
		if hl < 20 || len(ip) < hl {
			return ErrBadHeader
		}
		pi.IPHLen, pi.IPProto, pi.IPTos = uint8(hl), ip[9], ip[1]
		pi.Flags |= IPITxIPv4
		if pi.CsumFlags&CsumIP6TSO != 0 {
			return ErrBadHeader // IPv6 TSO asked for an IPv4 packet
		}
		if err := parseL4(pi, ip[hl:]); err != nil {
			return err
		}
		if pi.CsumFlags&CsumIPTSO != 0 {
			if pi.IPProto != ipProtoTCP || pi.TCPHLen < 20 || m.Hdr.TSOSegSize == 0 {
				return ErrBadHeader
			}
			if m.Hdr.Len <= ehdr+hl+int(pi.TCPHLen) {
				return ErrTSONoPayload
			}
			// TSO always needs checksum offload; the device fills in each
			// segment's TCP checksum from the pseudo-header sum (without
			// the length) that iflib_parse_header writes into th_sum.
			pi.CsumFlags |= CsumIPTCP | CsumIP
			pi.TSOSegSize = m.Hdr.TSOSegSize
			th := ip[hl:]
			binary.BigEndian.PutUint16(th[16:18], pseudoSum(ip[12:16], ip[16:20], ipProtoTCP))
			if q.ctx.shared.Flags&FlagTSOInitIP != 0 {
				// IFLIB_TSO_INIT_IP: the device wants the first segment's
				// IP length and a zero header checksum.
				ip[10], ip[11] = 0, 0
				binary.BigEndian.PutUint16(ip[2:4], uint16(hl+int(pi.TCPHLen)+int(pi.TSOSegSize)))
			}
		}
	case etherTypeIPv6:
		if len(b) < ehdr+40 {
			return ErrBadHeader
		}
		ip := b[ehdr:]
		pi.IPHLen, pi.IPProto = 40, ip[6]
		pi.IPTos = uint8(binary.BigEndian.Uint16(ip[0:2]) >> 4)
		pi.Flags |= IPITxIPv6
		if pi.CsumFlags&CsumIPTSO != 0 {
			return ErrBadHeader // IPv4 TSO asked for an IPv6 packet
		}
		if err := parseL4(pi, ip[40:]); err != nil {
			return err
		}
		if pi.CsumFlags&CsumIP6TSO != 0 {
			if pi.IPProto != ipProtoTCP || pi.TCPHLen < 20 || m.Hdr.TSOSegSize == 0 {
				return ErrBadHeader
			}
			if m.Hdr.Len <= ehdr+40+int(pi.TCPHLen) {
				return ErrTSONoPayload
			}
			pi.CsumFlags |= CsumIP6TCP
			pi.TSOSegSize = m.Hdr.TSOSegSize
			// in6_cksum_pseudo(ip6, 0, IPPROTO_TCP, 0) into th_sum.
			th := ip[40:]
			binary.BigEndian.PutUint16(th[16:18], pseudoSum(ip[8:24], ip[24:40], ipProtoTCP))
		}
	default:
		pi.CsumFlags &^= csumOffloadTx
		pi.IPHLen = 0
	}
	return nil
}

// pseudoSum is in_pseudo / in6_cksum_pseudo with a zero length: the
// one's-complement sum (not complemented) of the addresses and the
// protocol, as the stack leaves it in th_sum for a device that finishes the
// checksum (TSO, CSUM_TCP).
func pseudoSum(src, dst []byte, proto uint8) uint16 {
	sum := uint32(proto)
	for _, a := range [2][]byte{src, dst} {
		for i := 0; i+1 < len(a); i += 2 {
			sum += uint32(a[i])<<8 | uint32(a[i+1])
		}
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

func parseL4(pi *PktInfo, l4 []byte) error {
	if pi.IPProto != ipProtoTCP {
		return nil
	}
	if len(l4) < 20 {
		if pi.CsumFlags&(CsumIPTCP|CsumIP6TCP|CsumTSO) != 0 {
			return ErrBadHeader
		}
		return nil
	}
	pi.TCPHLen = (l4[12] >> 4) << 2
	pi.TCPHFlags = l4[13]
	pi.TCPSeq = binary.BigEndian.Uint32(l4[4:8])
	return nil
}

// pullup is m_pullup into the first buffer's trailing space: move up to
// need bytes from the following buffers to the first, freeing buffers it
// empties. It moves what fits.
func pullup(m *Packet, need int) {
	for m.n < need && m.Next != nil && m.Cap() > 0 {
		next := m.Next
		want := min(need-m.n, next.n, m.Cap())
		m.Append(next.cl[next.off : next.off+want])
		next.off += want
		next.n -= want
		if next.n == 0 {
			m.Next = next.Next
			next.Next = nil
			next.Free()
		}
	}
}
