package simnic

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint is one end of a wire: something frames can be delivered to.
// Receive copies the frame (the caller reuses its buffer) and reports
// false when the endpoint dropped it (a full receive FIFO: rx_missed).
type Endpoint interface {
	Receive(frame []byte) bool
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

// Errors of the Generator's lifecycle.
var (
	// ErrGenStarted: Start on a generator that was already started.
	ErrGenStarted = errors.New("simnic: generator already started")
	// ErrGenNotStarted: Stop or Wait on a generator that was never started.
	ErrGenNotStarted = errors.New("simnic: generator not started")
	// ErrGenConfig: Start with a nil endpoint, a nil Next or a bad Rate.
	ErrGenConfig = errors.New("simnic: invalid generator")
)

// Generator sends frames into an endpoint from its own goroutine, as fast
// as the endpoint takes them or at a rate.
//
// Lifecycle: Start once; then Stop (any number of times, from any
// goroutine) ends it and waits, and Wait waits for it to end by itself
// (Count reached or Next returned 0) — with Count 0 and a Next that never
// returns 0, Wait returns only after a Stop. Stop and Wait before Start
// return ErrGenNotStarted; a second Start returns ErrGenStarted. A
// generator is not restartable.
type Generator struct {
	// Next writes the next frame into buf and returns its length; 0 stops
	// the generator.
	Next func(seq uint64, buf []byte) int
	// Rate is frames per second (0: as fast as possible).
	Rate float64
	// Count stops after this many frames (0: until Stop).
	Count uint64

	sent, refused atomic.Uint64
	mu            sync.Mutex    // Start against Stop/Wait
	stop          chan struct{} // set under mu by Start
	done          chan struct{} // set under mu by Start
	stopOnce      sync.Once
}

// Start runs the generator into dst.
func (g *Generator) Start(dst Endpoint) error {
	if dst == nil || g.Next == nil || g.Rate < 0 || math.IsNaN(g.Rate) || math.IsInf(g.Rate, 0) {
		return ErrGenConfig
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done != nil {
		return ErrGenStarted
	}
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	go g.run(dst)
	return nil
}

func (g *Generator) chans() (stop, done chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stop, g.done
}

func (g *Generator) run(dst Endpoint) {
	defer close(g.done)
	buf := make([]byte, 16384)
	start := time.Now()
	for seq := uint64(0); g.Count == 0 || seq < g.Count; seq++ {
		if seq&63 == 0 {
			select {
			case <-g.stop:
				return
			default:
			}
		}
		if g.Rate > 0 {
			due := start.Add(time.Duration(float64(seq) / g.Rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		n := g.Next(seq, buf)
		if n <= 0 || n > len(buf) {
			return
		}
		if dst.Receive(buf[:n]) {
			g.sent.Add(1)
		} else {
			// Refused (a full FIFO): yield rather than spin, so the
			// generator does not take a core from the device it feeds.
			g.refused.Add(1)
			runtime.Gosched()
		}
	}
}

// Stop ends the generator and waits for it.
func (g *Generator) Stop() error {
	stop, done := g.chans()
	if done == nil {
		return ErrGenNotStarted
	}
	g.stopOnce.Do(func() { close(stop) })
	<-done
	return nil
}

// Wait waits until the generator ends (Count reached, Next returned 0, or
// Stop).
func (g *Generator) Wait() error {
	_, done := g.chans()
	if done == nil {
		return ErrGenNotStarted
	}
	<-done
	return nil
}

// Sent is frames the endpoint took; Refused is frames it dropped.
func (g *Generator) Sent() uint64 { return g.sent.Load() }

// Refused is frames the endpoint dropped.
func (g *Generator) Refused() uint64 { return g.refused.Load() }

// fifo is a NIC's receive FIFO: frames from the wire wait here until the
// device model writes them into posted buffers. Producers (wire senders)
// serialize on mu; the device goroutine is the single consumer.
type fifo struct {
	mu    sync.Mutex // producers
	slots [][]byte   // fixed buffers of maxFrame bytes
	lens  []int
	head  atomic.Uint64 // consumer position (device)
	tail  atomic.Uint64 // producer position (under mu)
	mask  uint64
	wake  func()
}

func newFIFO(n, maxFrame int, wake func()) *fifo {
	f := &fifo{slots: make([][]byte, n), lens: make([]int, n), mask: uint64(n - 1), wake: wake}
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

func (f *fifo) pop() { f.head.Add(1) }

// reset empties the FIFO (device reset), dropping what waits.
func (f *fifo) reset() int {
	f.mu.Lock()
	n := f.tail.Load() - f.head.Load()
	f.head.Store(f.tail.Load())
	f.mu.Unlock()
	return int(n)
}
