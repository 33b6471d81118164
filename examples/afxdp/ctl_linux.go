package afxdp

import (
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

// The control plane (iflib_if_ioctl's requests) maps onto the real
// interface through netlink (RTM_NEWLINK in the interface's namespace):
//
//	IFDI_MTU_SET        the interface's MTU (IFLA_MTU), checked against
//	                    what the UMEM frames can receive
//	IFDI_PROMISC_SET    IFF_PROMISC, IFF_ALLMULTI (ifinfomsg flags)
//	IFDI_MULTI_SET      the multicast list (SIOCADDMULTI, SIOCDELMULTI)
//	iflib_set_mac       the interface's address at attach; IFDI_INIT
//	                    programs Context.MAC (IFLA_ADDRESS)
//	link interrupt      RTM_NEWLINK notifications: oper state, speed
//	                    (ETHTOOL_GSET) and an MTU changed behind the driver
//
// Frames larger than one UMEM frame after XDP_PACKET_HEADROOM use XDP
// multi-buffer: the redirect program is loaded frags-aware
// (BPF_F_XDP_HAS_FRAGS) and the sockets bind with XDP_USE_SG, so the
// kernel chains a frame over several chunks (XDP_PKT_CONTD on every
// descriptor but the last), each fragment's data XDP_PACKET_HEADROOM into
// its own chunk (iflib.RxdFrag.Off).

// Specification and implementation constants of multi-buffer frames.
const (
	// MaxFrags is the most UMEM frames one packet may span, received or
	// sent: the kernel's limit is MAX_SKB_FRAGS (17 by default) fragments
	// of an skb or xdp_buff; one less leaves the linear part's room.
	MaxFrags = 16
	// maxPacket bounds a transmitted packet (iflib's TxMaxSize): the IP
	// total length's range.
	maxPacket = 65535
)

// frameRoom is the frame bytes one UMEM frame receives (after
// XDP_PACKET_HEADROOM).
func (d *Driver) frameRoom() int { return d.umem.frameSize - PacketHeadroom }

// MaxMTU is the largest MTU the driver receives with its UMEM's frame
// size: one frame's room without XDP multi-buffer (a kernel without
// BPF_F_XDP_HAS_FRAGS), MaxFrags frames' with it, less the Ethernet
// header.
func (d *Driver) MaxMTU() int {
	n := 1
	if d.frags {
		n = MaxFrags
	}
	return min(n*d.frameRoom(), maxPacket) - ethHdrLen
}

// MultiBuffer reports whether the kernel here takes XDP multi-buffer
// (frags-aware XDP programs), which frames larger than one UMEM frame need.
func (d *Driver) MultiBuffer() bool { return d.frags }

// needsMultiBuffer says whether frames of mtu span more than one frame.
func (d *Driver) needsMultiBuffer(mtu int) bool { return mtu+ethHdrLen > d.frameRoom() }

// checkMTU refuses an MTU the driver cannot receive, saying why.
func (d *Driver) checkMTU(mtu int) error {
	name := d.cfg.Interface
	if mtu < iflib.MinMTU {
		return cfgErr(ErrConfig, "MTU", mtu, "%s: below ETH_MIN_MTU (%d)", name, iflib.MinMTU)
	}
	if mtu <= d.MaxMTU() {
		return nil
	}
	fs := d.umem.frameSize
	if !d.frags {
		return fmt.Errorf("%w: MTU %d of %s needs %d bytes, a %d-byte frame holds %d after XDP_PACKET_HEADROOM, and this kernel has no XDP multi-buffer (BPF_F_XDP_HAS_FRAGS, Linux 5.18+; AF_XDP's XDP_USE_SG, 6.6+) to chain frames",
			ErrFrameTooBig, mtu, name, mtu+ethHdrLen, fs, d.frameRoom())
	}
	return fmt.Errorf("%w: MTU %d of %s needs %d bytes, more than %d frames of %d (MaxFrags, the kernel's MAX_SKB_FRAGS) hold after XDP_PACKET_HEADROOM: the largest MTU is %d",
		ErrFrameTooBig, mtu, name, mtu+ethHdrLen, MaxFrags, d.frameRoom(), d.MaxMTU())
}

// link reads the interface's attributes.
func (d *Driver) link() (netlink.Link, error) {
	l, err := d.nl.LinkByIndex(d.ifindex)
	if err != nil {
		return nil, fmt.Errorf("afxdp: read link %s: %w", d.cfg.Interface, err)
	}
	return l, nil
}

// MTUSet is IFDI_MTU_SET: check mtu against the UMEM frames (multi-buffer
// where the kernel has it) and set it on the interface. The kernel may
// refuse it too (above the device's max_mtu; for a veth whose peer has a
// native XDP program that is not frags-aware, above one page): the error
// says so with the kernel's own message. The new max frame size is MTU +
// 18 (ETHER_HDR_LEN + ETHER_CRC_LEN, as em_if_mtu_set counts). iflib's
// reinit then binds the sockets for multi-buffer if the frames need it.
func (d *Driver) MTUSet(ic *iflib.Context, mtu int) (int, error) {
	if err := d.checkMTU(mtu); err != nil {
		return 0, err
	}
	old := d.mtu.Swap(int64(mtu)) // first, so that the link monitor sees no change behind our back
	if err := d.setKernelMTU(mtu); err != nil {
		d.mtu.Store(old)
		return 0, err
	}
	d.mtuRefused.Store(false)
	return mtu + ethHdrLen + ethCRCLen, nil
}

func (d *Driver) setKernelMTU(mtu int) error {
	l, err := d.link()
	if err != nil {
		return err
	}
	if l.Attrs().MTU == mtu {
		return nil
	}
	if err := d.nl.LinkSetMTU(l, mtu); err != nil {
		hint := ""
		switch {
		case errors.Is(err, unix.ERANGE):
			hint = " (a native XDP program on its veth peer caps it)"
		case errors.Is(err, unix.EINVAL):
			hint = " (outside the device's min_mtu..max_mtu: see `ip -d link show " + d.cfg.Interface + "`)"
		case errors.Is(err, unix.EPERM):
			return fmt.Errorf("%w: set MTU %d on %s: %w", ErrUnavailable, mtu, d.cfg.Interface, err)
		}
		return fmt.Errorf("%w: the kernel refused MTU %d on %s%s: %w", ErrFrameTooBig, mtu, d.cfg.Interface, hint, err)
	}
	return nil
}

// PromiscSet is IFDI_PROMISC_SET: IFF_PROMISC and IFF_ALLMULTI on the
// interface follow flags. A flag the interface had at Attach stays on
// (the driver never turns off what it did not turn on); Detach restores
// the flags Attach found.
func (d *Driver) PromiscSet(ic *iflib.Context, flags iflib.IfFlags) error {
	var want uint32
	if flags&iflib.IffPromisc != 0 {
		want |= unix.IFF_PROMISC
	}
	if flags&iflib.IffAllMulti != 0 {
		want |= unix.IFF_ALLMULTI
	}
	return d.setFlags(want | d.origFlags)
}

// setFlags makes the interface's IFF_PROMISC and IFF_ALLMULTI equal want.
func (d *Driver) setFlags(want uint32) error {
	l, err := d.link()
	if err != nil {
		return err
	}
	have := l.Attrs().RawFlags
	for _, f := range []struct {
		bit     uint32
		name    string
		on, off func(netlink.Link) error
	}{
		{unix.IFF_PROMISC, "IFF_PROMISC", d.nl.SetPromiscOn, d.nl.SetPromiscOff},
		{unix.IFF_ALLMULTI, "IFF_ALLMULTI", d.nl.LinkSetAllmulticastOn, d.nl.LinkSetAllmulticastOff},
	} {
		if have&f.bit == want&f.bit {
			continue
		}
		set := f.off
		if want&f.bit != 0 {
			set = f.on
		}
		if err := set(l); err != nil {
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return fmt.Errorf("afxdp: set %s on %s to %v: %w", f.name, d.cfg.Interface, want&f.bit != 0, err)
		}
	}
	return nil
}

// MultiSet is IFDI_MULTI_SET: the interface's multicast list gets the
// context's (Context.Multicast) as global entries (SIOCADDMULTI and
// SIOCDELMULTI, what `ip maddr add|del` does; /proc/net/dev_mcast shows
// them), so that a NIC's filter passes those groups to the XDP program.
// Only the entries the driver added are ever removed (one the interface
// had before is left alone: the kernel keeps one global use per
// address); Detach removes them all.
func (d *Driver) MultiSet(ic *iflib.Context) error {
	want := ic.Multicast()
	return d.ns.do(func() error {
		had, err := globalMulticast(d.cfg.Interface)
		if err != nil {
			return fmt.Errorf("afxdp: read the multicast list of %s: %w", d.cfg.Interface, err)
		}
		for _, a := range want {
			if slices.Contains(d.multi, a) || slices.Contains(had, [6]byte(a)) {
				continue
			}
			if err := multicastIoctl(d.cfg.Interface, a, true); err != nil {
				return d.multiErr("add", a, err)
			}
			d.multi = append(d.multi, a)
		}
		for i := 0; i < len(d.multi); {
			if a := d.multi[i]; !slices.Contains(want, a) {
				if err := multicastIoctl(d.cfg.Interface, a, false); err != nil && !errors.Is(err, unix.ENOENT) {
					return d.multiErr("delete", a, err)
				}
				d.multi = slices.Delete(d.multi, i, i+1)
				continue
			}
			i++
		}
		return nil
	})
}

func (d *Driver) multiErr(op string, a iflib.EtherAddr, err error) error {
	if errors.Is(err, unix.EPERM) {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("afxdp: %s multicast address %v on %s: %w", op, a, d.cfg.Interface, err)
}

// dropMulti removes the multicast entries the driver added (Detach).
func (d *Driver) dropMulti() error {
	var errs []error
	_ = d.ns.do(func() error {
		for _, a := range d.multi {
			if err := multicastIoctl(d.cfg.Interface, a, false); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
				errs = append(errs, d.multiErr("delete", a, err))
			}
		}
		return nil
	})
	d.multi = nil
	return errors.Join(errs...)
}

// restoreFlags gives the interface back the flags Attach found.
func (d *Driver) restoreFlags() error {
	if d.nl == nil || d.ifindex == 0 {
		return nil
	}
	if err := d.setFlags(d.origFlags); err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil // the interface is gone
		}
		return err
	}
	return nil
}

// program is IFDI_INIT's control half: the interface gets the context's
// MTU, MAC address and receive flags.
func (d *Driver) program(ic *iflib.Context) error {
	if mtu := ic.MTU(); mtu > 0 {
		if err := d.checkMTU(mtu); err != nil {
			return err
		}
		d.mtu.Store(int64(mtu))
		if err := d.setKernelMTU(mtu); err != nil {
			return err
		}
		d.mtuRefused.Store(false)
	}
	if mac := ic.MAC(); !mac.IsZero() {
		d.mu.Lock()
		same := slices.Equal(d.mac, mac[:])
		d.mu.Unlock()
		if !same {
			l, err := d.link()
			if err != nil {
				return err
			}
			if err := d.nl.LinkSetHardwareAddr(l, net.HardwareAddr(mac[:])); err != nil {
				return fmt.Errorf("afxdp: set MAC address %v on %s: %w", mac, d.cfg.Interface, err)
			}
			d.mu.Lock()
			d.mac = slices.Clone(mac[:])
			d.mu.Unlock()
		}
	}
	if err := d.PromiscSet(ic, ic.Flags()); err != nil {
		return err
	}
	return d.MultiSet(ic)
}

// addMedia lists the media (ifmedia_add): autoselect, and the medium of
// the interface's speed when iflib has one for it, so that MediaStatus
// resolves autoselect to it.
func (d *Driver) addMedia(ic *iflib.Context) {
	var mbps uint64
	_ = d.ns.do(func() error {
		mbps = linkSpeed(d.cfg.Interface)
		return nil
	})
	ic.MediaAdd(iflib.MediaAuto)
	for _, m := range []iflib.Media{iflib.Media10T, iflib.Media100TX, iflib.Media1000T, iflib.Media2500T,
		iflib.Media10GT, iflib.Media25GSR, iflib.Media40GSR4, iflib.Media100GSR4} {
		if mbps != 0 && m.Baudrate() == mbps*1_000_000 {
			ic.MediaAdd(m | iflib.MediaFDX)
		}
	}
	ic.MediaSetDefault(iflib.MediaAuto)
}

// mtuChanged is the link monitor's answer to an MTU changed behind the
// driver's back (`ip link set … mtu`): frames larger than the driver was
// set up for would be dropped by the kernel one by one, counted only in
// Stats.RxDropped. An MTU the driver can receive is followed (iflib's
// MTU and max frame size with it, the sockets rebound for multi-buffer if
// needed); one it cannot makes the driver report the link down, with a
// notice through Config.Logf, until the MTU is set back.
func (d *Driver) mtuChanged(mtu int) {
	old := int(d.mtu.Load())
	if err := d.checkMTU(mtu); err != nil {
		d.mtuRefused.Store(true)
		d.logf("afxdp: %s: MTU changed outside the driver from %d to %d, which it cannot receive; link reported down until the MTU is set back: %v",
			d.cfg.Interface, old, mtu, err)
		return
	}
	d.mtuRefused.Store(false)
	d.followMTU(old, mtu)
}

// macChanged makes iflib follow a MAC address set on the interface
// behind the driver's back (Context.SetMAC, from a goroutine of its own:
// the reinit stops this link monitor), so that the stack above sends with
// the address the interface receives for.
func (d *Driver) macChanged(old, mac net.HardwareAddr) {
	a := iflib.EtherAddr(mac)
	d.logf("afxdp: %s: MAC address changed outside the driver from %v to %v; following it (Context.SetMAC)", d.cfg.Interface, old, mac)
	d.mu.Lock()
	d.mac = slices.Clone(mac)
	d.mu.Unlock()
	go func() {
		err := d.ic.SetMAC(a)
		if err != nil && !errors.Is(err, iflib.ErrDetached) && !errors.Is(err, iflib.ErrNotRunning) {
			d.logf("afxdp: %s: following MAC address %v failed: %v", d.cfg.Interface, mac, err)
		}
	}()
}

func (d *Driver) logf(format string, args ...any) {
	if d.cfg.Logf != nil {
		d.cfg.Logf(format, args...)
	}
}

// followMTU makes iflib follow an MTU set outside the driver
// (Context.SetMTU, from a goroutine of its own: the reinit stops this
// link monitor). If iflib refuses, the link is reported down as for an
// MTU the driver cannot receive.
func (d *Driver) followMTU(old, mtu int) {
	d.logf("afxdp: %s: MTU changed outside the driver from %d to %d; following it (Context.SetMTU)", d.cfg.Interface, old, mtu)
	go func() {
		err := d.ic.SetMTU(mtu)
		if err == nil || errors.Is(err, iflib.ErrDetached) || errors.Is(err, iflib.ErrNotRunning) {
			return
		}
		d.mtuRefused.Store(true)
		d.logf("afxdp: %s: following MTU %d failed; link reported down until the MTU is set back: %v", d.cfg.Interface, mtu, err)
		d.ic.LinkStateChange(iflib.LinkStateDown, 0)
	}()
}
