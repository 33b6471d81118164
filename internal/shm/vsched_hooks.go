//go:build goiflib_vsched

package shm

import (
	"context"
	"runtime"
	"unsafe"

	"github.com/goiflib/goiflib/internal/vsched"
)

// ops maps this package's operations onto the scheduler's.
var ops = [...]vsched.Op{
	opLoad:   vsched.OpLoad,
	opStore:  vsched.OpStore,
	opRMW:    vsched.OpRMW,
	opLock:   vsched.OpLock,
	opUnlock: vsched.OpUnlock,
	opPark:   vsched.OpPark,
	opUnpark: vsched.OpUnpark,
}

// point is a scheduling point of the running simulation, if any.
func point(o op, p unsafe.Pointer) { vsched.Point(ops[o], uintptr(p)) }

// Yield gives way to another virtual thread while a simulation runs, and is
// runtime.Gosched otherwise.
func Yield() {
	if !vsched.Yield() {
		runtime.Gosched()
	}
}

// lock takes m: outside a simulation as sync.Mutex does; inside, each
// attempt is a scheduling point and a thread that finds m held blocks in
// the scheduler until unlock wakes it.
func lock(m *Mutex) {
	if !vsched.Active() {
		m.mu.Lock()
		return
	}
	for !tryLock(m) {
		vsched.Block(uintptr(unsafe.Pointer(m)))
	}
}

func tryLock(m *Mutex) bool {
	point(opLock, unsafe.Pointer(m))
	return m.mu.TryLock()
}

func unlock(m *Mutex) {
	point(opUnlock, unsafe.Pointer(m))
	m.mu.Unlock()
	vsched.Wake(uintptr(unsafe.Pointer(m)))
}

// park takes p's token; inside a simulation a thread without one blocks in
// the scheduler until unpark wakes it.
func park(p *Parker) {
	if !vsched.Active() {
		<-p.ch
		return
	}
	point(opPark, unsafe.Pointer(p))
	for {
		select {
		case <-p.ch:
			return
		default:
		}
		vsched.Block(uintptr(unsafe.Pointer(p)))
	}
}

func unpark(p *Parker) {
	point(opUnpark, unsafe.Pointer(p))
	p.give()
	vsched.Wake(uintptr(unsafe.Pointer(p)))
}

// parkContext is park; inside a simulation only a context that had already
// ended stops it (the simulation has no timers to end one later).
func parkContext(p *Parker, ctx context.Context) error {
	if !vsched.Active() {
		select {
		case <-p.ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		select {
		case <-p.ch:
			return nil
		default:
			return err
		}
	}
	park(p)
	return nil
}
