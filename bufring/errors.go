package bufring

import (
	"errors"
	"strconv"

	"github.com/goiflib/goiflib/internal/errs"
)

// Errors returned by this package. Hot paths return these package-level
// values and never allocate an error.
var (
	// ErrFull is ENOBUFS from buf_ring_enqueue: the ring holds size−1 items.
	// The item was not taken; the caller still owns it.
	ErrFull = errors.New("bufring: ring full")

	// ErrEmpty is returned by TryPutback on an empty ring (FreeBSD's
	// buf_ring_putback_sc asserts "Buf-Ring has none in putback").
	ErrEmpty = errors.New("bufring: ring empty")

	// ErrInvalid is EINVAL, matched (errors.Is) by every *ConfigError: the
	// one invalid-argument sentinel of goiflib (iflib.ErrInvalid and the
	// other packages' are this value).
	ErrInvalid = errs.ErrInvalid

	// ErrUninitialized is returned by DRBR methods called on a nil or zero
	// DRBR (one not made by NewDRBRWith).
	ErrUninitialized = errors.New("bufring: DRBR not created by NewDRBRWith")

	// ErrClosed is returned by the waiting forms of Ring and MPSC after
	// Close, by MPSC's enqueues after Close, and (as itself or inside a
	// *ClosedError) by DRBR after Close. The items of the failed call
	// still belong to the caller.
	ErrClosed = errors.New("bufring: closed")
	// ErrRefused is what a DRBR's Xmit returns when it cannot take an item
	// now (no descriptors): the item stays at the head and the queue is
	// stalled until Restart.
	ErrRefused = errors.New("bufring: xmit refused the item (no room); it stays queued")
)

// ClosedError is what DRBR returns after Close(cause) with a non-nil
// cause: errors.Is matches both ErrClosed and the cause, so a caller can
// test for either (iflib passes its ENETDOWN error).
type ClosedError struct {
	Cause error // the error given to Close
}

func (e *ClosedError) Error() string { return "bufring: closed: " + e.Cause.Error() }

// Is reports whether target is ErrClosed.
func (e *ClosedError) Is(target error) bool { return target == ErrClosed }

// Unwrap returns the cause given to Close.
func (e *ClosedError) Unwrap() error { return e.Cause }

// ConfigError reports a bad argument to a constructor: Field names it
// ("New(size)", "DRBRConfig.Xmit"), Value is what was passed and Reason
// what would have been accepted. It is goiflib's one invalid-argument type
// (iflib.ConfigError is the same type), matches ErrInvalid with errors.Is
// and can be extracted with errors.As; Pkg is "bufring".
type ConfigError = errs.ConfigError

// maxRingBytes bounds the memory of one ring's slots: 1 TiB, beyond any
// machine and below what the Go runtime can allocate at all (a larger make
// panics instead of failing).
const maxRingBytes = 1 << 40

// checkSize is the size check of New and NewMPSC (fn): a power of two in
// [2, 2^31] whose slots, of slotBytes each, take at most maxRingBytes.
func checkSize(fn string, size int, slotBytes uintptr) error {
	if size < 2 || uint64(size) > 1<<31 || size&(size-1) != 0 {
		return &ConfigError{Pkg: "bufring", Field: fn + "(size)", Value: size, Reason: "want a power of two in [2, 2^31]"}
	}
	if uint64(slotBytes) > maxRingBytes/uint64(size) {
		return &ConfigError{Pkg: "bufring", Field: fn + "(size)", Value: size,
			Reason: "want a size whose slots (" + strconv.FormatUint(uint64(slotBytes), 10) + " bytes each) take at most 1 TiB"}
	}
	return nil
}
