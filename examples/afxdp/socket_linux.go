package afxdp

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BindMode chooses how a socket binds (sockaddr_xdp.sxdp_flags).
type BindMode int

const (
	// BindAuto tries XDP_ZEROCOPY and falls back to XDP_COPY when the
	// interface's driver answers EOPNOTSUPP (veth, and any driver without
	// ndo_xsk_wakeup), reporting the fallback through Config.Logf.
	BindAuto BindMode = iota
	// BindCopy binds with XDP_COPY: the kernel copies each frame between
	// the UMEM and an skb (or the driver's buffer).
	BindCopy
	// BindZeroCopy binds with XDP_ZEROCOPY and fails with ErrZeroCopy when
	// the driver cannot.
	BindZeroCopy
)

func (m BindMode) String() string {
	switch m {
	case BindCopy:
		return "copy"
	case BindZeroCopy:
		return "zero-copy"
	}
	return "auto"
}

// ringSizes are the entries of a socket's four rings (powers of two).
type ringSizes struct {
	fill, comp, rx, tx uint32
}

// xsk is one AF_XDP socket bound to (ifindex, queue) with its own
// registration of the UMEM and all four rings.
type xsk struct {
	fd       int
	fill     ring // XDP_UMEM_FILL_RING: we produce free frames
	comp     ring // XDP_UMEM_COMPLETION_RING: the kernel returns sent frames
	rx       ring // XDP_RX_RING: the kernel produces received frames
	tx       ring // XDP_TX_RING: we produce frames to send
	zeroCopy bool
	wakeup   bool // bound with XDP_USE_NEED_WAKEUP
	sg       bool // bound with XDP_USE_SG (multi-buffer)
}

// Implementation constants of the bind.
const (
	// bindBusyWait bounds the retries of a bind that fails with EBUSY: the
	// kernel releases a closed socket's buffer pool from a work item
	// (xp_release_deferred), so the queue stays taken for tens of ms.
	bindBusyWait = 2 * time.Second
	bindBusyStep = 5 * time.Millisecond
)

func setsockoptPtr(fd, level, opt int, p unsafe.Pointer, n uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), n, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockoptPtr(fd, level, opt int, p unsafe.Pointer, n uintptr) error {
	l := uint32(n)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// newSocket creates an AF_XDP socket in the calling thread's network
// namespace, registers u on it and maps the rings (sizes zero are not
// created). It does not bind. A kernel without AF_XDP gives ErrUnavailable.
func newSocket(u *UMEM, sz ringSizes) (*xsk, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%w: socket(AF_XDP): %w", ErrUnavailable, err)
		}
		return nil, fmt.Errorf("afxdp: socket(AF_XDP): %w", err)
	}
	s := &xsk{fd: fd}
	if err := s.setup(u, sz); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *xsk) setup(u *UMEM, sz ringSizes) error {
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(u.mem)))),
		Len:  uint64(len(u.mem)),
		Size: uint32(u.frameSize),
	}
	if err := setsockoptPtr(s.fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) {
			return fmt.Errorf("afxdp: XDP_UMEM_REG of %d bytes: %w (RLIMIT_MEMLOCK without CAP_IPC_LOCK?)", len(u.mem), err)
		}
		return fmt.Errorf("afxdp: XDP_UMEM_REG: %w", err)
	}
	for _, o := range []struct {
		opt int
		n   uint32
	}{{unix.XDP_UMEM_FILL_RING, sz.fill}, {unix.XDP_UMEM_COMPLETION_RING, sz.comp}, {unix.XDP_RX_RING, sz.rx}, {unix.XDP_TX_RING, sz.tx}} {
		if o.n == 0 {
			continue
		}
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, o.opt, int(o.n)); err != nil {
			return fmt.Errorf("afxdp: ring option %d = %d: %w", o.opt, o.n, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockoptPtr(s.fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return fmt.Errorf("afxdp: XDP_MMAP_OFFSETS: %w", err)
	}
	var err error
	const addrSize, descSize = 8, unsafe.Sizeof(unix.XDPDesc{})
	if s.fill, err = mapRing(s.fd, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, sz.fill, addrSize); err != nil {
		return fmt.Errorf("afxdp: mmap fill ring: %w", err)
	}
	if s.comp, err = mapRing(s.fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, sz.comp, addrSize); err != nil {
		return fmt.Errorf("afxdp: mmap completion ring: %w", err)
	}
	if sz.rx > 0 {
		if s.rx, err = mapRing(s.fd, unix.XDP_PGOFF_RX_RING, off.Rx, sz.rx, descSize); err != nil {
			return fmt.Errorf("afxdp: mmap RX ring: %w", err)
		}
		s.rx.initCons()
	}
	if sz.tx > 0 {
		if s.tx, err = mapRing(s.fd, unix.XDP_PGOFF_TX_RING, off.Tx, sz.tx, descSize); err != nil {
			return fmt.Errorf("afxdp: mmap TX ring: %w", err)
		}
		s.tx.initProd()
		// XDP_MAX_TX_SKB_BUDGET (Linux 6.17+): let one sendto() send the
		// whole ring in copy mode instead of 32 frames. Older kernels say
		// ENOPROTOOPT; then the kick loops.
		_ = unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, int(sz.tx))
	}
	s.fill.initProd()
	s.comp.initCons()
	return nil
}

// bind binds the socket to queue of interface ifname (index ifindex).
// mode decides copy or zero-copy; sg asks for multi-buffer frames
// (XDP_USE_SG: a frame spans several chunks, chained by XDP_PKT_CONTD);
// logf reports a zero-copy fallback. EBUSY (the queue's previous socket
// still being released, or another socket holding it) is retried for up
// to bindBusyWait.
func (s *xsk) bind(ifname string, ifindex, queue int, mode BindMode, sg bool, logf func(string, ...any)) error {
	extra := uint16(unix.XDP_USE_NEED_WAKEUP)
	if sg {
		extra |= unix.XDP_USE_SG
	}
	try := func(flags uint16) error {
		sa := &unix.SockaddrXDP{Flags: flags | extra, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
		deadline := time.Now().Add(bindBusyWait)
		for {
			err := unix.Bind(s.fd, sa)
			if err == nil {
				s.wakeup = true
				s.sg = sg
				return nil
			}
			if errors.Is(err, unix.EBUSY) && time.Now().Before(deadline) {
				time.Sleep(bindBusyStep)
				continue
			}
			return err
		}
	}
	b := bindTarget{ifname: ifname, queue: queue, sg: sg}
	switch mode {
	case BindCopy:
		if err := try(unix.XDP_COPY); err != nil {
			return b.err(err, "XDP_COPY")
		}
		return nil
	case BindZeroCopy:
		if err := try(unix.XDP_ZEROCOPY); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				what := "XDP_ZEROCOPY"
				if sg {
					what = "XDP_ZEROCOPY|XDP_USE_SG (zero-copy multi-buffer)"
				}
				return fmt.Errorf("%w: bind %s queue %d with %s: %w", ErrZeroCopy, ifname, queue, what, err)
			}
			return b.err(err, "XDP_ZEROCOPY")
		}
		s.zeroCopy = true
		return nil
	}
	err := try(unix.XDP_ZEROCOPY)
	if err == nil {
		s.zeroCopy = true
		return nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) {
		// Not the zero-copy attempt's fault (EBUSY: the queue is taken
		// whatever the mode): name no mode.
		return b.err(err, "")
	}
	if logf != nil {
		logf("afxdp: %s queue %d: XDP_ZEROCOPY not supported by the driver (EOPNOTSUPP); using XDP_COPY", ifname, queue)
	}
	if err := try(unix.XDP_COPY); err != nil {
		return b.err(err, "XDP_COPY")
	}
	return nil
}

// bindTarget names a bind in its errors.
type bindTarget struct {
	ifname string
	queue  int
	sg     bool
}

func (b bindTarget) err(err error, how string) error {
	what := fmt.Sprintf("bind %s queue %d", b.ifname, b.queue)
	if how != "" {
		what += " (" + how + ")"
	}
	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("afxdp: %s: the queue is already bound by another AF_XDP socket (still busy after %v): %w", what, bindBusyWait, err)
	case errors.Is(err, unix.EINVAL) && b.sg:
		return fmt.Errorf("%w: %s with XDP_USE_SG: the kernel refused AF_XDP multi-buffer (Linux 6.6+), needed for frames larger than one UMEM frame: %w", ErrFrameTooBig, what, err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%w: %s: %w", ErrQueueID, what, err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	return fmt.Errorf("afxdp: %s: %w", what, err)
}

// kickTx is the TX doorbell (sendto with MSG_DONTWAIT). EAGAIN (the copy
// mode's per-call budget spent), EBUSY and ENOBUFS are normal
// back-pressure; ENETDOWN and ENXIO mean the interface went away.
func (s *xsk) kickTx() error {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS:
		return nil
	}
	return e
}

// kickRx is the fill-ring wakeup (recvfrom with MSG_DONTWAIT), for
// zero-copy drivers that ask for it.
func (s *xsk) kickRx() {
	_, _, _ = unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}

// stats reads XDP_STATISTICS.
func (s *xsk) stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	err := getsockoptPtr(s.fd, unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

// close unmaps the rings (their mappings hold references to the socket
// file) and closes the fd, so the kernel releases the socket now. The
// caller makes sure no goroutine is inside a syscall on the fd.
func (s *xsk) close() {
	s.fill.unmap()
	s.comp.unmap()
	s.rx.unmap()
	s.tx.unmap()
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
}
