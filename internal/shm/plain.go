//go:build !goiflib_vsched

package shm

import (
	"sync"
	"sync/atomic"
)

// In a normal build the atomic types and Mutex are sync/atomic's and sync's
// own (aliases): the rings compile to exactly the instructions they did
// before this package existed. Under goiflib_vsched they are wrappers with
// the same methods, each a scheduling point (vsched_atomic.go,
// vsched_mutex.go).
type (
	Uint32 = atomic.Uint32 // atomic.Uint32; a scheduling point per operation under goiflib_vsched
	Uint64 = atomic.Uint64 // atomic.Uint64; a scheduling point per operation under goiflib_vsched
	Int32  = atomic.Int32  // atomic.Int32; a scheduling point per operation under goiflib_vsched
	Int64  = atomic.Int64  // atomic.Int64; a scheduling point per operation under goiflib_vsched
	Bool   = atomic.Bool   // atomic.Bool; a scheduling point per operation under goiflib_vsched

	// Mutex is sync.Mutex; under goiflib_vsched, Lock and Unlock are
	// scheduling points and a goroutine finding it held blocks in the
	// virtual scheduler until Unlock.
	Mutex = sync.Mutex
)

// Pointer is atomic.Pointer[T]; a scheduling point per operation under
// goiflib_vsched.
type Pointer[T any] = atomic.Pointer[T]
