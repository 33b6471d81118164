package cpumap

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/internal/errs"
)

// ErrInvalid is EINVAL, goiflib's one invalid-argument sentinel
// (iflib.ErrInvalid and the other packages' are this value). Every
// *ConfigError matches it, and so does each bad-argument sentinel below
// (ErrQueueCount, ErrBehavior, ErrCacheLineSize, ErrEmptyCPUSet,
// ErrCPUNotInTopology, ErrCoreOffset, ErrBadCPUList, ErrBadSynthetic,
// ErrCPURange); the sentinels of the environment (ErrMalformedSysfs,
// ErrCPUNotOnline, ErrPinNotPermitted, ErrPinUnsupported) and of a misuse
// of the pin (ErrUnpinThread) do not. A *SysfsError whose file holds a bad
// value (a CPU list that does not parse, a cache line size out of range)
// matches the value's sentinel, and so ErrInvalid, through its cause.
var ErrInvalid = errs.ErrInvalid

// ConfigError is goiflib's one invalid-argument type (iflib.ConfigError
// is the same type): Place names the Request, Policy or AllocatorOptions
// field it refused, with Pkg "cpumap" and Err the sentinel of the kind
// (ErrQueueCount, ErrCoreOffset, ...).
type ConfigError = errs.ConfigError

// Sentinel errors. Every error this package returns matches one of them with
// errors.Is; typed errors below carry the detail.
var (
	// ErrQueueCount: a request for no queue at all, a negative count, or
	// more than MaxQueues of either kind. (A NIC always has at least one of
	// each, isc_nrxqsets and isc_ntxqsets >= 1; a worker pool asks for one
	// kind only.)
	ErrQueueCount = errs.Invalid("cpumap: queue count out of range")
	// ErrBehavior: an AllocatorOptions.Behavior that is none of Intended,
	// FreeBSD and BeforeD24094.
	ErrBehavior = errs.Invalid("cpumap: unknown Behavior")
	// ErrCacheLineSize: a cache line size that is not a power of two from
	// MinCacheLineSize to MaxCacheLineSize (SyntheticConfig.CacheLineSize, or
	// a sysfs coherency_line_size).
	ErrCacheLineSize = errs.Invalid("cpumap: cache line size not a power of two in range")
	// ErrEmptyCPUSet: a CPU set with no member where one is needed
	// (cpuid_advance asserts !CPU_EMPTY(&ctx->ifc_cpus)).
	ErrEmptyCPUSet = errs.Invalid("cpumap: empty CPU set")
	// ErrCPUNotInTopology: a CPU set names a CPU the topology does not have
	// online.
	ErrCPUNotInTopology = errs.Invalid("cpumap: CPU not in topology")
	// ErrCoreOffset: a core_offset that no CPU can correspond to (Place
	// returns a *ConfigError naming Policy.CoreOffset and the range).
	ErrCoreOffset = errs.Invalid("cpumap: core offset out of range")
	// ErrMalformedSysfs: a sysfs file is missing or cannot be parsed. See
	// SysfsError.
	ErrMalformedSysfs = errors.New("cpumap: malformed sysfs")
	// ErrBadCPUList: text that is not a Linux CPU list ("0-3,8,10-11").
	ErrBadCPUList = errs.Invalid("cpumap: malformed CPU list")
	// ErrBadSynthetic: a SyntheticConfig that describes no machine.
	ErrBadSynthetic = errs.Invalid("cpumap: bad synthetic topology")
	// ErrCPURange: a CPU number below 0 or not below MaxCPUs (also for a
	// number too long to read, such as an 8-digit one in a CPU list).
	ErrCPURange = errs.Invalid("cpumap: CPU number out of range")
	// ErrCPUNotOnline: the kernel refused a CPU as not online or not allowed
	// for this process (sched_setaffinity EINVAL).
	ErrCPUNotOnline = errors.New("cpumap: CPU not online or not allowed")
	// ErrPinNotPermitted: the kernel refused to change the affinity
	// (sched_setaffinity EPERM, e.g. a seccomp or cgroup policy).
	ErrPinNotPermitted = errors.New("cpumap: changing CPU affinity not permitted")
	// ErrPinUnsupported: this operating system has no thread affinity call
	// that this package uses.
	ErrPinUnsupported = errors.New("cpumap: thread pinning not supported on this OS")
	// ErrUnpinThread: an unpin called on a goroutine other than the one
	// that pinned (PinCurrentThread); the pin is still held.
	ErrUnpinThread = errors.New("cpumap: unpin on another goroutine than the pin's")
)

// SysfsError reports a sysfs file that is missing or malformed.
type SysfsError struct {
	Path string // path inside the fs.FS, e.g. "cpu3/topology/core_id"
	Err  error  // the underlying cause (fs.ErrNotExist, ErrBadCPUList, a strconv error …)
}

func (e *SysfsError) Error() string {
	return fmt.Sprintf("cpumap: sysfs %s: %v", e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *SysfsError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrMalformedSysfs) true.
func (e *SysfsError) Is(target error) bool { return target == ErrMalformedSysfs }

// PinError reports a failed PinCurrentThread or unpin.
type PinError struct {
	CPU int
	Op  string // "sched_getaffinity", "sched_setaffinity" or "unpin"
	Err error  // a sentinel of this package, wrapping the errno where there is one
}

func (e *PinError) Error() string {
	return fmt.Sprintf("cpumap: pin to CPU %d: %s: %v", e.CPU, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *PinError) Unwrap() error { return e.Err }

// badOffset is a rejected core_offset (dev.X.Y.iflib.core_offset).
func badOffset(off, limit int) error {
	return &ConfigError{Pkg: "cpumap", Field: "Policy.CoreOffset", Value: off,
		Reason: fmt.Sprintf("out of range [0, %d]", limit), Err: ErrCoreOffset}
}
