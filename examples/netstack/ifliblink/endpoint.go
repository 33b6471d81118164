package ifliblink

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/iflib"
)

// Ethernet sizes: ETHER_HDR_LEN and ETHER_CRC_LEN. FreeBSD drivers set
// isc_max_frame_size to the MTU plus both (em_if_mtu_set), so the MTU is
// MaxFrameSize − 18.
const (
	etherHdrLen = header.EthernetMinimumSize
	etherCRCLen = 4
)

// defaultMTU is the MTU before the first Bind (ETHERMTU).
const defaultMTU = 1500

// DefaultTxWait is Options.TxWait's default.
const DefaultTxWait = 20 * time.Millisecond

// minClusterSize is the smallest TX zone cluster the endpoint takes: the
// Ethernet, IP and TCP headers with options of any frame must fit in the
// first buffer, where the checksum offload writes its seed.
const minClusterSize = 256

var (
	// ErrNoZone is New without a TX zone.
	ErrNoZone = errors.New("ifliblink: no TX zone")
	// ErrSmallClusters is a TX zone whose clusters cannot hold a frame's
	// headers.
	ErrSmallClusters = errors.New("ifliblink: TX zone clusters too small for the headers")
	// ErrBadMAC is an Options.MAC that is not a unicast Ethernet address.
	ErrBadMAC = errors.New("ifliblink: not a unicast Ethernet address")
	// ErrNilContext is Bind(nil).
	ErrNilContext = errors.New("ifliblink: nil iflib context")
	// ErrOffloads is Bind to a context that lacks an offload the endpoint
	// has already advertised to the stack (connections built on it would
	// send packets the new device cannot take).
	ErrOffloads = errors.New("ifliblink: the context lacks an offload already advertised")
	// ErrMTU is Bind to a context whose frames cannot carry the MTU in
	// force.
	ErrMTU = errors.New("ifliblink: the context's frames are smaller than the MTU in force")
)

// Options configure New. Only TxZone is required.
type Options struct {
	// TxZone is where WritePackets takes the packets it copies frames
	// into: a zone on the device's busdma space (simnic: NIC.Bus().Space();
	// AF_XDP: UMEM.NewZone). Size it above the TX ring plus the software
	// ring plus TxNSegments per queue (iflib reclaims lazily, so that many
	// packets may stay on the ring while the link is idle), or rely on
	// TxWait. Clusters of at least 256 bytes; a frame larger than one
	// cluster is chained.
	TxZone *iflib.Zone
	// MAC is the endpoint's Ethernet address. Default: the driver's when it
	// has one (see HardwareAddr), else a random locally administered
	// address.
	MAC tcpip.LinkAddress
	// HardwareAddr, when set, is asked for the device's address at the
	// first Bind if MAC is empty and the driver reported none to iflib
	// (Context.MAC, iflib_set_mac): for drivers that predate it.
	HardwareAddr func() []byte
	// MTU is the IP MTU (0: the context's, Context.MTU, followed live). A
	// larger value than the device carries is clamped to the device's.
	MTU uint32
	// TxWait is how long WritePackets waits for a packet when the TX zone is
	// empty before it drops (0: DefaultTxWait; negative: never wait).
	TxWait time.Duration
	// NoOffload ignores the device's checksum offload and TSO: gVisor
	// computes every checksum and sends MTU-sized segments.
	NoOffload bool
	// NoTSO ignores the device's TSO only.
	NoTSO bool
	// NoGSO turns off gVisor's software GSO on a device without TSO:
	// gVisor then hands WritePackets one segment at a time instead of a
	// burst of up to 64 KiB cut into MTU-sized segments.
	NoGSO bool
	// PerPacket sends with Context.Transmit per packet instead of one
	// Context.TransmitBatch per WritePackets call (for comparison).
	PerPacket bool
	// LRO merges in-order TCP segments of a flow within each input batch
	// before the stack sees them (large receive offload, see Input). Off
	// by default: gVisor's receiver, once its receive buffer is full, may
	// refuse in-window data and then ignore the peer's ACKs that lie
	// beyond its shrunk window, a stall for good; it happens without LRO
	// too when the receiving application stops reading (an echo server
	// blocked on its own writes), and the larger merged segments make it
	// far likelier (half of such 10 MB echo runs, against about one in
	// ten). Receivers that keep reading are not affected.
	LRO bool
}

// Endpoint is a gVisor stack.LinkEndpoint (and stack.GSOEndpoint) over an
// iflib context: an Ethernet NIC for the stack. See the package doc for
// the data path, ownership and copies.
//
// Concurrency: WritePackets may run on any number of goroutines; Input
// runs on iflib's RX tasks; Bind, Attach, SetMTU, SetLinkAddress, Close
// and every getter may run concurrently with both. The context pointer,
// the dispatcher and the MTU are atomics; the rest of the configuration
// is fixed at the first Bind and guarded by mu.
type Endpoint struct {
	zone    *iflib.Zone
	opts    Options
	txWait  time.Duration
	ic      atomic.Pointer[iflib.Context]
	disp    atomic.Pointer[dispatcher]
	mtu     atomic.Uint32  // the IP MTU asked (Options.MTU, SetMTU); 0: the context's
	ctlMu   sync.Mutex     // serialises the control calls SetMTU and SetLinkAddress hand off
	ctlWG   sync.WaitGroup // those hand-offs, for Wait
	closed  atomic.Bool
	batches sync.Pool             // *[]*iflib.Packet scratch of WritePackets
	lros    atomic.Pointer[[]lro] // one per RX queue, set at the first Bind

	mac atomic.Pointer[[header.EthernetAddressSize]byte]

	mu      sync.Mutex
	bound   bool // the first Bind happened: caps, txCsum and gso are fixed
	caps    stack.LinkEndpointCapabilities
	txCsum  iflib.CsumFlags // device checksum offloads in use
	tso     bool            // host GSO mapped to the device's TSO
	gsoMax  uint32
	onClose func()

	st counters
}

// dispatcher boxes the stack's dispatcher for an atomic pointer.
type dispatcher struct{ d stack.NetworkDispatcher }

var (
	_ stack.LinkEndpoint = (*Endpoint)(nil)
	_ stack.GSOEndpoint  = (*Endpoint)(nil)
)

// batchMax is the most packets WritePackets hands iflib in one
// TransmitBatch call (gVisor's bursts are at most 64 KiB of segments).
const batchMax = 64

// New returns an endpoint that takes its TX packets from opts.TxZone. Its
// Input method is iflib's if_input: pass it as Attachment.Input when the
// driver registers, then Bind the context the driver returns (the
// endpoint transmits on it and reads its MTU and offloads before any
// frame arrives), then hand the endpoint to stack.CreateNIC.
func New(opts Options) (*Endpoint, error) {
	if opts.TxZone == nil {
		return nil, ErrNoZone
	}
	if cs := opts.TxZone.ClusterSize(); cs < minClusterSize {
		return nil, fmt.Errorf("%w: %d-byte clusters, want at least %d", ErrSmallClusters, cs, minClusterSize)
	}
	if opts.MAC != "" {
		if err := checkMAC(opts.MAC); err != nil {
			return nil, err
		}
	}
	e := &Endpoint{zone: opts.TxZone, opts: opts, txWait: opts.TxWait}
	if opts.MAC != "" {
		e.setMAC(opts.MAC)
	}
	if e.txWait == 0 {
		e.txWait = DefaultTxWait
	}
	e.batches.New = func() any { b := make([]*iflib.Packet, 0, batchMax); return &b }
	e.caps = stack.CapabilityResolutionRequired
	e.mtu.Store(opts.MTU)
	return e, nil
}

func checkMAC(a tcpip.LinkAddress) error {
	if len(a) != header.EthernetAddressSize || a[0]&1 != 0 || a == header.UnspecifiedEthernetAddress {
		return fmt.Errorf("%w: %q", ErrBadMAC, a)
	}
	return nil
}

// Bind makes ic the context the endpoint transmits on. The first Bind
// fixes the link identity gVisor sees: the MTU (Options.MTU, else the
// context's, Context.MTU = if_mtu), the MAC (Options.MAC, else the
// driver's, Context.MAC = what iflib_set_mac stored) and the offloads the
// device offers and has enabled (SoftcCtx.TxCsumFlags and TxTSOSizeMax,
// narrowed by Context.CapEnabled), so bind before stack.CreateNIC. A later
// Bind (the driver detached and attached again, say) must offer every
// offload already advertised (ErrOffloads) and frames as large as the MTU
// in force (ErrMTU); it then takes over at once.
//
// Later control calls on the context take effect without a new Bind: MTU
// follows Context.SetMTU, and an offload turned off by
// Context.SetCapEnable is done here instead (the checksum computed, a
// GSO packet cut into segments), since gVisor cannot take back an
// advertised capability. Link changes reach a caller through
// Context.SubscribeLink (the command prints them); gVisor's LinkEndpoint
// has no carrier state, so LinkUp and TxLinkDown say what the stack sees.
func (e *Endpoint) Bind(ic *iflib.Context) error {
	if ic == nil {
		return ErrNilContext
	}
	sc := ic.Softc()
	devMTU := uint32(max(ic.MTU(), 0))
	csum, tso, gsoMax := e.offloads(sc)
	on := offloads{csum: csum, tso: tso}.narrow(ic.CapEnabled())
	csum, tso = on.csum, on.tso
	if !tso {
		gsoMax = 0
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.bound {
		if mtu := e.mtu.Load(); mtu > devMTU {
			e.mtu.Store(devMTU)
		}
		if e.mac.Load() == nil {
			if a := ic.MAC(); a != (iflib.EtherAddr{}) {
				e.setMAC(tcpip.LinkAddress(a[:]))
			} else {
				e.setMAC(e.deviceMAC())
			}
		}
		if err := e.pushMAC(ic); err != nil {
			return err
		}
		e.txCsum, e.tso, e.gsoMax = csum, tso, gsoMax
		if csum&(iflib.CsumIPTCP|iflib.CsumIPUDP) == iflib.CsumIPTCP|iflib.CsumIPUDP {
			e.caps |= stack.CapabilityTXChecksumOffload
		}
		if e.opts.LRO {
			ls := make([]lro, ic.NumRxQueues())
			e.lros.Store(&ls)
		}
		e.bound = true
		e.ic.Store(ic)
		return nil
	}
	if csum&e.txCsum != e.txCsum || (e.tso && !tso) {
		return fmt.Errorf("%w: advertised %#x (TSO %v), %s offers %#x (TSO %v)", ErrOffloads, uint32(e.txCsum), e.tso, ic.Name(), uint32(csum), tso)
	}
	if mtu := e.MTU(); mtu > devMTU {
		return fmt.Errorf("%w: MTU %d, %s carries %d", ErrMTU, mtu, ic.Name(), devMTU)
	}
	if err := e.pushMAC(ic); err != nil {
		return err
	}
	e.ic.Store(ic)
	return nil
}

// offloads is what the endpoint may ask of a device: the checksum
// offloads gVisor's packets can use, and TSO for host GSO.
func (e *Endpoint) offloads(sc iflib.SoftcCtx) (csum iflib.CsumFlags, tso bool, gsoMax uint32) {
	if e.opts.NoOffload {
		return 0, false, 0
	}
	csum = sc.TxCsumFlags & (iflib.CsumIPTCP | iflib.CsumIPUDP | iflib.CsumIP6TCP | iflib.CsumIP6UDP | iflib.CsumIPTSO)
	if !e.opts.NoTSO && csum&iflib.CsumIPTSO != 0 && csum&iflib.CsumIPTCP != 0 && sc.TxTSOSizeMax > 0 {
		tso = true
		gsoMax = uint32(min(sc.TxTSOSizeMax, 1<<16-1))
	}
	return csum &^ iflib.CsumIPTSO, tso, gsoMax
}

// deviceMAC is the driver's address when Options.HardwareAddr gives a
// unicast one, else a random locally administered address.
func (e *Endpoint) deviceMAC() tcpip.LinkAddress {
	if e.opts.HardwareAddr != nil {
		if a := tcpip.LinkAddress(e.opts.HardwareAddr()); checkMAC(a) == nil {
			return a
		}
	}
	var b [header.EthernetAddressSize]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	b[0] = b[0]&^1 | 2     // unicast, locally administered
	return tcpip.LinkAddress(b[:])
}

// Context returns the bound context (nil before Bind).
func (e *Endpoint) Context() *iflib.Context { return e.ic.Load() }

// LinkUp reports whether frames can leave: the endpoint is bound and not
// closed, and its context runs (not stopped, not detached) with the link
// up. WritePackets drops every packet while it is false (counted in
// TxLinkDown). gVisor's LinkEndpoint has no carrier state to report this
// through, so it is polled here; a program that wants the changes as they
// happen subscribes with Context.SubscribeLink (the command does).
func (e *Endpoint) LinkUp() bool {
	c := e.ic.Load()
	return c != nil && !e.closed.Load() && c.Running() && c.LinkState() == iflib.LinkStateUp
}

// MTU implements stack.LinkEndpoint: the IP MTU, read live: the context's
// (Context.MTU, if_mtu, which Context.SetMTU changes), or the smaller one
// asked with Options.MTU or SetMTU. Before the first Bind, the one asked
// or ETHERMTU.
func (e *Endpoint) MTU() uint32 {
	want := e.mtu.Load()
	c := e.ic.Load()
	if c == nil {
		if want == 0 {
			return defaultMTU
		}
		return want
	}
	dev := uint32(max(c.MTU(), 0))
	if want == 0 || want > dev {
		return dev
	}
	return want
}

// SetMTU implements stack.LinkEndpoint (gVisor's Stack.SetNICMTU): on a
// bound endpoint it is SIOCSIFMTU, Context.SetMTU (IFDI_MTU_SET and a
// reinit of a running interface), and the endpoint then uses mtu. If the
// driver refuses (no IFDI_MTU_SET, or beyond its hardware: gVisor's
// SetMTU has no error to return), the device keeps its MTU and MTU
// reports the smaller of the two.
//
// The device is told on another goroutine, after SetMTU returns: gVisor
// calls SetMTU holding its stack lock, and the reinit waits for iflib's
// RX tasks, which may be waiting for that lock inside the stack. MTU
// reports the smaller of the two until the device has the new one; Wait
// waits for the hand-off.
func (e *Endpoint) SetMTU(mtu uint32) {
	e.mtu.Store(mtu)
	e.handOff(func(c *iflib.Context) {
		if want := int(e.mtu.Load()); want != 0 && want != c.MTU() {
			_ = c.SetMTU(want)
		}
	})
}

// handOff runs a control call on the bound context on its own goroutine,
// one at a time, each reading the latest setting when it runs.
func (e *Endpoint) handOff(f func(*iflib.Context)) {
	c := e.ic.Load()
	if c == nil {
		return
	}
	e.ctlWG.Add(1)
	go func() {
		defer e.ctlWG.Done()
		e.ctlMu.Lock()
		defer e.ctlMu.Unlock()
		if e.ic.Load() == c {
			f(c)
		}
	}()
}

// MaxHeaderLength implements stack.LinkEndpoint: an Ethernet header.
func (e *Endpoint) MaxHeaderLength() uint16 { return etherHdrLen }

// LinkAddress implements stack.LinkEndpoint. Before the first Bind
// without Options.MAC it picks the address Bind would.
func (e *Endpoint) LinkAddress() tcpip.LinkAddress {
	if a := e.mac.Load(); a != nil {
		return tcpip.LinkAddress(a[:])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mac.Load() == nil {
		e.setMAC(e.deviceMAC())
	}
	return tcpip.LinkAddress(e.mac.Load()[:])
}

// SetLinkAddress implements stack.LinkEndpoint: the address the endpoint
// writes as the source and accepts unicast frames for. On a bound endpoint
// the device is told too (Context.SetMAC, SIOCSIFLLADDR: its unicast
// filter then passes the new address; a running interface is
// reinitialised), on another goroutine as SetMTU does. Anything but a
// unicast Ethernet address is ignored.
func (e *Endpoint) SetLinkAddress(a tcpip.LinkAddress) {
	if checkMAC(a) == nil {
		e.setMAC(a)
		e.handOff(func(c *iflib.Context) { _ = e.pushMAC(c) })
	}
}

// pushMAC gives the context the endpoint's address when it has another
// (Options.MAC, or a random one for a driver that reported none): a
// device with a unicast filter drops frames to any other address.
func (e *Endpoint) pushMAC(ic *iflib.Context) error {
	var a iflib.EtherAddr
	copy(a[:], e.mac.Load()[:])
	if ic.MAC() == a {
		return nil
	}
	if err := ic.SetMAC(a); err != nil {
		return fmt.Errorf("ifliblink: %s: MAC %v: %w", ic.Name(), a, err)
	}
	return nil
}

func (e *Endpoint) setMAC(a tcpip.LinkAddress) {
	var b [header.EthernetAddressSize]byte
	copy(b[:], a)
	e.mac.Store(&b)
}

// isOurs reports whether a destination address is the endpoint's.
func (e *Endpoint) isOurs(dst []byte) bool {
	a := e.mac.Load()
	return a != nil && [header.EthernetAddressSize]byte(dst) == *a
}

// Capabilities implements stack.LinkEndpoint: address resolution (ARP),
// and TX checksum offload when the device inserts IPv4 TCP and UDP
// checksums. RX checksum offload is never claimed: gVisor reads it per
// NIC, not per packet, and a reassembled fragment inherits it, so the
// endpoint would have to verify every datagram itself (it drops only the
// frames the device found bad).
func (e *Endpoint) Capabilities() stack.LinkEndpointCapabilities {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.caps
}

// GSOMaxSize implements stack.GSOEndpoint.
func (e *Endpoint) GSOMaxSize() uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.tso:
		return e.gsoMax
	case e.opts.NoGSO || e.opts.NoOffload:
		return 0
	default:
		return stack.GVisorGSOMaxSize
	}
}

// SupportedGSO implements stack.GSOEndpoint: host GSO (the device's TSO)
// when the device has TSO, else gVisor's own GSO (segments handed over in
// one WritePackets burst) unless Options.NoGSO or NoOffload.
func (e *Endpoint) SupportedGSO() stack.SupportedGSO {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.tso:
		return stack.HostGSOSupported
	case e.opts.NoGSO || e.opts.NoOffload:
		return stack.GSONotSupported
	default:
		return stack.GVisorGSOSupported
	}
}

// Attach implements stack.LinkEndpoint: the stack's NIC (nil when the NIC
// is removed; Input then frees what arrives, counted in RxNoDispatcher).
// Attaching a NIC again after Close (the endpoint given to CreateNIC
// anew) opens the endpoint again.
func (e *Endpoint) Attach(d stack.NetworkDispatcher) {
	if d == nil {
		e.disp.Store(nil)
		return
	}
	e.disp.Store(&dispatcher{d})
	e.closed.Store(false)
}

// IsAttached implements stack.LinkEndpoint.
func (e *Endpoint) IsAttached() bool { return e.disp.Load() != nil }

// Wait implements stack.LinkEndpoint: it waits for the control calls
// SetMTU and SetLinkAddress handed off. The endpoint starts no other
// goroutine: iflib's tasks call Input, and the stack's goroutines call
// WritePackets.
func (e *Endpoint) Wait() { e.ctlWG.Wait() }

// ARPHardwareType implements stack.LinkEndpoint.
func (e *Endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// AddHeader implements stack.LinkEndpoint: the Ethernet header.
func (e *Endpoint) AddHeader(pkt *stack.PacketBuffer) {
	eth := header.Ethernet(pkt.LinkHeader().Push(etherHdrLen))
	src := pkt.EgressRoute.LocalLinkAddress
	if src == "" {
		src = e.LinkAddress()
	}
	eth.Encode(&header.EthernetFields{
		SrcAddr: src,
		DstAddr: pkt.EgressRoute.RemoteLinkAddress,
		Type:    pkt.NetworkProtocolNumber,
	})
}

// ParseHeader implements stack.LinkEndpoint.
func (e *Endpoint) ParseHeader(pkt *stack.PacketBuffer) bool {
	_, ok := pkt.LinkHeader().Consume(etherHdrLen)
	return ok
}

// Close implements stack.LinkEndpoint: the stack removed the NIC. The
// endpoint sends nothing more; the iflib context stays the caller's (it
// detaches it).
func (e *Endpoint) Close() {
	e.closed.Store(true)
	e.disp.Store(nil)
	e.mu.Lock()
	f := e.onClose
	e.onClose = nil
	e.mu.Unlock()
	if f != nil {
		f()
	}
}

// SetOnCloseAction implements stack.LinkEndpoint.
func (e *Endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onClose = f
}
