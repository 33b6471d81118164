package bufring

import (
	"errors"
	"strconv"
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

	// ErrInvalid is matched (errors.Is) by every *ArgError.
	ErrInvalid = errors.New("bufring: invalid argument")

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

// ArgError reports a bad argument to a constructor or to Drain. It matches
// ErrInvalid with errors.Is and can be extracted with errors.As.
type ArgError struct {
	Func  string // the function that refused the argument, e.g. "New"
	Arg   string // the argument's name, e.g. "size"
	Value int    // the value passed
	Want  string // what would have been accepted
}

func (e *ArgError) Error() string {
	return "bufring: " + e.Func + ": " + e.Arg + " = " + strconv.Itoa(e.Value) + ", want " + e.Want
}

// Is reports whether target is ErrInvalid.
func (e *ArgError) Is(target error) bool { return target == ErrInvalid }

// maxRingBytes bounds the memory of one ring's slots: 1 TiB, beyond any
// machine and below what the Go runtime can allocate at all (a larger make
// panics instead of failing).
const maxRingBytes = 1 << 40

// checkSize is the size check of New and NewMPSC (fn): a power of two in
// [2, 2^31] whose slots, of slotBytes each, take at most maxRingBytes.
func checkSize(fn string, size int, slotBytes uintptr) error {
	if size < 2 || uint64(size) > 1<<31 || size&(size-1) != 0 {
		return &ArgError{Func: fn, Arg: "size", Value: size, Want: "a power of two in [2, 2^31]"}
	}
	if uint64(slotBytes) > maxRingBytes/uint64(size) {
		return &ArgError{Func: fn, Arg: "size", Value: size,
			Want: "a size whose slots (" + strconv.FormatUint(uint64(slotBytes), 10) + " bytes each) take at most 1 TiB"}
	}
	return nil
}
