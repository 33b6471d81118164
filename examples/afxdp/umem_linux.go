package afxdp

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// Specification constants (include/uapi/linux/if_xdp.h, include/net/xdp_sock.h,
// net/xdp/xdp_umem.c).
const (
	// MinFrameSize is XDP_UMEM_MIN_CHUNK_SIZE: the smallest chunk_size
	// xdp_umem_reg accepts.
	MinFrameSize = 2048
	// PacketHeadroom is XDP_PACKET_HEADROOM: in copy mode (and in most
	// zero-copy drivers) a received frame starts this far into its chunk.
	PacketHeadroom = unix.XDP_PACKET_HEADROOM
)

// Implementation constants.
const (
	// DefaultFrameSize is one page: iflib's MJUMPAGESIZE cluster, so a
	// 1500-byte MTU frame fits after the headroom.
	DefaultFrameSize = 4096
	// DefaultFrames is the UMEM size in frames when none is given: two
	// queue pairs at the default ring sizes (each RX free list's zone is
	// iflib.DefaultRxZoneSize(nrxd) = 2×nrxd+1024 clusters; a constant
	// cannot call it) plus a TX zone of 2048 and the ring shadows.
	DefaultFrames = 2*(2*DefaultNRxd+1024) + 2048 + 64
)

// UMEMConfig configures a UMEM. The zero value works.
type UMEMConfig struct {
	// FrameSize is the chunk size (xdp_umem_reg.chunk_size): a power of
	// two from MinFrameSize to the page size. Default DefaultFrameSize.
	FrameSize int
	// Frames is the number of chunks. Default DefaultFrames.
	Frames int
}

// UMEM is the packet memory of AF_XDP sockets (struct xdp_umem): one
// anonymous mapping cut into equal frames, seen by busdma as an
// IdentitySpace, so a bus address is an offset into the UMEM — exactly what
// xdp_desc.addr and the fill and completion rings carry. Every packet zone
// that feeds a driver of this package must be carved from it (NewZone):
// a packet from elsewhere has no UMEM offset, and iflib refuses it
// (iflib.ErrWrongSpace).
//
// Several drivers (interfaces) may share one UMEM; then a packet received
// on one can be transmitted on another without a copy, because the bus
// addresses mean the same bytes for both. Each socket registers the whole
// mapping itself (XDP_UMEM_REG) rather than sharing another socket's
// registration (XDP_SHARED_UMEM), so sockets can be bound and closed in
// any order; the cost is that without CAP_IPC_LOCK the mapping counts
// against RLIMIT_MEMLOCK once per socket.
//
// A UMEM is safe for concurrent use. Close it after every driver using it
// has detached.
type UMEM struct {
	mem        []byte
	frameSize  int
	frameShift uint
	space      *busdma.IdentitySpace

	mu     sync.Mutex
	users  int  // guarded by mu: attached drivers
	closed bool // guarded by mu
}

// NewUMEM maps a UMEM. Errors: ErrFrameSize, ErrConfig (frames),
// or the mmap errno.
func NewUMEM(cfg UMEMConfig) (*UMEM, error) {
	if cfg.FrameSize == 0 {
		cfg.FrameSize = DefaultFrameSize
	}
	if cfg.Frames == 0 {
		cfg.Frames = DefaultFrames
	}
	fs := cfg.FrameSize
	if fs < MinFrameSize || fs > os.Getpagesize() || fs&(fs-1) != 0 {
		return nil, cfgErr(ErrFrameSize, "UMEMConfig.FrameSize", fs, "want a power of two in [%d, %d]", MinFrameSize, os.Getpagesize())
	}
	if cfg.Frames < 1 || cfg.Frames > 1<<22 {
		return nil, cfgErr(ErrConfig, "UMEMConfig.Frames", cfg.Frames, "want 1..%d", 1<<22)
	}
	mem, err := unix.Mmap(-1, 0, fs*cfg.Frames, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap UMEM of %d bytes: %w", fs*cfg.Frames, err)
	}
	sp, err := busdma.NewIdentitySpace(mem)
	if err != nil {
		_ = unix.Munmap(mem)
		return nil, err
	}
	u := &UMEM{mem: mem, frameSize: fs, space: sp}
	for 1<<u.frameShift < fs {
		u.frameShift++
	}
	return u, nil
}

// Space is the busdma address space of the UMEM: bus address = offset.
func (u *UMEM) Space() *busdma.IdentitySpace { return u.space }

// FrameSize is the chunk size.
func (u *UMEM) FrameSize() int { return u.frameSize }

// Frames is the number of chunks.
func (u *UMEM) Frames() int { return len(u.mem) / u.frameSize }

// Size is the UMEM's length in bytes.
func (u *UMEM) Size() int { return len(u.mem) }

// NewZone carves a packet zone of count clusters, one frame each, from the
// UMEM (iflib.NewZone on its space): the zone a program takes its
// transmit packets from. ErrUMEMTooSmall when the UMEM has no room left.
func (u *UMEM) NewZone(name string, count int) (*iflib.Zone, error) {
	z, err := iflib.NewZone(u.space, name, u.frameSize, count)
	if errors.Is(err, busdma.ErrNoMem) {
		return nil, fmt.Errorf("%w: zone %s of %d frames: %w", ErrUMEMTooSmall, name, count, err)
	}
	return z, err
}

// acquire and release count the drivers on the UMEM.
func (u *UMEM) acquire() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return ErrClosed
	}
	u.users++
	return nil
}

func (u *UMEM) release() {
	u.mu.Lock()
	u.users--
	u.mu.Unlock()
}

// Close unmaps the UMEM. ErrBusy while a driver still uses it; a second
// Close returns ErrClosed. The kernel may still hold the pages pinned for
// a moment after the last socket closed (its UMEM release is deferred);
// that does not reach this mapping.
func (u *UMEM) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return ErrClosed
	}
	if u.users > 0 {
		return fmt.Errorf("%w: %d drivers attached", ErrBusy, u.users)
	}
	u.closed = true
	return unix.Munmap(u.mem)
}
