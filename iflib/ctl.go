package iflib

import (
	"errors"
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
	capEnable atomic.Uint32 // if_capenable
	hwassist  atomic.Uint32 // if_hwassist: the CsumFlags Transmit passes on

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
	if c.sc.Capabilities == 0 {
		// A driver that declares no capabilities gets every offload iflib
		// passes on, enabled: the behaviour before the control plane.
		c.sc.Capabilities = CapRxCsum | CapTxCsum | CapRxCsumIPv6 | CapTxCsumIPv6 | CapVLANHWTagging | CapVLANMTU | CapLinkState
		if c.shared.TSOMaxSize > 0 && c.sc.TxTSOSegmentsMax > 0 {
			c.sc.Capabilities |= CapTSO4 | CapTSO6
		}
		if c.sc.MaxFrameSize > 1518 {
			c.sc.Capabilities |= CapJumboMTU
		}
		c.sc.CapEnable = c.sc.Capabilities
	}
	c.setCapEnable(c.sc.CapEnable)
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
	return c.restartLocked()
}

// restartLocked is the init half of a control call's reinit, after
// stopLocked. If a transmit still holds a TX queue, the caller may be that
// transmit (a control call from TxdEncap or TxdFlush on a sender's
// goroutine, which iflib cannot tell from any other goroutine without
// paying for it on every packet): waiting for it would wait for ever, or
// fail with ErrBusy and leave the interface stopped. The init is handed to
// the admin task instead, which runs it once the transmit has left,
// unless a Stop or Detach comes first.
// Preconditions: CTX_LOCK held, the context stopped by the control call.
func (c *Context) restartLocked() error {
	if c.teardowns.pending() {
		c.pendingInit.Store(true)
		c.admin.request(adminInit)
		return nil
	}
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
		return &ConfigError{Pkg: "iflib", Field: "MAC", Value: a, Reason: "not a unicast address"}
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

// SetFlags is SIOCSIFFLAGS for the receive-filter flags (iflib_if_ioctl):
// on a running interface a change of IFF_PROMISC or IFF_ALLMULTI is
// IFDI_PROMISC_SET; on a stopped one the flags are kept for IFDI_INIT. A
// bit other than IffPromisc and IffAllMulti is a *ConfigError; a driver
// without IFDI_PROMISC_SET refuses any change (ErrNotSupported); a
// driver's error is an *IFDIError and the flags stay as they were.
func (c *Context) SetFlags(f IfFlags) error {
	if f&^iffKnown != 0 {
		return &ConfigError{Pkg: "iflib", Field: "Flags", Value: f, Reason: "only IffPromisc and IffAllMulti are modelled"}
	}
	return c.ctlCall(func(bool) error {
		old := c.Flags()
		if old == f {
			return nil
		}
		ps, ok := c.dev.(PromiscSetter)
		if !ok {
			return fmt.Errorf("iflib: %s: SetFlags %v: the driver has no IFDI_PROMISC_SET: %w", c.name, f, ErrNotSupported)
		}
		c.ctl.mu.Lock()
		c.ctl.flags = f
		c.ctl.mu.Unlock()
		if c.st() != stateRunning {
			return nil
		}
		if err := ps.PromiscSet(c, f); err != nil {
			c.ctl.mu.Lock()
			c.ctl.flags = old
			c.ctl.mu.Unlock()
			return c.ifdiErr("IFDI_PROMISC_SET", err)
		}
		return nil
	})
}

// AddMulti is SIOCADDMULTI (if_addmulti, then iflib_multi_set): a multicast
// address joins the list and, on a running interface, IFDI_MULTI_SET
// programs it with the interrupts disabled around it. Adding an address
// already listed does nothing (FreeBSD counts references; the stack above
// keeps its own). A unicast address is a *ConfigError; a driver's error an
// *IFDIError, and the list stays as it was.
func (c *Context) AddMulti(a EtherAddr) error {
	if !a.IsMulticast() {
		return &ConfigError{Pkg: "iflib", Field: "Multicast", Value: a, Reason: "not a multicast address"}
	}
	return c.ctlCall(func(bool) error {
		c.ctl.mu.Lock()
		if slices.Contains(c.ctl.multi, a) {
			c.ctl.mu.Unlock()
			return nil
		}
		c.ctl.multi = append(c.ctl.multi, a)
		c.ctl.mu.Unlock()
		if err := c.multiSetLocked(); err != nil {
			c.ctl.mu.Lock()
			c.ctl.multi = slices.DeleteFunc(c.ctl.multi, func(b EtherAddr) bool { return b == a })
			c.ctl.mu.Unlock()
			return err
		}
		return nil
	})
}

// DelMulti is SIOCDELMULTI: the address leaves the list and a running
// interface is reprogrammed as AddMulti does. An address not in the list
// is a *ConfigError (ENOENT).
func (c *Context) DelMulti(a EtherAddr) error {
	return c.ctlCall(func(bool) error {
		c.ctl.mu.Lock()
		i := slices.Index(c.ctl.multi, a)
		if i < 0 {
			c.ctl.mu.Unlock()
			return &ConfigError{Pkg: "iflib", Field: "Multicast", Value: a, Reason: "not in the list (ENOENT)"}
		}
		c.ctl.multi = slices.Delete(c.ctl.multi, i, i+1)
		c.ctl.mu.Unlock()
		if err := c.multiSetLocked(); err != nil {
			c.ctl.mu.Lock()
			c.ctl.multi = slices.Insert(c.ctl.multi, min(i, len(c.ctl.multi)), a)
			c.ctl.mu.Unlock()
			return err
		}
		return nil
	})
}

// multiSetLocked is iflib_multi_set's part of iflib_if_ioctl: on a running
// interface, IFDI_INTR_DISABLE, IFDI_MULTI_SET, IFDI_INTR_ENABLE.
// Preconditions: CTX_LOCK held.
func (c *Context) multiSetLocked() error {
	ms, ok := c.dev.(MultiSetter)
	if !ok || c.st() != stateRunning {
		return nil
	}
	c.dev.IntrDisable(c)
	err := ms.MultiSet(c)
	c.dev.IntrEnable(c)
	if err != nil {
		return c.ifdiErr("IFDI_MULTI_SET", err)
	}
	return nil
}

// MaxVLANTag is the largest VLAN id (EVL_VLID_MASK); 0 is not a VLAN.
const MaxVLANTag = 4095

// RegisterVLAN is iflib_vlan_register (the vlan_config event): vtag joins
// the registered set, IFDI_VLAN_REGISTER tells the driver, and a running
// interface is reinitialised when IFDI_NEEDS_RESTART asks for it. A tag
// outside 1..4095 is a *ConfigError (FreeBSD ignores it silently);
// registering a tag twice does nothing.
func (c *Context) RegisterVLAN(vtag uint16) error {
	if vtag == 0 || vtag > MaxVLANTag {
		return &ConfigError{Pkg: "iflib", Field: "VLAN", Value: vtag, Reason: fmt.Sprintf("must be 1..%d", MaxVLANTag)}
	}
	return c.ctlCall(func(reentrant bool) error {
		c.ctl.mu.Lock()
		i, found := slices.BinarySearch(c.ctl.vlans, vtag)
		if !found {
			c.ctl.vlans = slices.Insert(c.ctl.vlans, i, vtag)
		}
		c.ctl.mu.Unlock()
		if found {
			return nil
		}
		if vr, ok := c.dev.(VLANRegisterer); ok {
			vr.VLANRegister(c, vtag)
		}
		return c.vlanRestartLocked(reentrant)
	})
}

// UnregisterVLAN is iflib_vlan_unregister (vlan_unconfig): the reverse of
// RegisterVLAN. A tag not registered is a *ConfigError (ENOENT).
func (c *Context) UnregisterVLAN(vtag uint16) error {
	return c.ctlCall(func(reentrant bool) error {
		c.ctl.mu.Lock()
		i, found := slices.BinarySearch(c.ctl.vlans, vtag)
		if found {
			c.ctl.vlans = slices.Delete(c.ctl.vlans, i, i+1)
		}
		c.ctl.mu.Unlock()
		if !found {
			return &ConfigError{Pkg: "iflib", Field: "VLAN", Value: vtag, Reason: "not registered (ENOENT)"}
		}
		if vr, ok := c.dev.(VLANRegisterer); ok {
			vr.VLANUnregister(c, vtag)
		}
		return c.vlanRestartLocked(reentrant)
	})
}

// vlanRestartLocked is IFDI_NEEDS_RESTART(IFLIB_RESTART_VLAN_CONFIG) and
// the reinit it asks for. FreeBSD calls iflib_if_init_locked whatever the
// state, starting a stopped interface; here a stopped one stays stopped
// (its next Init programs the VLANs anyway).
func (c *Context) vlanRestartLocked(reentrant bool) error {
	rn, ok := c.dev.(RestartNeeder)
	if !ok || !rn.NeedsRestart(c, RestartVLANConfig) {
		return nil
	}
	return c.reinitLocked(reentrant)
}

// SetMedia is SIOCSIFMEDIA (ifmedia_ioctl, then iflib_media_change): the
// medium is selected and IFDI_MEDIA_CHANGE programs it. A medium not in
// the list (MediaAdd) is a *ConfigError (ENXIO); a driver without
// IFDI_MEDIA_CHANGE refuses (ErrNotSupported); a driver's error is an
// *IFDIError and the previous medium stays selected (ifmedia_ioctl
// restores ifm_cur).
func (c *Context) SetMedia(m Media) error {
	return c.ctlCall(func(bool) error {
		c.ctl.mu.Lock()
		listed := slices.Contains(c.ctl.media, m)
		old := c.ctl.cur
		c.ctl.mu.Unlock()
		if !listed {
			return &ConfigError{Pkg: "iflib", Field: "Media", Value: m, Reason: "not in the driver's media list (ENXIO)"}
		}
		mc, ok := c.dev.(MediaChanger)
		if !ok {
			return fmt.Errorf("iflib: %s: SetMedia %v: the driver has no IFDI_MEDIA_CHANGE: %w", c.name, m, ErrNotSupported)
		}
		c.ctl.mu.Lock()
		c.ctl.cur = m
		c.ctl.mu.Unlock()
		if err := mc.MediaChange(c); err != nil {
			c.ctl.mu.Lock()
			c.ctl.cur = old
			c.ctl.mu.Unlock()
			return c.ifdiErr("IFDI_MEDIA_CHANGE", err)
		}
		return nil
	})
}

// SetRSS sets the RSS key, indirection table and hashed packet kinds
// (goiflib: FreeBSD sets them system-wide at boot, rss_config) and
// reinitialises a running interface so that IFDI_INIT programs them. A
// table whose length is not SoftcCtx.RSSTableSize, an entry naming no RX
// queue, or an unknown hash type is a *ConfigError. The config is copied.
func (c *Context) SetRSS(r RSSConfig) error {
	if len(r.Table) != c.sc.RSSTableSize {
		return &ConfigError{Pkg: "iflib", Field: "RSS.Table", Value: len(r.Table), Reason: fmt.Sprintf("must have RSSTableSize = %d entries", c.sc.RSSTableSize)}
	}
	for i, q := range r.Table {
		if int(q) >= c.sc.NRxQSets {
			return &ConfigError{Pkg: "iflib", Field: fmt.Sprintf("RSS.Table[%d]", i), Value: q, Reason: fmt.Sprintf("no such RX queue (%d queues)", c.sc.NRxQSets)}
		}
	}
	if r.Types&^rssHashKnown != 0 {
		return &ConfigError{Pkg: "iflib", Field: "RSS.Types", Value: r.Types, Reason: "unknown RSS_HASHTYPE bits"}
	}
	r.Table = slices.Clone(r.Table)
	return c.ctlCall(func(reentrant bool) error {
		c.ctl.mu.Lock()
		c.ctl.rss = r
		c.ctl.mu.Unlock()
		return c.reinitLocked(reentrant)
	})
}

// capReinit are the capabilities whose change stops and reinitialises a
// running interface (iflib_if_ioctl's SIOCSIFCAP: IFCAP_FLAGS, the
// offloads a driver programs in IFDI_INIT). IFCAP_LINKSTATE needs none.
const capReinit = capKnown &^ CapLinkState

// SetCapEnable is SIOCSIFCAP: caps becomes the enabled set. A capability
// the device does not offer is a *ConfigError (ifhwioctl's EINVAL). If a
// capability of the reinit set changes on a running interface, iflib
// stops it, toggles the set and inits it again (iflib_if_ioctl), so the
// driver programs its offloads in IFDI_INIT from CapEnabled. From then on
// Transmit refuses packets asking for a TX offload that is not enabled
// (ErrOffloadDisabled), and RX checksum results are withheld from packets
// of an IP version whose RX checksum is disabled.
func (c *Context) SetCapEnable(caps Capabilities) error {
	if caps&^c.sc.Capabilities != 0 {
		return &ConfigError{Pkg: "iflib", Field: "CapEnable", Value: caps, Reason: fmt.Sprintf("%v not offered by the device (Capabilities %v)",
			caps&^c.sc.Capabilities, c.sc.Capabilities)}
	}
	return c.ctlCall(func(reentrant bool) error {
		mask := caps ^ c.CapEnabled()
		if mask == 0 {
			return nil
		}
		running := c.st() == stateRunning && mask&capReinit != 0
		if running && reentrant {
			return ErrReentrant
		}
		if running {
			c.stopLocked()
		}
		c.setCapEnable(caps)
		if running {
			return c.restartLocked()
		}
		return nil
	})
}

// setCapEnable stores if_capenable and the TX offloads it allows
// (if_hwassist).
func (c *Context) setCapEnable(caps Capabilities) {
	c.ctl.capEnable.Store(uint32(caps))
	var hw CsumFlags
	if caps&CapTxCsum != 0 {
		hw |= CsumIP | CsumIPUDP | CsumIPTCP
	}
	if caps&CapTxCsumIPv6 != 0 {
		hw |= CsumIP6UDP | CsumIP6TCP
	}
	if caps&CapTSO4 != 0 {
		hw |= CsumIPTSO
	}
	if caps&CapTSO6 != 0 {
		hw |= CsumIP6TSO
	}
	if c.sc.TxCsumFlags != 0 {
		hw &= c.sc.TxCsumFlags | CsumTSO
	}
	c.ctl.hwassist.Store(uint32(hw))
}

// MaxMTU is the largest MTU iflib can receive: a frame with a VLAN tag
// spread over IFLIB_MAX_RX_SEGS clusters of MJUMPAGESIZE. A driver's
// IFDI_MTU_SET refuses what its hardware cannot do.
const MaxMTU = MaxRxSegs*MJumPageSize - etherVLANEncapLen - etherHdrLen - etherCRCLen

// SetMTU is SIOCSIFMTU (iflib_if_ioctl): validate mtu (MinMTU..MaxMTU,
// else a *ConfigError), stop the interface if it runs (every packet in
// flight is sent, counted as dropped or handed back as Stop documents;
// Transmit meanwhile returns ErrNotRunning), IFDI_MTU_SET (which returns
// the new isc_max_frame_size), re-choose the RX cluster size of each free
// list whose SoftcCtx.RxdBufSize is 0 as iflib_get_mbuf_size_for does
// (MCLBYTES up to 2048-byte frames, MJUMPAGESIZE above; a jumbo frame
// spans several clusters), and init again. A driver without
// IFDI_MTU_SET refuses (ErrNotSupported); a driver's refusal is an
// *IFDIError. On any error the MTU, the frame size and the clusters stay
// as they were and a running interface runs again.
//
// Departures from FreeBSD (docs/freebsd.md): iflib's bounds are checked
// before the interface stops, and a stopped interface stays stopped
// (iflib_if_ioctl calls iflib_init_locked whatever the state). From an
// IFDI method on a running interface it returns ErrReentrant.
func (c *Context) SetMTU(mtu int) error {
	if mtu < MinMTU || mtu > MaxMTU {
		return &ConfigError{Pkg: "iflib", Field: "MTU", Value: mtu, Reason: fmt.Sprintf("must be %d..%d", MinMTU, MaxMTU)}
	}
	return c.ctlCall(func(reentrant bool) error {
		old := c.MTU()
		if mtu == old {
			return nil
		}
		ms, ok := c.dev.(MTUSetter)
		if !ok {
			return fmt.Errorf("iflib: %s: SetMTU %d: the driver has no IFDI_MTU_SET: %w", c.name, mtu, ErrNotSupported)
		}
		running := c.st() == stateRunning
		if running && reentrant {
			return ErrReentrant
		}
		if running {
			c.stopLocked()
		}
		err := c.mtuSetLocked(ms, mtu)
		if err == nil {
			c.ctl.mtu.Store(int64(mtu))
		}
		if running {
			if ierr := c.restartLocked(); ierr != nil {
				return errors.Join(err, ierr)
			}
		}
		return err
	})
}

// mtuSetLocked is IFDI_MTU_SET and the RX cluster sizes it implies, on a
// stopped interface; on an error everything is as it was (the driver is
// told the old MTU again if it accepted the new one).
func (c *Context) mtuSetLocked(ms MTUSetter, mtu int) error {
	c.ctl.mu.Lock()
	oldFrame := c.sc.MaxFrameSize
	c.ctl.mu.Unlock()
	frame, err := ms.MTUSet(c, mtu)
	if err != nil {
		return c.ifdiErr("IFDI_MTU_SET", err)
	}
	undo := func(err error) error {
		_, _ = ms.MTUSet(c, c.MTU())
		c.resizeRx(oldFrame)
		return err
	}
	if frame < mtu+etherHdrLen || frame > MaxRxSegs*MJumPageSize-etherVLANEncapLen || frame < c.sc.MinFrameSize {
		return undo(c.ifdiErr("IFDI_MTU_SET", &ConfigError{Pkg: "iflib", Field: "MaxFrameSize", Value: frame,
			Reason: fmt.Sprintf("does not carry an MTU of %d, or exceeds %d", mtu, MaxRxSegs*MJumPageSize-etherVLANEncapLen)}))
	}
	for j := range max(c.shared.NFL, 1) {
		if b := c.sc.RxdBufSize[j]; b != 0 && frame > MaxRxSegs*b-etherVLANEncapLen {
			return undo(&ConfigError{Pkg: "iflib", Field: "MTU", Value: mtu, Reason: fmt.Sprintf(
				"a frame of %d bytes with a VLAN tag needs more than %d (IFLIB_MAX_RX_SEGS) buffers of %d bytes (RxdBufSize[%d])",
				frame, MaxRxSegs, b, j)})
		}
	}
	if err := c.resizeRx(frame); err != nil {
		return undo(err)
	}
	c.ctl.mu.Lock()
	c.sc.MaxFrameSize = frame
	c.ctl.mu.Unlock()
	return nil
}

// resizeRx gives every free list without a fixed RxdBufSize the cluster
// size for frames of frame bytes (iflib_calc_rx_mbuf_sz).
// Preconditions: CTX_LOCK held, the interface stopped.
func (c *Context) resizeRx(frame int) error {
	for _, q := range c.rxqs {
		for _, fl := range q.fls {
			if c.sc.RxdBufSize[fl.id] != 0 {
				continue
			}
			if err := fl.resize(rxBufSizeFor(frame)); err != nil {
				return err
			}
		}
	}
	return nil
}
