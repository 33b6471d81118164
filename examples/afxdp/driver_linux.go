package afxdp

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// Driver is the iflib driver of one interface over AF_XDP: the IFDI
// methods (iflib.Device) and the if_txrx table (iflib.TxRx), one queue
// pair per configured queue id, each an AF_XDP socket with its four rings.
//
//	iflib refill   ─ RxdRefill/RxdFlush ──▶ fill ring        (free frames, by UMEM offset = ifsd_ba)
//	iflib rxeof    ◀ RxdAvailable/PktGet ─ RX ring           (frame at offset+256, length)
//	iflib encap    ─ TxdEncap/TxdFlush ───▶ TX ring + sendto (when the kernel asks: needs_wakeup)
//	iflib reclaim  ◀ TxdCreditsUpdate ──── completion ring   (one credit per sent descriptor)
//	iflib interrupts ◀ poll(2) on the socket (RX), the completion ring after a kick (TX)
//
// Ring sizes: the RX ring and the completion ring have nrxd and ntxd
// entries, which bounds what the kernel can ever have in them (at most
// nrxd-1 frames posted, ntxd-2 descriptors in use). The fill and TX rings
// have twice as many, because the kernel publishes its consumer index of
// those lazily (after a batch): a slot it has already consumed, and whose
// frame may already be back with us, can still look taken.
//
// Lifecycle: the kernel objects — sockets, the XSKMAP, the program and
// its bpf_link — exist only between Init and Stop (IFDI_INIT, IFDI_STOP),
// and every error path of Init removes what it made. Attach holds only the
// namespace, a netlink handle and the UMEM; Detach releases them.
type Driver struct {
	cfg     Config
	ns      netNS
	nl      *netlink.Handle
	umem    *UMEM
	ownUMEM bool
	bus     *busdma.Device
	ic      *iflib.Context
	ifindex int
	mac     net.HardwareAddr // guarded by mu after Attach

	// mtu is the interface MTU the driver works with: read at Attach, set
	// by MTUSet, followed by the link monitor. frags says the kernel loads
	// frags-aware XDP programs (multi-buffer); origFlags are the
	// interface's IFF_PROMISC|IFF_ALLMULTI at Attach, restored at Detach.
	mtu       atomic.Int64
	frags     bool
	origFlags uint32
	// mtuRefused is set while the interface's MTU, changed behind the
	// driver's back, is one the driver cannot receive: the link is
	// reported down until it is fixed.
	mtuRefused atomic.Bool
	// multi are the multicast addresses MultiSet added to the interface
	// (IFDI lifecycle, serialized by iflib's CTX_LOCK).
	multi []iflib.EtherAddr

	q []*queue

	// Kernel objects between Init and Stop (IFDI lifecycle, serialized by
	// iflib's CTX_LOCK).
	prog *xdpRedirect
	mon  *linkMonitor

	mu      sync.Mutex // guards the sockets' replacement (q[i].s) and base against Stats
	base    Stats      // guarded by mu: counters of sockets closed by earlier Stops
	zc      atomic.Bool
	release sync.Once
}

var (
	_ iflib.Device             = (*Driver)(nil)
	_ iflib.TxRx               = (*Driver)(nil)
	_ iflib.QueueIntrEnabler   = (*Driver)(nil)
	_ iflib.AdminStatusUpdater = (*Driver)(nil)
	_ iflib.MTUSetter          = (*Driver)(nil)
	_ iflib.PromiscSetter      = (*Driver)(nil)
	_ iflib.MultiSetter        = (*Driver)(nil)
)

// Shared is the driver's if_shared_ctx for a UMEM frame size: one
// descriptor ring per queue set and one free list; a packet is one frame
// per segment (TxMaxSegSize = RxMaxSegSize = the frame size), up to
// MaxFrags frames of multi-buffer (TxMaxSize).
func Shared(frameSize int) *iflib.SharedCtx {
	s := &iflib.SharedCtx{
		DriverName:    "afxdp",
		DriverVersion: "1.1.0",
		QAlign:        64,
		TxMaxSize:     min(MaxFrags*frameSize, maxPacket),
		TxMaxSegSize:  frameSize,
		RxMaxSize:     frameSize,
		RxMaxSegSize:  frameSize,
		RxNSegments:   1,
		NTxQs:         1,
		NRxQs:         1,
		NFL:           1,
	}
	s.NTxdMin[0], s.NTxdMax[0], s.NTxdDefault[0] = MinRingSize, MaxRingSize, DefaultNTxd
	s.NRxdMin[0], s.NRxdMax[0], s.NRxdDefault[0] = MinRingSize, MaxRingSize, DefaultNRxd
	return s
}

// Attach checks the interface and registers the driver with iflib. The
// attachment's Driver, Shared and Bus are filled in here; the rest (Input,
// Config, filters) comes from a, except the ring sizes, which come from
// cfg. Errors: a *ConfigError for a refused Config field (matching
// ErrConfig, ErrNoInterface, ErrQueueID or ErrUnboundQueues),
// ErrNoInterface (no such interface), ErrFrameTooBig, ErrUMEMTooSmall,
// ErrClosed (Config.UMEM was closed), ErrUnavailable, or an iflib
// *ConfigError.
func Attach(cfg Config, a iflib.Attachment) (*Driver, error) {
	if err := cfg.resolve(); err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			d.releaseAttach()
		}
	}()
	var err error
	if d.ns, err = openNetNS(cfg.NetNS); err != nil {
		return nil, err
	}
	if d.ns.isSet() {
		// The netlink library loses setns's errno: try the switch first.
		if err := d.ns.do(func() error { return nil }); err != nil {
			return nil, err
		}
		d.nl, err = netlink.NewHandleAt(d.ns.h)
	} else {
		d.nl, err = netlink.NewHandle()
	}
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%w: netlink in network namespace %q: %w", ErrUnavailable, cfg.NetNS, err)
		}
		return nil, fmt.Errorf("afxdp: netlink: %w", err)
	}
	l, err := d.nl.LinkByName(cfg.Interface)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%w: %q: %w", ErrNoInterface, cfg.Interface, err)
		}
		return nil, fmt.Errorf("afxdp: look up %q: %w", cfg.Interface, err)
	}
	at := l.Attrs()
	d.ifindex, d.mac = at.Index, slices.Clone(at.HardwareAddr)
	d.mtu.Store(int64(at.MTU))
	d.origFlags = at.RawFlags & (unix.IFF_PROMISC | unix.IFF_ALLMULTI)
	if d.frags, err = xdpFragsSupported(); err != nil {
		return nil, err
	}
	if err := d.resolveQueues(at); err != nil {
		return nil, err
	}
	cfg = d.cfg

	d.umem = cfg.UMEM
	zone := a.Config.RxZoneSize
	if zone == 0 {
		zone = iflib.DefaultRxZoneSize(cfg.NRxd)
	}
	if d.umem == nil {
		frames := len(cfg.QueueIDs)*zone + ringShadowFrames(cfg, DefaultFrameSize)
		if d.umem, err = NewUMEM(UMEMConfig{Frames: frames}); err != nil {
			return nil, err
		}
		d.ownUMEM = true
	}
	if err := d.umem.acquire(); err != nil {
		d.umem = nil
		return nil, err
	}
	fs := d.umem.FrameSize()
	if err := d.checkMTU(at.MTU); err != nil {
		return nil, err
	}
	if d.bus, err = busdma.NewDevice(d.umem.Space(), busdma.DeviceConfig{Name: cfg.Interface, Checker: cfg.Checker}); err != nil {
		return nil, err
	}

	d.q = make([]*queue, len(cfg.QueueIDs))
	for i, qid := range cfg.QueueIDs {
		d.q[i] = newQueue(d, i, qid)
	}
	if in := a.Input; in != nil && !cfg.KeepPartialChecksums {
		a.Input = func(ic *iflib.Context, qid int, pkts []*iflib.Packet) {
			d.completeChecksums(qid, pkts)
			in(ic, qid, pkts)
		}
	}
	a.Driver = d
	a.Shared = Shared(fs)
	a.Bus = d.bus
	a.Config.OverrideNTxds[0] = cfg.NTxd
	a.Config.OverrideNRxds[0] = cfg.NRxd
	ic, err := iflib.Register(a)
	if err != nil {
		if errors.Is(err, busdma.ErrNoMem) {
			return nil, fmt.Errorf("%w: %d frames of %d bytes for %d queues of %d RX descriptors (free-list zones of %d frames each): %w",
				ErrUMEMTooSmall, d.umem.Frames(), fs, len(cfg.QueueIDs), cfg.NRxd, zone, err)
		}
		return nil, err
	}
	d.ic = ic
	ok = true
	return d, nil
}

// resolveQueues fills in the default QueueIDs (every RX queue in use)
// and refuses ids past the interface's queues, or a list that leaves RX
// queues unbound (ErrUnboundQueues) unless PartialQueues is set.
func (d *Driver) resolveQueues(at *netlink.LinkAttrs) error {
	cfg := &d.cfg
	nrx, ntx := at.NumRxQueues, at.NumTxQueues
	var inUse int
	var known bool
	err := d.ns.do(func() error {
		var err error
		inUse, known, err = rxQueuesInUse(cfg.Interface)
		return err
	})
	if err != nil {
		return err
	}
	if known && inUse > 0 && (nrx == 0 || inUse < nrx) {
		nrx = inUse
	}
	nrx = max(nrx, 1)
	if len(cfg.QueueIDs) == 0 {
		cfg.QueueIDs = make([]int, nrx)
		for i := range cfg.QueueIDs {
			cfg.QueueIDs[i] = i
		}
	}
	for _, q := range cfg.QueueIDs {
		if q >= nrx || (ntx > 0 && q >= ntx) {
			return cfgErr(ErrQueueID, "QueueIDs", cfg.QueueIDs, "queue %d of %s, which has %d RX and %d TX queues",
				q, cfg.Interface, nrx, ntx)
		}
	}
	var unbound []int
	for q := 0; q < nrx; q++ {
		if !slices.Contains(cfg.QueueIDs, q) {
			unbound = append(unbound, q)
		}
	}
	if len(unbound) == 0 {
		return nil
	}
	if !cfg.PartialQueues {
		return cfgErr(ErrUnboundQueues, "QueueIDs", cfg.QueueIDs, "%s has %d RX queues and this list leaves %v without a socket: the kernel steers frames to those queues and the driver would never see them; bind them all (leave QueueIDs empty) or set PartialQueues",
			cfg.Interface, nrx, unbound)
	}
	if cfg.Logf != nil {
		cfg.Logf("afxdp: %s: RX queues %v of %d are not bound (PartialQueues): frames steered to them go to the kernel's stack", cfg.Interface, unbound, nrx)
	}
	return nil
}

// ethHdrLen is ETHER_HDR_LEN: the MTU excludes the Ethernet header.
const ethHdrLen = 14

// ethCRCLen is ETHER_CRC_LEN. FreeBSD drivers count it in
// isc_max_frame_size (em_if_mtu_set: mtu + ETHER_HDR_LEN + ETHER_CRC_LEN)
// although the FCS never reaches memory, so MaxFrameSize − 18 is the MTU
// for every driver that follows the convention.
const ethCRCLen = 4

// completeChecksums finishes the checksums Linux senders left partial
// (CompleteChecksum) in a received batch, which the driver's input
// wrapper owns until it passes the batch on. It runs on queue qid's RX
// task. A multi-buffer frame (a chain) carrying TCP or UDP is copied into
// the queue's scratch buffer, completed there and, if that changed it,
// copied back: jumbo frames pay a copy for it.
func (d *Driver) completeChecksums(qid int, pkts []*iflib.Packet) {
	if qid < 0 || qid >= len(d.q) {
		return
	}
	q := d.q[qid]
	var n uint64
	for _, m := range pkts {
		if m.Next == nil {
			if CompleteChecksum(m.Bytes()) {
				n++
			}
			continue
		}
		if !l4Candidate(m.Bytes()) {
			continue
		}
		buf := q.csumBuf[:0]
		for p := m; p != nil; p = p.Next {
			buf = append(buf, p.Bytes()...)
		}
		q.csumBuf = buf
		if CompleteChecksum(buf) {
			n++
			for p := m; p != nil; p = p.Next {
				buf = buf[copy(p.Bytes(), buf):]
			}
		}
	}
	if n > 0 {
		q.st.csumDone.Add(n)
	}
}

// ringShadowFrames is the UMEM iflib takes for its descriptor-ring memory
// (this driver's rings are the kernel's; iflib's copies stay unused).
func ringShadowFrames(cfg Config, fs int) int {
	per := (cfg.NRxd*8+fs-1)/fs + (cfg.NTxd*16+fs-1)/fs + 2
	return len(cfg.QueueIDs) * per
}

// releaseAttach undoes Attach (IFDI_DETACH, or a failed Attach). It runs
// once.
func (d *Driver) releaseAttach() error {
	var err error
	d.release.Do(func() {
		if d.bus != nil {
			err = d.bus.Close()
		}
		if d.umem != nil {
			d.umem.release()
			if d.ownUMEM {
				err = errors.Join(err, d.umem.Close())
			}
		}
		if d.nl != nil {
			d.nl.Close()
		}
		d.ns.close()
	})
	return err
}

// Context returns the iflib context.
func (d *Driver) Context() *iflib.Context { return d.ic }

// UMEM returns the packet memory.
func (d *Driver) UMEM() *UMEM { return d.umem }

// Bus returns the driver's busdma device (on the UMEM's space).
func (d *Driver) Bus() *busdma.Device { return d.bus }

// IfIndex is the interface index in its namespace.
func (d *Driver) IfIndex() int { return d.ifindex }

// HardwareAddr is the interface's MAC address as the driver last read
// (Attach) or set it (Init programs Context.MAC): a copy. It equals
// Context.MAC() while the interface runs. Safe at any time.
func (d *Driver) HardwareAddr() net.HardwareAddr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.mac)
}

// ZeroCopy reports whether the sockets of the last Init bound with
// XDP_ZEROCOPY.
func (d *Driver) ZeroCopy() bool { return d.zc.Load() }

// AttachPre is IFDI_ATTACH_PRE: fill the softc context, report the
// interface's MAC address (iflib_set_mac) and its media.
func (d *Driver) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	n := len(d.q)
	sc.NTxQSetsMax, sc.NRxQSetsMax = n, n
	sc.TxdSize[0], sc.RxdSize[0] = 16, 8 // sizeof(struct xdp_desc), a fill-ring entry
	sc.TxQSizes[0] = sc.NTxd[0] * sc.TxdSize[0]
	sc.RxQSizes[0] = sc.NRxd[0] * sc.RxdSize[0]
	sc.TxNSegments = 1
	if d.frags {
		sc.TxNSegments = MaxFrags // multi-buffer TX: one descriptor per frame
	}
	sc.RxdBufSize[0] = d.umem.FrameSize()
	sc.MaxFrameSize = int(d.mtu.Load()) + ethHdrLen + ethCRCLen
	sc.Capabilities = iflib.CapLinkState
	if d.frags {
		sc.Capabilities |= iflib.CapJumboMTU
	}
	sc.CapEnable = sc.Capabilities
	sc.TxRx = d
	if len(d.mac) == 6 {
		if a := iflib.EtherAddr(d.mac); !a.IsZero() && !a.IsMulticast() {
			if err := ic.SetMAC(a); err != nil {
				return err
			}
		}
	}
	d.addMedia(ic)
	return nil
}

// TxQueuesAlloc is IFDI_TX_QUEUES_ALLOC. iflib's ring memory is not used:
// the descriptor rings are the kernel's, mapped at Init.
func (d *Driver) TxQueuesAlloc(rings []iflib.RingMem, ntxqs, ntxqsets int) error {
	if ntxqs != 1 || ntxqsets != len(d.q) {
		return fmt.Errorf("afxdp: %d TX rings in %d sets, want 1 in %d", ntxqs, ntxqsets, len(d.q))
	}
	return nil
}

// RxQueuesAlloc is IFDI_RX_QUEUES_ALLOC.
func (d *Driver) RxQueuesAlloc(rings []iflib.RingMem, nrxqs, nrxqsets int) error {
	if nrxqs != 1 || nrxqsets != len(d.q) {
		return fmt.Errorf("afxdp: %d RX rings in %d sets, want 1 in %d", nrxqs, nrxqsets, len(d.q))
	}
	return nil
}

// Init is IFDI_INIT: load the redirect program and its XSKMAP, open and
// bind one socket per queue, put them in the map, attach the program,
// start the interrupt pollers and the link monitor. On any error
// everything made so far is removed.
func (d *Driver) Init(ic *iflib.Context) (err error) {
	sc := ic.Softc()
	nrxd, ntxd := uint32(sc.NRxd[0]), uint32(sc.NTxd[0])
	sizes := ringSizes{fill: 2 * nrxd, comp: ntxd, rx: nrxd, tx: 2 * ntxd}
	defer func() {
		if err != nil {
			d.teardown()
		}
	}()
	if err = d.program(ic); err != nil {
		return err
	}
	sg := d.needsMultiBuffer(ic.MTU())
	maxq := 0
	for _, q := range d.q {
		maxq = max(maxq, q.qid+1)
	}
	if d.prog, err = loadRedirect(maxq, d.frags); err != nil {
		return err
	}
	zc := true
	d.mu.Lock()
	err = d.ns.do(func() error {
		for _, q := range d.q {
			s, err := newSocket(d.umem, sizes)
			if err != nil {
				return err
			}
			q.s = s
			if err := s.bind(d.cfg.Interface, d.ifindex, q.qid, d.cfg.Bind, sg, d.cfg.Logf); err != nil {
				return err
			}
			zc = zc && s.zeroCopy
			if err := d.prog.set(q.qid, s.fd); err != nil {
				return err
			}
		}
		return d.prog.attach(d.cfg.Interface, d.ifindex, d.cfg.XDPMode, d.frags)
	})
	d.mu.Unlock()
	if err != nil {
		return err
	}
	d.zc.Store(zc)
	for _, q := range d.q {
		q.start(ic)
	}
	if d.mon, err = startLinkMonitor(d); err != nil {
		return err
	}
	// What changed before the subscription began (an MTU set between
	// program and now) is not in it: read the link once.
	l, err := d.link()
	if err != nil {
		return err
	}
	d.linkChanged(l.Attrs())
	return nil
}

// teardown removes the kernel objects in the safe order: the program
// first (no new frames are redirected), then the pollers (no goroutine is
// inside a syscall on a socket), then the sockets, then the map.
func (d *Driver) teardown() {
	if d.mon != nil {
		d.mon.stop()
		d.mon = nil
	}
	if d.prog != nil && d.prog.lnk != nil {
		_ = d.prog.lnk.Close()
		d.prog.lnk = nil
	}
	for _, q := range d.q {
		q.stop()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, q := range d.q {
		if q.s != nil {
			st, _ := q.s.stats()
			d.base.addXDP(st)
			q.s.close()
			q.s = nil
		}
	}
	if d.prog != nil {
		_ = d.prog.close()
		d.prog = nil
	}
}

// Stop is IFDI_STOP: after it the kernel touches no descriptor and no
// frame of this driver, and no socket, program or map of it exists.
func (d *Driver) Stop(ic *iflib.Context) {
	d.teardown()
	ic.LinkStateChange(iflib.LinkStateDown, 0)
}

// Detach is IFDI_DETACH: release what Attach took and give the
// interface back its promiscuous and all-multicast flags as Attach found
// them and remove the multicast entries it added (its MTU and MAC address
// stay as the driver last set them, as `ip link set` leaves them). A busdma map still loaded on the bus device is
// reported (busdma.ErrLeak).
func (d *Driver) Detach(ic *iflib.Context) error {
	d.teardown()
	err := errors.Join(d.restoreFlags(), d.dropMulti())
	return errors.Join(err, d.releaseAttach())
}

// IntrEnable is IFDI_INTR_ENABLE.
func (d *Driver) IntrEnable(ic *iflib.Context) {
	for _, q := range d.q {
		q.armRx()
	}
}

// IntrDisable is IFDI_INTR_DISABLE.
func (d *Driver) IntrDisable(ic *iflib.Context) {
	for _, q := range d.q {
		q.rxArmed.Store(false)
	}
}

// RxQueueIntrEnable is IFDI_RX_QUEUE_INTR_ENABLE: arm the queue's poller.
func (d *Driver) RxQueueIntrEnable(ic *iflib.Context, qid int) error {
	d.q[qid].armRx()
	return nil
}

// TxQueueIntrEnable is IFDI_TX_QUEUE_INTR_ENABLE: pay a kick TxdFlush
// deferred, or kick a TX ring the kernel left unsent (back-pressure).
func (d *Driver) TxQueueIntrEnable(ic *iflib.Context, qid int) error {
	d.q[qid].retryTx()
	return nil
}

// UpdateAdminStatus is IFDI_UPDATE_ADMIN_STATUS: read the interface's
// operational state.
func (d *Driver) UpdateAdminStatus(ic *iflib.Context) {
	l, err := d.nl.LinkByIndex(d.ifindex)
	if err != nil {
		ic.LinkStateChange(iflib.LinkStateDown, 0)
		return
	}
	d.reportLink(l.Attrs())
}
