package simnic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// Stats are the device's counters (its MAC statistics registers). They
// balance:
//
//	TX: TxProcessed = TxPackets + TxTooLong + TxDMAFaults + TxBadContext
//	    (TxFrames counts each TSO segment; TxPackets each packet sent)
//	RX at the wire: frames offered = FIFO accepted + RxLinkDown
//	    + RxFilteredAddr + RxFilteredVLAN + RxXoff + RxXon
//	    + (RxTooLong − RxNoRoom) + (RxMissed − RxFlushed)
//	RX from the FIFO: accepted = RxFrames + RxErrors + RxDMAFaults + RxNoRoom + RxFlushed
//	    + RxWaiting (what still waits in the FIFO)
//
// RxMissed and RxTooLong keep the MAC registers' meaning (MPC counts the
// frames a reset flushed from the FIFO too; ROC the frames too long for
// the RX ring): RxFlushed and RxNoRoom are those parts.
type Stats struct {
	TxProcessed       uint64 // TX packets whose EOP descriptor the device processed
	TxPackets         uint64 // TX packets sent whole (a TSO packet once)
	TxFrames, TxBytes uint64 // GPTC, GOTC: frames on the wire (a TSO packet counts each segment)
	TxTooLong         uint64 // TX packets longer than MaxFrame, dropped whole (not truncated)
	TxDMAFaults       uint64 // TX packets dropped whole because a buffer read faulted
	TxBadContext      uint64 // TX packets dropped whole: an offload request the device cannot carry out (TSCTFC)
	TxTSO             uint64 // TSO packets segmented (their segments are in TxFrames)
	TxWriteBacks      uint64 // TX write-back operations (DD runs or head writes)
	RxFrames, RxBytes uint64 // GPRC, GORC: frames written to the RX ring good
	RxErrors          uint64 // frames written to the RX ring with a frame error flagged (CRC, symbol, length)
	RxDMAFaults       uint64 // frames whose buffer write faulted: flagged RXE
	RxCsumErrors      uint64 // frames written with a bad IPv4 or TCP/UDP checksum flagged (IPE, TCPE; Offload)
	RxNoRoom          uint64 // frames needing more buffers than the RX ring holds: dropped from the FIFO (in RxTooLong too)
	RxFlushed         uint64 // frames dropped from the FIFO by a stop or reset (in RxMissed too)
	RxWriteBacks      uint64 // RX write-back operations (runs of descriptors)
	RxMissed          uint64 // MPC: refused at the wire with the FIFO full, or flushed from it (RxFlushed)
	RxTooLong         uint64 // ROC: refused at the wire, longer than MaxFrame, or too long for the ring (RxNoRoom)
	RxLinkDown        uint64 // refused at the wire, the link down
	RxFilteredAddr    uint64 // refused at the wire by the address filter (RAR, MTA, UPE/MPE/BAM): in TPR, not GPRC
	RxFilteredVLAN    uint64 // refused at the wire by the VLAN filter (VFE, a VID not in the VFTA): in TPR, not GPRC
	RxXoff, RxXon     uint64 // XOFFRXC, XONRXC: 802.3x PAUSE frames received (from the wire or the schedule), consumed by the MAC
	TxPauses          uint64 // XOFFs that paused the transmitter (receive flow control on)
	RxWaiting         uint64 // frames waiting in the receive FIFO now (a gauge, not a counter)
	DMAErrors         uint64 // device accesses busdma refused (faults), every kind
	TxIntrs, RxIntrs  uint64 // queue interrupts delivered
	LinkIntrs         uint64 // link-status-change interrupts delivered
	LostIntrs         uint64 // interrupts lost (scheduled): the handler never ran
	SpuriousIntrs     uint64 // handlers run with no cause (scheduled)
	TxHangs           uint64 // TX queues hung (scheduled) until a reprogram
	LostWriteBacks    uint64 // TX write-backs lost (scheduled)
	LinkChanges       uint64 // link transitions (scheduled or SetLink)
	StatusReads       uint64 // link-status register reads by the driver
	Parks             uint64 // times the device goroutine parked idle
}

// ErrBusy is returned when a NIC is already driven: attached to iflib by
// [NIC.Attach] or driven by a [RawForwarder]. A device is bound to one
// driver at a time, as a PCI function is.
var ErrBusy = errors.New("simnic: device already driven by another driver")

// intrCause is what a device interrupt reports (the ICR cause bits of
// one vector).
type intrCause uint8

const (
	causeTx   intrCause = iota // a TX queue wrote descriptors back (TXDW)
	causeRx                    // an RX queue wrote descriptors back (RXT0)
	causeLink                  // link status change (LSC)
)

// NIC is the device model.
type NIC struct {
	cfg  Config
	bus  *busdma.Device
	fifo *fifo
	txq  []devTxq
	rxq  []devRxq
	peer atomic.Pointer[endpointBox]
	sch  *Schedule

	// The device parks when idle. wake (a doorbell, an interrupt enable,
	// a frame into the FIFO) signals wakeCh only while sleeping is set.
	// The pair is a Dekker handshake on sequentially consistent atomics:
	// the device stores sleeping and then loads the registers and the
	// FIFO (pending); a producer stores a register and then loads
	// sleeping. One of them sees the other, so no doorbell is slept
	// through; and a busy device costs a producer one load, not a channel
	// send.
	wakeCh    chan struct{}
	sleeping  atomic.Bool
	parkTimer *time.Timer // device goroutine
	rxWaitQ   int         // device goroutine: the RX queue the FIFO's head waits on for buffers (-1: none)
	rxWaitRDT uint32      // device goroutine: that queue's RDT when it was found short
	nintr     uint64      // device goroutine: interrupts raised (the schedule's stream)
	nframes   uint64      // device goroutine: frames taken from the FIFO (the schedule's RX stream)
	rxScratch []byte      // device goroutine: a frame with its VLAN tag stripped
	// ntxActive and nrxActive are the queues the driver programmed (set by
	// program while the device is stopped).
	ntxActive, nrxActive int

	// Link (the PHY). linkUp is read by the device and the wire without a
	// lock; linkMu serializes its changes with the driver's status reads
	// (the schedule's link stream).
	linkUp      atomic.Bool
	lsc         atomic.Bool // ICR.LSC latched
	lscEn       atomic.Bool // IMS.LSC
	linkMu      sync.Mutex
	statusReads uint64        // guarded by linkMu
	carrier     bool          // guarded by linkMu: the cable (SetLink, scheduled losses); the link is carrier && a resolved mode
	phyCtl      PHYControl    // guarded by linkMu
	partner     Ability       // guarded by linkMu: the link partner's abilities
	phySt       PHYStatus     // guarded by linkMu: the resolution
	linkSpeed   atomic.Uint64 // the resolved speed (bits/s), for pause times
	rxPauseOn   atomic.Bool   // receive flow control (RFCE) resolved on
	pauseUntil  atomic.Int64  // the transmitter is paused until (unix ns; 0: not paused)
	downLeft    uint64        // guarded by linkMu: status reads until a scheduled loss ends (0: none)
	linkUpCh    chan struct{} // guarded by linkMu: closed when the link comes back (nil while up)

	mu      sync.Mutex // start/stop and the owner
	owner   any        // guarded by mu: the driver bound to the device (nil: none)
	ownerID string     // guarded by mu: its description, for ErrBusy
	quit    chan struct{}
	done    chan struct{}
	running bool
	// stopping is set (before quit is closed) while stop waits for the
	// device goroutine: the DMA latency is no longer waited out, so the
	// last pass ends at once (quit is closed: the pacer does not wait).
	stopping atomic.Bool
	isr      func(c intrCause, q int) // the driver's interrupt handler

	// One-shot fault injection for tests: each is consumed by the next RX
	// frame (or the driver's next pkt_get).
	faultRxBadLen  atomic.Bool // write back a length beyond the buffer
	faultRxBadSlot atomic.Bool // the driver's next pkt_get names a slot that was not posted

	// The receive filter and RSS registers (filter.go, rss.go).
	filt filterRegs
	rss  atomic.Pointer[rssRegs]

	st devStats
}

// devStats are the counters behind Stats.
type devStats struct {
	txProcessed, txPackets, txFrames, txBytes                     atomic.Uint64
	txTooLong, txDMAFaults, txBadContext, txTSO, txWriteBacks     atomic.Uint64
	rxFrames, rxBytes, rxErrors, rxDMAFaults, rxNoRoom, rxFlushed atomic.Uint64
	rxWriteBacks, rxMissed, rxTooLong, rxLinkDown, dmaErrors      atomic.Uint64
	rxCsumErrors, rxFilteredAddr, rxFilteredVLAN                  atomic.Uint64
	rxXoff, rxXon, txPauses                                       atomic.Uint64
	txIntrs, rxIntrs, linkIntrs, lostIntrs, spuriousIntrs         atomic.Uint64
	txHangs, lostWriteBacks, linkChanges, statusReads, parks      atomic.Uint64
}

type endpointBox struct{ e Endpoint }

// New creates a NIC on an address space: its busdma device (the requester)
// and its registers. It does nothing until a driver attaches and inits it.
// An invalid cfg is a *ConfigError (errors.Is ErrConfig). The link is up.
func New(space busdma.Space, cfg Config) (*NIC, error) {
	if space == nil {
		return nil, &ConfigError{Pkg: "simnic", Field: "space", Value: nil, Reason: "nil address space"}
	}
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Schedule != nil && !cfg.Schedule.bind(cfg.Queues) {
		return nil, &ConfigError{Pkg: "simnic", Field: "Config.Schedule", Value: cfg.Schedule.seed, Reason: "already used by another NIC"}
	}
	bus, err := busdma.NewDevice(space, busdma.DeviceConfig{Name: fmt.Sprintf("%s%d", cfg.Name, cfg.Unit), Checker: cfg.Checker})
	if err != nil {
		return nil, err
	}
	n := &NIC{cfg: cfg, bus: bus, sch: cfg.Schedule, wakeCh: make(chan struct{}, 1)}
	n.resetFilter()
	n.rss.Store(newRSSRegs(DefaultRSSKey, RoundRobinRETA(cfg.Queues), rssFieldKnown))
	n.carrier, n.partner = true, AbilitiesAll
	n.phyCtl = PHYControl{Autoneg: true, Advertise: cfg.Abilities}
	n.phySt = resolvePHY(cfg.Abilities, n.phyCtl, n.partner) // resolved: the partner has every ability
	n.linkSpeed.Store(n.phySt.Speed)
	n.rxPauseOn.Store(n.phySt.RxPause)
	n.linkUp.Store(n.phySt.Resolved)
	n.fifo = newFIFO(cfg.FIFO, cfg.MaxFrame+4, n.wake)
	n.rxScratch = make([]byte, cfg.MaxFrame+4)
	n.txq = make([]devTxq, cfg.Queues)
	n.rxq = make([]devRxq, cfg.Queues)
	for i := range n.txq {
		n.txq[i].init(&n.cfg)
	}
	for i := range n.rxq {
		n.rxq[i].init(&n.cfg)
	}
	return n, nil
}

// Bus returns the NIC's busdma device.
func (n *NIC) Bus() *busdma.Device { return n.bus }

// Config returns the NIC's configuration with defaults filled in.
func (n *NIC) Config() Config { return n.cfg }

// Schedule returns the NIC's fault schedule (nil: none).
func (n *NIC) Schedule() *Schedule { return n.sch }

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

// maxWireFrame is the longest frame the MAC accepts, as the model's
// frames are (without the FCS): the max frame register less the FCS, plus
// 4 when it carries an 802.1Q tag (RLPML and MAXFRS.MFS count the FCS and
// exclude one VLAN tag).
func (n *NIC) maxWireFrame(frame []byte) int {
	m := int(n.filt.maxFrame.Load()) - 4
	if len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:14]) == etherTypeVLAN {
		return m + 4
	}
	return m
}

// Receive is the wire delivering a frame into the NIC's FIFO. It reports
// false (and counts it) when the link is down (RxLinkDown), the receive
// filter drops it (RxFilteredAddr, RxFilteredVLAN), it is too long (ROC)
// or the FIFO is full (MPC). An 802.3x PAUSE frame is consumed by the MAC
// (RxXoff, RxXon): true.
func (n *NIC) Receive(frame []byte) bool {
	if !n.linkUp.Load() {
		n.st.rxLinkDown.Add(1)
		return false
	}
	switch n.classify(frame) {
	case consumedPause:
		n.rxPauseFrame(frame)
		return true
	case dropAddr:
		n.st.rxFilteredAddr.Add(1)
		return false
	case dropVLAN:
		n.st.rxFilteredVLAN.Add(1)
		return false
	case dropLong:
		n.st.rxTooLong.Add(1)
		return false
	}
	if !n.fifo.push(frame) {
		n.st.rxMissed.Add(1)
		return false
	}
	return true
}

// WaitRoom parks until the NIC may take frame: the link is up and the
// receive FIFO has room (true). It returns false at once for a frame the
// MAC does not take (too long, or dropped by the receive filter as it is
// programmed now), or when cancel is closed. See RoomWaiter.
// While the link is down it parks until the link comes back, so a sender
// that retries a refused frame (Generator.Lossless) neither spins nor
// counts a drop (RxLinkDown) per attempt.
func (n *NIC) WaitRoom(frame []byte, cancel <-chan struct{}) bool {
	if v := n.classify(frame); v != admit && v != consumedPause {
		return false
	}
	for {
		n.linkMu.Lock()
		up := n.linkUpCh
		n.linkMu.Unlock()
		if up == nil {
			return n.fifo.waitRoom(cancel)
		}
		select {
		case <-up:
		case <-cancel:
			return false
		}
	}
}

// Stats returns the device counters.
func (n *NIC) Stats() Stats {
	s := &n.st
	return Stats{
		TxProcessed: s.txProcessed.Load(), TxPackets: s.txPackets.Load(),
		TxFrames: s.txFrames.Load(), TxBytes: s.txBytes.Load(),
		TxTooLong: s.txTooLong.Load(), TxDMAFaults: s.txDMAFaults.Load(),
		TxBadContext: s.txBadContext.Load(), TxTSO: s.txTSO.Load(), TxWriteBacks: s.txWriteBacks.Load(),
		RxFrames: s.rxFrames.Load(), RxBytes: s.rxBytes.Load(),
		RxErrors: s.rxErrors.Load(), RxDMAFaults: s.rxDMAFaults.Load(), RxCsumErrors: s.rxCsumErrors.Load(),
		RxNoRoom: s.rxNoRoom.Load(), RxFlushed: s.rxFlushed.Load(), RxWriteBacks: s.rxWriteBacks.Load(),
		RxMissed: s.rxMissed.Load(), RxTooLong: s.rxTooLong.Load(), RxLinkDown: s.rxLinkDown.Load(),
		RxFilteredAddr: s.rxFilteredAddr.Load(), RxFilteredVLAN: s.rxFilteredVLAN.Load(),
		RxXoff: s.rxXoff.Load(), RxXon: s.rxXon.Load(), TxPauses: s.txPauses.Load(),
		RxWaiting: n.fifo.len(),
		DMAErrors: s.dmaErrors.Load(),
		TxIntrs:   s.txIntrs.Load(), RxIntrs: s.rxIntrs.Load(), LinkIntrs: s.linkIntrs.Load(),
		LostIntrs: s.lostIntrs.Load(), SpuriousIntrs: s.spuriousIntrs.Load(),
		TxHangs: s.txHangs.Load(), LostWriteBacks: s.lostWriteBacks.Load(),
		LinkChanges: s.linkChanges.Load(), StatusReads: s.statusReads.Load(), Parks: s.parks.Load(),
	}
}

// QueueStats are one queue pair's device counters.
type QueueStats struct {
	TxProcessed uint64 // TX packets whose EOP the device processed on this queue
	TxPackets   uint64 // of which sent whole
	TxDropped   uint64 // of which dropped whole (too long, DMA fault, bad context)
	RxWritten   uint64 // frames written to this RX ring (good or flagged)
}

// QueueStats returns queue q's counters; ErrConfig for a queue the NIC
// does not have.
func (n *NIC) QueueStats(q int) (QueueStats, error) {
	if q < 0 || q >= len(n.txq) {
		return QueueStats{}, &ConfigError{Pkg: "simnic", Field: "queue", Value: q, Reason: "no such queue"}
	}
	t, r := &n.txq[q], &n.rxq[q]
	return QueueStats{TxProcessed: t.processedA.Load(), TxPackets: t.sentA.Load(), TxDropped: t.droppedA.Load(), RxWritten: r.written.Load()}, nil
}

// InjectRxBadSlot makes the driver's next RxdPktGet name a free-list slot
// that was never posted (a corrupted buffer id beyond the ring).
func (n *NIC) InjectRxBadSlot() { n.faultRxBadSlot.Store(true) }

// InjectRxBadLength makes the device write back one RX descriptor whose
// length exceeds its buffer (a device bug the driver must survive).
func (n *NIC) InjectRxBadLength() { n.faultRxBadLen.Store(true) }

// LinkUp reports the PHY's link (the STATUS.LU bit) without counting a
// status read.
func (n *NIC) LinkUp() bool { return n.linkUp.Load() }

// SetLink takes the link down or up, as pulling and plugging the cable
// would (it cancels a scheduled loss in progress), and raises the link
// interrupt.
func (n *NIC) SetLink(up bool) {
	n.linkMu.Lock()
	n.downLeft = 0
	n.setLinkLocked(up)
	n.linkMu.Unlock()
}

// setLinkLocked changes the carrier (the cable) and so the link, and
// latches LSC when the link changes.
// Preconditions: linkMu held.
func (n *NIC) setLinkLocked(up bool) {
	n.carrier = up
	n.applyLinkLocked()
}

// applyLinkLocked sets the link from the carrier and the PHY's
// resolution, latching LSC on a change, which it reports.
// Preconditions: linkMu held.
func (n *NIC) applyLinkLocked() bool {
	up := n.carrier && n.phySt.Resolved
	if n.linkUp.Load() == up {
		return false
	}
	n.linkUp.Store(up)
	if up {
		close(n.linkUpCh)
		n.linkUpCh = nil
	} else {
		n.linkUpCh = make(chan struct{})
	}
	n.st.linkChanges.Add(1)
	n.lsc.Store(true)
	n.wake()
	return true
}

// readStatus is the driver reading the STATUS register's link-up bit: the
// schedule's link stream. A scheduled loss begins or ends at a read.
func (n *NIC) readStatus() bool {
	n.linkMu.Lock()
	defer n.linkMu.Unlock()
	n.statusReads++
	n.st.statusReads.Add(1)
	switch {
	case n.downLeft > 0:
		n.downLeft--
		if n.downLeft == 0 {
			n.setLinkLocked(true)
		}
	case n.linkUp.Load() && n.sch.hit(FaultLinkDown, 0, n.statusReads):
		d := n.sch.draw(FaultLinkDown, 0, n.sch.prof.LinkDownFor)
		n.sch.setLen(FaultLinkDown, d)
		n.downLeft = d
		n.setLinkLocked(false)
	}
	return n.linkUp.Load()
}

// wake is the device side of a doorbell: it unparks the device goroutine
// if it sleeps (see NIC.sleeping).
func (n *NIC) wake() {
	if n.sleeping.Load() {
		select {
		case n.wakeCh <- struct{}{}:
		default:
		}
	}
}

// program sets the ring registers (TDBA/TDLEN, TDWBAL in head write-back
// mode, RDBA/RDLEN) and zeroes the indices; a hung queue is reset. A
// driver may use fewer queues than the NIC has (len(txBase), len(rxBase)):
// the others are disabled (TDLEN/RDLEN 0), and receive side scaling and
// spurious interrupts spread over the queues in use only.
// Preconditions: the device goroutine is stopped.
func (n *NIC) program(txBase, rxBase []busdma.BusAddr, ntxd, nrxd, rxBuf int) {
	headWB := n.cfg.TxCompletion == TxCompletionHeadWB
	for i := range n.txq {
		if i < len(txBase) {
			n.txq[i].program(txBase[i], ntxd, headWB)
		} else {
			n.txq[i].program(0, 0, false)
		}
	}
	for i := range n.rxq {
		if i < len(rxBase) {
			n.rxq[i].program(rxBase[i], nrxd, rxBuf)
		} else {
			n.rxq[i].program(0, 0, 0)
		}
	}
	n.ntxActive, n.nrxActive = min(len(txBase), len(n.txq)), min(len(rxBase), len(n.rxq))
}

// start runs the device goroutine.
func (n *NIC) start(isr func(c intrCause, q int)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		return
	}
	n.isr = isr
	n.quit, n.done = make(chan struct{}), make(chan struct{})
	n.stopping.Store(false)
	n.running = true
	go n.run()
}

// stop halts the device goroutine, which first completes the write-backs
// it held; afterwards the device touches no memory. Frames waiting in the
// FIFO are dropped (RxFlushed).
func (n *NIC) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return
	}
	n.stopping.Store(true)
	close(n.quit)
	<-n.done
	n.running = false
	flushed := uint64(n.fifo.reset())
	n.st.rxFlushed.Add(flushed)
	n.st.rxMissed.Add(flushed)
	n.intrDisable()
}

// intrEnable and intrDisable are IMS/IMC for every cause.
func (n *NIC) intrEnable() {
	for i := range n.txq {
		n.txq[i].intrEn.Store(true)
	}
	for i := range n.rxq {
		n.rxq[i].intrEn.Store(true)
	}
	n.lscEn.Store(true)
	n.wake()
}

func (n *NIC) intrDisable() {
	for i := range n.txq {
		n.txq[i].intrEn.Store(false)
	}
	for i := range n.rxq {
		n.rxq[i].intrEn.Store(false)
	}
	n.lscEn.Store(false)
}

// run is the device: serve TX rings, move frames from the FIFO into posted
// RX buffers, write completions back, raise moderated interrupts; park
// when there is nothing to do.
func (n *NIC) run() {
	defer close(n.done)
	defer n.writeBacks(true) // the DMA in flight completes before the device stops
	pace := newPacer(n.cfg.LineRate, n.cfg.FrameRate, n.quit)
	defer pace.timer.Stop()
	n.parkTimer = time.NewTimer(time.Hour)
	n.parkTimer.Stop()
	n.rxWaitQ = -1
	for {
		select {
		case <-n.quit:
			return
		default:
		}
		work := false
		for i := range n.txq {
			if n.serveTx(i, pace) {
				work = true
			}
		}
		if n.serveRx() {
			work = true
		}
		wbDue := n.writeBacks(false)
		delay := n.interrupts()
		if wbDue > 0 && (delay == 0 || wbDue < delay) {
			delay = wbDue
		}
		if p := n.pausedFor(); p > 0 && (delay == 0 || p < delay) {
			delay = p // the transmitter resumes when the pause ends
		}
		if !work && !n.park(delay) {
			return
		}
	}
}

// park sleeps until a wake, the next timed event (delay > 0: a moderated
// interrupt or a delayed write-back), or quit (false).
func (n *NIC) park(delay time.Duration) bool {
	n.sleeping.Store(true)
	if n.pending() {
		n.sleeping.Store(false)
		return true
	}
	n.st.parks.Add(1)
	var due <-chan time.Time
	if delay > 0 {
		n.parkTimer.Reset(delay)
		due = n.parkTimer.C
	}
	ok := true
	select {
	case <-n.quit:
		ok = false
	case <-n.wakeCh:
	case <-due:
	}
	if delay > 0 {
		n.parkTimer.Stop()
	}
	n.sleeping.Store(false)
	return ok
}

// pending reports work a pass would do now, from the registers and the
// FIFO (read after sleeping was stored: see NIC.sleeping). Timed work
// (moderation, delayed write-backs) is the park timer's.
func (n *NIC) pending() bool {
	for i := range n.txq {
		if n.txReady(&n.txq[i]) {
			return true
		}
	}
	if !n.fifo.empty() && (n.rxWaitQ < 0 || n.rxq[n.rxWaitQ].rdt.Load() != n.rxWaitRDT) {
		return true
	}
	if n.lsc.Load() && n.lscEn.Load() {
		return true
	}
	if n.cfg.ITR == 0 {
		for i := range n.txq {
			if n.txq[i].pend && n.txq[i].intrEn.Load() {
				return true
			}
		}
		for i := range n.rxq {
			if n.rxq[i].pend && n.rxq[i].intrEn.Load() {
				return true
			}
		}
	}
	return false
}

// dmaRead and dmaWrite are the device's DMA, with the configured latency.
func (n *NIC) dmaRead(a busdma.BusAddr, p []byte) error {
	n.dmaWait()
	if err := n.bus.Read(a, p); err != nil {
		n.st.dmaErrors.Add(1)
		return err
	}
	return nil
}

func (n *NIC) dmaWrite(a busdma.BusAddr, p []byte) error {
	n.dmaWait()
	if err := n.bus.Write(a, p); err != nil {
		n.st.dmaErrors.Add(1)
		return err
	}
	return nil
}

// dmaWait spends DMALatency (slow DMA). The device goroutine waits as the
// DMA engine would: short waits spin, longer ones sleep (at most 1 ms:
// Config.DMALatency). Once a stop has begun it does not wait: the
// accesses of the last pass complete at once.
func (n *NIC) dmaWait() {
	d := n.cfg.DMALatency
	if d <= 0 || n.stopping.Load() {
		return
	}
	if d >= 200*time.Microsecond {
		time.Sleep(d)
		return
	}
	for t := time.Now(); time.Since(t) < d; {
	}
}

// pacer holds the wire to its line rate and frame rate. Its waits end
// when the device stops (quit closed): the frame in hand still goes out
// and the pass ends (serveTx stops at quit), so a slow legal rate never
// makes Stop or Detach wait for the wire.
type pacer struct {
	lineRate, frameRate float64
	start               time.Time
	due                 float64 // seconds of wire time used since start
	quit                <-chan struct{}
	timer               *time.Timer
}

func newPacer(lineRate, frameRate float64, quit <-chan struct{}) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &pacer{lineRate: lineRate, frameRate: frameRate, start: time.Now(), quit: quit, timer: t}
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
	ahead := durationOf(p.due) - time.Since(p.start)
	if ahead <= 100*time.Microsecond {
		return
	}
	select {
	case <-p.quit:
		return
	default:
	}
	p.timer.Reset(ahead)
	select {
	case <-p.quit:
		p.timer.Stop()
	case <-p.timer.C:
	}
}

// durationOf converts seconds to a Duration, saturating: a rate so slow
// that a frame's time overflows a Duration (about 292 years) waits until
// the stop; NaN and negative values are 0.
func durationOf(sec float64) time.Duration {
	const maxSec = float64(math.MaxInt64) / float64(time.Second)
	switch {
	case !(sec > 0):
		return 0
	case sec >= maxSec:
		return math.MaxInt64
	}
	return time.Duration(sec * float64(time.Second))
}
