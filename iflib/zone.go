package iflib

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goiflib/goiflib/busdma"
)

// Cluster sizes of FreeBSD's mbuf cluster zones (sys/sys/mbuf.h).
const (
	MCLBytes     = 2048 // MCLBYTES: zone_clust
	MJumPageSize = 4096 // MJUMPAGESIZE on 4 KiB-page machines: zone_jumbop
	MJum9Bytes   = 9216 // MJUM9BYTES: zone_jumbo9
)

// Zone is a packet zone: FreeBSD's zone_pack, which caches mbuf+cluster
// pairs of one cluster size. Its clusters are carved once from DMA-capable
// memory of a busdma address space, so every buffer can be loaded by a
// device tag of that space, and the steady state allocates nothing.
//
// Invariants: each Packet is either in the depot (free=true) or owned by
// exactly one holder (a caller, a ring slot, a free-list slot, a cache).
// The depot is a LIFO stack under mu; [ZoneCache] moves packets in batches
// so that a queue takes mu once per batch rather than once per packet.
type Zone struct {
	name  string
	size  int
	pkts  []Packet
	mu    sync.Mutex
	stack []*Packet // guarded by mu: the free packets

	allocs atomic.Uint64 // packets handed out (uma allocs)
	frees  atomic.Uint64 // packets returned
	fails  atomic.Uint64 // Get on an empty zone (uma fails)
	double atomic.Uint64 // double frees caught and ignored
}

// NewZone carves count clusters of clusterSize bytes from space.
func NewZone(space busdma.Space, name string, clusterSize, count int) (*Zone, error) {
	if space == nil {
		return nil, cfgErr("Zone.space", nil, "nil address space")
	}
	if clusterSize <= 0 || count <= 0 {
		return nil, cfgErr("Zone.size", fmt.Sprintf("%d×%d", count, clusterSize), "cluster size and count must be positive")
	}
	mem, err := space.Alloc(clusterSize*count, clusterSize&-clusterSize)
	if err != nil {
		return nil, fmt.Errorf("iflib: zone %s: %w", name, err)
	}
	z := &Zone{name: name, size: clusterSize, pkts: make([]Packet, count), stack: make([]*Packet, 0, count)}
	for i := range z.pkts {
		p := &z.pkts[i]
		p.cl = mem[i*clusterSize : (i+1)*clusterSize : (i+1)*clusterSize]
		p.zone = z
		p.free.Store(true)
		z.stack = append(z.stack, p)
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
	return len(z.stack)
}

// ZoneStats are the zone's counters.
type ZoneStats struct {
	Allocs, Frees, Fails, DoubleFrees uint64
}

// Stats returns the zone's counters.
func (z *Zone) Stats() ZoneStats {
	return ZoneStats{z.allocs.Load(), z.frees.Load(), z.fails.Load(), z.double.Load()}
}

// Get is m_getcl(M_NOWAIT, MT_DATA, M_PKTHDR): a packet with an empty
// cluster and a zeroed header, or ErrNoPackets.
func (z *Zone) Get() (*Packet, error) {
	z.mu.Lock()
	n := len(z.stack)
	if n == 0 {
		z.mu.Unlock()
		z.fails.Add(1)
		return nil, ErrNoPackets
	}
	p := z.stack[n-1]
	z.stack = z.stack[:n-1]
	z.mu.Unlock()
	z.take(p)
	return p, nil
}

func (z *Zone) take(p *Packet) {
	p.free.Store(false)
	p.Next = nil
	p.Hdr = PktHdr{}
	p.off, p.n = 0, 0
	z.allocs.Add(1)
}

func (z *Zone) put(p *Packet) {
	if !p.free.CompareAndSwap(false, true) {
		z.double.Add(1)
		return
	}
	p.Next = nil
	z.frees.Add(1)
	z.mu.Lock()
	z.stack = append(z.stack, p)
	z.mu.Unlock()
}

// getBatch moves up to len(dst) packets from the depot into dst.
func (z *Zone) getBatch(dst []*Packet) int {
	z.mu.Lock()
	n := len(z.stack)
	k := len(dst)
	if k > n {
		k = n
	}
	copy(dst, z.stack[n-k:])
	z.stack = z.stack[:n-k]
	z.mu.Unlock()
	return k
}

// putBatch returns packets (already marked free) to the depot.
func (z *Zone) putBatch(src []*Packet) {
	z.mu.Lock()
	z.stack = append(z.stack, src...)
	z.mu.Unlock()
}

// ZoneCache is a per-queue (or per-goroutine) cache in front of a Zone,
// like UMA's per-CPU buckets: Get and Put touch only the cache, which
// refills and spills half a bucket at a time under the zone's lock.
// A ZoneCache is not safe for concurrent use.
type ZoneCache struct {
	z     *Zone
	stack []*Packet
}

// ZoneCacheBucket is the cache's capacity (UMA buckets are of this order).
const ZoneCacheBucket = 64

// NewCache returns an empty cache in front of z.
func (z *Zone) NewCache() *ZoneCache {
	return &ZoneCache{z: z, stack: make([]*Packet, 0, ZoneCacheBucket)}
}

// Zone returns the cache's zone.
func (c *ZoneCache) Zone() *Zone { return c.z }

// Get is Zone.Get through the cache.
func (c *ZoneCache) Get() (*Packet, error) {
	if len(c.stack) == 0 {
		k := c.z.getBatch(c.stack[:ZoneCacheBucket/2])
		if k == 0 {
			c.z.fails.Add(1)
			return nil, ErrNoPackets
		}
		c.stack = c.stack[:k]
	}
	n := len(c.stack) - 1
	p := c.stack[n]
	c.stack = c.stack[:n]
	c.z.take(p)
	return p, nil
}

// Put frees a whole chain into the cache (m_freem). Buffers of other zones
// go straight to their own zone.
func (c *ZoneCache) Put(p *Packet) {
	for p != nil {
		next := p.Next
		if p.zone != c.z {
			p.zone.put(p)
			p = next
			continue
		}
		if !p.free.CompareAndSwap(false, true) {
			c.z.double.Add(1)
			p = next
			continue
		}
		p.Next = nil
		c.z.frees.Add(1)
		if len(c.stack) == cap(c.stack) {
			half := cap(c.stack) / 2
			c.z.putBatch(c.stack[half:])
			c.stack = c.stack[:half]
		}
		c.stack = append(c.stack, p)
		p = next
	}
}

// Flush returns every cached packet to the zone.
func (c *ZoneCache) Flush() {
	c.z.putBatch(c.stack)
	c.stack = c.stack[:0]
}
