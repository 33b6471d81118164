//go:build goiflib_vsched

package shm

import (
	"sync/atomic"
	"unsafe"
)

// Under goiflib_vsched the atomic types are wrappers with sync/atomic's
// methods, each preceded by the scheduling hook (in a normal build they are
// aliases of sync/atomic's, plain.go). Every CompareAndSwap, Add, Swap, And and Or is one locked
// instruction on amd64 (LOCK CMPXCHG, LOCK XADD, XCHG; And and Or a LOCK
// CMPXCHG loop), so the cost model charges them alike.

// atomicNumber is the method set sync/atomic's integer types share.
type atomicNumber[T any] interface {
	Load() T
	Store(val T)
	Swap(val T) (old T)
	CompareAndSwap(old, new T) (swapped bool)
	Add(delta T) (new T)
	And(mask T) (old T)
	Or(mask T) (old T)
}

// Number is the sync/atomic integer type A (whose pointer P has the
// methods) with every operation a scheduling point under goiflib_vsched.
// Uint32, Uint64, Int32 and Int64 are its instances; the zero value is 0.
type Number[T any, A any, P interface {
	*A
	atomicNumber[T]
}] struct{ v A }

type (
	// Uint32 is atomic.Uint32, each operation a scheduling point.
	Uint32 = Number[uint32, atomic.Uint32, *atomic.Uint32]
	// Uint64 is atomic.Uint64, each operation a scheduling point.
	Uint64 = Number[uint64, atomic.Uint64, *atomic.Uint64]
	// Int32 is atomic.Int32, each operation a scheduling point.
	Int32 = Number[int32, atomic.Int32, *atomic.Int32]
	// Int64 is atomic.Int64, each operation a scheduling point.
	Int64 = Number[int64, atomic.Int64, *atomic.Int64]
)

// Load is sync/atomic's Load.
func (x *Number[T, A, P]) Load() T {
	point(opLoad, unsafe.Pointer(x))
	return P(&x.v).Load()
}

// Store is sync/atomic's Store.
func (x *Number[T, A, P]) Store(val T) {
	point(opStore, unsafe.Pointer(x))
	P(&x.v).Store(val)
}

// Swap is sync/atomic's Swap.
func (x *Number[T, A, P]) Swap(val T) (old T) {
	point(opRMW, unsafe.Pointer(x))
	return P(&x.v).Swap(val)
}

// CompareAndSwap is sync/atomic's CompareAndSwap.
func (x *Number[T, A, P]) CompareAndSwap(old, new T) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return P(&x.v).CompareAndSwap(old, new)
}

// Add is sync/atomic's Add.
func (x *Number[T, A, P]) Add(delta T) (new T) {
	point(opRMW, unsafe.Pointer(x))
	return P(&x.v).Add(delta)
}

// And is sync/atomic's And.
func (x *Number[T, A, P]) And(mask T) (old T) {
	point(opRMW, unsafe.Pointer(x))
	return P(&x.v).And(mask)
}

// Or is sync/atomic's Or.
func (x *Number[T, A, P]) Or(mask T) (old T) {
	point(opRMW, unsafe.Pointer(x))
	return P(&x.v).Or(mask)
}

// Bool is atomic.Bool with every operation a scheduling point under
// goiflib_vsched. The zero value is false.
type Bool struct{ v atomic.Bool }

// Load is atomic.Bool.Load.
func (x *Bool) Load() bool {
	point(opLoad, unsafe.Pointer(x))
	return x.v.Load()
}

// Store is atomic.Bool.Store.
func (x *Bool) Store(val bool) {
	point(opStore, unsafe.Pointer(x))
	x.v.Store(val)
}

// Swap is atomic.Bool.Swap.
func (x *Bool) Swap(val bool) (old bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Swap(val)
}

// CompareAndSwap is atomic.Bool.CompareAndSwap.
func (x *Bool) CompareAndSwap(old, new bool) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.CompareAndSwap(old, new)
}

// Pointer is atomic.Pointer[T] with every operation a scheduling point under
// goiflib_vsched. The zero value is nil.
type Pointer[T any] struct{ v atomic.Pointer[T] }

// Load is atomic.Pointer.Load.
func (x *Pointer[T]) Load() *T {
	point(opLoad, unsafe.Pointer(x))
	return x.v.Load()
}

// Store is atomic.Pointer.Store.
func (x *Pointer[T]) Store(val *T) {
	point(opStore, unsafe.Pointer(x))
	x.v.Store(val)
}

// Swap is atomic.Pointer.Swap.
func (x *Pointer[T]) Swap(val *T) (old *T) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Swap(val)
}

// CompareAndSwap is atomic.Pointer.CompareAndSwap.
func (x *Pointer[T]) CompareAndSwap(old, new *T) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.CompareAndSwap(old, new)
}
