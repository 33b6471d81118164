package afxdp

import (
	"slices"

	"github.com/goiflib/goiflib/busdma"
)

// Implementation constants: the defaults of Config.
const (
	// DefaultNRxd is the RX descriptors per queue (iflib's nrxd; the RX
	// ring has as many): deep enough that a forwarder of TCP traffic does
	// not drop segments (with 1024, 1–3 % of them were dropped at the
	// fill ring and retransmitted: see the package doc's "Ring sizes").
	DefaultNRxd = 4096
	DefaultNTxd = 1024 // TX descriptors per queue (iflib's ntxd)
	// MinRingSize and MaxRingSize bound NRxd and NTxd: iflib's clamps for
	// this driver. The kernel takes any power of two for its rings.
	MinRingSize = 64
	MaxRingSize = 16384
)

// Config configures Attach. Only Interface is required.
type Config struct {
	// Interface is the network interface to drive.
	Interface string
	// NetNS is the path of the network namespace the interface lives in
	// (e.g. /run/netns/x, /proc/PID/fd/N); "" means the caller's.
	NetNS string
	// QueueIDs are the interface's queues to bind, one iflib queue pair
	// (one AF_XDP socket) each, in iflib queue order. Default: every RX
	// queue the interface uses (0 … n−1, n from ETHTOOL_GCHANNELS, else
	// netlink's queue count). The kernel steers each received frame to a
	// queue by its own hash (RSS, veth's per-CPU choice), and the redirect
	// program passes a frame from a queue without a socket to the kernel's
	// stack, where the driver never sees it. So Attach refuses a list that
	// leaves one of the interface's RX queues unbound (ErrUnboundQueues)
	// unless PartialQueues is set.
	QueueIDs []int
	// PartialQueues allows QueueIDs to leave RX queues unbound: frames the
	// kernel steers to them go to the kernel's own stack (XDP_PASS), not
	// to this driver. For a program that steers its flows itself (ethtool
	// -N flow rules, a single-queue RSS setting); Attach says which queues
	// are left through Logf.
	PartialQueues bool
	// UMEM is the packet memory. nil: Attach maps one just big enough for
	// the RX free lists, and Detach unmaps it. Give one to share it with
	// other drivers (forwarding without a copy) or to carve a TX zone.
	UMEM *UMEM
	// XDPMode is where the redirect program runs. Default XDPNative.
	XDPMode XDPMode
	// Bind chooses copy or zero-copy. Default BindAuto.
	Bind BindMode
	// NRxd and NTxd are the descriptors per RX and TX queue: iflib's ring
	// sizes and the kernel's RX and completion rings. Powers of two in
	// [MinRingSize, MaxRingSize]; default DefaultNRxd, DefaultNTxd. The
	// fill ring and the TX ring get twice as many (see Driver). Overload
	// (the program not giving frames back in time) shows as
	// Stats.RxFillRingEmpty, never as RxRingFull.
	NRxd, NTxd int
	// Checker, when set, puts busdma's checker on the driver's bus device
	// and mirrors the kernel's accesses to the UMEM into it: each received
	// frame is a device write at its bus address, each sent frame a device
	// read, so a frame the kernel fills outside a current mapping (a stale
	// ifsd_ba) or sends without PREWRITE is reported. It copies every frame
	// once more: for tests.
	Checker *busdma.Checker
	// KeepPartialChecksums hands received frames up exactly as the kernel
	// delivered them. By default the driver passes every received frame
	// through CompleteChecksum before the input callback, so that TCP and
	// UDP from a Linux peer whose TX checksum offload is on (veth's
	// default) arrive with valid checksums; Stats.PartialChecksums counts
	// the frames it completed.
	KeepPartialChecksums bool
	// Logf receives the driver's rare notices (the zero-copy fallback).
	// nil: silent.
	Logf func(format string, args ...any)
}

func (c *Config) resolve() error {
	if c.Interface == "" {
		return cfgErr(ErrNoInterface, "Interface", `""`, "an interface name is required")
	}
	c.QueueIDs = slices.Clone(c.QueueIDs)
	seen := map[int]bool{}
	for _, q := range c.QueueIDs {
		if q < 0 || seen[q] {
			return cfgErr(ErrQueueID, "QueueIDs", c.QueueIDs, "queue %d is negative or repeated", q)
		}
		seen[q] = true
	}
	if c.NRxd == 0 {
		c.NRxd = DefaultNRxd
	}
	if c.NTxd == 0 {
		c.NTxd = DefaultNTxd
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"NRxd", c.NRxd}, {"NTxd", c.NTxd}} {
		if v.n < MinRingSize || v.n > MaxRingSize || v.n&(v.n-1) != 0 {
			return cfgErr(ErrConfig, v.name, v.n, "want a power of two in [%d, %d]", MinRingSize, MaxRingSize)
		}
	}
	if c.XDPMode != XDPNative && c.XDPMode != XDPGeneric {
		return cfgErr(ErrConfig, "XDPMode", int(c.XDPMode), "want XDPNative or XDPGeneric")
	}
	if c.Bind < BindAuto || c.Bind > BindZeroCopy {
		return cfgErr(ErrConfig, "Bind", int(c.Bind), "want BindAuto, BindCopy or BindZeroCopy")
	}
	return nil
}
