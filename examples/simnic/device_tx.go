package simnic

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// devTxq is the device's side of one TX queue: its registers and the
// state of its DMA engine.
//
// Registers: the driver's doorbell tdt (a release store; the device's load
// acquires the descriptors and buffers written before it); tdh, the head
// (a release store after the device read the descriptors and buffers
// before it: only the raw forwarder and tests read it, drivers must not,
// "Reading the transmit descriptor head to determine which buffers have
// been used … is not reliable", PCI/PCI-X Gigabit Ethernet Controllers
// SDM §13.4.39).
//
// wb is the write-back frontier: every write-back the device performed for
// descriptors before it (DD bits, or the head write in head write-back
// mode) was made, in order, before the device stored it (release). It is
// not a register: it models the coherent, in-order visibility of DMA
// writes that Go's memory model does not give plain memory, and the
// driver loads it (acquire) only to know which descriptors it may read
// without a data race; it counts completions from the DD bits (or the
// written-back head) alone.
type devTxq struct {
	base   busdma.BusAddr // TDBA
	size   int            // TDLEN / 16
	hwb    busdma.BusAddr // TDWBAL: head write-back address (0: DD write-back)
	tdt    atomic.Uint32  // tail: written by the driver's doorbell (release)
	tdh    atomic.Uint32  // head: written by the device (release)
	wb     atomic.Uint32  // write-back frontier (release; see the type's doc)
	intrEn atomic.Bool    // interrupt enabled (cleared by auto-mask)
	// hwbMu orders the device's head write-back with the driver's read of
	// it, the 32-bit coherent store a real device makes (head write-back
	// mode only).
	hwbMu sync.Mutex

	// Device-goroutine state.
	head    int       // next descriptor to process
	wbHead  int       // first processed descriptor not yet written back
	wbSince time.Time // when the oldest pending write-back became pending (with WBDelay)
	cmd     []uint8   // per descriptor: its command byte as processed (cmdLost: write-back lost)
	ndesc   uint64    // descriptors processed: the schedule's TX stream
	packets uint64    // packets whose EOP was processed (read by the driver once the device is stopped)
	// Per-queue counters (QueueStats).
	processedA, sentA, droppedA atomic.Uint64
	hung                        bool // scheduled hang: nothing is consumed until a reprogram
	stuck                       bool // a descriptor fetch faulted at stuckTDT: wait for a new TDT or a reprogram
	stuckTDT                    int
	pend                        bool // a completion was written back (TXDW): interrupt cause
	lastIntr                    time.Time
	descs                       []byte
	dd                          [1]byte // the DD status byte written back (kept here: no allocation)
	hwbBuf                      [4]byte
	tx                          txFrame // the frame being gathered
	seg                         []byte  // a TSO segment being built
}

// cmdLost marks, in devTxq.cmd, a descriptor whose write-back the
// schedule lost (it is not one of the descriptor's command bits).
const cmdLost = 0x80

// txFrame is the frame the device gathers from a packet's descriptors.
type txFrame struct {
	buf     []byte
	n       int
	vlan    uint16
	vle     bool
	drop    dropReason // the frame is dropped at its EOP
	tse     bool       // a TSO packet (TSE in its data descriptors)
	popts   uint8      // the checksums to insert (POPTS of its data descriptors)
	ctx     txCtx      // the queue's current context (it persists across packets)
	haveCtx bool
}

// dropReason says why the device drops the TX frame it is gathering. A
// frame is sent whole or not at all: never truncated, never with a hole.
type dropReason uint8

const (
	dropNone       dropReason = iota
	dropTooLong               // longer than MaxFrame (TxTooLong)
	dropDMA                   // a buffer read faulted (TxDMAFaults)
	dropBadContext            // an offload the device cannot do (TxBadContext)
)

func (q *devTxq) init(cfg *Config) {
	q.tx.buf = make([]byte, cfg.MaxFrame+4)
	if cfg.Offload {
		q.tx.buf = make([]byte, max(TSOMaxSize, cfg.MaxFrame)+4)
		q.seg = make([]byte, cfg.MaxFrame+4)
	}
	q.descs = make([]byte, 32*DescSize)
}

// program is the TX part of NIC.program.
func (q *devTxq) program(base busdma.BusAddr, size int, headWB bool) {
	q.base, q.size, q.head, q.wbHead, q.pend = base, size, 0, 0, false
	q.hwb = 0
	if headWB {
		q.hwb = base + busdma.BusAddr(size*DescSize)
	}
	if len(q.cmd) != size {
		q.cmd = make([]uint8, size)
	}
	q.hung, q.stuck = false, false
	q.tx.reset()
	q.tx.haveCtx = false
	q.tdt.Store(0)
	q.tdh.Store(0)
	q.wb.Store(0)
}

func (f *txFrame) reset() { f.n, f.vle, f.drop, f.tse, f.popts = 0, false, dropNone, false, 0 }

// txReady reports whether q has descriptors the device would process now.
func (n *NIC) txReady(q *devTxq) bool {
	if q.size == 0 || q.hung || !n.linkUp.Load() || n.pausedFor() > 0 {
		return false
	}
	tdt := int(q.tdt.Load()) // acquire: descriptors and data written before the doorbell
	return tdt != q.head && !(q.stuck && tdt == q.stuckTDT)
}

// serveTx processes the descriptors the driver published with TDT, then
// writes completions back (at once, or batched and delayed: writeBacks).
//
// While the link is down the queue's DMA stops: no descriptor is
// consumed (Intel MACs stop TX DMA on link loss; Linux e1000e/igb/ixgbe's
// watchdog: "We've lost link, so the controller stops DMA, but we've got
// queued Tx work that's never going to get done, so reset controller to
// flush Tx"). A scheduled hang stops it the same way until a reprogram.
//
// A frame is gathered from its descriptors up to EOP and then sent whole;
// a frame longer than MaxFrame, or one whose buffer read faulted, is
// dropped whole and counted, and its descriptors are completed as usual
// (the driver reclaims them): a DMA error on a transmit buffer aborts that
// frame, not the ring.
//
// A stop ends the pass after the descriptor in hand (a frame whose wire
// time it was waiting for goes out at once); the descriptors after it stay
// on the ring unprocessed, as a reset leaves them, and the driver takes
// their buffers back.
func (n *NIC) serveTx(i int, pace *pacer) bool {
	q := &n.txq[i]
	if !n.txReady(q) {
		return false
	}
	tdt := int(q.tdt.Load())
	q.stuck = false
	peer := n.peer.Load()
	done := 0
	for q.head != tdt && done < 256 && !q.hung && n.linkUp.Load() && !n.stopping.Load() && n.pausedFor() == 0 {
		cnt := tdt - q.head
		if cnt < 0 {
			cnt = q.size - q.head
		}
		cnt = min(cnt, 32)
		base := q.base + busdma.BusAddr(q.head*DescSize)
		if err := n.dmaRead(base, q.descs[:cnt*DescSize]); err != nil {
			// The descriptors themselves could not be fetched: nothing can
			// be known about them. Stop this queue until the next doorbell
			// or a reprogram (the driver's watchdog resets a queue that
			// never progresses).
			q.stuck, q.stuckTDT = true, tdt
			break
		}
		if q.wbHead == q.head && n.cfg.WBDelay > 0 {
			q.wbSince = time.Now()
		}
		k := 0
		for ; k < cnt && !n.stopping.Load(); k++ {
			q.ndesc++
			if n.sch.hit(FaultTxHang, i, q.ndesc) {
				q.hung = true
				n.st.txHangs.Add(1)
				break
			}
			cmd := n.txDescriptor(q, i, q.descs[k*DescSize:(k+1)*DescSize], peer, pace)
			if cmd&TxCmdRS != 0 && n.sch.hit(FaultLostWriteBack, i, q.ndesc) {
				cmd |= cmdLost
				n.st.lostWriteBacks.Add(1)
			}
			q.cmd[(q.head+k)%q.size] = cmd
			if n.sch.hit(FaultPause, i, q.ndesc) {
				// The link partner's XOFF arrives: the transmitter stops
				// after this descriptor for the quanta (receive flow
				// control on), every queue with it.
				quanta := min(n.sch.draw(FaultPause, i, n.sch.prof.PauseQuanta), 0xffff)
				n.sch.setLen(FaultPause, quanta)
				n.pause(uint16(quanta))
				if n.pausedFor() > 0 {
					k++
					break
				}
			}
		}
		q.head = (q.head + k) % q.size
		done += k
	}
	q.tdh.Store(uint32(q.head)) // release: the descriptor and buffer reads before it
	return done > 0
}

// txDescriptor processes one descriptor and returns its command byte: a
// context descriptor (extended, DTYP 0) sets the queue's offload context;
// a data descriptor (legacy, or extended DTYP 1) adds its buffer to the
// frame, which is sent at EOP.
func (n *NIC) txDescriptor(q *devTxq, qi int, raw []byte, peer *endpointBox, pace *pacer) uint8 {
	cmd := raw[11]
	f := &q.tx
	var addr uint64
	var length int
	var vlan uint16
	switch {
	case cmd&TxCmdDEXT != 0 && raw[10]>>4 == TxDTypContext:
		f.ctx, f.haveCtx = getTxCtx(raw), true
		return cmd & TxCmdRS // TUCMD: no EOP, VLE or TSE meaning for the frame
	case cmd&TxCmdDEXT != 0:
		d := getTxData(raw)
		addr, length, vlan = d.addr, int(d.length), d.vlan
		f.popts |= d.popts
		if cmd&TxCmdTSE != 0 {
			f.tse = true
		}
	default:
		d := getTxDesc(raw)
		addr, length, vlan = d.addr, int(d.length), d.vlan
	}
	limit := len(f.buf) - 4 // room for an inserted tag; the wire length is checked at EOP (sendTx)

	switch {
	case f.drop != dropNone:
		// The frame is already dropped: skip its data.
	case f.n+length > limit:
		f.drop = dropTooLong
	case length > 0 && n.sch.hit(FaultTxDMA, qi, q.ndesc):
		f.drop = dropDMA // a scheduled fault: the read "fails" without touching busdma
	default:
		if err := n.dmaRead(busdma.BusAddr(addr), f.buf[f.n:f.n+length]); err != nil {
			f.drop = dropDMA
		}
		f.n += length
	}
	if cmd&TxCmdVLE != 0 {
		f.vle, f.vlan = true, vlan
	}
	if cmd&TxCmdEOP != 0 {
		n.endTxFrame(q, peer, pace)
	}
	return cmd
}

// endTxFrame sends (or drops, counted) the frame gathered on q at its EOP
// descriptor and resets the gathering state.
func (n *NIC) endTxFrame(q *devTxq, peer *endpointBox, pace *pacer) {
	f := &q.tx
	q.packets++
	n.st.txProcessed.Add(1)
	q.processedA.Add(1)
	drop := f.drop
	if drop == dropNone {
		drop = n.sendTx(q, peer, pace)
	}
	switch drop {
	case dropNone:
		n.st.txPackets.Add(1)
		q.sentA.Add(1)
	case dropTooLong:
		n.st.txTooLong.Add(1)
	case dropDMA:
		n.st.txDMAFaults.Add(1)
	case dropBadContext:
		n.st.txBadContext.Add(1)
	}
	if drop != dropNone {
		q.droppedA.Add(1)
	}
	f.reset()
}

// sendTx puts the gathered packet on the wire: offloads, VLAN tag, TSO.
func (n *NIC) sendTx(q *devTxq, peer *endpointBox, pace *pacer) dropReason {
	f := &q.tx
	if f.tse {
		if !n.sendTSO(q, peer, pace) {
			return dropBadContext
		}
		return dropNone
	}
	out := f.buf[:f.n]
	switch {
	case f.vle && !n.filt.vme.Load():
		return dropBadContext // VLE without CTRL.VME: the tag would be lost
	case f.n > n.maxWireFrame(out) && !f.vle, f.vle && f.n+4 > int(n.filt.maxFrame.Load()):
		// Above the max frame register (with VLE the inserted tag is the
		// one tag RLPML does not count).
		return dropTooLong
	}
	if f.popts != 0 && (!f.haveCtx || !txChecksums(out, &f.ctx, f.popts, false)) {
		return dropBadContext
	}
	if f.vle && len(out) >= 12 {
		out = insertVLAN(f.buf, f.n, f.vlan)
	}
	n.wire(out, peer, pace)
	return dropNone
}

// wire puts a finished frame on the wire.
func (n *NIC) wire(f []byte, peer *endpointBox, pace *pacer) {
	pace.wait(len(f))
	if peer != nil {
		peer.e.Receive(f)
	}
	n.st.txFrames.Add(1)
	n.st.txBytes.Add(uint64(len(f)))
}

// flushTx writes back q's processed descriptors when due: at once by
// default; with WBThresh when that many are pending; with WBDelay when the
// oldest has waited that long (TXDCTL.WTHRESH and the TIDV timer: "the
// write back occurs only when the number of descriptors ready is WTHRESH
// … or the Transmit Interrupt Delay timer expires", SDM §3.4). It returns
// how long until a partial batch is due (0: nothing waits).
//
// DD mode writes DD into each RS descriptor (the others are not written
// back); head write-back mode writes the head index after the ring.
// A lost write-back (scheduled) is skipped; the frontier still moves.
func (n *NIC) flushTx(q *devTxq, now *time.Time, force bool) time.Duration {
	pending := (q.head - q.wbHead + q.size) % q.size
	if pending == 0 {
		return 0
	}
	if d := n.cfg.WBDelay; d > 0 && !force && (n.cfg.WBThresh == 0 || pending < n.cfg.WBThresh) {
		if now.IsZero() {
			*now = time.Now()
		}
		if left := d - now.Sub(q.wbSince); left > 0 {
			return left
		}
	}
	if q.hwb != 0 {
		lost := false
		for j := q.wbHead; j != q.head; j = (j + 1) % q.size {
			lost = lost || q.cmd[j]&cmdLost != 0
		}
		if !lost {
			binary.LittleEndian.PutUint32(q.hwbBuf[:], uint32(q.head))
			q.hwbMu.Lock()
			_ = n.dmaWrite(q.hwb, q.hwbBuf[:])
			q.hwbMu.Unlock()
			q.pend = true
			n.st.txWriteBacks.Add(1)
		}
	} else {
		wrote := false
		for j := q.wbHead; j != q.head; j = (j + 1) % q.size {
			c := q.cmd[j]
			if c&TxCmdRS == 0 || c&cmdLost != 0 {
				continue
			}
			q.dd[0] = TxStatDD
			_ = n.dmaWrite(q.base+busdma.BusAddr(j*DescSize+12), q.dd[:])
			wrote = true
		}
		if wrote {
			q.pend = true
			n.st.txWriteBacks.Add(1)
		}
	}
	q.wbHead = q.head
	q.wb.Store(uint32(q.head)) // release: the write-backs before it
	return 0
}

// writeBacks flushes every ring's due write-backs (all of them with
// force: the device finishing its DMA before it stops) and returns how
// long until the next partial batch is due (0: none waits).
func (n *NIC) writeBacks(force bool) time.Duration {
	var now time.Time
	var wait time.Duration
	due := func(d time.Duration) {
		if d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	for i := range n.txq {
		if q := &n.txq[i]; q.size != 0 {
			due(n.flushTx(q, &now, force))
		}
	}
	for i := range n.rxq {
		if q := &n.rxq[i]; q.size != 0 {
			due(n.flushRx(q, &now, force))
		}
	}
	return wait
}
