package afxdp

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// XDPMode chooses where the redirect program runs.
type XDPMode int

const (
	// XDPNative attaches in the driver's receive path (XDP_FLAGS_DRV_MODE):
	// veth runs it in its NAPI poll before an skb exists.
	XDPNative XDPMode = iota
	// XDPGeneric attaches after the skb is built (XDP_FLAGS_SKB_MODE); any
	// interface has it.
	XDPGeneric
)

func (m XDPMode) String() string {
	if m == XDPGeneric {
		return "generic"
	}
	return "native"
}

func (m XDPMode) flags() link.XDPAttachFlags {
	if m == XDPGeneric {
		return link.XDPGenericMode
	}
	return link.XDPDriverMode
}

// xdpRedirect is the redirect program and its XSKMAP: for a frame received
// on queue q, bpf_redirect_map(&xsks, q, XDP_PASS) hands it to the socket
// at key q, and passes it to the stack when there is none (the low bits of
// the flags argument are the action on a failed lookup, Linux 5.3+).
type xdpRedirect struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	lnk  link.Link
}

// xdpMDRxQueueIndex is offsetof(struct xdp_md, rx_queue_index)
// (include/uapi/linux/bpf.h: data, data_end, data_meta, ingress_ifindex,
// rx_queue_index, each a u32).
const xdpMDRxQueueIndex = 16

// redirectInsns is the program: five instructions, no clang.
func redirectInsns(mapFD int) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, xdpMDRxQueueIndex, asm.Word), // r2 = ctx->rx_queue_index
		asm.LoadMapPtr(asm.R1, mapFD),                            // r1 = &xsks
		asm.Mov.Imm(asm.R3, 2),                                   // r3 = XDP_PASS (fallback action)
		asm.FnRedirectMap.Call(),                                 // r0 = bpf_redirect_map(r1, r2, r3)
		asm.Return(),
	}
}

// loadRedirect creates the XSKMAP (entries keys 0..entries-1) and loads the
// program, with BPF_F_XDP_HAS_FRAGS when frags is set (the program then
// sees multi-buffer frames, and a native veth lets its peer's MTU exceed
// one page). It attaches nothing. Errors from bpf(2) that mean "not
// allowed or not there" wrap ErrUnavailable.
func loadRedirect(entries int, frags bool) (*xdpRedirect, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: "goiflib_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(entries),
	})
	if err != nil {
		return nil, bpfErr("create XSKMAP", err)
	}
	spec := &ebpf.ProgramSpec{
		Name: "goiflib_xsk", Type: ebpf.XDP, License: "Dual BSD/GPL",
		Instructions: redirectInsns(m.FD()),
	}
	if frags {
		spec.Flags = unix.BPF_F_XDP_HAS_FRAGS
	}
	p, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogDisabled: true})
	if err != nil {
		_ = m.Close()
		return nil, bpfErr("load XDP program", err)
	}
	return &xdpRedirect{xsks: m, prog: p}, nil
}

// fragsProbe remembers whether the kernel loads XDP programs with
// BPF_F_XDP_HAS_FRAGS (XDP multi-buffer, Linux 5.18+).
var fragsProbe struct {
	once sync.Once
	ok   bool
	err  error
}

// xdpFragsSupported says whether the kernel takes frags-aware XDP
// programs; err is set when bpf(2) itself is out of reach.
func xdpFragsSupported() (bool, error) {
	fragsProbe.once.Do(func() {
		r, err := loadRedirect(1, true)
		if err == nil {
			fragsProbe.ok = true
			_ = r.close()
			return
		}
		if errors.Is(err, ErrUnavailable) && !errors.Is(err, unix.EINVAL) {
			fragsProbe.err = err
		}
	})
	return fragsProbe.ok, fragsProbe.err
}

func bpfErr(what string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	return fmt.Errorf("afxdp: %s: %w", what, err)
}

// set puts socket fd at key queue.
func (r *xdpRedirect) set(queue, fd int) error {
	if err := r.xsks.Put(uint32(queue), uint32(fd)); err != nil {
		return fmt.Errorf("afxdp: XSKMAP[%d] = socket: %w", queue, err)
	}
	return nil
}

// attach links the program to interface ifname (index ifindex; a
// bpf_link: the kernel removes it when the last reference goes, so a
// crashed process leaves nothing attached). Must run in the interface's
// network namespace. frags says the program was loaded frags-aware; the
// kernel's reason for ERANGE and EINVAL travels only in a netlink extack,
// which BPF_LINK_CREATE does not carry, so the error spells out the usual
// cause.
func (r *xdpRedirect) attach(ifname string, ifindex int, mode XDPMode, frags bool) error {
	l, err := link.AttachXDP(link.XDPOptions{Program: r.prog, Interface: ifindex, Flags: mode.flags()})
	if err != nil {
		return attachErr(err, ifname, mode, frags)
	}
	r.lnk = l
	return nil
}

// attachErr explains a refused XDP attach.
func attachErr(err error, ifname string, mode XDPMode, frags bool) error {
	switch {
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EEXIST):
		return fmt.Errorf("afxdp: attach %s XDP to %s: another XDP program is attached: %w", mode, ifname, err)
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w: %s XDP on %s: %w", ErrUnavailable, mode, ifname, err)
	case mode == XDPNative && errors.Is(err, unix.EINVAL):
		return fmt.Errorf("afxdp: attach native XDP to %s: the kernel refused it (for a veth: its MTU or its peer's too large for native XDP, or fewer RX queues than the peer has TX queues); XDPGeneric avoids both: %w",
			ifname, err)
	case mode == XDPNative && errors.Is(err, unix.ERANGE):
		why := "a single-buffer XDP program (this kernel has no XDP multi-buffer)"
		if frags {
			why = "even a multi-buffer (frags) XDP program"
		}
		return fmt.Errorf("%w: attach native XDP to %s: the kernel refused %s because of an MTU: that of %s, or for a veth that of its peer, is too large for native XDP (a veth peer's MTU must fit one page, about 3500 bytes, without multi-buffer); lower it or use XDPGeneric: %w",
			ErrFrameTooBig, ifname, why, ifname, err)
	}
	return bpfErr(fmt.Sprintf("attach %s XDP to %s", mode, ifname), err)
}

// close detaches and releases everything; safe on a partly built value.
func (r *xdpRedirect) close() error {
	var errs []error
	if r.lnk != nil {
		errs = append(errs, r.lnk.Close())
		r.lnk = nil
	}
	if r.prog != nil {
		errs = append(errs, r.prog.Close())
		r.prog = nil
	}
	if r.xsks != nil {
		errs = append(errs, r.xsks.Close())
		r.xsks = nil
	}
	return errors.Join(errs...)
}
