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

// Uint32 is atomic.Uint32 with every operation a scheduling point under
// goiflib_vsched. The zero value is 0.
type Uint32 struct{ v atomic.Uint32 }

// Load is atomic.Uint32.Load.
func (x *Uint32) Load() uint32 {
	point(opLoad, unsafe.Pointer(x))
	return x.v.Load()
}

// Store is atomic.Uint32.Store.
func (x *Uint32) Store(val uint32) {
	point(opStore, unsafe.Pointer(x))
	x.v.Store(val)
}

// Swap is atomic.Uint32.Swap.
func (x *Uint32) Swap(val uint32) (old uint32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Swap(val)
}

// CompareAndSwap is atomic.Uint32.CompareAndSwap.
func (x *Uint32) CompareAndSwap(old, new uint32) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.CompareAndSwap(old, new)
}

// Add is atomic.Uint32.Add.
func (x *Uint32) Add(delta uint32) (new uint32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Add(delta)
}

// And is atomic.Uint32.And.
func (x *Uint32) And(mask uint32) (old uint32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.And(mask)
}

// Or is atomic.Uint32.Or.
func (x *Uint32) Or(mask uint32) (old uint32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Or(mask)
}

// Uint64 is atomic.Uint64 with every operation a scheduling point under
// goiflib_vsched. The zero value is 0.
type Uint64 struct{ v atomic.Uint64 }

// Load is atomic.Uint64.Load.
func (x *Uint64) Load() uint64 {
	point(opLoad, unsafe.Pointer(x))
	return x.v.Load()
}

// Store is atomic.Uint64.Store.
func (x *Uint64) Store(val uint64) {
	point(opStore, unsafe.Pointer(x))
	x.v.Store(val)
}

// Swap is atomic.Uint64.Swap.
func (x *Uint64) Swap(val uint64) (old uint64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Swap(val)
}

// CompareAndSwap is atomic.Uint64.CompareAndSwap.
func (x *Uint64) CompareAndSwap(old, new uint64) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.CompareAndSwap(old, new)
}

// Add is atomic.Uint64.Add.
func (x *Uint64) Add(delta uint64) (new uint64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Add(delta)
}

// And is atomic.Uint64.And.
func (x *Uint64) And(mask uint64) (old uint64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.And(mask)
}

// Or is atomic.Uint64.Or.
func (x *Uint64) Or(mask uint64) (old uint64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Or(mask)
}

// Int32 is atomic.Int32 with every operation a scheduling point under
// goiflib_vsched. The zero value is 0.
type Int32 struct{ v atomic.Int32 }

// Load is atomic.Int32.Load.
func (x *Int32) Load() int32 {
	point(opLoad, unsafe.Pointer(x))
	return x.v.Load()
}

// Store is atomic.Int32.Store.
func (x *Int32) Store(val int32) {
	point(opStore, unsafe.Pointer(x))
	x.v.Store(val)
}

// Swap is atomic.Int32.Swap.
func (x *Int32) Swap(val int32) (old int32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Swap(val)
}

// CompareAndSwap is atomic.Int32.CompareAndSwap.
func (x *Int32) CompareAndSwap(old, new int32) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.CompareAndSwap(old, new)
}

// Add is atomic.Int32.Add.
func (x *Int32) Add(delta int32) (new int32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Add(delta)
}

// And is atomic.Int32.And.
func (x *Int32) And(mask int32) (old int32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.And(mask)
}

// Or is atomic.Int32.Or.
func (x *Int32) Or(mask int32) (old int32) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Or(mask)
}

// Int64 is atomic.Int64 with every operation a scheduling point under
// goiflib_vsched. The zero value is 0.
type Int64 struct{ v atomic.Int64 }

// Load is atomic.Int64.Load.
func (x *Int64) Load() int64 {
	point(opLoad, unsafe.Pointer(x))
	return x.v.Load()
}

// Store is atomic.Int64.Store.
func (x *Int64) Store(val int64) {
	point(opStore, unsafe.Pointer(x))
	x.v.Store(val)
}

// Swap is atomic.Int64.Swap.
func (x *Int64) Swap(val int64) (old int64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Swap(val)
}

// CompareAndSwap is atomic.Int64.CompareAndSwap.
func (x *Int64) CompareAndSwap(old, new int64) (swapped bool) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.CompareAndSwap(old, new)
}

// Add is atomic.Int64.Add.
func (x *Int64) Add(delta int64) (new int64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Add(delta)
}

// And is atomic.Int64.And.
func (x *Int64) And(mask int64) (old int64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.And(mask)
}

// Or is atomic.Int64.Or.
func (x *Int64) Or(mask int64) (old int64) {
	point(opRMW, unsafe.Pointer(x))
	return x.v.Or(mask)
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
