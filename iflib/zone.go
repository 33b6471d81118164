package iflib

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/internal/callsite"
	"github.com/goiflib/goiflib/internal/race"
)

// Cluster sizes of FreeBSD's mbuf cluster zones (sys/sys/mbuf.h).
const (
	MCLBytes     = 2048  // MCLBYTES: zone_clust
	MJumPageSize = 4096  // MJUMPAGESIZE on 4 KiB-page machines: zone_jumbop
	MJum9Bytes   = 9216  // MJUM9BYTES: zone_jumbo9
	MJum16Bytes  = 16384 // MJUM16BYTES: zone_jumbo16
)

// Zone is a packet zone: FreeBSD's zone_pack, which caches mbuf+cluster
// pairs of one cluster size. Its clusters are carved once from DMA-capable
// memory of a busdma address space, so every buffer can be loaded by a
// device tag of that space, and the steady state allocates nothing.
//
// Invariants: each Packet is either in the depot or a cache (free = true)
// or owned by exactly one holder (a caller, a ring slot, a free-list slot).
// The depot is a ring of the zone's packets under mu, taken from LIFO (the
// cache-warm packet first); [ZoneCache] moves packets in batches so that a
// queue takes mu once per batch rather than once per packet.
//
// Misuse: freeing a free packet is ignored and counted (DoubleFrees), and
// Transmit refuses a free packet with ErrUseAfterFree. Because the depot
// is LIFO, a stale pointer is usually handed out again at once and then
// looks live: a retried Transmit of a packet a failed Transmit freed sends
// the next owner's data with a nil error. Debug mode ([Zone.SetDebug])
// makes the zone hand packets out in FIFO order (a quarantine: a freed
// packet comes back only after every other free packet went out) with
// the ZoneCaches passed through, and remember where each was freed, so
// stale uses are caught (ErrUseAfterFree) and reported with the free site.
//
// Debug mode is on by default in race-detector builds (go test -race,
// go build -race; [DebugZonesByDefault]), as the Go runtime turns on its
// own checks there; SetDebug(nil) turns it off for one zone. Without
// -race it is off: its cost, a stack capture (runtime.Callers, no
// allocation) per free and the zone lock per Get and Free (ZoneCaches pass
// through), is measured by BenchmarkZoneDebug (go test -run '^$' -bench
// BenchmarkZoneDebug ./iflib).
type Zone struct {
	name   string
	size   int
	pkts   []Packet
	chunks [][]byte // the clusters' memory, one chunk each (AllocChunks)
	space  busdma.Space

	mu sync.Mutex
	// depot (guarded by mu) is a ring of the free packets: n of them from
	// head on, cap(depot) = len(pkts) (a packet is in it at most once).
	// LIFO takes the newest (depot[head+n-1]), FIFO the oldest (depot[head]).
	depot   []*Packet
	head, n int
	waiters []chan struct{} // guarded by mu: GetWait callers, FIFO
	// closed is set (with mu held) by Close once the memory went back to
	// the space; every Get after it fails with ErrZoneClosed.
	closed atomic.Bool
	// orphan is set by closeWhenIdle: the zone's owner is gone, and the
	// last packet to come back closes it.
	orphan atomic.Bool

	debug atomic.Pointer[zoneDebug]

	allocs atomic.Uint64 // packets handed out (uma allocs)
	frees  atomic.Uint64 // packets returned
	fails  atomic.Uint64 // Get on an empty zone (uma fails)
	double atomic.Uint64 // double frees caught and ignored
}

// ZoneDebug receives a zone's misuse reports (see Zone.SetDebug).
type ZoneDebug struct {
	// Report is called for each misuse with a message naming the packet,
	// where it was freed and where it was used again. nil: the misuse is
	// still refused (ErrUseAfterFree) and reported to the device's busdma
	// checker, if it has one.
	Report func(msg string)
}

// DebugZonesByDefault is true in race-detector builds: every new Zone
// starts in debug mode (see Zone.SetDebug), as if SetDebug(&ZoneDebug{})
// had been called. It is false otherwise.
const DebugZonesByDefault = race.Enabled

// siteDepth is how many frames of a free's stack debug mode keeps.
const siteDepth = 16

// zoneDebug is a zone's debug state: the reporter and, per packet (by
// Packet.idx), the program counters of its last free. Written by the
// freeing goroutine before the packet goes back to the depot.
type zoneDebug struct {
	report func(msg string)
	sites  [][siteDepth]uintptr
}

// NewZone carves count clusters of clusterSize bytes from space, each
// contiguous in bus addresses (busdma's AllocChunks, as FreeBSD's jumbo
// cluster zones are physically contiguous), so that a tag that allows
// clusterSize bytes in one segment loads any of them as one segment.
// Zone.Close gives the memory back.
func NewZone(space busdma.Space, name string, clusterSize, count int) (*Zone, error) {
	if space == nil {
		return nil, cfgErr("Zone.space", nil, "nil address space")
	}
	const maxZoneBytes = 1 << 40
	if clusterSize <= 0 || count <= 0 || clusterSize > maxZoneBytes/count {
		return nil, cfgErr("Zone.size", fmt.Sprintf("%d×%d", count, clusterSize), "cluster size and count must be positive and their product below 1 TiB")
	}
	chunks, err := space.AllocChunks(clusterSize, count, min(clusterSize&-clusterSize, pageSize))
	if err != nil {
		return nil, fmt.Errorf("iflib: zone %s: %w", name, err)
	}
	z := &Zone{name: name, size: clusterSize, pkts: make([]Packet, count), depot: make([]*Packet, count), chunks: chunks, space: space}
	for i := range z.pkts {
		p := &z.pkts[i]
		p.cl = chunks[i][:clusterSize:clusterSize]
		p.zone = z
		p.idx = int32(i)
		p.free.Store(true)
		z.depot[i] = p
	}
	z.n = count
	if DebugZonesByDefault {
		z.SetDebug(&ZoneDebug{})
	}
	return z, nil
}

// Name returns the zone's name.
func (z *Zone) Name() string { return z.name }

// ClusterSize returns the size of the zone's clusters.
func (z *Zone) ClusterSize() int { return z.size }

// Size returns the number of packets the zone holds in all.
func (z *Zone) Size() int { return len(z.pkts) }

// Available returns how many packets are in the depot now (not counting caches).
func (z *Zone) Available() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.n
}

// Outstanding returns how many packets are out of the depot and its
// caches' hands: held by callers, rings, free lists or the stack.
func (z *Zone) Outstanding() int {
	n := 0
	for i := range z.pkts {
		if !z.pkts[i].free.Load() {
			n++
		}
	}
	return n
}

// SetDebug turns on the zone's misuse detection (nil turns it off): packets
// are handed out in FIFO order so that a freed packet is not reused while
// any other free packet is left (ZoneCaches pass through to the depot),
// each free records its stack, and a use after free or a double free is
// reported to d.Report, naming where the packet was freed and where it was
// used again. A stale pointer is caught while its packet is in the
// quarantine: once every other free packet was handed out, it is handed out
// again and looks live. On by default in race-detector builds
// ([DebugZonesByDefault]). Its cost without -race: BenchmarkZoneDebug.
func (z *Zone) SetDebug(d *ZoneDebug) {
	if d == nil {
		z.debug.Store(nil)
		return
	}
	z.debug.Store(&zoneDebug{report: d.Report, sites: make([][siteDepth]uintptr, len(z.pkts))})
}

// Debug reports whether the zone is in debug mode (SetDebug, or
// DebugZonesByDefault).
func (z *Zone) Debug() bool { return z.debug.Load() != nil }

// ZoneStats are the zone's counters.
type ZoneStats struct {
	Allocs, Frees, Fails, DoubleFrees uint64
}

// Stats returns the zone's counters.
func (z *Zone) Stats() ZoneStats {
	return ZoneStats{z.allocs.Load(), z.frees.Load(), z.fails.Load(), z.double.Load()}
}

// Get is m_getcl(M_NOWAIT, MT_DATA, M_PKTHDR): a packet with an empty
// cluster and a zeroed header, or ErrNoPackets (the zone is empty) or
// ErrZoneClosed.
func (z *Zone) Get() (*Packet, error) {
	z.mu.Lock()
	if z.closed.Load() {
		z.mu.Unlock()
		return nil, ErrZoneClosed
	}
	p := z.pop()
	z.mu.Unlock()
	if p == nil {
		z.fails.Add(1)
		return nil, ErrNoPackets
	}
	z.take(p)
	z.allocs.Add(1)
	return p, nil
}

// GetWait is m_getcl(M_WAITOK, ...): like Get, but when the zone is empty
// it waits until a packet is freed or ctx is done (then it returns
// ctx.Err()). Waiters are served in arrival order. A sender in drbr mode
// that must not drop blocks here instead of failing when its queued
// packets hold the whole zone. On a closed zone, or one that closes while
// it waits, it returns ErrZoneClosed.
func (z *Zone) GetWait(ctx context.Context) (*Packet, error) {
	for {
		z.mu.Lock()
		if z.closed.Load() {
			z.mu.Unlock()
			return nil, ErrZoneClosed
		}
		if p := z.pop(); p != nil {
			z.mu.Unlock()
			z.take(p)
			z.allocs.Add(1)
			return p, nil
		}
		ch := make(chan struct{})
		z.waiters = append(z.waiters, ch)
		z.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			z.mu.Lock()
			if i := slices.Index(z.waiters, ch); i >= 0 {
				z.waiters = slices.Delete(z.waiters, i, i+1)
			} else {
				// A free chose us as we gave up: pass the wake-up on.
				z.wakeLocked()
			}
			z.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// pop takes a packet from the depot (LIFO; FIFO in debug mode).
// Preconditions: z.mu held.
func (z *Zone) pop() *Packet {
	if z.n == 0 {
		return nil
	}
	i := z.head
	if z.debug.Load() != nil {
		if z.head++; z.head == len(z.depot) {
			z.head = 0
		}
	} else if i += z.n - 1; i >= len(z.depot) {
		i -= len(z.depot)
	}
	z.n--
	p := z.depot[i]
	z.depot[i] = nil
	return p
}

// push puts a free packet in the depot.
// Preconditions: z.mu held; p is not in the depot.
func (z *Zone) push(p *Packet) {
	i := z.head + z.n
	if i >= len(z.depot) {
		i -= len(z.depot)
	}
	z.depot[i] = p
	z.n++
}

// wakeLocked wakes the oldest GetWait caller.
// Preconditions: z.mu held.
func (z *Zone) wakeLocked() {
	if len(z.waiters) > 0 && z.n > 0 {
		close(z.waiters[0])
		z.waiters = z.waiters[1:]
	}
}

// take marks p handed out and empties it. The caller counts the alloc.
func (z *Zone) take(p *Packet) {
	p.free.Store(false)
	p.Next = nil
	p.Hdr = PktHdr{}
	p.off, p.n = 0, 0
}

// release marks p free. It reports false (and counts a double free) when p
// already was. The caller counts the free.
func (z *Zone) release(p *Packet) bool {
	d := z.debug.Load()
	if !p.free.CompareAndSwap(false, true) {
		z.double.Add(1)
		if d != nil && d.report != nil {
			d.report(fmt.Sprintf("iflib: zone %s: packet %p freed twice: first at %s, again at %s", z.name, p, d.site(p), callerSite()))
		}
		return false
	}
	if d != nil {
		// The stack of this free (runtime.Callers: no allocation), named
		// only if the packet is misused (site).
		s := &d.sites[p.idx]
		clear(s[runtime.Callers(2, s[:]):])
	}
	p.Next = nil
	if z.orphan.Load() {
		z.closeIfIdle()
	}
	return true
}

// closeWhenIdle is Close for an owner that goes away (iflib's RX zones at
// Detach): if packets are still out (held by the stack, or queued on
// another interface), it returns their *LeakError and the zone closes
// itself, returning its memory, when the last of them comes back.
func (z *Zone) closeWhenIdle() error {
	err := z.Close()
	if err != nil {
		z.orphan.Store(true)
		z.closeIfIdle() // the last packet may have come back meanwhile
	}
	return err
}

// closeIfIdle closes an orphaned zone once every packet is back.
func (z *Zone) closeIfIdle() {
	if !z.closed.Load() && z.Outstanding() == 0 {
		_ = z.Close()
	}
}

func (z *Zone) put(p *Packet) {
	if !z.release(p) {
		return
	}
	z.frees.Add(1)
	z.mu.Lock()
	z.push(p)
	z.wakeLocked()
	z.mu.Unlock()
}

// usedAfterFree reports a use of a free packet (see ErrUseAfterFree) to the
// debug reporter and returns the message.
func (z *Zone) usedAfterFree(p *Packet, use string) string {
	d := z.debug.Load()
	msg := fmt.Sprintf("iflib: zone %s: packet %p used after free: freed at %s, %s at %s", z.name, p, d.site(p), use, callerSite())
	if d != nil && d.report != nil {
		d.report(msg)
	}
	return msg
}

// site names where p was last freed: the first frame outside iflib of the
// stack its free recorded.
func (d *zoneDebug) site(p *Packet) string {
	if d == nil {
		return "? (Zone.SetDebug records it)"
	}
	return callsite.OutsideOf("github.com/goiflib/goiflib/iflib", d.sites[p.idx][:])
}

// callerSite is the first caller outside this package.
func callerSite() string { return callsite.Outside("github.com/goiflib/goiflib/iflib") }

// getBatch moves up to len(dst) packets from the depot into dst.
func (z *Zone) getBatch(dst []*Packet) int {
	z.mu.Lock()
	k := 0
	for k < len(dst) {
		p := z.pop()
		if p == nil {
			break
		}
		dst[k] = p
		k++
	}
	z.mu.Unlock()
	return k
}

// putBatch returns packets (already marked free) to the depot.
func (z *Zone) putBatch(src []*Packet) {
	z.mu.Lock()
	for _, p := range src {
		z.push(p)
		z.wakeLocked()
	}
	z.mu.Unlock()
}

// Close releases the zone's memory to its address space when every packet
// is back (in the depot or a ZoneCache). With packets still out it returns
// a *LeakError and keeps the memory (so that those packets stay valid),
// and the zone stays usable. Once closed, Get, GetWait and ZoneCache.Get
// fail with ErrZoneClosed (a GetWait waiting then returns it too), and
// packets left in a ZoneCache are never handed out again. Close is
// idempotent.
func (z *Zone) Close() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed.Load() {
		return nil
	}
	// Closed first, then counted: a ZoneCache.Get that takes a packet
	// after the count sees closed and puts it back (see ZoneCache.Get).
	z.closed.Store(true)
	if out := z.Outstanding(); out > 0 {
		z.closed.Store(false)
		return &LeakError{Zones: []ZoneLeak{{Zone: z.name, Outstanding: out, Size: len(z.pkts)}}}
	}
	for _, w := range z.waiters {
		close(w)
	}
	z.waiters = nil
	var errs []error
	for _, c := range z.chunks {
		if err := z.space.Free(c); err != nil {
			errs = append(errs, err)
		}
	}
	z.chunks = nil
	return errors.Join(errs...)
}

// ZoneCache is a per-queue (or per-goroutine) cache in front of a Zone,
// like UMA's per-CPU buckets: Get and Put touch only the cache, which
// refills and spills half a bucket at a time under the zone's lock.
// A bucket holds at most ZoneCacheBucket packets and at most a sixteenth of
// the zone, so that caches never starve the zone's other users; a cache of
// a zone too small for that (and every cache in debug mode) passes
// straight through to the zone. A ZoneCache is not safe for concurrent use.
type ZoneCache struct {
	z     *Zone
	stack []*Packet
	// allocs and frees are counted here and added to the zone's counters
	// when the cache refills, spills or flushes: no locked instruction per
	// packet for statistics.
	allocs, frees uint64
}

// publish adds the cache's counts to the zone's.
func (c *ZoneCache) publish() {
	if c.allocs != 0 {
		c.z.allocs.Add(c.allocs)
		c.allocs = 0
	}
	if c.frees != 0 {
		c.z.frees.Add(c.frees)
		c.frees = 0
	}
}

// ZoneCacheBucket is the largest bucket (UMA buckets are of this order).
const ZoneCacheBucket = 64

// NewCache returns an empty cache in front of z.
func (z *Zone) NewCache() *ZoneCache {
	return &ZoneCache{z: z, stack: make([]*Packet, 0, min(ZoneCacheBucket, len(z.pkts)/16))}
}

// passThrough reports whether the cache hands everything to the zone.
func (c *ZoneCache) passThrough() bool { return cap(c.stack) < 2 || c.z.debug.Load() != nil }

// Zone returns the cache's zone.
func (c *ZoneCache) Zone() *Zone { return c.z }

// Get is Zone.Get through the cache: ErrNoPackets when the zone is empty,
// ErrZoneClosed once it was closed (the cached packets' memory went back to
// the space with the zone's).
func (c *ZoneCache) Get() (*Packet, error) {
	if c.z.closed.Load() {
		return nil, ErrZoneClosed
	}
	if len(c.stack) == 0 {
		if c.passThrough() {
			return c.z.Get()
		}
		c.publish()
		k := c.z.getBatch(c.stack[:cap(c.stack)/2])
		if k == 0 {
			c.z.fails.Add(1)
			return nil, ErrNoPackets
		}
		c.stack = c.stack[:k]
	}
	n := len(c.stack) - 1
	p := c.stack[n]
	c.z.take(p)
	if c.z.closed.Load() {
		// Close ran since the check above: it counted p free, so p's memory
		// is the space's again. Leave p in the cache, free.
		p.free.Store(true)
		return nil, ErrZoneClosed
	}
	c.stack[n] = nil
	c.stack = c.stack[:n]
	c.allocs++
	return p, nil
}

// Put frees a whole chain into the cache (m_freem). Buffers of other zones
// go straight to their own zone.
func (c *ZoneCache) Put(p *Packet) {
	direct := c.passThrough()
	for p != nil {
		next := p.Next
		if p.zone != c.z || direct {
			p.zone.put(p)
			p = next
			continue
		}
		if !c.z.release(p) {
			p = next
			continue
		}
		c.frees++
		if len(c.stack) == cap(c.stack) {
			c.publish()
			half := cap(c.stack) / 2
			c.z.putBatch(c.stack[half:])
			clear(c.stack[half:])
			c.stack = c.stack[:half]
		}
		c.stack = append(c.stack, p)
		p = next
	}
}

// Flush returns every cached packet to the zone and publishes the cache's
// counts.
func (c *ZoneCache) Flush() {
	c.publish()
	c.z.putBatch(c.stack)
	clear(c.stack)
	c.stack = c.stack[:0]
}
