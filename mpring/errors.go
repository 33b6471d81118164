package mpring

import (
	"errors"
	"fmt"
)

// ErrFull is ENOBUFS from ifmp_ring_enqueue: the items did not fit in the
// space available (usable capacity is size−2) and were counted as drops. The
// caller still owns the items.
var ErrFull = errors.New("mpring: ring full (ENOBUFS)")

// ErrNoItems is returned by Enqueue for an empty slice (FreeBSD asserts
// n > 0 with MPASS). Nothing is counted and the ring is unchanged.
var ErrNoItems = errors.New("mpring: no items to enqueue")

// ErrInvalid is EINVAL from ifmp_ring_alloc. Every *ConfigError matches it
// with errors.Is.
var ErrInvalid = errors.New("mpring: invalid argument (EINVAL)")

// ConfigError describes which argument of New was rejected.
type ConfigError struct {
	Param string // "size", "drain" or "canDrain"
	Value int    // the rejected size; 0 for a nil callback
}

func (e *ConfigError) Error() string {
	switch e.Param {
	case "size":
		return fmt.Sprintf("mpring: size %d outside [%d, %d] (EINVAL)", e.Value, MinSize, MaxSize)
	default:
		return fmt.Sprintf("mpring: %s callback is nil (EINVAL)", e.Param)
	}
}

// Is reports whether target is ErrInvalid.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalid }
