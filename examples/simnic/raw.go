package simnic

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/goiflib/goiflib/busdma"
)

// Errors of the raw forwarder.
var (
	// ErrRawConfig: the two NICs cannot be driven by one raw loop (several
	// queues, different address spaces, or a bad RawConfig).
	ErrRawConfig = errors.New("simnic: raw forwarder: unsupported configuration")
	// ErrRawBusy: a NIC's device is already running (attached to iflib or
	// to another raw forwarder), or the forwarder was started twice.
	ErrRawBusy = errors.New("simnic: raw forwarder: device already running")
	// ErrRawClosed: the forwarder was closed.
	ErrRawClosed = errors.New("simnic: raw forwarder: closed")
	// ErrRawLostBuffer: Close found buffers the forwarder lost track of
	// (neither free nor on a ring): a bug in the loop, never the device's.
	ErrRawLostBuffer = errors.New("simnic: raw forwarder: buffers lost track of")
)

// RawConfig configures a [RawForwarder]. The zero value works.
type RawConfig struct {
	// Batch is the most descriptors handled per pass and per doorbell
	// (RDT or TDT write); default 32, as IFLIB_MAX_RX_REFRESH and
	// TX_BATCH_SIZE.
	Batch int
	// Buffers is the number of clusters; default NRxd(rx) + NTxd(tx), so
	// that both rings can be full at once.
	Buffers int
}

// RawStats are the raw forwarder's counters.
type RawStats struct {
	Received  uint64 // frames read from the RX ring (Forwarded + Errors)
	Forwarded uint64 // frames written to the TX ring, whole
	Completed uint64 // TX descriptors the device finished, buffers recycled
	Bytes     uint64 // bytes forwarded
	Errors    uint64 // frames dropped whole: a descriptor with a bad length or an error (buffers recycled)
	Doorbells uint64 // RDT and TDT writes
	Sleeps    uint64 // times the loop blocked on an interrupt
}

// RawForwarder is the baseline of the forwarding measurement: a
// hand-written minimal forwarding loop over simnic's rings without iflib,
// in the style of a netmap or DPDK l2fwd loop. One goroutine owns the RX
// ring of one NIC and the TX ring of the other. Every cluster is mapped
// once on both devices when the forwarder is built (static mappings, no
// per-packet load); a received buffer is handed to TX as is (zero copy)
// and reposted on RX when the TX descriptor that carried it completes.
//
// Invariants: the loop goroutine owns every field below mu except the
// counters (atomics it alone writes) and kick. A buffer is in exactly one
// place: the free stack, the RX ring (between rxNext and rxTail), or the
// TX ring (between txClean and txTail). The device registers are the
// only shared state with the device goroutines: the doorbells (RDT, TDT
// stores) release the descriptors written before them; the write-back
// frontiers (loads) acquire the device's reads and write-backs before
// them. A descriptor is rewritten only once the device wrote it back and
// the ring was synced with POSTREAD (reclaim, forward, Start): a late or
// batched write-back never lands on a descriptor the loop re-posted.
type RawForwarder struct {
	rx, tx *NIC
	batch  int
	bufSz  int

	mem     []byte
	bufs    [][]byte
	rxMaps  []*busdma.Map // on rx's device
	txMaps  []*busdma.Map // on tx's device
	rxBA    []busdma.BusAddr
	txBA    []busdma.BusAddr
	rings   [4]*busdma.DMAMem // rx's RX, rx's TX (idle), tx's TX, tx's RX (idle)
	bufTags [2]*busdma.Tag

	free    []int32 // free buffer ids
	rxSlot  []int32 // RX descriptor → buffer
	txSlot  []int32 // TX descriptor → buffer (-1 when none)
	rxSize  int
	txSize  int
	rxNext  int // next RX descriptor to read
	rxTail  int // next RX descriptor to post (RDT)
	txTail  int // next TX descriptor to write (TDT)
	txClean int // next TX descriptor to recycle
	txUsed  int // descriptors between txClean and txTail

	received, forwarded, completed, bytes atomic.Uint64
	errs, doorbells, sleeps               atomic.Uint64

	kick chan struct{} // interrupts: capacity 1, non-blocking sends

	mu      sync.Mutex // Start/Stop/Close
	quit    chan struct{}
	done    chan struct{}
	running bool
	closed  bool
}

// NewRawForwarder prepares a raw loop from rx's wire to tx's wire: ring
// memory on both devices and every cluster mapped on both. Both NICs must
// have one queue and share an address space. The forwarder binds both NICs
// until Close: a NIC attached to iflib or bound to another forwarder is
// refused with an error matching both ErrRawBusy and ErrBusy, and so is a
// later Attach of either NIC.
func NewRawForwarder(rx, tx *NIC, cfg RawConfig) (*RawForwarder, error) {
	if rx == nil || tx == nil || rx == tx {
		return nil, fmt.Errorf("%w: need two distinct NICs", ErrRawConfig)
	}
	if rx.cfg.Queues != 1 || tx.cfg.Queues != 1 {
		return nil, fmt.Errorf("%w: one queue per NIC", ErrRawConfig)
	}
	if rx.bus.Space() != tx.bus.Space() {
		return nil, fmt.Errorf("%w: the NICs must share an address space for zero copy", ErrRawConfig)
	}
	if cfg.Batch == 0 {
		cfg.Batch = 32
	}
	if cfg.Buffers == 0 {
		cfg.Buffers = rx.cfg.NRxd + tx.cfg.NTxd
	}
	if cfg.Batch < 1 || cfg.Buffers < 2 || cfg.Buffers > 1<<20 {
		return nil, fmt.Errorf("%w: batch %d, buffers %d", ErrRawConfig, cfg.Batch, cfg.Buffers)
	}
	for _, n := range []int{rx.cfg.NRxd, rx.cfg.NTxd, tx.cfg.NRxd, tx.cfg.NTxd} {
		if n < 2 || n&(n-1) != 0 {
			return nil, fmt.Errorf("%w: ring size %d not a power of two", ErrRawConfig, n)
		}
	}
	f := &RawForwarder{
		rx: rx, tx: tx, batch: cfg.Batch, bufSz: rx.cfg.RxBufSize,
		rxSize: rx.cfg.NRxd, txSize: tx.cfg.NTxd, kick: make(chan struct{}, 1),
	}
	if err := rx.claim(f, "a raw forwarder"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRawBusy, err)
	}
	if err := tx.claim(f, "a raw forwarder"); err != nil {
		rx.release(f)
		return nil, fmt.Errorf("%w: %w", ErrRawBusy, err)
	}
	if err := f.alloc(cfg.Buffers); err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

// alloc builds the rings, the clusters and their two mappings each.
func (f *RawForwarder) alloc(nbuf int) error {
	ring := func(n *NIC, ndesc int, tx bool) (*busdma.DMAMem, error) {
		size := ndesc * DescSize
		if tx && n.cfg.TxCompletion == TxCompletionHeadWB {
			size += DescSize // TDWBAL: the head is written right after the ring
		}
		t, err := busdma.NewTag(n.bus.Tag(), busdma.TagConfig{
			Alignment: 128, MaxSize: size, NSegments: 1, MaxSegSize: size,
		})
		if err != nil {
			return nil, err
		}
		return t.AllocMem()
	}
	var err error
	sizes := [4]struct {
		n     *NIC
		ndesc int
		tx    bool
	}{{f.rx, f.rx.cfg.NRxd, false}, {f.rx, f.rx.cfg.NTxd, true}, {f.tx, f.tx.cfg.NTxd, true}, {f.tx, f.tx.cfg.NRxd, false}}
	for i, s := range sizes {
		if f.rings[i], err = ring(s.n, s.ndesc, s.tx); err != nil {
			return fmt.Errorf("simnic: raw forwarder: ring: %w", err)
		}
	}
	for i, n := range []*NIC{f.rx, f.tx} {
		f.bufTags[i], err = busdma.NewTag(n.bus.Tag(), busdma.TagConfig{
			Alignment: 1, MaxSize: f.bufSz, NSegments: 1, MaxSegSize: f.bufSz,
		})
		if err != nil {
			return fmt.Errorf("simnic: raw forwarder: buffer tag: %w", err)
		}
	}
	f.mem, err = f.rx.bus.Space().Alloc(nbuf*f.bufSz, f.bufSz&-f.bufSz)
	if err != nil {
		return fmt.Errorf("simnic: raw forwarder: clusters: %w", err)
	}
	var seg [1]busdma.Segment
	load := func(t *busdma.Tag, b []byte) (*busdma.Map, busdma.BusAddr, error) {
		m, err := t.CreateMap()
		if err != nil {
			return nil, 0, err
		}
		segs, err := m.Load(b, seg[:0])
		if err == nil && len(segs) != 1 {
			_ = m.Unload()
			err = busdma.ErrTooBig
		}
		if err != nil {
			_ = m.Destroy()
			return nil, 0, err
		}
		return m, segs[0].Addr, nil
	}
	for i := 0; i < nbuf; i++ {
		b := f.mem[i*f.bufSz : (i+1)*f.bufSz : (i+1)*f.bufSz]
		rm, ra, err := load(f.bufTags[0], b)
		if err != nil {
			return fmt.Errorf("simnic: raw forwarder: load on %s: %w", f.rx.bus.Name(), err)
		}
		f.bufs, f.rxMaps, f.rxBA = append(f.bufs, b), append(f.rxMaps, rm), append(f.rxBA, ra)
		tm, ta, err := load(f.bufTags[1], b)
		if err != nil {
			f.txMaps = append(f.txMaps, nil)
			return fmt.Errorf("simnic: raw forwarder: load on %s: %w", f.tx.bus.Name(), err)
		}
		f.txMaps, f.txBA = append(f.txMaps, tm), append(f.txBA, ta)
	}
	f.free = make([]int32, 0, nbuf)
	for i := nbuf - 1; i >= 0; i-- {
		f.free = append(f.free, int32(i))
	}
	f.rxSlot = make([]int32, f.rxSize)
	f.txSlot = make([]int32, f.txSize)
	return nil
}

// release unloads and destroys every map and frees the rings.
// Preconditions: the devices are stopped.
func (f *RawForwarder) release() {
	for i := range f.rxMaps {
		if m := f.rxMaps[i]; m != nil {
			m.Sync(busdma.PostRead)
			_ = m.Unload()
			_ = m.Destroy()
		}
		if i < len(f.txMaps) && f.txMaps[i] != nil {
			m := f.txMaps[i]
			m.Sync(busdma.PostWrite)
			_ = m.Unload()
			_ = m.Destroy()
		}
	}
	f.rxMaps, f.txMaps = nil, nil
	for i, r := range f.rings {
		if r != nil {
			r.Sync(busdma.PostRead | busdma.PostWrite)
			_ = r.Free()
			f.rings[i] = nil
		}
	}
	if f.mem != nil {
		// bus_dmamem_free of the clusters: every map that loaded them is
		// unloaded above.
		_ = f.rx.bus.Space().Free(f.mem)
		f.mem = nil
	}
	f.rx.release(f)
	f.tx.release(f)
}

// Start programs both devices with the forwarder's rings, posts buffers
// and runs the loop.
func (f *RawForwarder) Start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrRawClosed
	}
	if f.running {
		return ErrRawBusy
	}
	for _, n := range []*NIC{f.rx, f.tx} {
		n.mu.Lock()
		busy := n.running
		n.mu.Unlock()
		if busy {
			return ErrRawBusy
		}
	}
	// The rings may hold the last write-backs of a previous run (a stop
	// completes the device's batched and delayed ones): they are the CPU's
	// only after a POSTREAD. Clearing them without it would leave the
	// device's view of those bytes stale (an RX write-back's hash where
	// the next buffer address goes) on a non-coherent machine, as the
	// checker models one.
	for _, r := range f.rings {
		r.Sync(busdma.PostRead | busdma.PostWrite)
		clear(r.Vaddr)
		r.Sync(busdma.PreRead | busdma.PreWrite)
	}
	f.rx.program([]busdma.BusAddr{f.rings[1].Paddr}, []busdma.BusAddr{f.rings[0].Paddr}, f.rx.cfg.NTxd, f.rxSize, f.bufSz)
	f.tx.program([]busdma.BusAddr{f.rings[2].Paddr}, []busdma.BusAddr{f.rings[3].Paddr}, f.txSize, f.tx.cfg.NRxd, f.tx.cfg.RxBufSize)
	// A bridge: the receive filter open, tags left in the frames (no
	// CTRL.VME: the forwarder's descriptors carry none), the hardware's
	// largest frame, whatever a previous driver programmed.
	for _, n := range []*NIC{f.rx, f.tx} {
		_ = n.SetRxControl(ResetRxControl)
		n.SetVLANMode(false)
		_ = n.SetMaxFrame(n.cfg.MaxFrame)
	}
	// Every buffer is on the free stack (NewRawForwarder, stopLocked).
	for i := range f.txSlot {
		f.txSlot[i] = -1
	}
	f.rxNext, f.rxTail, f.txTail, f.txClean, f.txUsed = 0, 0, 0, 0, 0
	isr := func(intrCause, int) {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	f.rx.start(isr)
	f.tx.start(isr)
	for posted := 1; posted > 0; {
		posted = f.refill()
	}
	f.quit, f.done = make(chan struct{}), make(chan struct{})
	f.running = true
	go f.loop()
	return nil
}

// Stop ends the loop and stops both devices; every buffer comes back to
// the free stack (those the devices still held are dropped).
func (f *RawForwarder) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked()
}

func (f *RawForwarder) stopLocked() {
	if !f.running {
		return
	}
	close(f.quit)
	<-f.done
	f.rx.stop()
	f.tx.stop()
	f.running = false
	// The devices touch nothing now: take back what the rings held.
	for f.rxNext != f.rxTail {
		b := f.rxSlot[f.rxNext]
		f.rxMaps[b].Sync(busdma.PostRead)
		f.free = append(f.free, b)
		f.rxNext = (f.rxNext + 1) & (f.rxSize - 1)
	}
	for f.txUsed > 0 {
		b := f.txSlot[f.txClean]
		f.txMaps[b].Sync(busdma.PostWrite)
		f.free = append(f.free, b)
		f.txSlot[f.txClean] = -1
		f.txClean = (f.txClean + 1) & (f.txSize - 1)
		f.txUsed--
	}
}

// Close stops the forwarder, unloads every mapping and frees the rings.
// It reports ErrRawLostBuffer (wrapped, with the counts) if a buffer was
// lost track of.
func (f *RawForwarder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrRawClosed
	}
	f.stopLocked()
	f.closed = true
	var err error
	if len(f.free) != len(f.bufs) {
		err = fmt.Errorf("%w: %d of %d accounted for", ErrRawLostBuffer, len(f.free), len(f.bufs))
	}
	f.release()
	return err
}

// Stats returns the counters.
func (f *RawForwarder) Stats() RawStats {
	return RawStats{
		Received: f.received.Load(), Forwarded: f.forwarded.Load(), Completed: f.completed.Load(),
		Bytes: f.bytes.Load(), Errors: f.errs.Load(), Doorbells: f.doorbells.Load(), Sleeps: f.sleeps.Load(),
	}
}

// loop is the forwarding loop: reclaim TX, forward up to a batch, refill
// RX; after 64 idle passes (each yielding the processor) enable both
// interrupts and sleep until one fires.
func (f *RawForwarder) loop() {
	defer close(f.done)
	idle := 0
	for {
		select {
		case <-f.quit:
			return
		default:
		}
		work := f.reclaim()
		work += f.forward()
		work += f.refill()
		if work > 0 {
			idle = 0
			continue
		}
		if idle < 64 {
			idle++
			runtime.Gosched()
			continue
		}
		idle = 0
		f.sleeps.Add(1)
		f.rx.rxq[0].intrEn.Store(true)
		f.tx.txq[0].intrEn.Store(true)
		f.rx.wake()
		f.tx.wake()
		select {
		case <-f.quit:
			return
		case <-f.kick:
		}
	}
}

// reclaim recycles the buffers of TX descriptors the device finished and
// wrote back: everything before the write-back frontier (acquire: the
// device read the data, and made its DD or head write-backs, before it).
// Not TDH: with late or batched write-backs (WBDelay, WBThresh) the device
// has read a descriptor long before it writes DD into it, and a descriptor
// reclaimed at TDH could be re-posted before that write lands.
func (f *RawForwarder) reclaim() int {
	head := int(f.tx.txq[0].wb.Load())
	mask := f.txSize - 1
	n := 0
	if f.txUsed > 0 && f.txClean != head {
		// The descriptors the device wrote back are the CPU's again before
		// forward rewrites them.
		f.rings[2].Sync(busdma.PostRead | busdma.PostWrite)
	}
	for f.txUsed > 0 && f.txClean != head {
		b := f.txSlot[f.txClean]
		f.txMaps[b].Sync(busdma.PostWrite)
		f.free = append(f.free, b)
		f.txSlot[f.txClean] = -1
		f.txClean = (f.txClean + 1) & mask
		f.txUsed--
		n++
	}
	f.completed.Add(uint64(n))
	return n
}

// forward moves up to a batch of completed RX frames to the TX ring,
// buffers and all, and rings TDT once. A frame is forwarded whole or
// dropped whole: if any of its descriptors has a bad length or its EOP
// descriptor an error, every buffer of the frame goes back to the free
// stack and the frame is counted in Errors (never sent shorter).
func (f *RawForwarder) forward() int {
	rxq := &f.rx.rxq[0]
	head := int(rxq.wb.Load()) // acquire: data and write-backs (the write-back frontier)
	if head == f.rxNext {
		return 0
	}
	rring, tring := f.rings[0], f.rings[2]
	rring.Sync(busdma.PostRead | busdma.PostWrite)
	rmask, tmask := f.rxSize-1, f.txSize-1
	n, frames, bad, nbytes := 0, 0, 0, 0
	last := -1
	for n < f.batch && f.rxNext != head {
		// The frame's extent: descriptors up to EOP. The device moves its
		// write-back frontier past a frame's last write-back, so a frame
		// before head is complete.
		cnt, ok, drop := 0, false, false
		for i := f.rxNext; i != head; i = (i + 1) & rmask {
			wb := getRxWB(rring.Vaddr[i*DescSize : (i+1)*DescSize])
			if wb.status&RxStatDD == 0 {
				break
			}
			cnt++
			if int(wb.length) > f.bufSz || wb.length == 0 {
				drop = true
			}
			if wb.status&RxStatEOP != 0 {
				ok = true
				if wb.errors&RxErrFrameMask != 0 {
					drop = true
				}
				break
			}
		}
		if !ok || (!drop && f.txSize-1-f.txUsed < cnt) {
			break // incomplete, or no room on TX: keep it for the next pass
		}
		if drop {
			bad++
		} else {
			frames++
		}
		for j := 0; j < cnt; j++ {
			d := rring.Vaddr[f.rxNext*DescSize : (f.rxNext+1)*DescSize]
			wb := getRxWB(d)
			b := f.rxSlot[f.rxNext]
			f.rxMaps[b].Sync(busdma.PostRead)
			f.rxNext = (f.rxNext + 1) & rmask
			n++
			if drop {
				f.free = append(f.free, b)
				continue
			}
			cmd := uint8(TxCmdIFCS)
			if j == cnt-1 {
				cmd |= TxCmdEOP
			}
			f.txMaps[b].Sync(busdma.PreWrite)
			last = f.txTail
			putTxDesc(tring.Vaddr[f.txTail*DescSize:], txDesc{addr: uint64(f.txBA[b]), length: wb.length, cmd: cmd})
			f.txSlot[f.txTail] = b
			f.txTail = (f.txTail + 1) & tmask
			f.txUsed++
			nbytes += int(wb.length)
		}
	}
	if last >= 0 {
		// Report status on the batch's last descriptor: its completion
		// raises the TX interrupt the sleeping loop waits for.
		tring.Vaddr[last*DescSize+11] |= TxCmdRS
		tring.Sync(busdma.PreWrite)
		f.tx.txq[0].tdt.Store(uint32(f.txTail)) // release: the descriptors
		f.tx.wake()
		f.doorbells.Add(1)
	}
	f.received.Add(uint64(frames + bad))
	f.forwarded.Add(uint64(frames))
	f.errs.Add(uint64(bad))
	f.bytes.Add(uint64(nbytes))
	return n
}

// refill posts up to a batch of free buffers on the RX ring, keeping one
// descriptor unused, and rings RDT once.
func (f *RawForwarder) refill() int {
	mask := f.rxSize - 1
	posted := (f.rxTail - f.rxNext) & mask
	room := f.rxSize - 1 - posted
	n := min(room, len(f.free), f.batch)
	if n <= 0 {
		return 0
	}
	ring := f.rings[0]
	for i := 0; i < n; i++ {
		b := f.free[len(f.free)-1]
		f.free = f.free[:len(f.free)-1]
		f.rxMaps[b].Sync(busdma.PreRead)
		d := ring.Vaddr[f.rxTail*DescSize : (f.rxTail+1)*DescSize]
		clear(d)
		putRxAddr(d, f.rxBA[b])
		f.rxSlot[f.rxTail] = b
		f.rxTail = (f.rxTail + 1) & mask
	}
	ring.Sync(busdma.PreRead | busdma.PreWrite)
	f.rx.rxq[0].rdt.Store(uint32(f.rxTail)) // release: the buffer addresses
	f.rx.wake()
	f.doorbells.Add(1)
	return n
}

// putRxAddr writes an RX read-format descriptor's buffer address.
func putRxAddr(d []byte, a busdma.BusAddr) {
	for i := 0; i < 8; i++ {
		d[i] = byte(a >> (8 * i))
	}
}
