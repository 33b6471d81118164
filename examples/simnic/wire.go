package simnic

import "sync/atomic"

// Endpoint is one end of a wire: something frames can be delivered to.
// Receive copies the frame (the caller reuses its buffer) and reports
// false when the endpoint dropped it (a full receive FIFO: rx_missed).
// Receive must not block: a NIC calls it from its device goroutine, and
// the NIC's stop waits for that goroutine.
type Endpoint interface {
	Receive(frame []byte) bool
}

// RoomWaiter is an Endpoint a refused sender can park on instead of
// retrying: WaitRoom blocks until the endpoint may take frame again
// (true), and returns false at once if it never will (a frame too long)
// or when cancel is closed. A NIC implements it (room in its receive
// FIFO). It is a hint, not a reservation: another sender may take the
// room first.
type RoomWaiter interface {
	WaitRoom(frame []byte, cancel <-chan struct{}) bool
}

// Sink is an endpoint that counts what arrives and optionally inspects it.
// It never drops.
type Sink struct {
	// Inspect, if set, sees every frame (valid during the call only).
	Inspect func(frame []byte)
	frames  atomic.Uint64
	bytes   atomic.Uint64
}

// Receive counts the frame.
func (s *Sink) Receive(frame []byte) bool {
	if s.Inspect != nil {
		s.Inspect(frame)
	}
	s.frames.Add(1)
	s.bytes.Add(uint64(len(frame)))
	return true
}

// Frames and Bytes return what arrived.
func (s *Sink) Frames() uint64 { return s.frames.Load() }

// Bytes returns the bytes that arrived.
func (s *Sink) Bytes() uint64 { return s.bytes.Load() }
