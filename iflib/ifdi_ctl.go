package iflib

import (
	"fmt"
	"strings"
)

// The control plane: the types of iflib_if_ioctl's requests and the
// optional IFDI methods (sys/net/ifdi_if.m) that carry them to a driver.
// A driver implements the interfaces below for what its hardware does; the
// stack calls the Context methods (SetMTU, SetFlags, AddMulti, …), which
// validate, call the driver and reinitialise where iflib_if_ioctl does. In
// IFDI_INIT a driver programs everything from the context: MAC, MTU,
// Flags, Multicast, VLANs, CapEnabled, RSS, Media and RxBufSize.

// EtherAddr is struct ether_addr: a 48-bit MAC address.
type EtherAddr [6]byte

// String formats the address as ether_sprintf does ("02:00:00:00:00:01").
func (a EtherAddr) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5])
}

// IsMulticast is ETHER_IS_MULTICAST: the group bit (broadcast included).
func (a EtherAddr) IsMulticast() bool { return a[0]&1 != 0 }

// IsZero reports the all-zeros address (no address).
func (a EtherAddr) IsZero() bool { return a == EtherAddr{} }

// IfFlags are the if_flags bits the control plane carries to a driver
// (IFDI_PROMISC_SET's flags argument). Only the receive-filter flags are
// modelled: IFF_UP and IFF_DRV_RUNNING are Init and Stop.
type IfFlags uint32

const (
	IffPromisc  IfFlags = 0x100 // IFF_PROMISC: receive every frame
	IffAllMulti IfFlags = 0x200 // IFF_ALLMULTI: receive every multicast frame

	iffKnown = IffPromisc | IffAllMulti
)

func (f IfFlags) String() string {
	var s []string
	if f&IffPromisc != 0 {
		s = append(s, "PROMISC")
	}
	if f&IffAllMulti != 0 {
		s = append(s, "ALLMULTI")
	}
	if r := f &^ iffKnown; r != 0 {
		s = append(s, fmt.Sprintf("%#x", uint32(r)))
	}
	return "<" + strings.Join(s, ",") + ">"
}

// Capabilities are IFCAP_* bits (if_capabilities, if_capenable), with
// FreeBSD's values.
type Capabilities uint32

const (
	CapRxCsum        Capabilities = 0x00001  // IFCAP_RXCSUM: verify IPv4/TCP/UDP checksums on receive
	CapTxCsum        Capabilities = 0x00002  // IFCAP_TXCSUM: compute IPv4/TCP/UDP checksums on transmit
	CapVLANMTU       Capabilities = 0x00008  // IFCAP_VLAN_MTU: frames of the MTU plus a VLAN tag
	CapVLANHWTagging Capabilities = 0x00010  // IFCAP_VLAN_HWTAGGING: insert and strip tags in hardware
	CapJumboMTU      Capabilities = 0x00020  // IFCAP_JUMBO_MTU: an MTU above 1500
	CapTSO4          Capabilities = 0x00100  // IFCAP_TSO4: TCP segmentation over IPv4
	CapTSO6          Capabilities = 0x00200  // IFCAP_TSO6: TCP segmentation over IPv6
	CapLRO           Capabilities = 0x00400  // IFCAP_LRO: large receive offload
	CapVLANHWFilter  Capabilities = 0x10000  // IFCAP_VLAN_HWFILTER: filter VLAN tags in hardware
	CapVLANHWTSO     Capabilities = 0x40000  // IFCAP_VLAN_HWTSO: TSO on tagged frames
	CapLinkState     Capabilities = 0x80000  // IFCAP_LINKSTATE: the driver reports link changes
	CapRxCsumIPv6    Capabilities = 0x200000 // IFCAP_RXCSUM_IPV6: verify TCP/UDP over IPv6 on receive
	CapTxCsumIPv6    Capabilities = 0x400000 // IFCAP_TXCSUM_IPV6: compute TCP/UDP over IPv6 on transmit

	capKnown = CapRxCsum | CapTxCsum | CapVLANMTU | CapVLANHWTagging | CapJumboMTU | CapTSO4 | CapTSO6 |
		CapLRO | CapVLANHWFilter | CapVLANHWTSO | CapLinkState | CapRxCsumIPv6 | CapTxCsumIPv6
)

var capNames = []struct {
	c    Capabilities
	name string
}{
	{CapRxCsum, "RXCSUM"}, {CapTxCsum, "TXCSUM"}, {CapVLANMTU, "VLAN_MTU"}, {CapVLANHWTagging, "VLAN_HWTAGGING"},
	{CapJumboMTU, "JUMBO_MTU"}, {CapTSO4, "TSO4"}, {CapTSO6, "TSO6"}, {CapLRO, "LRO"},
	{CapVLANHWFilter, "VLAN_HWFILTER"}, {CapVLANHWTSO, "VLAN_HWTSO"}, {CapLinkState, "LINKSTATE"},
	{CapRxCsumIPv6, "RXCSUM_IPV6"}, {CapTxCsumIPv6, "TXCSUM_IPV6"},
}

// String lists the bits as ifconfig does ("<RXCSUM,TXCSUM,TSO4>").
func (c Capabilities) String() string {
	var s []string
	for _, n := range capNames {
		if c&n.c != 0 {
			s = append(s, n.name)
		}
	}
	if r := c &^ capKnown; r != 0 {
		s = append(s, fmt.Sprintf("%#x", uint32(r)))
	}
	return "<" + strings.Join(s, ",") + ">"
}

// Media is an ifmedia word for Ethernet (IFM_ETHER implied): a subtype
// (MediaSubtypeMask) and option bits. The option bits are FreeBSD's
// (IFM_FDX, IFM_ETH_RXPAUSE, IFM_ETH_TXPAUSE); the subtype numbers are
// goiflib's own (FreeBSD's are spread over IFM_X extensions).
type Media uint32

const (
	MediaAuto    Media = 0  // IFM_AUTO: autoselect
	Media10T     Media = 1  // IFM_10_T: 10baseT/UTP
	Media100TX   Media = 2  // IFM_100_TX: 100baseTX
	Media1000T   Media = 3  // IFM_1000_T: 1000baseT
	Media2500T   Media = 4  // IFM_2500_T: 2500Base-T
	Media10GT    Media = 5  // IFM_10G_T: 10Gbase-T
	Media10GSR   Media = 6  // IFM_10G_SR: 10Gbase-SR
	Media25GSR   Media = 7  // IFM_25G_SR: 25GBase-SR
	Media40GSR4  Media = 8  // IFM_40G_SR4: 40GBase-SR4
	Media100GSR4 Media = 9  // IFM_100G_SR4: 100GBase-SR4
	mediaSubMax  Media = 10 // one past the last subtype

	// MediaSubtypeMask is IFM_TMASK: the subtype bits.
	MediaSubtypeMask Media = 0xff

	MediaRxPause Media = 0x00000200 // IFM_ETH_RXPAUSE: receive PAUSE frames
	MediaTxPause Media = 0x00000400 // IFM_ETH_TXPAUSE: transmit PAUSE frames
	MediaFDX     Media = 0x00100000 // IFM_FDX: full duplex

	mediaOptMask = MediaRxPause | MediaTxPause | MediaFDX
)

var mediaNames = [mediaSubMax]string{
	"autoselect", "10baseT/UTP", "100baseTX", "1000baseT", "2500Base-T", "10Gbase-T",
	"10Gbase-SR", "25GBase-SR", "40GBase-SR4", "100GBase-SR4",
}

var mediaMbps = [mediaSubMax]uint64{0, 10, 100, 1000, 2500, 10000, 10000, 25000, 40000, 100000}

// Subtype is IFM_SUBTYPE: the medium without its options.
func (m Media) Subtype() Media { return m & MediaSubtypeMask }

// Options is IFM_OPTIONS: the option bits.
func (m Media) Options() Media { return m &^ MediaSubtypeMask }

// valid reports a known subtype with known options only.
func (m Media) valid() bool {
	return m.Subtype() < mediaSubMax && m.Options()&^mediaOptMask == 0
}

// Baudrate is ifmedia_baudrate: the medium's bits per second (IF_Mbps),
// 0 for autoselect and unknown subtypes.
func (m Media) Baudrate() uint64 {
	if s := m.Subtype(); s < mediaSubMax {
		return mediaMbps[s] * 1_000_000
	}
	return 0
}

// String formats the medium as ifconfig does ("1000baseT <full-duplex>").
func (m Media) String() string {
	s := fmt.Sprintf("unknown subtype %d", uint32(m.Subtype()))
	if m.Subtype() < mediaSubMax {
		s = mediaNames[m.Subtype()]
	}
	var o []string
	if m&MediaFDX != 0 {
		o = append(o, "full-duplex")
	}
	if m&MediaRxPause != 0 {
		o = append(o, "rxpause")
	}
	if m&MediaTxPause != 0 {
		o = append(o, "txpause")
	}
	if r := m.Options() &^ mediaOptMask; r != 0 {
		o = append(o, fmt.Sprintf("%#x", uint32(r)))
	}
	if len(o) > 0 {
		s += " <" + strings.Join(o, ",") + ">"
	}
	return s
}

// MediaStatus is what IFDI_MEDIA_STATUS reports in struct ifmediareq:
// Valid is IFM_AVALID (the status is known), Active IFM_ACTIVE (the link is
// up), Current ifm_active (the medium in use, autoselect resolved).
type MediaStatus struct {
	Valid, Active bool
	Current       Media
}

// LinkEvent is one link change as iflib_link_state_change reports it
// (if_link_state_change and if_baudrate): Context.SubscribeLink delivers
// them.
type LinkEvent struct {
	State    LinkState
	Baudrate uint64 // bits per second; 0 when unknown or down
}

// RSSKeySize is the Toeplitz hash key's length every RSS device programs
// (RSS_KEYSIZE, 40 bytes).
const RSSKeySize = 40

// RSSHashTypes is a set of RSS_HASHTYPE_* bits (sys/net/rss_config.h):
// the packet kinds the device hashes.
type RSSHashTypes uint32

const (
	RSSHashIPv4    RSSHashTypes = 1 << 1 // RSS_HASHTYPE_RSS_IPV4: source and destination address
	RSSHashTCPIPv4 RSSHashTypes = 1 << 2 // RSS_HASHTYPE_RSS_TCP_IPV4: addresses and ports
	RSSHashIPv6    RSSHashTypes = 1 << 3 // RSS_HASHTYPE_RSS_IPV6
	RSSHashTCPIPv6 RSSHashTypes = 1 << 5 // RSS_HASHTYPE_RSS_TCP_IPV6
	RSSHashUDPIPv4 RSSHashTypes = 1 << 7 // RSS_HASHTYPE_RSS_UDP_IPV4
	RSSHashUDPIPv6 RSSHashTypes = 1 << 9 // RSS_HASHTYPE_RSS_UDP_IPV6

	rssHashKnown = RSSHashIPv4 | RSSHashTCPIPv4 | RSSHashIPv6 | RSSHashTCPIPv6 | RSSHashUDPIPv4 | RSSHashUDPIPv6
)

// RSSConfig is the receive-side-scaling configuration a driver programs in
// IFDI_INIT (rss_getkey, rss_get_indirection_to_bucket and
// rss_gethashconfig in FreeBSD drivers): the Toeplitz key, the
// indirection table (entry i is the RX queue of the hashes whose low bits
// are i; SoftcCtx.RSSTableSize entries) and the hashed packet kinds.
type RSSConfig struct {
	Key   [RSSKeySize]byte
	Table []uint16
	Types RSSHashTypes
}

// RestartEvent is enum if_restart_event: an event after which
// IFDI_NEEDS_RESTART says whether the interface must be reinitialised.
type RestartEvent int

const (
	// RestartVLANConfig is IFLIB_RESTART_VLAN_CONFIG: a VLAN was
	// registered or unregistered.
	RestartVLANConfig RestartEvent = iota
)

// Optional control-plane IFDI methods. iflib calls them with the context
// lock (CTX_LOCK) held, never concurrently with each other or with the
// lifecycle methods; the data path may run meanwhile. The default applies
// when a Device does not implement the interface.
type (
	// MTUSetter is IFDI_MTU_SET: check mtu against the hardware and return
	// the new isc_max_frame_size (the largest frame without a VLAN tag,
	// with the FCS, as SoftcCtx.MaxFrameSize). An error refuses the MTU.
	// iflib then reinitialises the interface if it runs (iflib_if_ioctl's
	// SIOCSIFMTU), choosing the RX buffer size anew. Default: the MTU is
	// refused with ErrNotSupported.
	MTUSetter interface {
		MTUSet(ic *Context, mtu int) (maxFrameSize int, err error)
	}
	// PromiscSetter is IFDI_PROMISC_SET: program IFF_PROMISC and
	// IFF_ALLMULTI from flags. Default: a change is refused with
	// ErrNotSupported.
	PromiscSetter interface {
		PromiscSet(ic *Context, flags IfFlags) error
	}
	// MultiSetter is IFDI_MULTI_SET: program the multicast filter from
	// Context.Multicast (if_foreach_llmaddr). iflib disables interrupts
	// around it (iflib_multi_set). Default: the list is kept for IFDI_INIT
	// and nothing is called.
	MultiSetter interface {
		MultiSet(ic *Context) error
	}
	// VLANRegisterer is IFDI_VLAN_REGISTER / IFDI_VLAN_UNREGISTER
	// (iflib_vlan_register, iflib_vlan_unregister from the vlan_config and
	// vlan_unconfig events): add or remove vtag in the hardware's VLAN
	// filter; Context.VLANs is the registered set. Default: the set is
	// kept and nothing is called.
	VLANRegisterer interface {
		VLANRegister(ic *Context, vtag uint16)
		VLANUnregister(ic *Context, vtag uint16)
	}
	// MediaStatuser is IFDI_MEDIA_STATUS (iflib_media_status). Default:
	// the status is iflib's link state and the current medium.
	MediaStatuser interface {
		MediaStatus(ic *Context) MediaStatus
	}
	// MediaChanger is IFDI_MEDIA_CHANGE (iflib_media_change): program
	// Context.Media. Default: a change is refused with ErrNotSupported.
	MediaChanger interface {
		MediaChange(ic *Context) error
	}
	// LinkIntrEnabler is IFDI_LINK_INTR_ENABLE: re-enable the link (admin)
	// interrupt; iflib calls it at the end of each admin task pass
	// (AdminIntr, resets, the watchdog) while the interface runs, as
	// _task_fn_admin does. Default: nothing.
	LinkIntrEnabler interface {
		LinkIntrEnable(ic *Context)
	}
	// RestartNeeder is IFDI_NEEDS_RESTART: whether ev requires a reinit
	// (iflib_vlan_register reinitialises a running interface when it says
	// true). Default: false (null_needs_restart), so a driver whose
	// hardware filter is programmed only in IFDI_INIT must say true.
	RestartNeeder interface {
		NeedsRestart(ic *Context, ev RestartEvent) bool
	}
)
