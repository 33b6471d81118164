//go:build goiflib_vsched

package shm

// op names a kind of shared-memory operation for the virtual scheduler's
// cost model; in a normal build it is never looked at.
type op uint8

const (
	opLoad   op = iota // a load of an atomic word
	opStore            // a plain store of an atomic word
	opRMW              // a locked read-modify-write: Add, Swap, CompareAndSwap, And, Or
	opLock             // Mutex.Lock or TryLock
	opUnlock           // Mutex.Unlock
	opPark             // Parker.Park
	opUnpark           // Parker.Unpark
)
