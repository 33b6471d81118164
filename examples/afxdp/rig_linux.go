package afxdp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Rig is a private network namespace holding veth pairs: the "hardware"
// the driver's tests, benchmarks and RunForward use. Traffic sent inside it
// stays inside it. Each pair has an end for the driver (A) and a peer end
// (B) for generators and sinks; both are up, with IPv6 off so that no
// neighbour discovery frames appear. Closing the rig deletes the pairs and
// releases the namespace (the kernel destroys it with its last reference).
type Rig struct {
	ns    netNS
	path  string
	nl    *netlink.Handle
	Pairs []VethPair
}

// VethPair is one veth pair of a Rig.
type VethPair struct {
	A, B           string // interface names
	AIndex, BIndex int    // interface indices in the rig's namespace
	AMAC, BMAC     net.HardwareAddr
}

// RigConfig configures NewRig. The zero value makes one pair with one
// queue per direction.
type RigConfig struct {
	Pairs  int // veth pairs (default 1)
	Queues int // RX and TX queues of each end (default 1)
	MTU    int // default 1500
}

// NewRig creates a network namespace and the veth pairs in it. It needs
// root (CAP_SYS_ADMIN for the namespace, CAP_NET_ADMIN for the links);
// without it the error wraps ErrUnavailable with the errno.
func NewRig(cfg RigConfig) (*Rig, error) {
	if cfg.Pairs <= 0 {
		cfg.Pairs = 1
	}
	if cfg.Queues <= 0 {
		cfg.Queues = 1
	}
	if cfg.MTU <= 0 {
		cfg.MTU = 1500
	}
	h, err := newNetNS()
	if err != nil {
		return nil, err
	}
	r := &Rig{ns: netNS{h: h}}
	r.path = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(h))
	if r.nl, err = netlink.NewHandleAt(h); err != nil {
		r.ns.close()
		return nil, fmt.Errorf("afxdp: netlink in the rig's namespace: %w", err)
	}
	if err := r.ns.do(func() error {
		for _, f := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+f+"/disable_ipv6", []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("afxdp: disable IPv6 in the rig: %w", err)
	}
	for i := 0; i < cfg.Pairs; i++ {
		p := VethPair{A: fmt.Sprintf("xa%d", i), B: fmt.Sprintf("xb%d", i)}
		v := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: p.A, MTU: cfg.MTU, NumTxQueues: cfg.Queues, NumRxQueues: cfg.Queues, TxQLen: -1},
			PeerName:  p.B, PeerTxQLen: -1, PeerMTU: uint32(cfg.MTU),
			PeerNumTxQueues: uint32(cfg.Queues), PeerNumRxQueues: uint32(cfg.Queues),
		}
		if err := r.nl.LinkAdd(v); err != nil {
			_ = r.Close()
			return nil, fmt.Errorf("afxdp: create veth %s/%s: %w", p.A, p.B, err)
		}
		for _, name := range []string{p.A, p.B} {
			l, err := r.nl.LinkByName(name)
			if err == nil {
				err = r.nl.LinkSetUp(l)
			}
			if err != nil {
				_ = r.Close()
				return nil, fmt.Errorf("afxdp: set %s up: %w", name, err)
			}
			if name == p.A {
				p.AIndex, p.AMAC = l.Attrs().Index, l.Attrs().HardwareAddr
			} else {
				p.BIndex, p.BMAC = l.Attrs().Index, l.Attrs().HardwareAddr
			}
		}
		r.Pairs = append(r.Pairs, p)
	}
	return r, nil
}

// newNetNS creates an unnamed network namespace and returns a handle,
// leaving the calling thread where it was.
func newNetNS() (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return netns.None(), fmt.Errorf("%w: open own network namespace: %w", ErrUnavailable, err)
	}
	defer orig.Close()
	h, err := netns.New()
	if err != nil {
		return netns.None(), fmt.Errorf("%w: unshare(CLONE_NEWNET): %w", ErrUnavailable, err)
	}
	if err := netns.Set(orig); err != nil {
		// Cannot return this thread to its namespace: keep it locked so
		// that Go retires it.
		runtime.LockOSThread()
		_ = h.Close()
		return netns.None(), fmt.Errorf("afxdp: setns back: %w", err)
	}
	return h, nil
}

// NetNSPath names the rig's namespace for Config.NetNS.
func (r *Rig) NetNSPath() string { return r.path }

// Do runs fn on a thread inside the rig's namespace (sockets fn creates
// belong to it).
func (r *Rig) Do(fn func() error) error { return r.ns.do(fn) }

// Netlink is a netlink handle inside the rig's namespace.
func (r *Rig) Netlink() *netlink.Handle { return r.nl }

// LinkStats returns the kernel's counters of an interface of the rig.
func (r *Rig) LinkStats(name string) (netlink.LinkStatistics, error) {
	l, err := r.nl.LinkByName(name)
	if err != nil {
		return netlink.LinkStatistics{}, err
	}
	if s := l.Attrs().Statistics; s != nil {
		return *s, nil
	}
	return netlink.LinkStatistics{}, fmt.Errorf("afxdp: %s: no statistics", name)
}

// SetLink sets an interface of the rig up or down.
func (r *Rig) SetLink(name string, up bool) error {
	l, err := r.nl.LinkByName(name)
	if err != nil {
		return err
	}
	if up {
		return r.nl.LinkSetUp(l)
	}
	return r.nl.LinkSetDown(l)
}

// Close deletes the veth pairs and releases the namespace.
func (r *Rig) Close() error {
	var errs []error
	if r.nl != nil {
		for _, p := range r.Pairs {
			if l, err := r.nl.LinkByName(p.A); err == nil {
				// ENODEV: the pair went meanwhile (its peer's namespace
				// was destroyed).
				if err := r.nl.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
					errs = append(errs, err)
				}
			}
		}
		r.nl.Close()
		r.nl = nil
	}
	r.ns.close()
	return errors.Join(errs...)
}
