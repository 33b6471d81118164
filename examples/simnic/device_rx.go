package simnic

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// devRxq is the device's side of one RX queue. rdt is the driver's
// doorbell (release; the device's load acquires the buffer addresses);
// wb is the write-back frontier, as for TX (see devTxq): the device
// stores it (release) after the frame data and the descriptor write-backs
// before it, and drivers read descriptors only below it.
type devRxq struct {
	base    busdma.BusAddr // RDBA
	size    int
	bufSize int
	rdt     atomic.Uint32 // tail: driver (release)
	rdh     atomic.Uint32 // head: the next descriptor the device fills (device, release)
	written atomic.Uint64 // frames written to this ring (QueueStats)
	wb      atomic.Uint32 // write-back frontier (release)
	intrEn  atomic.Bool

	// Device-goroutine state.
	head     int       // next descriptor to fill
	wbHead   int       // first filled descriptor not yet written back
	wbSince  time.Time // when the oldest pending write-back became pending (with WBDelay)
	wbs      []rxWB    // the pending write-backs, by descriptor
	wbBuf    []byte    // staging for a run of write-backs (one DMA write)
	pend     bool      // a write-back happened (RXT0): interrupt cause
	lastIntr time.Time
	desc     [8]byte
}

func (q *devRxq) init(cfg *Config) {}

// program is the RX part of NIC.program.
func (q *devRxq) program(base busdma.BusAddr, size, bufSize int) {
	q.base, q.size, q.bufSize, q.head, q.wbHead, q.pend = base, size, bufSize, 0, 0, false
	if len(q.wbs) != size {
		q.wbs = make([]rxWB, size)
		q.wbBuf = make([]byte, size*DescSize)
	}
	q.rdt.Store(0)
	q.rdh.Store(0)
	q.wb.Store(0)
}

// serveRx moves frames from the FIFO into posted buffers.
func (n *NIC) serveRx() bool {
	n.rxWaitQ = -1
	did := n.serveRxFrames()
	if did {
		n.fifo.signalRoom()
	}
	return did
}

// serveRxFrames is serveRx's loop over up to 64 frames. Each frame taken
// from the FIFO is one event of the schedule's RX stream.
//
// A frame is written whole, and its EOP descriptor carries any error
// (errors are valid in the EOP descriptor only, SDM §3.2.3.2): a frame
// error the schedule injects (CRC, symbol, length: the device stores bad
// frames, as with RCTL.SBP or Linux's rx-all), or RXE when writing one of
// its buffers faulted, so that the driver drops the frame rather than
// deliver one with a hole.
func (n *NIC) serveRxFrames() bool {
	did := false
	for k := 0; k < 64; k++ {
		f, ok := n.fifo.peek()
		if !ok {
			break
		}
		var meta rxMeta
		f, meta = n.rxOffload(f, n.rxScratch, n.filt.vme.Load(), n.cfg.Offload)
		hash, ht, qi := n.rssHash(f)
		if qi >= n.nrxActive {
			qi %= max(n.nrxActive, 1) // a RETA entry beyond the queues in use
		}
		q := &n.rxq[qi]
		if q.size == 0 || q.bufSize == 0 {
			break
		}
		need := max((len(f)+q.bufSize-1)/q.bufSize, 1)
		if need > q.size-1 {
			// More buffers than the ring can ever hold (RDH==RDT means
			// empty): it would wedge the FIFO for good. Drop it as too long.
			n.fifo.pop()
			n.st.rxNoRoom.Add(1)
			n.st.rxTooLong.Add(1)
			did = true
			continue
		}
		rdt := int(q.rdt.Load()) // acquire: posted buffer addresses
		avail := (rdt - q.head + q.size) % q.size
		if avail < need {
			// Wait for the driver to post buffers (RDT); the FIFO absorbs.
			n.rxWaitQ, n.rxWaitRDT = qi, uint32(rdt)
			break
		}
		n.writeRxFrame(q, f, need, hash, ht, meta)
		n.fifo.pop()
		did = true
	}
	if did {
		var now time.Time
		for i := range n.rxq {
			if q := &n.rxq[i]; q.size != 0 {
				n.flushRx(q, &now, false)
			}
		}
	}
	return did
}

// rxMeta is what the offloads put in a frame's EOP descriptor.
type rxMeta struct {
	status, errs uint8
	vlan         uint16
}

// writeRxFrame writes frame f into need posted buffers of q and stages
// the descriptors' write-backs.
func (n *NIC) writeRxFrame(q *devRxq, f []byte, need int, hash uint32, ht uint8, meta rxMeta) {
	n.nframes++
	nf := n.nframes
	var rxErr uint8
	switch {
	case n.sch.hit(FaultRxCRC, 0, nf):
		rxErr |= RxErrCE
	case n.sch.hit(FaultRxSymbol, 0, nf):
		rxErr |= RxErrSE
	case n.sch.hit(FaultRxLength, 0, nf):
		rxErr |= RxErrLE
	}
	dmaFault := n.sch.hit(FaultRxDMA, 0, nf)
	badLen := n.sch.hit(FaultRxBadLength, 0, nf) || (n.faultRxBadLen.Load() && n.faultRxBadLen.CompareAndSwap(true, false))
	if q.wbHead == q.head && n.cfg.WBDelay > 0 {
		q.wbSince = time.Now()
	}
	for off, j := 0, 0; j < need; j++ {
		idx := q.head
		chunk := min(len(f)-off, q.bufSize)
		if err := n.dmaRead(q.base+busdma.BusAddr(idx*DescSize), q.desc[:8]); err != nil {
			rxErr |= RxErrRXE
		} else if dmaFault && j == need-1 {
			rxErr |= RxErrRXE // a scheduled fault: the write "fails" without touching busdma
		} else if err := n.dmaWrite(busdma.BusAddr(binary.LittleEndian.Uint64(q.desc[:8])), f[off:off+chunk]); err != nil {
			rxErr |= RxErrRXE
		}
		wb := rxWB{hash: hash, hashType: ht, length: uint16(chunk), status: RxStatDD}
		if j == need-1 {
			wb.status |= RxStatEOP | meta.status
			wb.errors = rxErr | meta.errs
			wb.vlan = meta.vlan
		}
		if badLen && j == 0 {
			wb.length = uint16(q.bufSize + 100)
		}
		q.wbs[idx] = wb
		off += chunk
		q.head = (q.head + 1) % q.size
	}
	if meta.errs != 0 {
		n.st.rxCsumErrors.Add(1)
	}
	q.written.Add(1)
	switch {
	case rxErr&RxErrRXE != 0:
		n.st.rxDMAFaults.Add(1)
	case rxErr != 0:
		n.st.rxErrors.Add(1)
	default:
		n.st.rxFrames.Add(1)
		n.st.rxBytes.Add(uint64(len(f)))
	}
	q.rdh.Store(uint32(q.head))
}

// flushRx writes q's staged descriptor write-backs when due (as flushTx;
// the RX delays are RXDCTL.WTHRESH and the RDTR/RADV timers), in runs of
// contiguous descriptors, then moves the frontier. It returns how long
// until a partial batch is due.
func (n *NIC) flushRx(q *devRxq, now *time.Time, force bool) time.Duration {
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
	for q.wbHead != q.head {
		run := q.head - q.wbHead
		if run < 0 {
			run = q.size - q.wbHead
		}
		b := q.wbBuf[:run*DescSize]
		for j := 0; j < run; j++ {
			putRxWB(b[j*DescSize:], q.wbs[q.wbHead+j])
		}
		_ = n.dmaWrite(q.base+busdma.BusAddr(q.wbHead*DescSize), b)
		n.st.rxWriteBacks.Add(1)
		q.wbHead = (q.wbHead + run) % q.size
	}
	q.pend = true
	q.wb.Store(uint32(q.head)) // release: the frame data and write-backs before it
	return 0
}
