package iflib

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/internal/errs"
)

// Sentinel errors. Hot paths return these values; they never build an error
// per call. Each Transmit error says who owns the packet afterwards (see
// Context.Transmit): unless noted, it has been freed and counted.
var (
	// ErrNotRunning is ENETDOWN: the interface is not IFF_DRV_RUNNING
	// (before Init, after Stop, during a reset). Counted in oqdrops.
	ErrNotRunning = errors.New("iflib: interface not running (ENETDOWN)")
	// ErrLinkDown is ENETDOWN because the link is down: the interface runs
	// but the link is not up, either because the carrier is lost (cable,
	// link partner, autonegotiation) or because the driver has not yet
	// reported it. It matches ErrNotRunning with errors.Is. Context.SubscribeLink
	// tells the stack when it comes up. A driver reports its link with
	// Context.LinkStateChange(LinkStateUp, baudrate), usually from
	// IFDI_INIT or IFDI_UPDATE_ADMIN_STATUS. Counted in oqdrops.
	ErrLinkDown error = &netDownError{"iflib: link down (ENETDOWN): no carrier, or the link is not reported up yet " +
		"(a driver reports it with Context.LinkStateChange)"}
	// ErrNoBufs is ENOBUFS: a ring or the descriptors were full and the mode
	// drops. Counted in oqdrops.
	ErrNoBufs = errors.New("iflib: no buffer space (ENOBUFS)")
	// ErrNoMem is ENOMEM: a DMA mapping could not be set up (bounce pages or
	// IOVA space exhausted, defrag could not allocate). Counted in oerrors.
	ErrNoMem = errors.New("iflib: cannot map packet (ENOMEM)")
	// ErrTooBig is a packet larger than the TX tag's maxsize (EINVAL from
	// bus_dmamap_load_mbuf_sg). Counted in oerrors.
	ErrTooBig = errors.New("iflib: packet larger than the DMA tag allows")
	// ErrBadLength is a packet whose Hdr.Len is negative or disagrees with
	// the bytes in its chain (m_pkthdr.len != the sum of m_len), or whose
	// chain is cyclic or longer than MaxChainBufs buffers. Counted in
	// oerrors.
	ErrBadLength = errors.New("iflib: packet header length disagrees with the chain (Hdr.Len != ChainLen)")
	// ErrWrongSpace is a packet whose buffers are not memory of the
	// device's busdma address space (a zone created on another space). It
	// matches busdma.ErrNotInSpace with errors.Is. Counted in oerrors.
	ErrWrongSpace error = &wrongSpaceError{}
	// ErrEmptyPacket is a packet with no bytes. Counted in oerrors.
	ErrEmptyPacket = errors.New("iflib: empty packet")
	// ErrNilPacket is a nil packet; nothing was counted.
	ErrNilPacket = errors.New("iflib: nil packet")
	// ErrForeignPacket is a Packet that no Zone handed out (a Packet
	// literal): iflib cannot free it. Counted in oerrors; the caller keeps it.
	ErrForeignPacket = errors.New("iflib: packet not from a zone (use Zone.Get)")
	// ErrUseAfterFree is a packet used after it was freed: it was passed to
	// Transmit or Free after a Free (a failed Transmit frees the packet).
	// Nothing was counted and the packet was not touched; with the busdma
	// checker on, a report names where it was freed and where it was used.
	// Caught only while the packet is still free: reliably in a zone's
	// debug mode (Zone.SetDebug; the default under -race), which hands
	// freed packets out again last.
	ErrUseAfterFree = errors.New("iflib: packet used after it was freed")
	// ErrNoPackets is an exhausted packet zone (uma_zalloc M_NOWAIT failing).
	ErrNoPackets = errors.New("iflib: packet zone exhausted")
	// ErrState is the class of lifecycle calls made in the wrong state;
	// today that is ErrDetached (anything after Detach began), which
	// matches it with errors.Is.
	ErrState = errors.New("iflib: wrong context state")
	// ErrDetached is any call on a context whose Detach has begun
	// (IFC_IN_DETACH). It matches ErrState with errors.Is.
	ErrDetached = fmt.Errorf("%w: context detached", ErrState)
	// ErrRegistering is Init called from an IFDI method during Register:
	// the context cannot run before Register returns. It matches ErrState
	// with errors.Is.
	ErrRegistering = fmt.Errorf("%w: Register has not returned", ErrState)
	// ErrBusy is Init finding that a transmit from before the last Stop
	// still holds a TX queue after Config.StopTimeout (a driver method or
	// callback that blocks against its contract): the queue cannot be
	// reused until it leaves. Nothing was changed; Init may be called
	// again. It matches ErrState with errors.Is.
	ErrBusy = fmt.Errorf("%w: a transmit still holds a TX queue (EBUSY)", ErrState)
	// ErrReentrant is a control call (SetMTU, AddMulti, …) made from one
	// of the context's own goroutines that does not hold the context lock
	// (the input callback, RxFilter, a TxRx method, IFDI_TIMER): it would
	// wait for a lock whose holder may be waiting for that goroutine.
	// Nothing was changed. It matches ErrState with errors.Is.
	ErrReentrant = fmt.Errorf("%w: control call from the context's own task goroutine", ErrState)
	// ErrDeferred is returned by Stop or Detach called from one of the
	// context's own goroutines (the input callback, RxFilter, a TxRx or
	// IFDI method): they cannot wait for themselves, so the request was
	// handed to the admin task, which carries it out as soon as the caller
	// returns. Context.Detached is closed when a deferred Detach finishes.
	// Detach also returns it when a transmit still holds a TX queue after
	// StopTimeout (the admin task finishes when it leaves), and Detach
	// from an IFDI method during Register (Register then fails).
	ErrDeferred = errors.New("iflib: lifecycle call handed to the admin task")
	// ErrZoneClosed is Zone.Get, Zone.GetWait or ZoneCache.Get on a zone
	// that Close released (its memory is back in the address space); a
	// GetWait blocked when the zone closes returns it too.
	ErrZoneClosed = errors.New("iflib: zone closed")
	// ErrBadHeader is ENXIO from iflib_parse_header: a packet that asks for
	// a checksum offload, TSO or a VLAN tag whose headers iflib cannot
	// parse (too short, TSO on a packet that is not TCP of the IP version
	// asked, a TCP header under 20 bytes, TSO with a zero segment size).
	// The packet was freed and counted in oerrors.
	ErrBadHeader = errors.New("iflib: cannot parse packet headers for offload (ENXIO)")
	// ErrTSONoPayload is a TSO packet (CSUM_IP_TSO or CSUM_IP6_TSO) with
	// nothing after its TCP header: no segment to cut. FreeBSD's
	// iflib_parse_header accepts it and the device then drops it whole;
	// iflib refuses it here, as a kind of ErrBadHeader (errors.Is matches
	// both), freed and counted in oerrors.
	ErrTSONoPayload = fmt.Errorf("%w: TSO packet without TCP payload", ErrBadHeader)
	// ErrBadDriverIndex is a TxdEncap that reported an impossible new
	// producer index (outside the ring, or more descriptors than nsegs plus
	// the pad). The packet was freed and counted in oerrors.
	ErrBadDriverIndex = errors.New("iflib: TxdEncap reported an impossible ipi_new_pidx")
	// ErrOffloadDisabled is a packet asking for a TX offload (a checksum,
	// TSO, a VLAN tag to insert) that is not enabled (Context.CapEnabled,
	// SIOCSIFCAP): the stack must do the work itself. The packet was freed
	// and counted in oerrors.
	ErrOffloadDisabled = errors.New("iflib: packet asks for a TX offload that is not enabled (if_capenable)")
	// ErrNoQueue is a queue index out of range.
	ErrNoQueue = errors.New("iflib: no such queue")
	// ErrLeak is Detach (or Zone.Close) finding packets still held outside
	// their zone, or DMA maps still loaded. See LeakError.
	ErrLeak = errors.New("iflib: resources still in use at teardown")
)

type netDownError struct{ msg string }

func (e *netDownError) Error() string        { return e.msg }
func (e *netDownError) Is(target error) bool { return target == ErrNotRunning }

type wrongSpaceError struct{}

func (*wrongSpaceError) Error() string {
	return "iflib: packet memory is not in the device's address space (create the zone on Attachment.Bus.Space())"
}
func (*wrongSpaceError) Is(target error) bool { return target == busdma.ErrNotInSpace }

func errBadQueue(qid, n int) error {
	return fmt.Errorf("%w: queue %d of %d", ErrNoQueue, qid, n)
}

// LeakError reports what a teardown found still in use: packets held
// outside their zone (by the stack, or lost) and DMA maps still loaded.
// It matches ErrLeak with errors.Is. The memory of a zone with packets
// out is not returned to its space while they are out, so that those
// packets stay valid; an RX zone that Detach left returns it when the last
// packet comes back.
type LeakError struct {
	Zones []ZoneLeak // zones with packets out
	Maps  int        // iflib's DMA maps still loaded
}

// ZoneLeak is one zone's missing packets.
type ZoneLeak struct {
	Zone        string
	Outstanding int // packets not back in the zone
	Size        int
}

func (e *LeakError) Error() string {
	s := "iflib: leak at teardown:"
	for _, z := range e.Zones {
		s += fmt.Sprintf(" zone %s has %d of %d packets out;", z.Zone, z.Outstanding, z.Size)
	}
	if e.Maps > 0 {
		s += fmt.Sprintf(" %d DMA maps still loaded;", e.Maps)
	}
	return s[:len(s)-1]
}

// Is makes errors.Is(err, ErrLeak) true.
func (e *LeakError) Is(target error) bool { return target == ErrLeak }

// ConfigError is the one error type for an invalid argument or
// configuration across goiflib's packages (busdma.ConfigError,
// bufring.ConfigError, mpring.ConfigError and cpumap.ConfigError are the
// same type). iflib's name an invalid attach parameter (the checks of
// _iflib_assert, _iflib_pre_assert and iflib_reset_qvalues) or a control
// call's argument, with Pkg "iflib". It matches ErrInvalid with errors.Is,
// and Err (the cause from another package, such as cpumap's
// ErrCoreOffset or a busdma tag error) through Unwrap.
type ConfigError = errs.ConfigError

// ErrInvalid is EINVAL, matched by every *ConfigError of every goiflib
// package: busdma.ErrInvalid, bufring.ErrInvalid, mpring.ErrInvalid and
// cpumap.ErrInvalid are this value.
var ErrInvalid = errs.ErrInvalid

// ErrConfig is ErrInvalid under its older iflib name (the same value).
var ErrConfig = errs.ErrInvalid

func cfgErr(field string, v any, reason string) error {
	return &ConfigError{Pkg: "iflib", Field: field, Value: v, Reason: reason}
}

// IFDIError is a driver's IFDI method failing: Register (IFDI_ATTACH_PRE,
// the queue allocations and setups, IFDI_ATTACH_POST), Init (IFDI_INIT)
// and Detach (IFDI_DETACH) return the driver's error wrapped in one, so a
// caller can tell it from iflib's own (errors.As) and still match the
// driver's error (errors.Is, Unwrap).
type IFDIError struct {
	Interface string // the context's name
	Method    string // IFDI_ATTACH_PRE, IFDI_INIT, …
	Err       error  // the driver's error
}

func (e *IFDIError) Error() string {
	return "iflib: " + e.Interface + ": " + e.Method + ": " + e.Err.Error()
}

// Unwrap returns the driver's error.
func (e *IFDIError) Unwrap() error { return e.Err }

func (c *Context) ifdiErr(method string, err error) error {
	return &IFDIError{Interface: c.name, Method: method, Err: err}
}
