package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"

	"github.com/vishvananda/netlink"

	"github.com/goiflib/goiflib/examples/afxdp"
	"github.com/goiflib/goiflib/examples/netstack/nsrig"
	"github.com/goiflib/goiflib/iflib"
)

// serveXDP puts the stack on the AF_XDP driver: on -iface, or on one end
// of a veth pair made in a new network namespace whose other end gets
// -peer, for curl and ping to run there.
func serveXDP(o options, mode iflib.TxMode) (*server, error) {
	avail := afxdp.Available // an existing -iface
	if o.iface == "" {
		avail = afxdp.RigAvailable // a veth pair in a new namespace
	}
	if err := avail(); err != nil {
		return nil, fmt.Errorf("-link xdp: %w", err)
	}
	addr, err := netip.ParsePrefix(o.addr)
	if err != nil || !addr.Addr().Is4() {
		return nil, fmt.Errorf("-addr %q: want an IPv4 prefix such as 10.77.0.2/24", o.addr)
	}
	cfg := nsrig.XDPConfig{Interface: o.iface, NetNS: o.netns, Addr: addr, Config: iflib.Config{TxMode: mode},
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }}
	if o.generic {
		cfg.XDPMode = afxdp.XDPGeneric
	}
	var rig *afxdp.Rig
	run := ""
	if o.iface == "" {
		peer, err := netip.ParsePrefix(o.peer)
		if err != nil || !peer.Addr().Is4() {
			return nil, fmt.Errorf("-peer %q: want an IPv4 prefix such as 10.77.0.1/24", o.peer)
		}
		if rig, err = afxdp.NewRig(afxdp.RigConfig{}); err != nil {
			return nil, err
		}
		pr := rig.Pairs[0]
		l, err := rig.Netlink().LinkByName(pr.B)
		if err == nil {
			err = rig.Netlink().AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: peer.Addr().AsSlice(), Mask: net.CIDRMask(peer.Bits(), 32)}})
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("address the veth peer: %w", err), rig.Close())
		}
		cfg.Interface, cfg.NetNS = pr.A, rig.NetNSPath()
		run = "nsenter --net=" + rig.NetNSPath() + " "
	}
	x, err := nsrig.NewXDPStack(cfg)
	if err != nil {
		if rig != nil {
			err = errors.Join(err, rig.Close())
		}
		return nil, err
	}
	url := "http://" + addr.Addr().String()
	curl := []string{
		run + "curl " + url + "/",
		fmt.Sprintf("%scurl -s %s/blob | sha256sum; %scurl %s/sha256", run, url, run, url),
		run + "ping -c 3 " + addr.Addr().String(),
	}
	if _, err := exec.LookPath("curl"); err != nil {
		curl = append(curl, "(curl is not installed here: apt-get install curl)")
	}
	return &server{
		stack: x.Stack, ep: x.EP, ic: x.Driver.Context(), addr: addr.Addr(), curl: curl,
		extra: func() string {
			s := x.Driver.Stats()
			return fmt.Sprintf("afxdp partial checksums completed %d, rx dropped %d, fill ring empty %d", s.PartialChecksums, s.RxDropped, s.RxFillRingEmpty)
		},
		closer: func() error {
			err := x.Close()
			if rig != nil {
				err = errors.Join(err, rig.Close())
			}
			return err
		},
	}, nil
}
