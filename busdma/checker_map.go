package busdma

import (
	"bytes"
	"sync"
)

// devCheck is a checked device's registry of current mappings.
//
// Invariants: pages[f] lists every loaded map with a piece touching bus page
// f (entries are never deleted, so reloading a page allocates nothing); maps
// is the set of loaded maps. Everything here and in every mapCheck of
// the device is guarded by mu, which orders CPU-side syncs against
// device-side accesses.
type devCheck struct {
	mu    sync.Mutex
	pages map[uint64][]*Map
	maps  map[*Map]struct{}
}

func newDevCheck() *devCheck {
	return &devCheck{pages: make(map[uint64][]*Map), maps: make(map[*Map]struct{})}
}

// mapCheck is the checker's model of one map's memory. Guarded by the
// device's devCheck.mu.
type mapCheck struct {
	mem        []byte // memory as the device sees it, buffers concatenated
	bufStart   []int  // offset of each buffer in mem
	devDirty   []bool // byte written by the device since the last POSTREAD
	ndev       int    // count of true in devDirty
	prewritten bool   // a PREWRITE happened since the load
}

func newMapCheck() *mapCheck { return &mapCheck{} }

func (d *Device) checkLoad(m *Map) {
	c := m.chk
	dc := d.creg
	dc.mu.Lock()
	defer dc.mu.Unlock()
	c.bufStart = c.bufStart[:0]
	total := 0
	for _, b := range m.bufs {
		c.bufStart = append(c.bufStart, total)
		total += len(b)
	}
	c.mem = growBytes(c.mem, total)
	for i, b := range m.bufs {
		copy(c.mem[c.bufStart[i]:], b)
	}
	if cap(c.devDirty) < total {
		c.devDirty = make([]bool, total)
	}
	c.devDirty = c.devDirty[:total]
	clear(c.devDirty)
	c.ndev = 0
	c.prewritten = false
	for _, p := range m.pieces {
		for f := uint64(p.addr) >> pageShift; f <= (uint64(p.addr)+uint64(p.n)-1)>>pageShift; f++ {
			dc.pages[f] = append(dc.pages[f], m)
		}
	}
	dc.maps[m] = struct{}{}
}

func growBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func (d *Device) checkUnload(m *Map) {
	dc := d.creg
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if m.chk.ndev > 0 {
		d.report(KindNoPostRead, m, "unload drops %d device-written bytes never synced with POSTREAD", m.chk.ndev)
	}
	d.unregister(m)
}

// unregister removes m from the registry. Preconditions: dc.mu held.
func (d *Device) unregister(m *Map) {
	dc := d.creg
	for _, p := range m.pieces {
		for f := uint64(p.addr) >> pageShift; f <= (uint64(p.addr)+uint64(p.n)-1)>>pageShift; f++ {
			l := dc.pages[f]
			for i, x := range l {
				if x == m {
					l[i] = l[len(l)-1]
					l[len(l)-1] = nil
					l = l[:len(l)-1]
					break
				}
			}
			dc.pages[f] = l // kept when empty: its capacity serves the next load

		}
	}
	delete(dc.maps, m)
}

// checkSync is Sync on a checked map: the non-coherent model.
func (d *Device) checkSync(m *Map, op SyncOp) {
	dc := d.creg
	dc.mu.Lock()
	defer dc.mu.Unlock()
	c := m.chk
	if op&PreRead != 0 && op&PreWrite == 0 && c.ndev > 0 {
		d.report(KindNoPostRead, m, "PREREAD re-posts a buffer holding %d device-written bytes never synced with POSTREAD", c.ndev)
	}
	if op&PreWrite != 0 {
		// Write back what the CPU wrote (bytes the device wrote since the last
		// POSTREAD stay the device's), then copy into bounce pages.
		for i, b := range m.bufs {
			c.copyClean(c.mem[c.bufStart[i]:c.bufStart[i]+len(b)], b, c.bufStart[i])
		}
		for _, p := range m.bounced {
			o := c.bufStart[p.bi] + p.off
			c.copyClean(d.be.bounceBytes(p), c.mem[o:o+p.n], o)
		}
		c.prewritten = true
		if len(m.bounced) > 0 {
			d.be.noteBounce()
		}
	}
	if op&PostRead != 0 && len(m.bounced) > 0 {
		d.be.noteBounce()
	}
	if op&PostRead != 0 && c.ndev > 0 {
		for _, p := range m.bounced {
			o := c.bufStart[p.bi] + p.off
			c.copyDirty(c.mem[o:o+p.n], d.be.bounceBytes(p), o)
		}
		for i, b := range m.bufs {
			c.copyDirty(b, c.mem[c.bufStart[i]:c.bufStart[i]+len(b)], c.bufStart[i])
		}
		clear(c.devDirty)
		c.ndev = 0
	}
}

// copyClean copies src to dst except bytes the device wrote; o is the map
// offset of dst[0].
func (c *mapCheck) copyClean(dst, src []byte, o int) {
	if c.ndev == 0 {
		copy(dst, src)
		return
	}
	for i := range dst {
		if !c.devDirty[o+i] {
			dst[i] = src[i]
		}
	}
}

// copyDirty copies only bytes the device wrote.
func (c *mapCheck) copyDirty(dst, src []byte, o int) {
	for i := range dst {
		if c.devDirty[o+i] {
			dst[i] = src[i]
		}
	}
}

// findPiece returns the loaded map and piece covering bus address a.
// Preconditions: dc.mu held.
func (dc *devCheck) findPiece(a BusAddr) (*Map, *piece) {
	for _, m := range dc.pages[uint64(a)>>pageShift] {
		for i := range m.pieces {
			p := &m.pieces[i]
			if a >= p.addr && a-p.addr < BusAddr(p.n) {
				return m, p
			}
		}
	}
	return nil, nil
}

// checkedAccess is device-side DMA on a checked device.
func (d *Device) checkedAccess(a BusAddr, buf []byte, write bool) error {
	dc := d.creg
	dc.mu.Lock()
	defer dc.mu.Unlock()
	for len(buf) > 0 {
		m, p := dc.findPiece(a)
		if m == nil {
			if iommu, ok := d.be.(*iommuBackend); ok {
				// The IOMMU sees the same stray access and records a fault.
				if err := iommu.access(d, a, buf, write); err != nil {
					return err
				}
			}
			dir := "read"
			if write {
				dir = "write"
			}
			d.report(KindOutsideMapping, nil, "device %s of %d bytes at %#x outside every current mapping", dir, len(buf), uint64(a))
			return ErrFault
		}
		c := m.chk
		in := int(a - p.addr)
		n := min(len(buf), p.n-in)
		o := c.bufStart[p.bi] + p.off + in
		var mem []byte
		if p.bounce >= 0 {
			mem = d.be.bounceBytes(m.bounced[p.bounce])[in : in+n]
		} else {
			mem = c.mem[o : o+n]
		}
		if write {
			copy(mem, buf[:n])
			for i, dirty := range c.devDirty[o : o+n] {
				if !dirty {
					c.devDirty[o+i] = true
					c.ndev++
				}
			}
		} else {
			if !c.prewritten {
				d.report(KindNoPreWrite, m, "device read at %#x of a map never synced with PREWRITE since its load", uint64(a))
			} else if cpu := m.bufs[p.bi][p.off+in : p.off+in+n]; c.cpuChanged(cpu, c.mem[o:o+n], o) {
				d.report(KindNoPreWrite, m, "device read at %#x of bytes the CPU changed after the last PREWRITE", uint64(a))
			}
			copy(buf[:n], mem)
		}
		buf = buf[n:]
		a += BusAddr(n)
	}
	return nil
}

// cpuChanged reports whether cpu differs from mem in a byte the device did
// not write.
func (c *mapCheck) cpuChanged(cpu, mem []byte, o int) bool {
	if c.ndev == 0 {
		return !bytes.Equal(cpu, mem)
	}
	for i := range cpu {
		if cpu[i] != mem[i] && !c.devDirty[o+i] {
			return true
		}
	}
	return false
}
