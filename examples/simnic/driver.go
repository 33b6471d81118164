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
// for a NIC. The TX completion scheme is em(4)'s: the driver remembers
// every descriptor it asked to report status (tx_rsq) and counts credits
// up to each one whose DD bit the device wrote back.
type Driver struct {
	nic *NIC
	ctx *iflib.Context
	tx  []drvTxq
	rx  []drvRxq
}

type drvTxq struct {
	ring    []byte
	paddr   busdma.BusAddr
	size    int
	rsq     []int // tx_rsq: descriptor indices with RS set, a ring
	rsqHead int   // next rsq entry to check
	rsqTail int   // next free rsq entry
	cidx    int   // tx_cidx_processed: descriptors credited so far
	// cidxA mirrors cidx for the clear=false probe, which may run beside
	// the consumer.
	cidxA atomic.Int32
}

type drvRxq struct {
	ring  []byte
	paddr busdma.BusAddr
	size  int
	slot  []uint16 // descriptor → iflib free-list slot (iru_idxs)
}

var (
	_ iflib.Device           = (*Driver)(nil)
	_ iflib.TxRx             = (*Driver)(nil)
	_ iflib.QueueIntrEnabler = (*Driver)(nil)
)

// Errors of the driver's fast path. RxdPktGet's are em's EBADMSG: iflib
// counts them in ierrors and resets the interface.
var (
	errBadDesc = errors.New("simnic: receive descriptor not done (EBADMSG)")
	errRxFrame = errors.New("simnic: receive frame error in the descriptor (EBADMSG)")
	// ErrFrameTooLong is TxdEncap refusing a frame longer than MaxFrame
	// without TSO: the device would drop it (TxTooLong), so the driver does
	// not hand it over. iflib frees it and counts it in oerrors.
	ErrFrameTooLong = errors.New("simnic: frame longer than MaxFrame")
)

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
	d := &Driver{nic: n}
	if err := n.claim(d, "an iflib driver"); err != nil {
		return nil, err
	}
	a.Driver = d
	a.Shared = Shared(n.cfg)
	a.Bus = n.bus
	a.Config.Unit = n.cfg.Unit
	if a.Config.OverrideNTxds[0] == 0 {
		a.Config.OverrideNTxds[0] = n.cfg.NTxd
	}
	if a.Config.OverrideNRxds[0] == 0 {
		a.Config.OverrideNRxds[0] = n.cfg.NRxd
	}
	ctx, err := iflib.Register(a)
	if err != nil {
		n.release(d)
		return nil, err
	}
	d.ctx = ctx
	return d, nil
}

// Context returns the iflib context.
func (d *Driver) Context() *iflib.Context { return d.ctx }

// NIC returns the device model.
func (d *Driver) NIC() *NIC { return d.nic }

// AttachPre is IFDI_ATTACH_PRE: fill the softc context.
func (d *Driver) AttachPre(ctx *iflib.Context, sc *iflib.SoftcCtx) error {
	cfg := d.nic.cfg
	sc.NTxQSetsMax, sc.NRxQSetsMax = cfg.Queues, cfg.Queues
	sc.TxQSizes[0] = sc.NTxd[0] * DescSize
	sc.RxQSizes[0] = sc.NRxd[0] * DescSize
	sc.TxdSize[0], sc.RxdSize[0] = DescSize, DescSize
	sc.TxNSegments = cfg.TxSegs
	sc.RxdBufSize[0] = cfg.RxBufSize
	sc.MaxFrameSize = cfg.MaxFrame
	sc.MinFrameSize = 60
	sc.TxCsumFlags = 0
	sc.TxRx = d
	return nil
}

// TxQueuesAlloc is IFDI_TX_QUEUES_ALLOC.
func (d *Driver) TxQueuesAlloc(rings []iflib.RingMem, ntxqs, ntxqsets int) error {
	if ntxqs != 1 || len(rings) != ntxqsets {
		return fmt.Errorf("simnic: %d TX rings per set, want 1", ntxqs)
	}
	d.tx = make([]drvTxq, ntxqsets)
	for i, r := range rings {
		size := len(r.Vaddr) / DescSize
		d.tx[i] = drvTxq{ring: r.Vaddr, paddr: r.Paddr, size: size, rsq: make([]int, size)}
	}
	return nil
}

// RxQueuesAlloc is IFDI_RX_QUEUES_ALLOC.
func (d *Driver) RxQueuesAlloc(rings []iflib.RingMem, nrxqs, nrxqsets int) error {
	if nrxqs != 1 || len(rings) != nrxqsets {
		return fmt.Errorf("simnic: %d RX rings per set, want 1", nrxqs)
	}
	d.rx = make([]drvRxq, nrxqsets)
	for i, r := range rings {
		size := len(r.Vaddr) / DescSize
		d.rx[i] = drvRxq{ring: r.Vaddr, paddr: r.Paddr, size: size, slot: make([]uint16, size)}
	}
	return nil
}

// Init is IFDI_INIT: program the rings and start the device; the link
// comes up.
func (d *Driver) Init(ctx *iflib.Context) error {
	if !d.nic.ownedBy(d) {
		return fmt.Errorf("%w: %s is not bound to this driver", ErrBusy, d.nic.bus.Name())
	}
	tx := make([]busdma.BusAddr, len(d.tx))
	rx := make([]busdma.BusAddr, len(d.rx))
	for i := range d.tx {
		t := &d.tx[i]
		tx[i] = t.paddr
		t.rsqHead, t.rsqTail, t.cidx = 0, 0, 0
		t.cidxA.Store(0)
	}
	for i := range d.rx {
		rx[i] = d.rx[i].paddr
	}
	d.nic.program(tx, rx, d.tx[0].size, d.rx[0].size, d.nic.cfg.RxBufSize)
	d.nic.start(d.intr)
	ctx.LinkStateChange(iflib.LinkStateUp, 100_000_000_000)
	return nil
}

// intr is the driver's interrupt filter: schedule the queue task.
func (d *Driver) intr(tx bool, q int) {
	if tx {
		d.ctx.TxIntr(q)
	} else {
		d.ctx.RxIntr(q)
	}
}

// Stop is IFDI_STOP.
func (d *Driver) Stop(ctx *iflib.Context) {
	d.nic.stop()
	ctx.LinkStateChange(iflib.LinkStateDown, 0)
}

// IntrEnable is IFDI_INTR_ENABLE.
func (d *Driver) IntrEnable(ctx *iflib.Context) {
	for i := range d.nic.txq {
		d.nic.txq[i].intrEn.Store(true)
	}
	for i := range d.nic.rxq {
		d.nic.rxq[i].intrEn.Store(true)
	}
	d.nic.wake()
}

// IntrDisable is IFDI_INTR_DISABLE.
func (d *Driver) IntrDisable(ctx *iflib.Context) {
	for i := range d.nic.txq {
		d.nic.txq[i].intrEn.Store(false)
	}
	for i := range d.nic.rxq {
		d.nic.rxq[i].intrEn.Store(false)
	}
}

// TxQueueIntrEnable is IFDI_TX_QUEUE_INTR_ENABLE.
func (d *Driver) TxQueueIntrEnable(ctx *iflib.Context, qid int) error {
	d.nic.txq[qid].intrEn.Store(true)
	d.nic.wake()
	return nil
}

// RxQueueIntrEnable is IFDI_RX_QUEUE_INTR_ENABLE.
func (d *Driver) RxQueueIntrEnable(ctx *iflib.Context, qid int) error {
	d.nic.rxq[qid].intrEn.Store(true)
	d.nic.wake()
	return nil
}

// Detach is IFDI_DETACH.
func (d *Driver) Detach(ctx *iflib.Context) error {
	if d.nic.ownedBy(d) {
		d.nic.stop()
	}
	d.nic.release(d)
	return nil
}

// TxdEncap is ift_txd_encap: one descriptor per segment; EOP, and RS when
// iflib asks for a report (IPI_TX_INTR), on the last.
func (d *Driver) TxdEncap(pi *iflib.PktInfo) error {
	if pi.Len > d.nic.cfg.MaxFrame {
		return ErrFrameTooLong
	}
	t := &d.tx[pi.QSIdx]
	mask := t.size - 1
	idx := pi.PIdx
	for i := 0; i < pi.NSegs; i++ {
		s := pi.Segs[i]
		desc := txDesc{addr: uint64(s.Addr), length: uint16(s.Len), cmd: TxCmdIFCS}
		if i == pi.NSegs-1 {
			desc.cmd |= TxCmdEOP
			if pi.MFlags&iflib.MVLANTag != 0 {
				desc.cmd |= TxCmdVLE
				desc.vlan = pi.VTag
			}
			if pi.Flags&iflib.IPITxIntr != 0 {
				desc.cmd |= TxCmdRS
				t.rsq[t.rsqTail] = idx
				t.rsqTail = (t.rsqTail + 1) & mask
			}
		}
		putTxDesc(t.ring[idx*DescSize:], desc)
		idx = (idx + 1) & mask
	}
	pi.NewPIdx = idx
	return nil
}

// TxdFlush is ift_txd_flush: write TDT.
func (d *Driver) TxdFlush(qid int, pidx int) {
	d.nic.txq[qid].tdt.Store(uint32(pidx)) // release: the descriptors
	d.nic.wake()
}

// TxdCreditsUpdate is ift_txd_credits_update (em_isc_txd_credits_update):
// walk tx_rsq while the device wrote DD back.
func (d *Driver) TxdCreditsUpdate(qid int, clear bool) int {
	t := &d.tx[qid]
	head := int(d.nic.txq[qid].tdh.Load()) // acquire: the DD write-backs
	if !clear {
		// The probe may run beside the consumer: compare the head
		// register with the published credited position only.
		if head != int(t.cidxA.Load()) {
			return 1
		}
		return 0
	}
	mask := t.size - 1
	credits := 0
	cidx := t.cidx
	span := (head - cidx) & mask // descriptors [cidx, head) are done
	for r := t.rsqHead; r != t.rsqTail; r = (r + 1) & mask {
		idx := t.rsq[r]
		if (idx-cidx)&mask >= span {
			break
		}
		if t.ring[idx*DescSize+12]&TxStatDD == 0 {
			break // the device owes this write-back (cannot happen before head)
		}
		n := (idx + 1 - cidx) & mask
		credits += n
		span -= n
		cidx = (idx + 1) & mask
		t.ring[idx*DescSize+12] = 0
		t.rsqHead = (r + 1) & mask
	}
	t.cidx = cidx
	t.cidxA.Store(int32(cidx))
	return credits
}

// RxdAvailable is ift_rxd_available: count complete packets from cidx.
func (d *Driver) RxdAvailable(qid int, cidx int, budget int) int {
	r := &d.rx[qid]
	head := int(d.nic.rxq[qid].rdh.Load()) // acquire: data and write-backs
	mask := r.size - 1
	cnt := 0
	for i := cidx; i != head && cnt < budget; i = (i + 1) & mask {
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

// RxdPktGet is ift_rxd_pkt_get: describe the packet at ri.CIdx.
func (d *Driver) RxdPktGet(ri *iflib.RxdInfo) error {
	r := &d.rx[ri.QSIdx]
	mask := r.size - 1
	i := ri.CIdx
	ri.NFrags, ri.Len = 0, 0
	for {
		if ri.NFrags == len(ri.Frags) {
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
		r.ring[i*DescSize+12] = 0
		if ri.NFrags == 1 {
			ri.FlowID = wb.hash
			ri.RSSType = iflib.HashType(wb.hashType)
		}
		i = (i + 1) & mask
		if wb.status&RxStatEOP != 0 {
			if wb.errors&RxErrFrameMask != 0 {
				// em's rxd_pkt_get: "Make sure bad packets are discarded"
				// returns EBADMSG, and iflib resets.
				return errRxFrame
			}
			break
		}
	}
	return nil
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

// Teardown detaches the iflib context, then runs CheckTeardown.
//
// Deprecated: use the simnictest package, whose Env.Close checks this and
// more (goroutines, checker reports, IOMMU faults).
func (d *Driver) Teardown(zones ...*iflib.Zone) error {
	if err := d.ctx.Detach(); err != nil {
		return err
	}
	return d.CheckTeardown(zones...)
}

// CheckTeardown checks the books after detach: no map still loaded on the
// NIC's bus and every packet back in the zones given (e.g. the senders');
// then it closes the bus device (which reports any map the checker still
// tracks). The RX free lists' zones are iflib's to check, in Detach. It
// returns every problem found, joined. When packets cross NICs
// (forwarding), detach all of them before checking any.
//
// Deprecated: use the simnictest package.
func (d *Driver) CheckTeardown(zones ...*iflib.Zone) error {
	var errs []error
	if n := d.nic.bus.LoadedMaps(); n != 0 {
		errs = append(errs, fmt.Errorf("simnic: %s: %d maps loaded after detach", d.nic.bus.Name(), n))
	}
	for _, z := range zones {
		if a, s := z.Available(), z.Size(); a != s {
			errs = append(errs, fmt.Errorf("simnic: zone %s: %d of %d packets back", z.Name(), a, s))
		}
	}
	if err := d.nic.bus.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
