package afxdp

import (
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

// linkState maps an interface's operational state (IFLA_OPERSTATE, RFC 2863)
// to iflib's: up when the kernel says the link can pass packets (for veth:
// both ends up).
func linkState(a *netlink.LinkAttrs) iflib.LinkState {
	switch a.OperState {
	case netlink.OperUp:
		return iflib.LinkStateUp
	case netlink.OperUnknown:
		if a.Flags&net.FlagUp != 0 && a.RawFlags&unix.IFF_RUNNING != 0 {
			return iflib.LinkStateUp
		}
	}
	return iflib.LinkStateDown
}

// linkMonitor follows RTM_NEWLINK notifications for the driver's interface
// and reports its state to iflib (iflib_link_state_change). It runs from
// Init to Stop.
type linkMonitor struct {
	done   chan struct{}
	exited chan struct{}
}

func startLinkMonitor(d *Driver) (*linkMonitor, error) {
	ch := make(chan netlink.LinkUpdate, 16)
	done := make(chan struct{})
	opts := netlink.LinkSubscribeOptions{ErrorCallback: func(error) {}}
	if d.ns.isSet() {
		h := d.ns.h
		opts.Namespace = &h
	}
	if err := netlink.LinkSubscribeWithOptions(ch, done, opts); err != nil {
		close(done)
		return nil, fmt.Errorf("afxdp: subscribe to link changes: %w", err)
	}
	m := &linkMonitor{done: done, exited: make(chan struct{})}
	go func() {
		defer close(m.exited)
		// netlink closes ch when its socket is closed (after done).
		for u := range ch {
			if a := u.Attrs(); a != nil && a.Index == d.ifindex {
				d.linkChanged(a)
			}
		}
	}()
	return m, nil
}

// stop ends the subscription and waits until its goroutines are gone.
func (m *linkMonitor) stop() {
	close(m.done)
	<-m.exited
}

// linkChanged follows an RTM_NEWLINK of the interface: an MTU or MAC
// address changed behind the driver's back, then the state and speed.
func (d *Driver) linkChanged(a *netlink.LinkAttrs) {
	if a.MTU > 0 && int64(a.MTU) != d.mtu.Load() {
		d.mtuChanged(a.MTU)
	}
	if len(a.HardwareAddr) == 6 {
		d.mu.Lock()
		old := slices.Clone(d.mac)
		d.mu.Unlock()
		if !slices.Equal(old, a.HardwareAddr) {
			d.macChanged(net.HardwareAddr(old), a.HardwareAddr)
		}
	}
	d.reportLink(a)
}

// reportLink is iflib_link_state_change with the interface's state and,
// while it is up, its speed (ETHTOOL_GSET, Mb/s; veth says 10000) as the
// baudrate in bit/s. While the interface's MTU is one the driver cannot
// receive (mtuChanged) the link is down.
func (d *Driver) reportLink(a *netlink.LinkAttrs) {
	st := linkState(a)
	if d.mtuRefused.Load() {
		st = iflib.LinkStateDown
	}
	var bps uint64
	if st == iflib.LinkStateUp {
		_ = d.ns.do(func() error {
			bps = linkSpeed(a.Name) * 1_000_000
			return nil
		})
	}
	d.ic.LinkStateChange(st, bps)
}
