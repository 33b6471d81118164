package mpring

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/internal/errs"
)

// ErrFull is ENOBUFS from ifmp_ring_enqueue: the items did not fit in the
// space available (usable capacity is size−2) and were counted as drops. The
// caller still owns the items.
var ErrFull = errors.New("mpring: ring full (ENOBUFS)")

// ErrNoItems is returned by Enqueue for an empty slice (FreeBSD asserts
// n > 0 with MPASS). Nothing is counted and the ring is unchanged.
var ErrNoItems = errors.New("mpring: no items to enqueue")

// ErrInvalid is EINVAL from ifmp_ring_alloc. Every *ConfigError matches it
// with errors.Is. It is the one invalid-argument sentinel of goiflib
// (iflib.ErrInvalid and the other packages' are this value).
var ErrInvalid = errs.ErrInvalid

// ConfigError describes which argument of New was rejected: Field is
// "New(size)", "New(drain)" or "New(canDrain)", Value the rejected size
// (nil for a nil callback). It is goiflib's one invalid-argument type
// (iflib.ConfigError is the same type); Pkg is "mpring".
type ConfigError = errs.ConfigError

func badArg(field string, v any, reason string) error {
	return &ConfigError{Pkg: "mpring", Field: field, Value: v, Reason: reason}
}

func badSize(size int) error {
	return badArg("New(size)", size, fmt.Sprintf("want %d..%d", MinSize, MaxSize))
}
