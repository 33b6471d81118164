package simnic

import (
	"fmt"

	"github.com/goiflib/goiflib/iflib"
)

// The driver's control half (ifdi_if.m's optional methods), written as
// em(4)'s: em_if_mtu_set, em_if_set_promisc, em_if_multi_set,
// em_if_vlan_register/unregister, em_if_media_status/change,
// em_if_needs_restart, and em_if_init's programming of the address,
// filters, VLAN support, RSS and media from the interface.

var (
	_ iflib.MTUSetter       = (*Driver)(nil)
	_ iflib.PromiscSetter   = (*Driver)(nil)
	_ iflib.MultiSetter     = (*Driver)(nil)
	_ iflib.VLANRegisterer  = (*Driver)(nil)
	_ iflib.MediaStatuser   = (*Driver)(nil)
	_ iflib.MediaChanger    = (*Driver)(nil)
	_ iflib.LinkIntrEnabler = (*Driver)(nil)
	_ iflib.RestartNeeder   = (*Driver)(nil)
)

// MaxMulticast is the group addresses the driver hashes into the MTA;
// with more it sets MPE (em's MAX_NUM_MULTICAST_ADDRESSES).
const MaxMulticast = 128

// capabilities returns what the driver offers and enables at attach
// (isc_capabilities, isc_capenable): VLAN tagging and filtering, VLAN MTU,
// jumbo frames when Config.MaxFrame allows them, link-state reports; with
// Offload the IPv4 checksum offloads, TSO4 and TSO on tagged frames. VLAN
// filtering starts off, as em's ("breaks some stuff" with vlans on lagg);
// VLAN tagging starts on with Offload only, so that a NIC without Offload
// hands tagged frames up as they are, as before the control plane.
func capabilities(cfg *Config) (offered, enabled iflib.Capabilities) {
	offered = iflib.CapVLANHWTagging | iflib.CapVLANHWFilter | iflib.CapVLANMTU | iflib.CapLinkState
	if cfg.MaxFrame > 1518 {
		offered |= iflib.CapJumboMTU
	}
	if cfg.Offload {
		offered |= iflib.CapRxCsum | iflib.CapTxCsum | iflib.CapTSO4 | iflib.CapVLANHWTSO
	}
	enabled = offered &^ iflib.CapVLANHWFilter
	if !cfg.Offload {
		enabled &^= iflib.CapVLANHWTagging
	}
	return offered, enabled
}

// abilityMedia maps each speed ability to its ifmedia word.
var abilityMedia = []struct {
	a Ability
	m iflib.Media
}{
	{Ability10HD, iflib.Media10T},
	{Ability10FD, iflib.Media10T | iflib.MediaFDX},
	{Ability100HD, iflib.Media100TX},
	{Ability100FD, iflib.Media100TX | iflib.MediaFDX},
	{Ability1000FD, iflib.Media1000T | iflib.MediaFDX},
	{Ability2500FD, iflib.Media2500T | iflib.MediaFDX},
	{Ability10GFD, iflib.Media10GT | iflib.MediaFDX},
	{Ability25GFD, iflib.Media25GSR | iflib.MediaFDX},
	{Ability40GFD, iflib.Media40GSR4 | iflib.MediaFDX},
	{Ability100GFD, iflib.Media100GSR4 | iflib.MediaFDX},
}

// mediaList is the ifmedia list of a PHY with abilities a: autoselect and
// each speed and duplex (em_setup_interface's ifmedia_add calls).
func mediaList(a Ability) []iflib.Media {
	l := []iflib.Media{iflib.MediaAuto}
	for _, am := range abilityMedia {
		if a&am.a != 0 {
			l = append(l, am.m)
		}
	}
	return l
}

// phyControlFor is the PHY setup for medium m (em_if_media_change):
// autoselect advertises every ability of the PHY; a fixed medium forces
// its speed and duplex, with flow control as its pause options ask.
func (d *Driver) phyControlFor(m iflib.Media) (PHYControl, error) {
	if m.Subtype() == iflib.MediaAuto {
		return PHYControl{Autoneg: true, Advertise: d.nic.cfg.Abilities}, nil
	}
	base := m &^ (iflib.MediaRxPause | iflib.MediaTxPause)
	for _, am := range abilityMedia {
		if am.m != base || d.nic.cfg.Abilities&am.a == 0 {
			continue
		}
		ctl := PHYControl{Advertise: am.a}
		switch {
		case m&iflib.MediaRxPause != 0:
			ctl.Advertise |= AbilityPause // both ways (a forced rx-only pause does not exist)
		case m&iflib.MediaTxPause != 0:
			ctl.Advertise |= AbilityAsymPause
		}
		return ctl, nil
	}
	return PHYControl{}, &ConfigError{Pkg: "simnic", Field: "media", Value: m, Reason: fmt.Sprintf("not a medium of this PHY (%v)", d.nic.cfg.Abilities)}
}

// attachCtl is AttachPre's control part: the address the EEPROM holds
// (iflib_set_mac), the media (ifmedia_add, ifmedia_set autoselect) and
// the capabilities.
func (d *Driver) attachCtl(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := ic.SetMAC(iflib.EtherAddr(d.nic.cfg.MAC)); err != nil {
		return err
	}
	for _, m := range mediaList(d.nic.cfg.Abilities) {
		ic.MediaAdd(m)
	}
	ic.MediaSetDefault(iflib.MediaAuto)
	sc.Capabilities, sc.CapEnable = capabilities(&d.nic.cfg)
	return nil
}

// programCtl is IFDI_INIT's control part (em_if_init): the station
// address in RAR 0 (the other RARs invalid), the receive filter from the
// flags and the multicast list, VLAN tagging and filtering, the max frame
// register from the MTU, RSS, and the medium.
func (d *Driver) programCtl(ic *iflib.Context) error {
	n := d.nic
	if err := n.SetMaxFrame(ic.Softc().MaxFrameSize); err != nil {
		return err
	}
	_ = n.SetRAR(0, [6]byte(ic.MAC()), true)
	for i := 1; i < NumRAR; i++ {
		_ = n.SetRAR(i, [6]byte{}, false)
	}
	n.SetVLANMode(ic.CapEnabled()&iflib.CapVLANHWTagging != 0)
	d.writeMTA(ic)
	d.writeVFTA(ic)
	d.writeRCTL(ic, ic.Flags())
	if err := d.writeRSS(ic); err != nil {
		return err
	}
	ctl, err := d.phyControlFor(ic.Media())
	if err != nil {
		return err
	}
	return n.SetPHY(ctl)
}

// writeRCTL programs UPE, MPE, BAM and VFE (em_if_set_promisc,
// em_if_multi_set's MPE for too many groups, em_if_vlan_filter_enable:
// the VLAN filter only with IFCAP_VLAN_HWFILTER, a VLAN registered and
// the interface not promiscuous).
func (d *Driver) writeRCTL(ic *iflib.Context, flags iflib.IfFlags) {
	c := RctlBAM
	switch {
	case flags&iflib.IffPromisc != 0:
		c |= RctlUPE | RctlMPE
	case flags&iflib.IffAllMulti != 0, len(ic.Multicast()) > MaxMulticast:
		c |= RctlMPE
	}
	if flags&iflib.IffPromisc == 0 && ic.CapEnabled()&iflib.CapVLANHWFilter != 0 && len(ic.VLANs()) > 0 {
		c |= RctlVFE
	}
	_ = d.nic.SetRxControl(c)
}

// writeMTA hashes the multicast list into the MTA
// (e1000_update_mc_addr_list); beyond MaxMulticast groups the MTA is
// left clear and writeRCTL sets MPE.
func (d *Driver) writeMTA(ic *iflib.Context) {
	ma := ic.Multicast()
	var t [MTASize]uint32
	if len(ma) <= MaxMulticast {
		addrs := make([][6]byte, len(ma))
		for i, a := range ma {
			addrs[i] = a
		}
		t = MTATable(addrs)
	}
	d.nic.SetMTA(&t)
}

// writeVFTA writes the registered VLANs into the VFTA (em's
// shadow_vfta).
func (d *Driver) writeVFTA(ic *iflib.Context) {
	t, _ := VFTATable(ic.VLANs()) // iflib refuses VIDs above 4095
	d.nic.SetVFTA(&t)
}

// writeRSS programs the key, the indirection table and the hash fields
// from iflib's RSS configuration (ixgbe_initialize_rss_mapping): the
// 128-entry RETA repeats iflib's table, each queue taken modulo the RX
// queues in use.
func (d *Driver) writeRSS(ic *iflib.Context) error {
	r := ic.RSS()
	var reta [RETASize]uint8
	nq := max(len(d.rx), 1)
	for i := range reta {
		if len(r.Table) > 0 {
			reta[i] = uint8(int(r.Table[i%len(r.Table)]) % nq)
		} else {
			reta[i] = uint8(i % nq)
		}
	}
	var f RSSField
	for _, m := range []struct {
		t iflib.RSSHashTypes
		f RSSField
	}{
		{iflib.RSSHashIPv4, RSSFieldIPv4}, {iflib.RSSHashTCPIPv4, RSSFieldTCPIPv4},
		{iflib.RSSHashIPv6, RSSFieldIPv6}, {iflib.RSSHashTCPIPv6, RSSFieldTCPIPv6},
		{iflib.RSSHashUDPIPv4, RSSFieldUDPIPv4}, {iflib.RSSHashUDPIPv6, RSSFieldUDPIPv6},
	} {
		if r.Types&m.t != 0 {
			f |= m.f
		}
	}
	return d.nic.SetRSS(r.Key, reta, f)
}

// MTUSet is IFDI_MTU_SET (em_if_mtu_set): refuse an MTU whose frame
// (MTU + ETHER_HDR_LEN + ETHER_CRC_LEN) exceeds what the hardware takes
// (Config.MaxFrame), else return it as the new isc_max_frame_size; iflib
// calls it with the interface stopped and IFDI_INIT then programs the
// max frame register.
func (d *Driver) MTUSet(ic *iflib.Context, mtu int) (int, error) {
	frame := mtu + 14 + 4
	if mtu < 1 || frame > d.nic.cfg.MaxFrame {
		return 0, &ConfigError{Pkg: "simnic", Field: "mtu", Value: mtu, Reason: fmt.Sprintf("want 1..%d (Config.MaxFrame %d − 18)", d.nic.cfg.MaxFrame-18, d.nic.cfg.MaxFrame)}
	}
	return frame, nil
}

// PromiscSet is IFDI_PROMISC_SET (em_if_set_promisc): IFF_PROMISC sets
// UPE and MPE and turns the VLAN filter off, IFF_ALLMULTI sets MPE.
func (d *Driver) PromiscSet(ic *iflib.Context, flags iflib.IfFlags) error {
	d.writeRCTL(ic, flags)
	return nil
}

// MultiSet is IFDI_MULTI_SET (em_if_multi_set): hash the list into the
// MTA, or set MPE for more than MaxMulticast groups.
func (d *Driver) MultiSet(ic *iflib.Context) error {
	d.writeMTA(ic)
	d.writeRCTL(ic, ic.Flags())
	return nil
}

// VLANRegister is IFDI_VLAN_REGISTER (em_if_vlan_register): set the VID's
// bit in the VFTA (written at once: no restart needed) and the VLAN
// filter as writeRCTL decides.
func (d *Driver) VLANRegister(ic *iflib.Context, vtag uint16) {
	d.writeVFTA(ic)
	d.writeRCTL(ic, ic.Flags())
}

// VLANUnregister is IFDI_VLAN_UNREGISTER (em_if_vlan_unregister).
func (d *Driver) VLANUnregister(ic *iflib.Context, vtag uint16) {
	d.writeVFTA(ic)
	d.writeRCTL(ic, ic.Flags())
}

// NeedsRestart is IFDI_NEEDS_RESTART (em_if_needs_restart): VLAN
// registration is written to the VFTA at once, so no event needs a
// reinit.
func (d *Driver) NeedsRestart(ic *iflib.Context, ev iflib.RestartEvent) bool { return false }

// MediaStatus is IFDI_MEDIA_STATUS (em_if_media_status): the PHY's
// resolution: valid, active with the link, the speed and duplex of the
// resolved mode and the flow control negotiated.
func (d *Driver) MediaStatus(ic *iflib.Context) iflib.MediaStatus {
	st := d.nic.PHYStatus()
	ms := iflib.MediaStatus{Valid: true, Active: st.Link}
	if !st.Link {
		return ms
	}
	for _, am := range abilityMedia {
		if am.a == st.Mode {
			ms.Current = am.m
		}
	}
	if st.RxPause {
		ms.Current |= iflib.MediaRxPause
	}
	if st.TxPause {
		ms.Current |= iflib.MediaTxPause
	}
	return ms
}

// MediaChange is IFDI_MEDIA_CHANGE (em_if_media_change): program the PHY
// for ic.Media() (autoselect, or a forced speed and duplex) and
// renegotiate; a medium the PHY lacks is a *ConfigError.
func (d *Driver) MediaChange(ic *iflib.Context) error {
	ctl, err := d.phyControlFor(ic.Media())
	if err != nil {
		return err
	}
	return d.nic.SetPHY(ctl)
}

// LinkIntrEnable is IFDI_LINK_INTR_ENABLE: unmask the link-status-change
// interrupt (IMS.LSC).
func (d *Driver) LinkIntrEnable(ic *iflib.Context) {
	d.nic.lscEn.Store(true)
	d.nic.wake()
}
