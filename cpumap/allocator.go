package cpumap

import (
	"fmt"
	"sync"
)

// AllocatorOptions configures an Allocator. The zero value is the default.
type AllocatorOptions struct {
	// Behavior chooses iflib's intended behaviour (default), FreeBSD's exact
	// code, or the code before D24094; see Behavior. Place refuses any other
	// value (ErrBehavior).
	Behavior Behavior
}

// Allocator places devices' queues on the CPUs of one Topology and holds
// the registry FreeBSD keeps in the global SLIST cpu_offsets
// (sys/net/iflib.c): for every CPU set that a device without a core_offset
// was placed on, the CPU the next such device starts at (next_cpuid) and how
// many placed devices use the entry (refcount).
//
// Invariants, all under mu (cpu_offset_mtx):
//   - an entry exists only while refcount >= 1, and is removed when a
//     Release brings it to 0; the next device on that set then starts at
//     the set's first CPU again;
//   - next is always a member of the entry's set;
//   - Release never rewinds next (unref_ctx_core_offset does not).
//
// An Allocator is safe for concurrent use.
type Allocator struct {
	topo *Topology
	opts AllocatorOptions

	mu      sync.Mutex            // cpu_offset_mtx
	offsets map[CPUSet]*cpuOffset // guarded by mu; cpu_offsets, keyed by set (CPU_CMP)
}

// cpuOffset is FreeBSD's struct cpu_offset minus its set, which keys the map.
type cpuOffset struct {
	next     int // next_cpuid
	refcount int // refcount
}

// NewAllocator returns an Allocator over t with an empty registry.
func NewAllocator(t *Topology, opts AllocatorOptions) *Allocator {
	return &Allocator{topo: t, opts: opts, offsets: map[CPUSet]*cpuOffset{}}
}

// Topology returns the topology the allocator places on.
func (a *Allocator) Topology() *Topology { return a.topo }

// Next reports the registry entry for set: the CPU the next device without
// a core_offset will start at, and the entry's refcount. ok is false when
// there is no entry (the next device starts at set.First()). Under
// BeforeD24094 next is the queue offset instead, an index into set (modulo
// its size), as get_ctx_core_offset kept it then.
func (a *Allocator) Next(set CPUSet) (next, refcount int, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if op := a.offsets[set]; op != nil {
		return op.next, op.refcount, true
	}
	return -1, 0, false
}

// Place computes the CPU of every RX and TX queue of one device: iflib's
// get_ctx_core_offset followed by get_cpuid_for_queue for each queue, as
// iflib_irq_set_affinity does when it binds queue interrupts and tasks.
// A device without a core_offset is entered in the registry and must be
// Released when it detaches; Release is harmless for the others.
//
// Errors: a *ConfigError (ErrInvalid) naming the field, whose Err is
// ErrQueueCount, ErrEmptyCPUSet, ErrCPUNotInTopology, ErrBehavior or
// ErrCoreOffset. On error the registry is unchanged.
func (a *Allocator) Place(req Request) (*Placement, error) {
	if a == nil || a.topo == nil {
		return nil, ErrEmptyCPUSet
	}
	if !a.opts.Behavior.valid() {
		return nil, &ConfigError{Pkg: "cpumap", Field: "AllocatorOptions.Behavior", Value: int(a.opts.Behavior),
			Reason: "want Intended, FreeBSD or BeforeD24094", Err: ErrBehavior}
	}
	if req.RxQueues < 0 || req.RxQueues > MaxQueues || req.TxQueues < 0 || req.TxQueues > MaxQueues ||
		req.RxQueues+req.TxQueues == 0 {
		return nil, &ConfigError{Pkg: "cpumap", Field: "Request.RxQueues, TxQueues", Value: fmt.Sprintf("%d, %d", req.RxQueues, req.TxQueues),
			Reason: fmt.Sprintf("want 0..%d each, at least one queue", MaxQueues), Err: ErrQueueCount}
	}
	set, physical := a.topo.IntrCPUs()
	if req.CPUs != nil {
		set, physical = *req.CPUs, req.CPUsArePhysical
	}
	if set.Empty() {
		return nil, &ConfigError{Pkg: "cpumap", Field: "Request.CPUs", Reason: "no CPU", Err: ErrEmptyCPUSet}
	}
	if !set.SubsetOf(a.topo.online) {
		return nil, &ConfigError{Pkg: "cpumap", Field: "Request.CPUs", Value: set,
			Reason: "not among online CPUs " + a.topo.online.String(), Err: ErrCPUNotInTopology}
	}
	b := a.opts.Behavior
	pol := req.Policy
	if b == BeforeD24094 {
		return a.placeBeforeD24094(req, set, physical)
	}
	widened := false
	if b == Intended && pol.UseLogicalCores && !pol.SeparateTxRx && physical {
		// Quirk 1: "consecutive cores of any type".
		set, physical, widened = a.topo.Threads(set), false, true
	}
	as := newAssigner(a.topo, set, physical, req.RxQueues, req.TxQueues, pol, b)
	pl := &Placement{
		Device: req.Device, Policy: pol, Behavior: b,
		CPUs: set, Physical: physical, Widened: widened,
		CoresConsumed: as.consumed(),
		topo:          a.topo, alloc: a,
	}
	if pol.CoreOffset != nil {
		off := *pol.CoreOffset
		limit := maxFreeBSDOffset
		if b == Intended {
			limit = a.topo.online.Last()
		}
		if off < 0 || off > limit {
			return nil, badOffset(off, limit)
		}
		pl.Base = as.explicitBase(off)
	} else {
		a.mu.Lock()
		if op := a.offsets[set]; op != nil {
			pl.Base = op.next
			op.next = as.advance(op.next, pl.CoresConsumed)
			op.refcount++
		} else {
			pl.Base = as.first
			a.offsets[set] = &cpuOffset{next: as.advance(as.first, pl.CoresConsumed), refcount: 1}
		}
		a.mu.Unlock()
		pl.Registered = true
	}
	pl.RxCPU, pl.TxCPU = as.assign(pl.Base)
	return pl, nil
}

// release is unref_ctx_core_offset for pl.
func (a *Allocator) release(pl *Placement) {
	if !pl.Registered && pl.Behavior != FreeBSD {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if op := a.offsets[pl.CPUs]; op != nil {
		op.refcount--
		if op.refcount == 0 {
			delete(a.offsets, pl.CPUs)
		}
	}
}
