package simnic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// devTxq is the device's side of one TX queue: its registers.
type devTxq struct {
	base   busdma.BusAddr // TDBA
	size   int            // TDLEN / 16
	tdt    atomic.Uint32  // tail: written by the driver's doorbell (release)
	tdh    atomic.Uint32  // head: written by the device (release)
	intrEn atomic.Bool    // interrupt enabled (cleared by auto-mask)
	// device-goroutine state
	head     int
	frameLen int
	vlan     uint16
	vle      bool
	drop     dropReason // the frame being gathered is dropped at its EOP
	pend     bool
	lastIntr time.Time
	frame    []byte
	descs    []byte
	dd       [1]byte // the DD status byte written back (kept here: no allocation)
}

// dropReason says why the device drops the TX frame it is gathering. A
// frame is sent whole or not at all: never truncated, never with a hole.
type dropReason uint8

const (
	dropNone    dropReason = iota
	dropTooLong            // longer than MaxFrame (TxTooLong)
	dropDMA                // a buffer read faulted (TxDMAFaults)
)

// devRxq is the device's side of one RX queue.
type devRxq struct {
	base     busdma.BusAddr // RDBA
	size     int
	bufSize  int
	rdt      atomic.Uint32 // tail: driver (release)
	rdh      atomic.Uint32 // head: device (release)
	intrEn   atomic.Bool
	head     int
	pend     bool
	lastIntr time.Time
	desc     [DescSize]byte
}

// Stats are the device's counters (its MAC statistics registers). Every
// frame offered to the wire or taken from the TX ring ends in exactly one
// of them.
type Stats struct {
	TxFrames, TxBytes uint64 // GPTC, GOTC: frames sent whole
	TxTooLong         uint64 // TX frames longer than MaxFrame, dropped whole (not truncated)
	TxDMAFaults       uint64 // TX frames dropped whole because a buffer read faulted
	RxFrames, RxBytes uint64 // GPRC, GORC: frames written to the RX ring
	RxMissed          uint64 // MPC: the FIFO was full (or flushed by a stop)
	RxTooLong         uint64 // ROC: longer than MaxFrame (or than the whole RX ring)
	RxDMAFaults       uint64 // RX frames whose buffer write faulted: flagged RXE in the write-back
	DMAErrors         uint64 // device accesses busdma refused (faults), every kind
	TxIntrs, RxIntrs  uint64
}

// ErrBusy is returned when a NIC is already driven: attached to iflib by
// [NIC.Attach] or driven by a [RawForwarder]. A device is bound to one
// driver at a time, as a PCI function is.
var ErrBusy = errors.New("simnic: device already driven by another driver")

// NIC is the device model.
type NIC struct {
	cfg  Config
	bus  *busdma.Device
	fifo *fifo
	txq  []devTxq
	rxq  []devRxq
	peer atomic.Pointer[endpointBox]

	wakeCh  chan struct{}
	mu      sync.Mutex // start/stop and the owner
	owner   any        // guarded by mu: the driver bound to the device (nil: none)
	ownerID string     // guarded by mu: its description, for ErrBusy
	quit    chan struct{}
	done    chan struct{}
	running bool
	isr     func(tx bool, q int) // the driver's interrupt handler

	// Fault injection for tests: each is consumed by the next RX frame.
	faultRxBadLen  atomic.Bool // write back a length beyond the buffer
	faultRxBadSlot atomic.Bool // the driver's next pkt_get names a slot that was not posted

	txFrames, txBytes, rxFrames, rxBytes atomic.Uint64
	txTooLong, txDMAFaults               atomic.Uint64
	rxMissed, rxTooLong, rxDMAFaults     atomic.Uint64
	dmaErrors                            atomic.Uint64
	txIntrs, rxIntrs                     atomic.Uint64
	hashSeed                             maphash.Seed
}

type endpointBox struct{ e Endpoint }

// New creates a NIC on an address space: its busdma device (the requester)
// and its registers. It does nothing until a driver attaches and inits it.
// An invalid cfg is a *ConfigError (errors.Is ErrConfig).
func New(space busdma.Space, cfg Config) (*NIC, error) {
	if space == nil {
		return nil, &ConfigError{Field: "space", Value: nil, Reason: "nil address space"}
	}
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	bus, err := busdma.NewDevice(space, busdma.DeviceConfig{Name: fmt.Sprintf("%s%d", cfg.Name, cfg.Unit), Checker: cfg.Checker})
	if err != nil {
		return nil, err
	}
	n := &NIC{cfg: cfg, bus: bus, wakeCh: make(chan struct{}, 1), hashSeed: maphash.MakeSeed()}
	n.fifo = newFIFO(cfg.FIFO, cfg.MaxFrame+4, n.wake)
	n.txq = make([]devTxq, cfg.Queues)
	n.rxq = make([]devRxq, cfg.Queues)
	for i := range n.txq {
		n.txq[i].frame = make([]byte, cfg.MaxFrame+4)
	}
	return n, nil
}

// Bus returns the NIC's busdma device.
func (n *NIC) Bus() *busdma.Device { return n.bus }

// Config returns the NIC's configuration with defaults filled in.
func (n *NIC) Config() Config { return n.cfg }

// claim binds the device to a driver (who), or fails with ErrBusy.
func (n *NIC) claim(who any, desc string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.owner != nil && n.owner != who {
		return fmt.Errorf("%w: %s is driven by %s", ErrBusy, n.bus.Name(), n.ownerID)
	}
	n.owner, n.ownerID = who, desc
	return nil
}

// release unbinds the device if who holds it.
func (n *NIC) release(who any) {
	n.mu.Lock()
	if n.owner == who {
		n.owner, n.ownerID = nil, ""
	}
	n.mu.Unlock()
}

// ownedBy reports whether who holds the device.
func (n *NIC) ownedBy(who any) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.owner == who
}

// SetPeer connects the NIC's wire to an endpoint (nil: frames vanish,
// counted as sent).
func (n *NIC) SetPeer(e Endpoint) {
	if e == nil {
		n.peer.Store(nil)
		return
	}
	n.peer.Store(&endpointBox{e})
}

// Connect joins two NICs with a wire.
func Connect(a, b *NIC) {
	a.SetPeer(b)
	b.SetPeer(a)
}

// maxWireFrame is the longest frame the MAC accepts: MaxFrame, plus 4
// when it carries an 802.1Q tag (MAXFRS.MFS excludes VLAN tags).
func (n *NIC) maxWireFrame(frame []byte) int {
	if len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:14]) == etherTypeVLAN {
		return n.cfg.MaxFrame + 4
	}
	return n.cfg.MaxFrame
}

// Receive is the wire delivering a frame into the NIC's FIFO. It reports
// false (and counts it) when the frame is too long (ROC) or the FIFO is
// full (MPC).
func (n *NIC) Receive(frame []byte) bool {
	if len(frame) > n.maxWireFrame(frame) {
		n.rxTooLong.Add(1)
		return false
	}
	if !n.fifo.push(frame) {
		n.rxMissed.Add(1)
		return false
	}
	return true
}

// Stats returns the device counters.
func (n *NIC) Stats() Stats {
	return Stats{
		TxFrames: n.txFrames.Load(), TxBytes: n.txBytes.Load(),
		TxTooLong: n.txTooLong.Load(), TxDMAFaults: n.txDMAFaults.Load(),
		RxFrames: n.rxFrames.Load(), RxBytes: n.rxBytes.Load(),
		RxMissed: n.rxMissed.Load(), RxTooLong: n.rxTooLong.Load(), RxDMAFaults: n.rxDMAFaults.Load(),
		DMAErrors: n.dmaErrors.Load(),
		TxIntrs:   n.txIntrs.Load(), RxIntrs: n.rxIntrs.Load(),
	}
}

// InjectRxBadSlot makes the driver's next RxdPktGet name a free-list slot
// that was never posted (a corrupted buffer id beyond the ring).
func (n *NIC) InjectRxBadSlot() { n.faultRxBadSlot.Store(true) }

// InjectRxBadLength makes the device write back one RX descriptor whose
// length exceeds its buffer (a device bug the driver must survive).
func (n *NIC) InjectRxBadLength() { n.faultRxBadLen.Store(true) }

func (n *NIC) wake() {
	select {
	case n.wakeCh <- struct{}{}:
	default:
	}
}

// program sets the ring registers (TDBA/TDLEN, RDBA/RDLEN) and zeroes the
// indices. Preconditions: the device goroutine is stopped.
func (n *NIC) program(txBase, rxBase []busdma.BusAddr, ntxd, nrxd, rxBuf int) {
	for i := range n.txq {
		q := &n.txq[i]
		q.base, q.size, q.head, q.frameLen, q.pend, q.vle, q.drop = txBase[i], ntxd, 0, 0, false, false, dropNone
		q.tdt.Store(0)
		q.tdh.Store(0)
		q.descs = make([]byte, 32*DescSize)
	}
	for i := range n.rxq {
		q := &n.rxq[i]
		q.base, q.size, q.bufSize, q.head, q.pend = rxBase[i], nrxd, rxBuf, 0, false
		q.rdt.Store(0)
		q.rdh.Store(0)
	}
}

// start runs the device goroutine.
func (n *NIC) start(isr func(tx bool, q int)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		return
	}
	n.isr = isr
	n.quit, n.done = make(chan struct{}), make(chan struct{})
	n.running = true
	go n.run()
}

// stop halts the device goroutine; afterwards the device touches no memory.
// Frames waiting in the FIFO are dropped (counted missed).
func (n *NIC) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return
	}
	close(n.quit)
	<-n.done
	n.running = false
	n.rxMissed.Add(uint64(n.fifo.reset()))
	for i := range n.txq {
		n.txq[i].intrEn.Store(false)
	}
	for i := range n.rxq {
		n.rxq[i].intrEn.Store(false)
	}
}

// run is the device: serve TX rings, move frames from the FIFO into posted
// RX buffers, raise moderated interrupts; sleep when idle.
func (n *NIC) run() {
	defer close(n.done)
	pace := pacer{lineRate: n.cfg.LineRate, frameRate: n.cfg.FrameRate, start: time.Now()}
	idle := 0
	for {
		select {
		case <-n.quit:
			return
		default:
		}
		work := false
		for i := range n.txq {
			if n.serveTx(i, &pace) {
				work = true
			}
		}
		if n.serveRx() {
			work = true
		}
		delay := n.interrupts()
		if work {
			idle = 0
			continue
		}
		if idle < 64 {
			idle++
			runtime.Gosched()
			continue
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-n.quit:
				t.Stop()
				return
			case <-n.wakeCh:
				t.Stop()
			case <-t.C:
			}
			continue
		}
		select {
		case <-n.quit:
			return
		case <-n.wakeCh:
		}
	}
}

// serveTx processes the descriptors the driver published with TDT. A
// frame is gathered from its descriptors up to EOP and then sent whole;
// a frame longer than MaxFrame, or one whose buffer read faulted, is
// dropped whole and counted, and its descriptors are completed as usual
// (the driver reclaims them). Intel MACs behave the same way: a DMA
// error on a transmit buffer aborts that frame, not the ring.
func (n *NIC) serveTx(i int, pace *pacer) bool {
	q := &n.txq[i]
	if q.size == 0 {
		return false
	}
	tdt := int(q.tdt.Load()) // acquire: descriptors and data written before the doorbell
	if tdt == q.head {
		return false
	}
	peer := n.peer.Load()
	done := 0
	for q.head != tdt && done < 256 {
		// Read a batch of descriptors in one DMA read.
		cnt := tdt - q.head
		if cnt < 0 {
			cnt = q.size - q.head
		}
		cnt = min(cnt, 32)
		base := q.base + busdma.BusAddr(q.head*DescSize)
		if err := n.bus.Read(base, q.descs[:cnt*DescSize]); err != nil {
			// The descriptors themselves could not be fetched: nothing can
			// be known about them. Count the fault and stop this queue's
			// pass; a later doorbell retries (the driver's watchdog resets
			// a queue that never progresses).
			n.dmaErrors.Add(1)
			break
		}
		for k := 0; k < cnt; k++ {
			d := getTxDesc(q.descs[k*DescSize:])
			l := int(d.length)
			switch {
			case q.drop != dropNone:
				// The frame is already dropped: skip its data.
			case q.frameLen+l > n.cfg.MaxFrame:
				q.drop = dropTooLong
			default:
				if err := n.bus.Read(busdma.BusAddr(d.addr), q.frame[q.frameLen:q.frameLen+l]); err != nil {
					n.dmaErrors.Add(1)
					q.drop = dropDMA
				}
				q.frameLen += l
			}
			if d.cmd&TxCmdVLE != 0 {
				q.vle, q.vlan = true, d.vlan
			}
			if d.cmd&TxCmdEOP != 0 {
				n.endTxFrame(q, peer, pace)
			}
			if d.cmd&TxCmdRS != 0 {
				q.dd[0] = TxStatDD
				addr := q.base + busdma.BusAddr(((q.head+k)%q.size)*DescSize+12)
				if err := n.bus.Write(addr, q.dd[:]); err != nil {
					n.dmaErrors.Add(1)
				}
				q.pend = true
			}
		}
		q.head = (q.head + cnt) % q.size
		done += cnt
	}
	q.tdh.Store(uint32(q.head)) // release: the DD write-backs before it
	return done > 0
}

// endTxFrame sends (or drops, counted) the frame gathered on q at its EOP
// descriptor and resets the gathering state.
func (n *NIC) endTxFrame(q *devTxq, peer *endpointBox, pace *pacer) {
	switch q.drop {
	case dropTooLong:
		n.txTooLong.Add(1)
	case dropDMA:
		n.txDMAFaults.Add(1)
	default:
		f := q.frame[:q.frameLen]
		if q.vle && len(f) >= 12 {
			f = q.frame[:q.frameLen+4]
			copy(f[16:], f[12:q.frameLen])
			binary.BigEndian.PutUint16(f[12:14], etherTypeVLAN)
			binary.BigEndian.PutUint16(f[14:16], q.vlan)
		}
		pace.wait(len(f))
		if peer != nil {
			peer.e.Receive(f)
		}
		n.txFrames.Add(1)
		n.txBytes.Add(uint64(len(f)))
	}
	q.frameLen, q.vle, q.drop = 0, false, dropNone
}

// rssHash is the device's receive hash over the IPv4 addresses and ports.
func (n *NIC) rssHash(f []byte) (uint32, uint8) {
	if len(f) >= 38 && f[12] == 0x08 && f[13] == 0x00 {
		var h maphash.Hash
		h.SetSeed(n.hashSeed)
		h.Write(f[26:38])
		return uint32(h.Sum64()), 0x89 // M_HASHTYPE_RSS_UDP_IPV4-like
	}
	return 0, 0
}

// serveRx moves frames from the FIFO into posted buffers. A frame is
// written whole: if writing one of its buffers faults, its last descriptor
// carries RXE (an RX data error) so that the driver drops the frame
// instead of delivering one with a hole.
func (n *NIC) serveRx() bool {
	did := false
	for k := 0; k < 64; k++ {
		f, ok := n.fifo.peek()
		if !ok {
			break
		}
		hash, ht := n.rssHash(f)
		qi := 0
		if len(n.rxq) > 1 {
			qi = int(hash % uint32(len(n.rxq)))
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
			n.rxTooLong.Add(1)
			did = true
			continue
		}
		rdt := int(q.rdt.Load()) // acquire: posted buffer addresses
		avail := (rdt - q.head + q.size) % q.size
		if avail < need {
			break // wait for the driver to post buffers; the FIFO absorbs
		}
		var rxErr uint8
		for off, j := 0, 0; j < need; j++ {
			idx := q.head
			daddr := q.base + busdma.BusAddr(idx*DescSize)
			chunk := min(len(f)-off, q.bufSize)
			if err := n.bus.Read(daddr, q.desc[:8]); err != nil {
				n.dmaErrors.Add(1)
				rxErr |= RxErrRXE
			} else {
				baddr := busdma.BusAddr(binary.LittleEndian.Uint64(q.desc[:8]))
				if err := n.bus.Write(baddr, f[off:off+chunk]); err != nil {
					n.dmaErrors.Add(1)
					rxErr |= RxErrRXE
				}
			}
			wb := rxWB{hash: hash, hashType: ht, length: uint16(chunk), status: RxStatDD}
			if j == need-1 {
				// Errors are valid in the EOP descriptor only (82574
				// datasheet; PCI/PCI-X SDM §3.2.3.2).
				wb.status |= RxStatEOP
				wb.errors = rxErr
			}
			if n.faultRxBadLen.Load() && n.faultRxBadLen.CompareAndSwap(true, false) {
				wb.length = uint16(q.bufSize + 100)
			}
			putRxWB(q.desc[:], wb)
			if err := n.bus.Write(daddr, q.desc[:]); err != nil {
				n.dmaErrors.Add(1)
			}
			off += chunk
			q.head = (q.head + 1) % q.size
		}
		n.fifo.pop()
		if rxErr != 0 {
			n.rxDMAFaults.Add(1)
		} else {
			n.rxFrames.Add(1)
			n.rxBytes.Add(uint64(len(f)))
		}
		q.pend = true
		q.rdh.Store(uint32(q.head)) // release: data and write-backs
		did = true
	}
	return did
}

// interrupts raises each pending, enabled queue interrupt at most once per
// ITR, masking it (auto-mask) until the driver re-enables it. It returns
// how long until a moderated interrupt is due (0: none waiting).
func (n *NIC) interrupts() time.Duration {
	var wait time.Duration
	now := time.Time{}
	fire := func(pend *bool, en *atomic.Bool, last *time.Time, tx bool, i int) {
		if !*pend || !en.Load() {
			return
		}
		if n.cfg.ITR > 0 {
			if now.IsZero() {
				now = time.Now()
			}
			if d := n.cfg.ITR - now.Sub(*last); d > 0 {
				if wait == 0 || d < wait {
					wait = d
				}
				return
			}
			*last = now
		}
		if !en.CompareAndSwap(true, false) {
			return
		}
		*pend = false
		if tx {
			n.txIntrs.Add(1)
		} else {
			n.rxIntrs.Add(1)
		}
		n.isr(tx, i)
	}
	for i := range n.txq {
		q := &n.txq[i]
		fire(&q.pend, &q.intrEn, &q.lastIntr, true, i)
	}
	for i := range n.rxq {
		q := &n.rxq[i]
		fire(&q.pend, &q.intrEn, &q.lastIntr, false, i)
	}
	return wait
}

// pacer holds the wire to its line rate.
type pacer struct {
	lineRate, frameRate float64
	start               time.Time
	due                 float64 // seconds of wire time used since start
}

func (p *pacer) wait(frameLen int) {
	if p.lineRate == 0 && p.frameRate == 0 {
		return
	}
	var t float64
	if p.lineRate > 0 {
		t = float64((frameLen+24)*8) / p.lineRate
	}
	if p.frameRate > 0 {
		t = max(t, 1/p.frameRate)
	}
	p.due += t
	ahead := time.Duration(p.due*float64(time.Second)) - time.Since(p.start)
	if ahead > 100*time.Microsecond {
		time.Sleep(ahead)
	}
}
