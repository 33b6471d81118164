package simnic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// Driver is simnic's iflib driver: the IFDI methods and the if_txrx table
// for a NIC, written the way em(4) is (sys/dev/e1000/if_em.c, em_txrx.c).
//
//   - TX completions (Config.TxCompletion): em's tx_rsq scheme — the driver
//     remembers every descriptor it asked to report status (RS) and credits
//     up to the last one whose DD bit the device wrote back
//     (em_isc_txd_credits_update); or ixl's head write-back
//     (ixl_isc_txd_credits_update_hwb). It never reads the head register.
//   - RX: descriptors are trusted by their DD and EOP bits; a frame error in
//     the EOP descriptor is EBADMSG (em) or a discard (Config.RxErrors).
//   - Link: the link interrupt and IFDI_TIMER call Context.AdminIntr
//     (em_msix_link, em_if_timer), and IFDI_UPDATE_ADMIN_STATUS reads the
//     STATUS register and reports the link (em_if_update_admin_status).
//   - Descriptors are read only below the device's write-back frontier (see
//     devTxq): the frontier stands in for coherent DMA visibility and is
//     never used as a count.
//   - Control (driver_ctl.go): AttachPre reports the EEPROM address
//     (iflib_set_mac), the media and the capabilities; IFDI_INIT programs
//     the address, the receive filter, VLAN tagging and filtering, the max
//     frame register, RSS and the medium from the context; the optional
//     IFDI_MTU_SET, PROMISC_SET, MULTI_SET, VLAN_REGISTER/UNREGISTER,
//     MEDIA_STATUS/CHANGE, LINK_INTR_ENABLE and NEEDS_RESTART are em's;
//     IFDI_TIMER reports XOFFs (isc_pause_frames).
type Driver struct {
	nic *NIC
	// ic is the context: stored by AttachPre (Register may call Init
	// from a wrapper's IFDI method before it returns), read by the
	// interrupt handler on the device goroutine.
	ic         atomic.Pointer[iflib.Context]
	ntxd, nrxd int
	tx         []drvTxq
	rx         []drvRxq

	watchdogResets atomic.Uint64
	timerPeriods   atomic.Uint64
	rxBadFrames    atomic.Uint64 // rare: an atomic add per bad frame
}

// DriverStats are the driver's own counters.
type DriverStats struct {
	// TxEncapped are packets TxdEncap put on a TX ring. Each ends as one
	// the device processed (Stats.TxProcessed) or one a stop abandoned on
	// the ring (iflib frees it: stop_discards).
	TxEncapped uint64
	// TxAbandoned are packets a stop (or reset) left on a TX ring the device
	// had not processed; iflib freed them and counted them in
	// stop_discards. TxEncapped = Stats.TxProcessed + TxAbandoned once the
	// device has caught up.
	TxAbandoned uint64
	// WatchdogResets are IFDI_WATCHDOG_RESET calls (em's watchdog_events).
	WatchdogResets uint64
	// RxBadFrames are RxdPktGet calls that found a frame error (EBADMSG
	// returned, or a Discard reported).
	RxBadFrames uint64
	// TimerPeriods are IFDI_TIMER calls for queue 0: one per period of
	// iflib's timer while the interface runs (tests use it to know whether
	// a timer period fell inside a window).
	TimerPeriods uint64
}

// QueueStats returns TX queue q's share of TxEncapped and TxAbandoned
// (the other fields are per driver). ErrConfig for a queue it does not
// have.
func (d *Driver) QueueStats(q int) (DriverStats, error) {
	if q < 0 || q >= len(d.tx) {
		return DriverStats{}, &ConfigError{Pkg: "simnic", Field: "queue", Value: q, Reason: "no such queue"}
	}
	return DriverStats{TxEncapped: d.tx[q].encappedA.Load(), TxAbandoned: d.tx[q].abandonedA.Load()}, nil
}

// Stats returns the driver's counters. TxEncapped is published at each
// doorbell and at Stop.
func (d *Driver) Stats() DriverStats {
	s := DriverStats{WatchdogResets: d.watchdogResets.Load(), RxBadFrames: d.rxBadFrames.Load(), TimerPeriods: d.timerPeriods.Load()}
	for i := range d.tx {
		s.TxEncapped += d.tx[i].encappedA.Load()
		s.TxAbandoned += d.tx[i].abandonedA.Load()
	}
	return s
}

type drvTxq struct {
	ring    []byte
	paddr   busdma.BusAddr
	size    int
	rsq     []int // tx_rsq: descriptor indices with RS set, a ring
	rsqHead int   // tx_rs_cidx: next rsq entry to check
	rsqTail int   // tx_rs_pidx: next free rsq entry
	// processed is tx_cidx_processed: the last descriptor credited (em), or
	// the head last read (head write-back).
	processed int
	// seen is the first descriptor after the last RS one credited: the
	// base of the visibility check (exact, unlike processed in the
	// under-by-one mode).
	seen int
	// wbSeenA is the write-back frontier the consumer saw at its last
	// credits pass, for the clear=false probe, which may run beside the
	// consumer and reads only atomics.
	wbSeenA atomic.Uint32
	// encapped counts packets put on the ring (consumer-owned), published
	// in encappedA at each doorbell and at Stop (no locked instruction
	// per packet).
	encapped  uint64
	encappedA atomic.Uint64
	// abandonedA is encapped minus the packets the device processed, at
	// the last stop (stored by Stop, once the device goroutine is gone).
	abandonedA atomic.Uint64
	// xoffSeen is the device's XOFF count at this queue's last IFDI_TIMER
	// (the timer's).
	xoffSeen uint64
}

type drvRxq struct {
	ring    []byte
	paddr   busdma.BusAddr
	size    int
	slot    []uint16 // descriptor → iflib free-list slot (iru_idxs)
	visible int      // the frontier RxdAvailable last loaded: pkt_get reads below it only
}

var (
	_ iflib.Device             = (*Driver)(nil)
	_ iflib.TxRx               = (*Driver)(nil)
	_ iflib.QueueIntrEnabler   = (*Driver)(nil)
	_ iflib.AdminStatusUpdater = (*Driver)(nil)
	_ iflib.TimerHandler       = (*Driver)(nil)
	_ iflib.WatchdogResetter   = (*Driver)(nil)
)

// Errors of the driver's fast path. RxdPktGet's are em's EBADMSG: iflib
// counts them in ierrors and resets the interface.
var (
	errBadDesc = errors.New("simnic: receive descriptor not done (EBADMSG)")
	errRxFrame = errors.New("simnic: receive frame error in the descriptor (EBADMSG)")
	// ErrFrameTooLong is TxdEncap refusing a frame (without TSO) whose
	// length with the FCS exceeds the max frame register (NIC.MaxFrame:
	// Config.MaxFrame, or what IFDI_MTU_SET programmed), not counting one
	// VLAN tag: the device would drop it (TxTooLong), so the driver does
	// not hand it over. iflib frees it and counts it in oerrors. A frame
	// whose tag may be in its data is left to the device (see tooLong).
	ErrFrameTooLong = errors.New("simnic: frame longer than the max frame register")
	// ErrOffload is TxdEncap refusing an offload the driver does not
	// advertise (IPv6 checksums or TSO, or any offload without
	// Config.Offload), a TSO segment size that does not fit the max frame
	// register, or a tag to insert (M_VLANTAG) with VLAN tagging off
	// (CTRL.VME clear).
	// iflib frees the packet and counts it in oerrors: it is never sent
	// with a checksum the device did not compute.
	ErrOffload = errors.New("simnic: offload not supported")
	// errNoRings is Init before IFDI_TX/RX_QUEUES_ALLOC gave the driver
	// its rings (only a wrapper calling Init from AttachPre gets it).
	errNoRings = errors.New("simnic: Init before the queues were allocated")
)

// txOffloads are the offloads the driver advertises with Config.Offload
// (isc_tx_csum_flags).
const txOffloads = iflib.CsumIP | iflib.CsumIPTCP | iflib.CsumIPUDP | iflib.CsumIPTSO

// Shared is simnic's if_shared_ctx.
func Shared(cfg Config) *iflib.SharedCtx {
	cfg.defaults()
	s := &iflib.SharedCtx{
		DriverName:    cfg.Name,
		DriverVersion: "1.0.0",
		QAlign:        128,
		TxMaxSize:     cfg.MaxFrame, // a longer frame without TSO is refused at Transmit (ErrTooBig)
		TxMaxSegSize:  4096,
		RxMaxSize:     cfg.RxBufSize,
		RxMaxSegSize:  cfg.RxBufSize,
		RxNSegments:   1,
		NTxQs:         1,
		NRxQs:         1,
		NFL:           1,
	}
	if cfg.Offload {
		// em: isc_tso_maxsize EM_TSO_SIZE, isc_tso_maxsegsize
		// EM_TSO_SEG_SIZE, IFLIB_TSO_INIT_IP.
		s.TSOMaxSize, s.TSOMaxSegSize = TSOMaxSize, 4096
		s.Flags |= iflib.FlagTSOInitIP
	}
	s.NTxdMin[0], s.NTxdMax[0], s.NTxdDefault[0] = 64, 4096, 1024
	s.NRxdMin[0], s.NRxdMax[0], s.NRxdDefault[0] = 64, 4096, 1024
	return s
}

// Attach registers the NIC with iflib: the attachment's Driver, Shared and
// Bus are filled in here; the rest (config, input, filter) comes from a.
// The ring sizes come from the NIC's Config unless a.Config overrides them.
// The NIC is bound to the driver until the context detaches: attaching a
// NIC that is already attached, or driven by a RawForwarder, fails with
// ErrBusy.
func (n *NIC) Attach(a iflib.Attachment) (*Driver, error) {
	return n.AttachWith(a, nil)
}

// AttachWith is Attach with a hook between iflib and the driver: wrap gets
// simnic's Driver and the SharedCtx Attach built (it may change it) and
// returns the iflib.Device to register, usually a wrapper that delegates
// every method to d and adds optional IFDI methods (a test's way to call
// lifecycle methods from inside IFDI methods, or to slow one down). A nil
// wrap is Attach; a wrap that returns nil is a *ConfigError.
func (n *NIC) AttachWith(a iflib.Attachment, wrap func(d *Driver, sh *iflib.SharedCtx) iflib.Device) (*Driver, error) {
	d := &Driver{nic: n}
	if err := n.claim(d, "an iflib driver"); err != nil {
		return nil, err
	}
	a.Driver = d
	a.Shared = Shared(n.cfg)
	if wrap != nil {
		if a.Driver = wrap(d, a.Shared); a.Driver == nil {
			n.release(d)
			return nil, &ConfigError{Pkg: "simnic", Field: "wrap", Value: nil, Reason: "returned no iflib.Device"}
		}
	}
	a.Bus = n.bus
	a.Config.Unit = n.cfg.Unit
	if a.Config.OverrideNTxds[0] == 0 {
		a.Config.OverrideNTxds[0] = n.cfg.NTxd
	}
	if a.Config.OverrideNRxds[0] == 0 {
		a.Config.OverrideNRxds[0] = n.cfg.NRxd
	}
	ic, err := iflib.Register(a)
	if err != nil {
		n.release(d)
		return nil, err
	}
	d.ic.Store(ic) // AttachPre stored it already, unless a wrapper did not call it
	return d, nil
}

// Context returns the iflib context.
func (d *Driver) Context() *iflib.Context { return d.ic.Load() }

// NIC returns the device model.
func (d *Driver) NIC() *NIC { return d.nic }

// WatchdogResets returns how many times iflib's TX watchdog called
// IFDI_WATCHDOG_RESET (em's watchdog_events).
func (d *Driver) WatchdogResets() uint64 { return d.watchdogResets.Load() }

// headWB reports whether TX completions come by head write-back.
func (d *Driver) headWB() bool { return d.nic.cfg.TxCompletion == TxCompletionHeadWB }

// AttachPre is IFDI_ATTACH_PRE: fill the softc context. In head
// write-back mode the TX ring has room for the head after its last
// descriptor (ixl: isc_txqsizes = ntxd × 16 + sizeof(u32), rounded).
func (d *Driver) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	d.ic.Store(ic) // the interrupt handler's, should a wrapper Init during Register
	cfg := d.nic.cfg
	sc.NTxQSetsMax, sc.NRxQSetsMax = cfg.Queues, cfg.Queues
	d.ntxd, d.nrxd = sc.NTxd[0], sc.NRxd[0]
	sc.TxQSizes[0] = sc.NTxd[0] * DescSize
	if d.headWB() {
		sc.TxQSizes[0] += DescSize
	}
	sc.RxQSizes[0] = sc.NRxd[0] * DescSize
	sc.TxdSize[0], sc.RxdSize[0] = DescSize, DescSize
	sc.TxNSegments = cfg.TxSegs
	sc.RxdBufSize[0] = cfg.RxBufSize
	sc.MaxFrameSize = cfg.MaxFrame
	sc.MinFrameSize = 60
	sc.TxCsumFlags = 0
	if cfg.Offload {
		sc.TxCsumFlags = txOffloads
		sc.TxTSOSegmentsMax, sc.TxTSOSizeMax, sc.TxTSOSegSizeMax = cfg.TSOSegs, TSOMaxSize, 4096
	}
	sc.TxRx = d
	return d.attachCtl(ic, sc)
}

// TxQueuesAlloc is IFDI_TX_QUEUES_ALLOC. More queue sets than the NIC
// has (Config.Queues: a wrapper raised NTxQSetsMax behind the driver) is
// a *ConfigError naming ntxqsets, as a real driver refuses queues its
// hardware lacks; iflib then fails Register or Init with an *IFDIError.
func (d *Driver) TxQueuesAlloc(rings []iflib.RingMem, ntxqs, ntxqsets int) error {
	if err := d.checkQueueSets("ntxqs", "ntxqsets", rings, ntxqs, ntxqsets); err != nil {
		return err
	}
	d.tx = make([]drvTxq, ntxqsets)
	for i, r := range rings {
		size := len(r.Vaddr) / DescSize
		if d.headWB() {
			size--
		}
		d.tx[i] = drvTxq{ring: r.Vaddr, paddr: r.Paddr, size: size, rsq: make([]int, size)}
	}
	return nil
}

// RxQueuesAlloc is IFDI_RX_QUEUES_ALLOC; as TxQueuesAlloc, more sets
// than Config.Queues is a *ConfigError naming nrxqsets.
func (d *Driver) RxQueuesAlloc(rings []iflib.RingMem, nrxqs, nrxqsets int) error {
	if err := d.checkQueueSets("nrxqs", "nrxqsets", rings, nrxqs, nrxqsets); err != nil {
		return err
	}
	d.rx = make([]drvRxq, nrxqsets)
	for i, r := range rings {
		size := len(r.Vaddr) / DescSize
		d.rx[i] = drvRxq{ring: r.Vaddr, paddr: r.Paddr, size: size, slot: make([]uint16, size)}
	}
	return nil
}

// checkQueueSets validates an IFDI_*_QUEUES_ALLOC call: one ring per
// set, a ring per set, and no more sets than the device has queues (the
// driver indexes the device's queues by set: TxdCreditsUpdate,
// RxdAvailable, the doorbells).
func (d *Driver) checkQueueSets(qsField, setsField string, rings []iflib.RingMem, nqs, nsets int) error {
	switch {
	case nqs != 1:
		return &ConfigError{Pkg: "simnic", Field: qsField, Value: nqs, Reason: "rings per queue set, want 1"}
	case nsets < 1 || nsets > d.nic.cfg.Queues:
		return &ConfigError{Pkg: "simnic", Field: setsField, Value: nsets, Reason: fmt.Sprintf("want 1..%d (Config.Queues)", d.nic.cfg.Queues)}
	case len(rings) != nsets:
		return &ConfigError{Pkg: "simnic", Field: setsField, Value: nsets, Reason: fmt.Sprintf("%d rings given", len(rings))}
	}
	return nil
}

// Init is IFDI_INIT: program the rings and start the device. iflib then
// calls IFDI_UPDATE_ADMIN_STATUS, which reports the link.
func (d *Driver) Init(ic *iflib.Context) error {
	if !d.nic.ownedBy(d) {
		return fmt.Errorf("%w: %s is not bound to this driver", ErrBusy, d.nic.bus.Name())
	}
	if len(d.tx) == 0 || len(d.rx) == 0 {
		return errNoRings
	}
	d.ic.CompareAndSwap(nil, ic)
	tx := make([]busdma.BusAddr, len(d.tx))
	rx := make([]busdma.BusAddr, len(d.rx))
	for i := range d.tx {
		t := &d.tx[i]
		tx[i] = t.paddr
		// em_if_init: "Initialize the last processed descriptor to be the
		// end of the ring, rather than the start, so that we avoid an
		// off-by-one error"; the older em started at 0.
		t.rsqHead, t.rsqTail, t.seen = 0, 0, 0
		switch d.nic.cfg.TxCompletion {
		case TxCompletionDD:
			t.processed = t.size - 1
		default:
			t.processed = 0
		}
		t.wbSeenA.Store(0)
	}
	for i := range d.rx {
		rx[i] = d.rx[i].paddr
		d.rx[i].visible = 0
	}
	d.nic.program(tx, rx, d.tx[0].size, d.rx[0].size, ic.RxBufSize(0)) // iflib_get_rx_mbuf_sz: the buffers iflib posts
	if err := d.programCtl(ic); err != nil {
		return err
	}
	d.nic.start(d.intr)
	return nil
}

// intr is the driver's interrupt filter: schedule the queue task, or the
// admin task for a link change (em_msix_link → iflib_admin_intr_deferred).
func (d *Driver) intr(c intrCause, q int) {
	ic := d.ic.Load()
	switch c {
	case causeTx:
		ic.TxIntr(q)
	case causeRx:
		ic.RxIntr(q)
	case causeLink:
		ic.AdminIntr()
	}
}

// UpdateAdminStatus is IFDI_UPDATE_ADMIN_STATUS
// (em_if_update_admin_status): read the link and report it with the
// speed the PHY resolved.
func (d *Driver) UpdateAdminStatus(ic *iflib.Context) {
	if d.nic.readStatus() {
		ic.LinkStateChange(iflib.LinkStateUp, d.nic.linkSpeed.Load())
	} else {
		ic.LinkStateChange(iflib.LinkStateDown, 0)
	}
}

// Timer is IFDI_TIMER (em_if_timer): on queue 0, have the admin task
// poll the link, which catches a link change whose interrupt was lost;
// on every queue, report the XOFFs received since that queue's last
// period (XOFFRXC: em_update_stats_counters sets isc_pause_frames when it
// moved), or a pause still in force (STATUS.TXOFF), so that iflib's
// watchdog does not take a queue the link partner paused for a hung one
// (iflib clears the report after each queue).
func (d *Driver) Timer(ic *iflib.Context, qid int) {
	if qid == 0 {
		d.timerPeriods.Add(1)
		ic.AdminIntr()
	}
	if qid < 0 || qid >= len(d.tx) {
		return
	}
	t := &d.tx[qid]
	x := d.nic.st.rxXoff.Load()
	switch {
	case x != t.xoffSeen:
		ic.ReportPauseFrames(x - t.xoffSeen)
		t.xoffSeen = x
	case d.nic.pausedFor() > 0:
		// STATUS.TXOFF: still paused by an earlier XOFF. em reports only a
		// moved XOFFRXC, enough at real speeds (65535 quanta are 34 ms at
		// 1 Gb/s, under iflib's 500 ms period); a pause longer than the
		// period would look hung in the periods after its XOFF.
		ic.ReportPauseFrames(1)
	}
}

// WatchdogReset is IFDI_WATCHDOG_RESET (em_if_watchdog_reset): count it;
// iflib then resets the interface, which reprograms the hung queue.
func (d *Driver) WatchdogReset(ic *iflib.Context) { d.watchdogResets.Add(1) }

// Stop is IFDI_STOP.
func (d *Driver) Stop(ic *iflib.Context) {
	d.nic.stop()
	for i := range d.tx {
		t := &d.tx[i]
		t.encappedA.Store(t.encapped)
		t.abandonedA.Store(t.encapped - d.nic.txq[i].packets) // the device goroutine is gone
	}
	ic.LinkStateChange(iflib.LinkStateDown, 0)
}

// IntrEnable is IFDI_INTR_ENABLE.
func (d *Driver) IntrEnable(ic *iflib.Context) { d.nic.intrEnable() }

// IntrDisable is IFDI_INTR_DISABLE.
func (d *Driver) IntrDisable(ic *iflib.Context) { d.nic.intrDisable() }

// TxQueueIntrEnable is IFDI_TX_QUEUE_INTR_ENABLE.
func (d *Driver) TxQueueIntrEnable(ic *iflib.Context, qid int) error {
	d.nic.txq[qid].intrEn.Store(true)
	d.nic.wake()
	return nil
}

// RxQueueIntrEnable is IFDI_RX_QUEUE_INTR_ENABLE.
func (d *Driver) RxQueueIntrEnable(ic *iflib.Context, qid int) error {
	d.nic.rxq[qid].intrEn.Store(true)
	d.nic.wake()
	return nil
}

// Detach is IFDI_DETACH.
func (d *Driver) Detach(ic *iflib.Context) error {
	if d.nic.ownedBy(d) {
		d.nic.stop()
	}
	d.nic.release(d)
	return nil
}

// TxdEncap is ift_txd_encap (em_isc_txd_encap): one descriptor per
// segment; EOP, and RS when iflib asks for a report (IPI_TX_INTR), on the
// last. A packet asking for checksum offload or TSO first gets a TCP/IP
// context descriptor (em_transmit_checksum_setup, em_tso_setup) and then
// extended data descriptors with POPTS (and TSE); others use legacy
// descriptors.
func (d *Driver) TxdEncap(pi *iflib.PktInfo) error {
	tso := pi.CsumFlags&iflib.CsumTSO != 0
	csum := pi.CsumFlags&(iflib.CsumIP|iflib.CsumIPTCP|iflib.CsumIPUDP|iflib.CsumIP6TCP|iflib.CsumIP6UDP) != 0
	switch {
	case (tso || csum) && (!d.nic.cfg.Offload || pi.CsumFlags&^txOffloads != 0 || pi.Flags&iflib.IPITxIPv4 == 0):
		return ErrOffload
	case tso && (pi.TSOSegSize == 0 || int(pi.EHdrLen)+int(pi.IPHLen)+int(pi.TCPHLen)+int(pi.TSOSegSize)+4 > d.nic.MaxFrame()):
		return ErrOffload
	case !tso && d.tooLong(pi):
		return ErrFrameTooLong
	case pi.MFlags&iflib.MVLANTag != 0 && !d.nic.VLANMode():
		return ErrOffload // no CTRL.VME: the device cannot insert the tag
	}
	t := &d.tx[pi.QSIdx]
	mask := t.size - 1
	idx := pi.PIdx
	var popts, dcmd uint8
	if tso || csum {
		c := txCtx{tucmd: 0}
		eh, ih := int(pi.EHdrLen), int(pi.IPHLen)
		if pi.CsumFlags&iflib.CsumIP != 0 || tso {
			c.ipcss, c.ipcso, c.ipcse = uint8(eh), uint8(eh+10), uint16(eh+ih-1)
			c.tucmd |= TxTucmdIP
			popts |= TxPoptsIXSM
		}
		switch {
		case tso || pi.CsumFlags&iflib.CsumIPTCP != 0:
			c.tucss, c.tucso = uint8(eh+ih), uint8(eh+ih+16)
			c.tucmd |= TxTucmdTCP
			popts |= TxPoptsTXSM
		case pi.CsumFlags&iflib.CsumIPUDP != 0:
			c.tucss, c.tucso = uint8(eh+ih), uint8(eh+ih+6)
			popts |= TxPoptsTXSM
		}
		if tso {
			hdr := eh + ih + int(pi.TCPHLen)
			c.tucmd |= TxCmdTSE
			c.hdrlen, c.mss, c.paylen = uint8(hdr), pi.TSOSegSize, uint32(pi.Len-hdr)
			dcmd |= TxCmdTSE
		}
		putTxCtx(t.ring[idx*DescSize:], c)
		idx = (idx + 1) & mask
	}
	for i := 0; i < pi.NSegs; i++ {
		s := pi.Segs[i]
		cmd := uint8(TxCmdIFCS)
		var vlan uint16
		if i == pi.NSegs-1 {
			cmd |= TxCmdEOP
			if pi.Flags&iflib.IPITxIntr != 0 {
				cmd |= TxCmdRS
				t.rsq[t.rsqTail] = idx
				t.rsqTail = (t.rsqTail + 1) & mask
			}
		}
		// VLE: on the first data descriptor with TSE, on the last without
		// (SDM §3.3.7.1).
		if pi.MFlags&iflib.MVLANTag != 0 && (i == pi.NSegs-1 && !tso || i == 0 && tso) {
			cmd |= TxCmdVLE
			vlan = pi.VTag
		}
		if tso || csum {
			putTxData(t.ring[idx*DescSize:], txData{addr: uint64(s.Addr), length: uint32(s.Len), cmd: cmd | dcmd, popts: popts, vlan: vlan})
		} else {
			putTxDesc(t.ring[idx*DescSize:], txDesc{addr: uint64(s.Addr), length: uint16(s.Len), cmd: cmd, vlan: vlan})
		}
		idx = (idx + 1) & mask
	}
	pi.NewPIdx = idx
	t.encapped++
	return nil
}

// tooLong reports a frame (without TSO) the device would drop for its
// length: the max frame register counts the FCS and not one VLAN tag,
// whether the descriptor inserts it (M_VLANTAG) or the frame carries it.
// iflib parses the header only for offloads, so a frame up to 4 bytes
// over the untagged limit whose EtherType is unknown may be tagged in its
// data (a forwarder's): the device decides, and drops an untagged one
// whole, counted (TxTooLong).
func (d *Driver) tooLong(pi *iflib.PktInfo) bool {
	max := d.nic.MaxFrame() - 4 // the FCS
	switch {
	case pi.MFlags&iflib.MVLANTag != 0:
		return pi.Len > max
	case pi.Len <= max:
		return false
	case pi.Len > max+4:
		return true
	}
	return pi.EHdrLen != 0 && pi.EHdrLen != 18 // parsed: untagged
}

// TxdFlush is ift_txd_flush: write TDT.
func (d *Driver) TxdFlush(qid int, pidx int) {
	t := &d.tx[qid]
	t.encappedA.Store(t.encapped)
	d.nic.txq[qid].tdt.Store(uint32(pidx)) // release: the descriptors
	d.nic.wake()
}

// TxdCreditsUpdate is ift_txd_credits_update. With clear=false it is a
// probe that may run beside the consumer: it reads only atomics and
// answers whether the device wrote anything back since the consumer last
// looked ("may be unreliable"; a lost DD write-back leaves it 0, so
// iflib's watchdog sees a hung queue, as em's probe of the next RS
// descriptor's DD bit would).
func (d *Driver) TxdCreditsUpdate(qid int, clear bool) int {
	t := &d.tx[qid]
	dq := &d.nic.txq[qid]
	if !clear {
		if dq.wb.Load() != t.wbSeenA.Load() {
			return 1
		}
		return 0
	}
	wb := dq.wb.Load() // acquire: the write-backs before the frontier
	t.wbSeenA.Store(wb)
	if d.headWB() {
		return d.creditsHeadWB(t, dq)
	}
	return d.creditsDD(t, int(wb))
}

// creditsDD is em_isc_txd_credits_update: walk tx_rsq while the next RS
// descriptor has DD, crediting cur − prev descriptors for each.
func (d *Driver) creditsDD(t *drvTxq, wb int) int {
	mask := t.size - 1
	visible := (wb - t.seen) & mask // descriptors [seen, wb) were written back
	credits := 0
	for t.rsqHead != t.rsqTail {
		cur := t.rsq[t.rsqHead]
		if (cur-t.seen)&mask >= visible || t.ring[cur*DescSize+12]&TxStatDD == 0 {
			break
		}
		credits += (cur - t.processed) & mask
		t.processed = cur
		visible -= (cur + 1 - t.seen) & mask
		t.seen = (cur + 1) & mask
		t.rsqHead = (t.rsqHead + 1) & mask
	}
	return credits
}

// creditsHeadWB is ixl_isc_txd_credits_update_hwb: the head the device
// wrote after the ring, minus tx_cidx_processed. The head may stop inside
// a packet.
func (d *Driver) creditsHeadWB(t *drvTxq, dq *devTxq) int {
	dq.hwbMu.Lock()
	head := int(binary.LittleEndian.Uint32(t.ring[t.size*DescSize:])) & (t.size - 1)
	dq.hwbMu.Unlock()
	credits := (head - t.processed) & (t.size - 1)
	t.processed = head
	return credits
}

// RxdAvailable is ift_rxd_available: count complete packets from cidx,
// by their DD and EOP bits, below the write-back frontier.
func (d *Driver) RxdAvailable(qid int, cidx int, budget int) int {
	r := &d.rx[qid]
	r.visible = int(d.nic.rxq[qid].wb.Load()) // acquire: data and write-backs
	mask := r.size - 1
	cnt := 0
	for i := cidx; i != r.visible && cnt < budget; i = (i + 1) & mask {
		st := r.ring[i*DescSize+12]
		if st&RxStatDD == 0 {
			break
		}
		if st&RxStatEOP != 0 {
			cnt++
		}
	}
	return cnt
}

// RxdPktGet is ift_rxd_pkt_get: describe the packet at ri.CIdx and
// consume its descriptors. A frame error in its EOP descriptor is EBADMSG
// with the descriptors left as they are (em), or, with RxErrorsDiscard, a
// packet marked Discard whose buffers iflib recycles.
func (d *Driver) RxdPktGet(ri *iflib.RxdInfo) error {
	r := &d.rx[ri.QSIdx]
	mask := r.size - 1
	i := ri.CIdx
	ri.NFrags, ri.Len = 0, 0
	for {
		if ri.NFrags == len(ri.Frags) || i == r.visible {
			return errBadDesc
		}
		wb := getRxWB(r.ring[i*DescSize:])
		if wb.status&RxStatDD == 0 {
			return errBadDesc
		}
		slot := r.slot[i]
		if d.nic.faultRxBadSlot.Load() && d.nic.faultRxBadSlot.CompareAndSwap(true, false) {
			slot = uint16(r.size + 7)
		}
		ri.Frags[ri.NFrags] = iflib.RxdFrag{FLID: 0, Idx: slot, Len: wb.length}
		ri.NFrags++
		ri.Len += int(wb.length)
		if ri.NFrags == 1 {
			ri.FlowID, ri.RSSType = wb.hash, rssHashType(wb.hashType)
		}
		i = (i + 1) & mask
		if wb.status&RxStatEOP == 0 {
			continue
		}
		rxMetadata(ri, wb)
		if wb.errors&RxErrFrameMask != 0 {
			d.rxBadFrames.Add(1)
			if d.nic.cfg.RxErrors != RxErrorsDiscard {
				// em's rxd_pkt_get: "Make sure bad packets are discarded"
				// returns EBADMSG, and iflib resets.
				return errRxFrame
			}
			ri.Discard = true
		}
		break
	}
	for j := ri.CIdx; j != i; j = (j + 1) & mask {
		r.ring[j*DescSize+12] = 0 // the status: consumed
	}
	return nil
}

// rssHashType maps the descriptor's RSS type to M_HASHTYPE_*
// (ixgbe_determine_rsstype).
func rssHashType(t uint8) iflib.HashType {
	switch t {
	case RSSTypeTCPIPv4:
		return iflib.HashRSSTCPv4
	case RSSTypeIPv4:
		return iflib.HashRSSIPv4
	case RSSTypeTCPIPv6:
		return iflib.HashRSSTCPv6
	case RSSTypeIPv6:
		return iflib.HashRSSIPv6
	case RSSTypeUDPIPv4:
		return iflib.HashRSSUDPv4
	case RSSTypeUDPIPv6:
		return iflib.HashRSSUDPv6
	}
	return iflib.HashNone
}

// rxMetadata fills the VLAN tag and checksum results from the EOP
// write-back (em_receive_checksum, and the VP/vlan fields).
func rxMetadata(ri *iflib.RxdInfo, wb rxWB) {
	if wb.status&RxStatVP != 0 {
		ri.VTag = wb.vlan
		ri.Flags |= iflib.MVLANTag
	}
	if wb.status&RxStatIXSM != 0 {
		return
	}
	if wb.status&RxStatIPCS != 0 {
		ri.CsumFlags |= iflib.CsumL3Calc
		if wb.errors&RxErrIPE == 0 {
			ri.CsumFlags |= iflib.CsumL3Valid
		}
	}
	if wb.status&RxStatL4CS != 0 {
		ri.CsumFlags |= iflib.CsumL4Calc
		if wb.errors&RxErrTCPE == 0 {
			ri.CsumFlags |= iflib.CsumL4Valid
			ri.CsumData = 0xffff
		}
	}
}

// RxdRefill is ift_rxd_refill: write buffer addresses into descriptors.
func (d *Driver) RxdRefill(iru *iflib.RxdUpdate) {
	r := &d.rx[iru.QSIdx]
	mask := r.size - 1
	for i := 0; i < iru.Count; i++ {
		idx := (iru.PIdx + i) & mask
		b := r.ring[idx*DescSize : (idx+1)*DescSize]
		binary.LittleEndian.PutUint64(b[0:8], uint64(iru.PAddrs[i]))
		clear(b[8:])
		r.slot[idx] = iru.Idxs[i]
	}
}

// RxdFlush is ift_rxd_flush: write RDT.
func (d *Driver) RxdFlush(qid int, flid int, pidx int) {
	d.nic.rxq[qid].rdt.Store(uint32(pidx)) // release: the buffer addresses
	d.nic.wake()
}
