//go:build linux

package afxdp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one of a socket's four single-producer single-consumer rings,
// mapped from the kernel (struct xdp_ring in net/xdp/xsk_queue.h; the
// user-space halves are libxdp's struct xsk_ring_prod and xsk_ring_cons).
//
// Invariants: producer and consumer are free-running u32 indices in the
// mapping; one side owns each. For a ring we produce into (fill, TX) we own
// producer and the kernel owns consumer; for a ring we consume from (RX,
// completion) the reverse. cachedProd and cachedCons are our local copies:
// the index we own is published only by publish/release (one store per
// burst, as DPDK's rte_ring and libxdp do), and the kernel's index is
// re-read only when the cache says full or empty.
//
// Ordering: the kernel reads our index with smp_load_acquire and writes its
// own with smp_store_release (xsk_queue.h "the ring buffer" comment, barriers
// A–D). Our sync/atomic loads and stores are sequentially consistent, which
// gives both: a Load of the kernel's index is the acquire that makes the
// descriptors (or free slots) behind it visible, and a Store of ours is the
// release that publishes the descriptors we wrote before it.
type ring struct {
	mem      []byte
	producer *atomic.Uint32
	consumer *atomic.Uint32
	flags    *atomic.Uint32
	descs    unsafe.Pointer // xdp_desc[size] (RX, TX) or u64[size] (fill, completion)
	mask     uint32
	size     uint32

	cachedProd uint32
	cachedCons uint32 // for a producer ring: the kernel's consumer + size
}

// mapRing maps one ring of fd at pgoff.
func mapRing(fd int, pgoff int64, off unix.XDPRingOffset, entries uint32, descSize uintptr) (ring, error) {
	n := int(off.Desc) + int(entries)*int(descSize)
	mem, err := unix.Mmap(fd, pgoff, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, err
	}
	base := unsafe.Pointer(unsafe.SliceData(mem))
	r := ring{
		mem:      mem,
		producer: (*atomic.Uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*atomic.Uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*atomic.Uint32)(unsafe.Add(base, off.Flags)),
		descs:    unsafe.Add(base, off.Desc),
		mask:     entries - 1,
		size:     entries,
	}
	return r, nil
}

func (r *ring) unmap() {
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		*r = ring{}
	}
}

// initProd prepares a producer ring: everything free.
func (r *ring) initProd() {
	r.cachedProd = r.producer.Load()
	r.cachedCons = r.consumer.Load() + r.size
}

// initCons prepares a consumer ring.
func (r *ring) initCons() {
	r.cachedCons = r.consumer.Load()
	r.cachedProd = r.cachedCons
}

// free is xsk_prod_nb_free: free slots, at least want if the kernel's
// consumer has moved far enough (re-read only then).
func (r *ring) free(want uint32) uint32 {
	n := r.cachedCons - r.cachedProd
	if n >= want {
		return n
	}
	r.cachedCons = r.consumer.Load() + r.size // acquire: the kernel is done with those slots
	return r.cachedCons - r.cachedProd
}

// peekAvail re-reads the kernel's producer: what is there now.
func (r *ring) peekAvail() uint32 {
	r.cachedProd = r.producer.Load()
	return r.cachedProd - r.cachedCons
}

// publish is xsk_ring_prod__submit: make the slots written up to
// cachedProd visible to the kernel.
func (r *ring) publish() { r.producer.Store(r.cachedProd) } // release: the descriptors

// release is xsk_ring_cons__release: give the consumed slots back.
func (r *ring) release() { r.consumer.Store(r.cachedCons) } // release: we are done reading them

// needWakeup is xsk_ring_prod__needs_wakeup.
func (r *ring) needWakeup() bool { return r.flags.Load()&unix.XDP_RING_NEED_WAKEUP != 0 }

// pending is, for a producer ring, how many published slots the kernel has
// not consumed yet.
func (r *ring) pending() uint32 { return r.producer.Load() - r.consumer.Load() }

// addr is the u64 slot i of a fill or completion ring.
func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

// desc is the xdp_desc slot i of an RX or TX ring.
func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}
