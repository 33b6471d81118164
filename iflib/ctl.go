package iflib

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ctlState is the ifnet's configuration as the stack set it (if_lladdr,
// if_mtu, if_flags, if_multiaddrs, the vlan trunk's tags, if_capenable,
// the ifmedia list and the RSS configuration). IFDI methods read it with
// CTX_LOCK held, so it has its own lock; the control calls change it with
// both held, so that a driver sees a consistent configuration for the
// whole of an IFDI call.
type ctlState struct {
	mu    sync.Mutex
	mac   EtherAddr
	flags IfFlags
	multi []EtherAddr // if_multiaddrs, in the order added
	vlans []uint16    // registered tags, sorted
	media []Media     // ifm_list, in the order added
	cur   Media       // ifm_cur: the medium selected
	rss   RSSConfig

	mtu       atomic.Int64  // if_mtu
	capEnable atomic.Uint32 // if_capenable (read by Transmit)

	subMu   sync.Mutex
	subs    map[uint64]func(LinkEvent)
	nextSub uint64
	// linkMu guards the queue of link events not yet delivered and the
	// notifier that delivers them, one at a time and in order.
	linkMu    sync.Mutex
	pending   []LinkEvent
	notifying bool   // a notifier goroutine runs
	notifier  uint64 // its goroutine id
	linkDone  bool   // Detach finished delivering: no more events
}

// Ethernet framing the MTU excludes (ETHER_HDR_LEN, ETHER_CRC_LEN).
const (
	etherHdrLen = 14
	etherCRCLen = 4
	// MinMTU is the smallest MTU SetMTU accepts (IPv4's 68-byte minimum,
	// RFC 791).
	MinMTU = 68
)

// initCtl fills the control state from the softc context after
// IFDI_ATTACH_PRE: the MTU the driver's isc_max_frame_size allows, the
// enabled capabilities, a default RSS table spreading over the RX queues.
func (c *Context) initCtl() {
	cs := &c.ctl
	cs.mtu.Store(int64(c.sc.MaxFrameSize - etherHdrLen - etherCRCLen))
	cs.capEnable.Store(uint32(c.sc.CapEnable))
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.rss.Table == nil {
		cs.rss = defaultRSS(c.sc.RSSTableSize, c.sc.NRxQSets)
	}
}

// defaultRSS is the configuration a stack that sets none gets: FreeBSD's
// default key (rss_key_default, the Microsoft verification key), the
// table spreading the entries over the RX queues round robin
// (rss_get_indirection_to_bucket), and every hash type.
func defaultRSS(size, nrxq int) RSSConfig {
	r := RSSConfig{Key: defaultRSSKey, Table: make([]uint16, size), Types: rssHashKnown}
	for i := range r.Table {
		r.Table[i] = uint16(i % max(nrxq, 1))
	}
	return r
}

// defaultRSSKey is the Toeplitz key of the Microsoft RSS verification
// suite, FreeBSD's rss_key default.
var defaultRSSKey = [RSSKeySize]byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

// ctlCall runs a control call as iflib_if_ioctl does, with CTX_LOCK held.
// fn gets reentrant=true when the caller already holds the lock (an IFDI
// method calling back, such as iflib_set_mac from IFDI_ATTACH_PRE): it
// must then not stop the interface itself and hands a reinit to the admin
// task. From the context's other goroutines (the input callback, RxFilter,
// the TxRx methods) a control call would wait for a lock whose holder may
// wait for them: it is refused with ErrReentrant.
func (c *Context) ctlCall(fn func(reentrant bool) error) error {
	if c.st() >= stateDetaching {
		return ErrDetached
	}
	id := goid()
	if c.lockOwner.Load() == id {
		return fn(true)
	}
	if c.own.has(id) {
		return ErrReentrant
	}
	c.lock()
	defer c.unlock()
	if c.st() >= stateDetaching {
		return ErrDetached
	}
	return fn(false)
}

// reinitLocked is iflib_if_init_locked after a configuration change: stop
// and init again if the interface runs (else the next Init programs the
// change). A reentrant caller cannot stop the interface it runs in: the
// reinit is handed to the admin task.
// Preconditions: CTX_LOCK held.
func (c *Context) reinitLocked(reentrant bool) error {
	if c.st() != stateRunning {
		return nil
	}
	if reentrant {
		c.admin.request(adminReset)
		return nil
	}
	c.stopLocked()
	return c.initLocked()
}

// MAC returns the interface's link-level address (IF_LLADDR).
func (c *Context) MAC() EtherAddr {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return c.ctl.mac
}

// SetMAC sets the link-level address. From IFDI_ATTACH_PRE it is
// iflib_set_mac: the driver reports the address its EEPROM holds. Later it
// is SIOCSIFLLADDR: a running interface is reinitialised so that IFDI_INIT
// programs the new address (as if_setlladdr's ifhwioctl does with
// IFF_UP). A multicast or all-zeros address is a *ConfigError (EINVAL).
func (c *Context) SetMAC(a EtherAddr) error {
	if a.IsMulticast() || a.IsZero() {
		return &ConfigError{Field: "MAC", Value: a, Reason: "not a unicast address"}
	}
	return c.ctlCall(func(reentrant bool) error {
		c.ctl.mu.Lock()
		same := c.ctl.mac == a
		c.ctl.mac = a
		c.ctl.mu.Unlock()
		if same {
			return nil
		}
		return c.reinitLocked(reentrant)
	})
}

// MTU returns if_mtu: the largest IP packet, the frame without its
// Ethernet header and FCS (SoftcCtx.MaxFrameSize − 18 at attach).
func (c *Context) MTU() int { return int(c.ctl.mtu.Load()) }

// Flags returns the receive-filter flags (IFF_PROMISC, IFF_ALLMULTI).
func (c *Context) Flags() IfFlags {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return c.ctl.flags
}

// Multicast returns a copy of the multicast list (if_multiaddrs, what
// if_foreach_llmaddr walks) in the order the addresses were added.
func (c *Context) Multicast() []EtherAddr {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return slices.Clone(c.ctl.multi)
}

// VLANs returns the registered VLAN tags, sorted.
func (c *Context) VLANs() []uint16 {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return slices.Clone(c.ctl.vlans)
}

// Capabilities returns if_capabilities: what the device offers
// (SoftcCtx.Capabilities).
func (c *Context) Capabilities() Capabilities { return c.sc.Capabilities }

// CapEnabled returns if_capenable: the capabilities enabled.
func (c *Context) CapEnabled() Capabilities { return Capabilities(c.ctl.capEnable.Load()) }

// MediaAdd is ifmedia_add: the driver lists a medium it supports, from
// IFDI_ATTACH_PRE or IFDI_ATTACH_POST. Adding a medium twice, or one with
// an unknown subtype or option, does nothing.
func (c *Context) MediaAdd(m Media) {
	if !m.valid() {
		return
	}
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	if !slices.Contains(c.ctl.media, m) {
		c.ctl.media = append(c.ctl.media, m)
	}
}

// MediaSetDefault is ifmedia_set: the medium selected at attach (usually
// MediaAuto). It must be in the list (MediaAdd); otherwise it is added.
func (c *Context) MediaSetDefault(m Media) {
	if !m.valid() {
		return
	}
	c.MediaAdd(m)
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	c.ctl.cur = m
}

// Media returns ifm_cur: the medium selected (MediaAuto for autoselect).
func (c *Context) Media() Media {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return c.ctl.cur
}

// MediaStatus is SIOCGIFMEDIA (iflib_media_status): IFDI_MEDIA_STATUS
// with the context lock held. A driver without the method reports iflib's
// view: valid, active while the link is up, the medium selected (with
// the link's speed resolved from autoselect when it matches a listed
// medium). After Detach began it returns ErrDetached.
func (c *Context) MediaStatus() (MediaStatus, error) {
	var ms MediaStatus
	err := c.ctlCall(func(bool) error {
		if s, ok := c.dev.(MediaStatuser); ok {
			ms = s.MediaStatus(c)
			return nil
		}
		ms = MediaStatus{Valid: true, Active: c.LinkState() == LinkStateUp, Current: c.Media()}
		if ms.Active && ms.Current.Subtype() == MediaAuto {
			for _, m := range c.MediaList() {
				if m.Subtype() != MediaAuto && m.Baudrate() == c.baudrate.Load() {
					ms.Current = m
					break
				}
			}
		}
		return nil
	})
	return ms, err
}

// MediaList returns a copy of the media the driver listed (ifm_list).
func (c *Context) MediaList() []Media {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return slices.Clone(c.ctl.media)
}

// RSS returns a copy of the RSS configuration.
func (c *Context) RSS() RSSConfig {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	r := c.ctl.rss
	r.Table = slices.Clone(r.Table)
	return r
}

// RequestReset is iflib_request_reset: the driver asks for a reset (stop
// and init, iflib_if_init_locked) of a running interface, for example
// after a fatal error interrupt or a configuration its hardware applies
// only at init. It may be called from anywhere, the driver's own methods
// included: the admin task carries it out once the caller returns, and
// the interface runs again afterwards (unless IFDI_INIT fails). A stopped
// interface is left alone: its next Init programs the device anyway.
func (c *Context) RequestReset() {
	c.admin.request(adminReset)
}

func (c *Context) ctlSysctl(root *Node) {
	root.leaf("mtu", "interface MTU (if_mtu)", func() any { return c.MTU() })
	root.leaf("mac", "link-level address", func() any { return c.MAC().String() })
	root.leaf("flags", "receive filter flags (IFF_PROMISC, IFF_ALLMULTI)", func() any { return c.Flags().String() })
	root.leaf("multicast", "multicast addresses", func() any { return fmt.Sprint(c.Multicast()) })
	root.leaf("vlans", "registered VLAN tags", func() any { return fmt.Sprint(c.VLANs()) })
	root.leaf("capabilities", "capabilities offered (if_capabilities)", func() any { return c.Capabilities().String() })
	root.leaf("capenable", "capabilities enabled (if_capenable)", func() any { return c.CapEnabled().String() })
	root.leaf("media", "selected medium (ifm_cur)", func() any { return c.Media().String() })
	root.leaf("media_list", "supported media (ifm_list)", func() any { return fmt.Sprint(c.MediaList()) })
	root.leaf("link_state", "link state", func() any { return c.LinkState().String() })
	root.leaf("baudrate", "link speed in bit/s (if_baudrate)", func() any { return c.baudrate.Load() })
	root.leaf("rss_hash_types", "RSS hashed packet kinds (RSS_HASHTYPE_*)", func() any { return uint32(c.RSS().Types) })
	root.leaf("rss_table", "RSS indirection table", func() any { return fmt.Sprint(c.RSS().Table) })
}

// SubscribeLink registers fn to be called on every link change the driver
// reports (iflib_link_state_change, which calls if_link_state_change):
// the new state and speed. Calls come one at a time, in the order of the
// changes, from a goroutine of iflib's that holds no lock: fn may call any
// Context method (Detach included). fn should return promptly: later
// events wait for it. cancel stops further calls (a call in progress
// finishes); Detach delivers the events reported before it and then ends
// every subscription.
func (c *Context) SubscribeLink(fn func(LinkEvent)) (cancel func()) {
	cs := &c.ctl
	if fn == nil {
		return func() {}
	}
	cs.subMu.Lock()
	defer cs.subMu.Unlock()
	if cs.subs == nil {
		cs.subs = make(map[uint64]func(LinkEvent))
	}
	id := cs.nextSub
	cs.nextSub++
	cs.subs[id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			cs.subMu.Lock()
			delete(cs.subs, id)
			cs.subMu.Unlock()
		})
	}
}

// notifyLink queues ev for the subscribers and starts the notifier if
// none runs.
func (c *Context) notifyLink(ev LinkEvent) {
	cs := &c.ctl
	cs.linkMu.Lock()
	defer cs.linkMu.Unlock()
	if cs.linkDone {
		return
	}
	cs.pending = append(cs.pending, ev)
	if !cs.notifying {
		cs.notifying = true
		go c.deliverLink()
	}
}

// deliverLink is the notifier: it calls the subscribers for each queued
// event and ends when the queue is empty.
func (c *Context) deliverLink() {
	cs := &c.ctl
	cs.linkMu.Lock()
	cs.notifier = goid()
	for len(cs.pending) > 0 {
		ev := cs.pending[0]
		cs.pending = cs.pending[1:]
		cs.linkMu.Unlock()
		cs.subMu.Lock()
		ids := make([]uint64, 0, len(cs.subs))
		for id := range cs.subs {
			ids = append(ids, id)
		}
		cs.subMu.Unlock()
		slices.Sort(ids) // in the order of subscription
		for _, id := range ids {
			cs.subMu.Lock()
			fn := cs.subs[id]
			cs.subMu.Unlock()
			if fn != nil {
				fn(ev)
			}
		}
		cs.linkMu.Lock()
	}
	cs.notifying, cs.notifier = false, 0
	cs.linkMu.Unlock()
}

// endLinkEvents is Detach's end of the subscriptions: it waits until the
// events reported so far are delivered (unless Detach runs in a
// subscriber) and refuses later ones.
// Preconditions: CTX_LOCK not held by the caller when it waits (a
// subscriber may be waiting for it).
func (c *Context) endLinkEvents() {
	cs := &c.ctl
	id := goid()
	for {
		cs.linkMu.Lock()
		if !cs.notifying || cs.notifier == id {
			cs.linkDone = true
			cs.pending = nil
			cs.linkMu.Unlock()
			return
		}
		cs.linkMu.Unlock()
		time.Sleep(50 * time.Microsecond)
	}
}
