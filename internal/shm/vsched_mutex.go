//go:build goiflib_vsched

package shm

import "sync"

// Mutex is sync.Mutex (an alias in a normal build); under goiflib_vsched,
// while a simulation runs, Lock and Unlock are scheduling points and a goroutine that finds the mutex held
// blocks in the virtual scheduler (not in the runtime) until Unlock. The
// zero value is unlocked.
type Mutex struct{ mu sync.Mutex }

// Lock is sync.Mutex.Lock.
func (m *Mutex) Lock() { lock(m) }

// TryLock is sync.Mutex.TryLock.
func (m *Mutex) TryLock() bool { return tryLock(m) }

// Unlock is sync.Mutex.Unlock.
func (m *Mutex) Unlock() { unlock(m) }
