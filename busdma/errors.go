package busdma

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/internal/errs"
)

// Sentinel errors. Hot paths return these package-level values; cold paths
// may wrap them (test with errors.Is).
var (
	// ErrTooBig is EFBIG: the buffer needs more than nsegments segments.
	ErrTooBig = errors.New("busdma: too many segments (EFBIG)")
	// ErrNoMem is ENOMEM: bounce pages, IOVA space or DMA memory ran out
	// (BUS_DMA_NOWAIT semantics: the load is not deferred).
	ErrNoMem = errors.New("busdma: out of DMA resources (ENOMEM)")
	// ErrBusy is EBUSY: the map is loaded (destroy, or a second load).
	ErrBusy = errors.New("busdma: map is loaded (EBUSY)")
	// ErrInvalid is EINVAL: bad argument (nil or zero-length buffer, load
	// larger than maxsize, a destroyed map, bad tag parameter). It is the
	// one invalid-argument sentinel of goiflib (iflib.ErrInvalid and the
	// other packages' are this value); every *ConfigError matches it.
	ErrInvalid = errs.ErrInvalid
	// ErrNotLoaded: unload or sync of a map that holds no mapping.
	ErrNotLoaded = errors.New("busdma: map is not loaded")
	// ErrNotInSpace: the buffer was not allocated from the device's Space,
	// so its physical pages are unknown (pmap_kextract has nothing to say).
	ErrNotInSpace = errors.New("busdma: buffer is not memory of this address space")
	// ErrUnavailable: the platform cannot provide this address space.
	ErrUnavailable = errors.New("busdma: address space unavailable")
	// ErrFault: a device access to a bus address that is not backed by
	// memory, not mapped in the IOMMU (a DMAR fault), or — with a checker —
	// outside every current mapping of the device.
	ErrFault = errors.New("busdma: DMA fault")
	// ErrLeak: Device.Close or Device.CheckLeaks found maps still loaded. See
	// LeakError.
	ErrLeak = errors.New("busdma: maps still loaded at teardown")
	// ErrClosed: the device (or pagemap space) was closed.
	ErrClosed = errors.New("busdma: device closed")
	// ErrNotAllocated: Space.Free of memory that is not a live allocation of
	// the space: freed already (a double free), a part of an allocation
	// rather than the whole slice, or memory from Tag.AllocMem (which
	// DMAMem.Free returns).
	ErrNotAllocated = errors.New("busdma: not a live allocation of this space (double free?)")
)

// ConfigError reports an invalid argument or configuration field: a
// TagConfig field (bus_dma_tag_create's arguments, Field "TagConfig.Alignment"),
// a SimConfig, IOMMUConfig or PagemapConfig field, a map or buffer that
// cannot be loaded. It is goiflib's one invalid-argument type
// (iflib.ConfigError is the same type) and matches [ErrInvalid] with
// errors.Is; Pkg is "busdma".
type ConfigError = errs.ConfigError

// badArg is a *ConfigError of this package.
func badArg(field string, v any, reason string) error {
	return &ConfigError{Pkg: "busdma", Field: field, Value: v, Reason: reason}
}

// The invalid arguments of the load path, built once: a hot path returns
// them without allocating (errors.Is matches ErrInvalid, errors.As a
// *ConfigError).
var (
	errLoadLen      error = &ConfigError{Pkg: "busdma", Field: "Load buffer", Reason: "nil, empty or larger than the tag's maxsize"}
	errMapDestroyed error = &ConfigError{Pkg: "busdma", Field: "Map", Reason: "destroyed (bus_dmamap_destroy)"}
	errDMAMemFreed  error = &ConfigError{Pkg: "busdma", Field: "DMAMem", Reason: "already freed"}
)

// AllocError reports a refused Space.Alloc, Space.AllocChunks or
// Space.Free, or arguments of Tag.OneSegment that AllocChunks would refuse
// (Op "OneSegment"). Err is the cause and matches with errors.Is:
// [ErrInvalid] (a size, count or alignment that is not positive or not a
// power of two),
// [ErrNoMem] (no such memory is free in the space; the space stays usable),
// [ErrNotInSpace] or [ErrNotAllocated] (Free).
type AllocError struct {
	Op    string // "Alloc", "AllocChunks", "Free" or "OneSegment"
	Space string // the space's name
	Size  int    // bytes asked for (per chunk for AllocChunks; len for Free)
	Count int    // chunks asked for (AllocChunks)
	Align int
	Err   error
}

func (e *AllocError) Error() string {
	switch e.Op {
	case "Free":
		return fmt.Sprintf("busdma: %s: Free of %d bytes: %v", e.Space, e.Size, e.Err)
	case "AllocChunks":
		return fmt.Sprintf("busdma: %s: AllocChunks(%d bytes × %d, align %d): %v", e.Space, e.Size, e.Count, e.Align, e.Err)
	}
	return fmt.Sprintf("busdma: %s: %s(%d bytes, align %d): %v", e.Space, e.Op, e.Size, e.Align, e.Err)
}

// Unwrap returns the cause.
func (e *AllocError) Unwrap() error { return e.Err }

// maxLeakNames bounds the map names a LeakError carries.
const maxLeakNames = 16

// LeakError reports maps still loaded at teardown (Device.Close,
// Device.CheckLeaks): a missing bus_dmamap_unload. It matches [ErrLeak] with
// errors.Is.
type LeakError struct {
	Device string
	Maps   int      // how many maps are loaded
	Names  []string // the first of them, "<tag>#<id>" (at most 16)
}

func (e *LeakError) Error() string {
	s := fmt.Sprintf("busdma: %s: %d map(s) still loaded at teardown (missing bus_dmamap_unload)", e.Device, e.Maps)
	for i, n := range e.Names {
		if i == 0 {
			s += ": "
		} else {
			s += ", "
		}
		s += n
	}
	if e.Maps > len(e.Names) {
		s += ", …"
	}
	return s
}

// Is makes errors.Is(err, ErrLeak) true.
func (e *LeakError) Is(target error) bool { return target == ErrLeak }
