package simnic

import (
	"sync"
	"sync/atomic"
)

// fifo is a NIC's receive FIFO: frames from the wire wait here until the
// device model writes them into posted buffers. Producers (wire senders)
// serialize on mu; the device goroutine is the single consumer.
//
// A sender refused for lack of room can park in waitRoom until the device
// pops a frame. The handshake is a Dekker pair on sequentially consistent
// atomics (Go's sync/atomic): the waiter increments waiters and then loads
// head; the device stores head (pop) and then loads waiters. At least one
// of them sees the other's store, so a waiter never sleeps through the
// pop that made room. It replaces the wakeup(9)/msleep(9) pair a driver
// would use, without the device taking a lock per frame.
type fifo struct {
	mu      sync.Mutex // producers
	slots   [][]byte   // fixed buffers of maxFrame bytes
	lens    []int
	head    atomic.Uint64 // consumer position (device)
	tail    atomic.Uint64 // producer position (under mu)
	mask    uint64
	wake    func()        // the device's doorbell
	waiters atomic.Int32  // senders parked in waitRoom
	room    chan struct{} // a token: "room may have appeared", capacity 1
}

func newFIFO(n, maxFrame int, wake func()) *fifo {
	f := &fifo{slots: make([][]byte, n), lens: make([]int, n), mask: uint64(n - 1), wake: wake, room: make(chan struct{}, 1)}
	mem := make([]byte, n*maxFrame)
	for i := range f.slots {
		f.slots[i] = mem[i*maxFrame : (i+1)*maxFrame]
	}
	return f
}

// push copies a frame in; false when full or too long.
func (f *fifo) push(frame []byte) bool {
	f.mu.Lock()
	t := f.tail.Load()
	if t-f.head.Load() > f.mask || len(frame) > len(f.slots[0]) {
		f.mu.Unlock()
		return false
	}
	i := t & f.mask
	f.lens[i] = copy(f.slots[i], frame)
	f.tail.Store(t + 1) // publishes the copy (release)
	f.mu.Unlock()
	f.wake()
	return true
}

// peek returns the oldest frame without removing it.
func (f *fifo) peek() ([]byte, bool) {
	h := f.head.Load()
	if h == f.tail.Load() { // acquire: the frame copy is visible
		return nil, false
	}
	i := h & f.mask
	return f.slots[i][:f.lens[i]], true
}

// pop removes the oldest frame (the device, after peek). The caller
// signals room (signalRoom) once per batch of pops.
func (f *fifo) pop() { f.head.Add(1) }

// len returns how many frames wait (a snapshot).
func (f *fifo) len() uint64 {
	h := f.head.Load()
	return f.tail.Load() - h
}

// empty reports whether no frame waits.
func (f *fifo) empty() bool { return f.head.Load() == f.tail.Load() }

// signalRoom wakes a parked sender after pops (see the type's doc).
func (f *fifo) signalRoom() {
	if f.waiters.Load() > 0 {
		select {
		case f.room <- struct{}{}:
		default:
		}
	}
}

// waitRoom parks until the FIFO has room for a frame (true) or cancel is
// closed (false).
func (f *fifo) waitRoom(cancel <-chan struct{}) bool {
	f.waiters.Add(1)
	defer f.waiters.Add(-1)
	for {
		if f.tail.Load()-f.head.Load() <= f.mask {
			if f.waiters.Load() > 1 {
				f.signalRoom() // pass the token on to the next parked sender
			}
			return true
		}
		select {
		case <-f.room:
		case <-cancel:
			return false
		}
	}
}

// reset empties the FIFO (device reset), dropping what waits.
func (f *fifo) reset() int {
	f.mu.Lock()
	n := f.tail.Load() - f.head.Load()
	f.head.Store(f.tail.Load())
	f.mu.Unlock()
	f.signalRoom()
	return int(n)
}
