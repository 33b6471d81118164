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
	// DRBR (one not made by NewDRBR).
	ErrUninitialized = errors.New("bufring: DRBR not created by NewDRBR")
)

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
