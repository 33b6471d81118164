package iflib

import (
	"fmt"
	"math"
)

// GetChain builds a packet chain holding a copy of data: FreeBSD's m_getm2
// (take as many buffers as len(data) needs and link them) followed by
// m_copyback (copy the bytes in), what m_devget does for a driver that
// copies a frame out of its own memory. The buffers come from z and are
// linked by Next; the head's Hdr.Len is len(data) and the rest of its
// header is zero, as Get leaves it.
//
// bufLen is the most bytes one buffer takes: 0, or anything at least the
// zone's cluster size, fills whole clusters as m_getm2 does; a smaller
// value spreads data over more buffers (a device whose segments are
// shorter than a cluster, or a test of multi-buffer paths). Empty data
// gives one empty buffer, where m_getm2 would return no mbuf at all.
//
// When the zone runs dry, GetChain frees every buffer it took and returns
// Get's error unchanged: ErrNoPackets, or ErrZoneClosed (package-level
// values; nothing is allocated and nothing is left out of the zone). A
// negative bufLen, or data that would need more than MaxChainBufs buffers
// (which Transmit refuses), is a *ConfigError and takes nothing. The chain
// belongs to the caller, as a packet from Get does.
func (z *Zone) GetChain(data []byte, bufLen int) (*Packet, error) {
	if bufLen < 0 {
		return nil, cfgErr("GetChain bufLen", bufLen, "negative (0 fills whole clusters)")
	}
	per := z.size
	if bufLen > 0 && bufLen < per {
		per = bufLen
	}
	if nb := (len(data) + per - 1) / per; nb > MaxChainBufs {
		return nil, cfgErr("GetChain data", len(data),
			fmt.Sprintf("needs %d buffers of %d bytes, more than MaxChainBufs (%d)", nb, per, MaxChainBufs))
	}
	var head, tail *Packet
	for off := 0; off < len(data) || head == nil; off += per {
		p, err := z.Get()
		if err != nil {
			head.Free() // m_freem of what m_getm2 took
			return nil, err
		}
		p.n = copy(p.cl, data[off:min(off+per, len(data))])
		if head == nil {
			head = p
		} else {
			tail.Next = p
		}
		tail = p
	}
	head.Hdr.Len = len(data)
	return head, nil
}

// CopyData is m_copydata: it copies len(dst) bytes of the chain, starting
// off bytes into it (byte 0 is the first byte of the head's data; buffers
// are walked by Next, their m_len summed as ChainLen does), into dst. It
// allocates nothing: the caller gives the destination, so that
// make([]byte, p.ChainLen()) and CopyData(0, b) copy a whole packet out.
//
// Where m_copydata panics (its KASSERTs), CopyData checks first and returns
// a *ConfigError (EINVAL: errors.Is ErrInvalid) naming the offset, the
// length and the chain's size, and copies nothing: off negative, or the
// chain holding fewer than off+len(dst) bytes within its first
// MaxChainBufs buffers. A nil chain holds no bytes. CopyData only reads the chain; like every
// Packet method, it must not race with a writer of it.
func (p *Packet) CopyData(off int, dst []byte) error {
	if off < 0 || off > math.MaxInt-len(dst) {
		return p.rangeErr(off, len(dst))
	}
	need := off + len(dst)
	have, bufs := 0, 0
	for q := p; q != nil && have < need && bufs < MaxChainBufs; q = q.Next {
		have += q.n
		bufs++
	}
	if have < need {
		return p.rangeErr(off, len(dst))
	}
	q := p
	for done := 0; done < len(dst); q = q.Next {
		if off >= q.n {
			off -= q.n
			continue
		}
		done += copy(dst[done:], q.cl[q.off+off:q.off+q.n])
		off = 0
	}
	return nil
}

// rangeErr is CopyData's error for a range outside the chain.
func (p *Packet) rangeErr(off, n int) error {
	return cfgErr("CopyData off", off,
		fmt.Sprintf("%d bytes from offset %d do not lie within the chain's %d bytes", n, off, p.ChainLen()))
}
